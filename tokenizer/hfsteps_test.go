package tokenizer

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

func TestTranslateOniguruma(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{`(?i:'s|'t)`, `(?:'[sS]|'[tT])`},
		{`(?i:[sdmt]|ll)`, `(?:[sdmtSDMT]|[lL][lL])`},
		{`(?i:[a-c])`, `(?:[a-cA-C])`},
		{`[^\r\n\p{L}\p{N}]?+\p{L}+`, `[^\r\n\p{L}\p{N}]?\p{L}+`},
		{` ?[^\s\p{L}\p{N}]++[\r\n]*`, ` ?[^\s\p{L}\p{N}]+[\r\n]*`},
		{`\p{N}{1,3}`, `\p{N}{1,3}`},
		{`a{,2}`, `a{0,2}`},
		{`a{x}`, `a\{x\}`},
		{`\w+|\h`, `[` + wordClassBody + `]+|[0-9A-Fa-f]`},
		{`\x{1F600}`, "\U0001F600"},
		{`\x{e9}`, `\u00E9`},
		{`(?:a+b)?c*`, `(?:a+b)?c*`},
		{`(a|b)+`, `(a|b)+`},
		{`[\-.,]`, `[\-.,]`},
		{`[]a]`, `[\]a]`},
		{`\s+(?!\S)|\s+$`, `\s+(?!\S)|\s+$`},
	} {
		got, err := translateOniguruma(c.in)
		if err != nil || got != c.want {
			t.Errorf("%s: got %s %v, want %s", c.in, got, err, c.want)
		}
	}
	for _, bad := range []string{`(a+)+b`, `(?:\s*x)*`, `((a)+c)+`, `(a{2,})*`, `(a+)` + "{1,}", `(a)\1`, `\G`, `\K`, `[[:alpha:]]`, `[a&&b]`, `(?i)a`, `(a`, `a)`, `[ab`, `\`, `(?<name>a)`} {
		_, err := translateOniguruma(bad)
		var re *RegexError
		if !errors.As(err, &re) || re.Pattern != bad || !errors.Is(err, ErrUnsupported) {
			t.Errorf("%s: got %v, want a *RegexError", bad, err)
		}
	}
}

// TestSplitBehaviors uses the example of Hugging Face's documentation of
// SplitDelimiterBehavior: "the-final--countdown" split at "-".
func TestSplitBehaviors(t *testing.T) {
	s := "the-final--countdown"
	delims := hfPatternMatcher{literal: "-"}.mustMatches(s)
	for _, c := range []struct {
		b    splitBehavior
		want []string
	}{
		{splitRemoved, []string{"the", "final", "countdown"}},
		{splitIsolated, []string{"the", "-", "final", "-", "-", "countdown"}},
		{splitMergedWithPrevious, []string{"the-", "final-", "-", "countdown"}},
		{splitMergedWithNext, []string{"the", "-final", "-", "-countdown"}},
		{splitContiguous, []string{"the", "-", "final", "--", "countdown"}},
	} {
		if got := splitSpans(s, delims, c.b, false); !slices.Equal(got, c.want) {
			t.Errorf("behavior %d: got %q, want %q", c.b, got, c.want)
		}
	}
	if got := splitSpans(s, delims, splitRemoved, true); !slices.Equal(got, []string{"-", "-", "-"}) {
		t.Errorf("inverted Removed: got %q", got)
	}
}

func runPre(t *testing.T, component string, text string) []string {
	t.Helper()
	var c hfComponent
	if err := json.Unmarshal([]byte(component), &c); err != nil {
		t.Fatal(err)
	}
	steps, _, err := buildPreTokenizer(&c)
	if err != nil {
		t.Fatal(err)
	}
	pieces := []hfPiece{{text: text, first: true}}
	for _, s := range steps {
		if pieces, err = s(pieces); err != nil {
			t.Fatal(err)
		}
	}
	var out []string
	for _, p := range pieces {
		out = append(out, p.text)
	}
	return out
}

func TestHFPreTokenizers(t *testing.T) {
	for _, c := range []struct {
		component, text string
		want            []string
	}{
		{`{"type":"Digits","individual_digits":true}`, "a123b٣", []string{"a", "1", "2", "3", "b", "٣"}},
		{`{"type":"Digits","individual_digits":false}`, "a123b", []string{"a", "123", "b"}},
		{`{"type":"Punctuation"}`, "Hey!! you?", []string{"Hey", "!", "!", " you", "?"}},
		{`{"type":"Punctuation","behavior":"Contiguous"}`, "Hey!! you?", []string{"Hey", "!!", " you", "?"}},
		{`{"type":"Whitespace"}`, "Hey man!! é_1", []string{"Hey", "man", "!!", "é_1"}},
		{`{"type":"WhitespaceSplit"}`, " Hey  man!\t", []string{"Hey", "man!"}},
		{`{"type":"BertPreTokenizer"}`, "Hey, man!", []string{"Hey", ",", "man", "!"}},
		{`{"type":"CharDelimiterSplit","delimiter":"x"}`, "axbxxc", []string{"a", "b", "c"}},
		{`{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":true}`, "Hey  friend", []string{"▁Hey", "▁", "▁friend"}},
		{`{"type":"Metaspace","replacement":"▁","prepend_scheme":"never","split":false}`, "Hey friend", []string{"Hey▁friend"}},
		{`{"type":"Metaspace","replacement":"▁","add_prefix_space":false}`, "Hey friend", []string{"Hey", "▁friend"}},
		{`{"type":"ByteLevel","add_prefix_space":true,"use_regex":true}`, "Hi there", []string{"ĠHi", "Ġthere"}},
		{`{"type":"ByteLevel","add_prefix_space":false,"use_regex":false}`, "Hi there", []string{"HiĠthere"}},
		{`{"type":"Split","pattern":{"Regex":"\\s+"},"behavior":"Removed","invert":false}`, "a  b", []string{"a", "b"}},
		{`{"type":"Split","pattern":{"String":" "},"behavior":"MergedWithPrevious","invert":false}`, "a b  c", []string{"a ", "b ", " ", "c"}},
		{`{"type":"Replace","pattern":{"String":" "},"content":"_"}`, "a b", []string{"a_b"}},
	} {
		if got := runPre(t, c.component, c.text); !slices.Equal(got, c.want) {
			t.Errorf("%s %q: got %q, want %q", c.component, c.text, got, c.want)
		}
	}
}

func TestHFNormalizers(t *testing.T) {
	for _, c := range []struct {
		component, text, want string
	}{
		{`{"type":"NFC"}`, "e\u0301", "é"},
		{`{"type":"NFD"}`, "é", "e\u0301"},
		{`{"type":"NFKC"}`, "ﬁ①", "fi1"},
		{`{"type":"NFKD"}`, "ﬁ", "fi"},
		{`{"type":"Lowercase"}`, "HELLO İ ΣΑΣ", "hello i\u0307 σας"},
		{`{"type":"Strip","strip_left":true,"strip_right":false}`, "  a  ", "a  "},
		{`{"type":"Sequence","normalizers":[{"type":"NFD"},{"type":"StripAccents"}]}`, "résumé", "resume"},
		{`{"type":"Prepend","prepend":"▁"}`, "a", "▁a"},
		{`{"type":"Prepend","prepend":"▁"}`, "", ""},
		{`{"type":"Replace","pattern":{"Regex":" {2,}"},"content":" "}`, "a   b", "a b"},
		{`{"type":"BertNormalizer","clean_text":true,"handle_chinese_chars":true,"strip_accents":null,"lowercase":true}`, "Héllo\tWORLD\u0000中文", "hello world 中  文 "},
	} {
		var comp hfComponent
		if err := json.Unmarshal([]byte(c.component), &comp); err != nil {
			t.Fatal(err)
		}
		steps, err := buildNormalizers(&comp)
		if err != nil {
			t.Fatal(err)
		}
		got := c.text
		for _, s := range steps {
			got, _ = s(got)
		}
		if got != c.want {
			t.Errorf("%s %q: got %q, want %q", c.component, c.text, got, c.want)
		}
	}
}

func TestHFDecoders(t *testing.T) {
	for _, c := range []struct {
		component string
		tokens    []string
		want      string
	}{
		{`{"type":"WordPiece","prefix":"##","cleanup":false}`, []string{"un", "##aff", "##able", "word"}, "unaffable word"},
		{`{"type":"BPEDecoder","suffix":"</w>"}`, []string{"hel", "lo</w>", "world</w>"}, "hello world"},
		{`{"type":"Metaspace","replacement":"▁","prepend_scheme":"always"}`, []string{"▁Hey", "▁friend"}, "Hey friend"},
		{`{"type":"Metaspace","replacement":"▁","prepend_scheme":"never"}`, []string{"▁Hey", "▁friend"}, " Hey friend"},
		{`{"type":"Sequence","decoders":[{"type":"ByteFallback"},{"type":"Fuse"},{"type":"Strip","content":"x","start":2,"stop":1}]}`, []string{"xxx", "<0xC3>", "<0xA9>", "ax"}, "xéa"},
		{`{"type":"ByteLevel"}`, []string{"Hello", "Ġw", "<tok>", "Ã©"}, "Hello w<tok>é"},
	} {
		var comp hfComponent
		if err := json.Unmarshal([]byte(c.component), &comp); err != nil {
			t.Fatal(err)
		}
		steps, err := buildDecoders(&comp, map[string]bool{"<tok>": true})
		if err != nil {
			t.Fatal(err)
		}
		toks := slices.Clone(c.tokens)
		for _, s := range steps {
			toks = s(toks)
		}
		if got := strings.Join(toks, ""); got != c.want {
			t.Errorf("%s: got %q, want %q", c.component, got, c.want)
		}
	}
}

func TestValidUTF8(t *testing.T) {
	for in, want := range map[string]string{
		"a\xE2\x82b":    "a\uFFFDb",
		"\xFF\xFE":      "\uFFFD\uFFFD",
		"\xF0\x9F\x98":  "\uFFFD",
		"\xED\xA0\x80":  "\uFFFD\uFFFD\uFFFD",
		"ok \u00e9":     "ok \u00e9",
		"\xC3\x28":      "\uFFFD(",
		"\xE2\x82\xAC!": "€!",
	} {
		if got := validUTF8(in); got != want {
			t.Errorf("%q: got %q, want %q", in, got, want)
		}
	}
}

// addedTokensJSON is a byte-level vocabulary of single characters with
// added tokens flagged each way.
func addedTokensJSON(t *testing.T) *Tokenizer {
	t.Helper()
	vocab := map[string]int{}
	for b := range 256 {
		vocab[string(byteToRune[b])] = b
	}
	doc := map[string]any{
		"added_tokens": []map[string]any{
			{"id": 256, "content": "<L>", "special": false, "lstrip": true, "normalized": false},
			{"id": 257, "content": "<R>", "special": false, "rstrip": true, "normalized": false},
			{"id": 258, "content": "<S>", "special": true, "normalized": false},
			{"id": 259, "content": "word", "special": false, "single_word": true, "normalized": false},
			{"id": 260, "content": "<S>x", "special": false, "normalized": false},
		},
		"pre_tokenizer": map[string]any{"type": "ByteLevel", "add_prefix_space": false, "use_regex": false},
		"decoder":       map[string]any{"type": "ByteLevel"},
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": []string{}},
	}
	data, _ := json.Marshal(doc)
	tok, err := FromHFJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestHFAddedTokenFlags checks lstrip, rstrip, single_word and special as
// Hugging Face's added vocabulary applies them.
func TestHFAddedTokenFlags(t *testing.T) {
	tok := addedTokensJSON(t)
	for _, c := range []struct {
		text    string
		special bool
		want    []string
	}{
		{"a  <L>  b", false, []string{"a", "<L>", "Ġ", "Ġ", "b"}},
		{"a  <R>  b", false, []string{"a", "Ġ", "Ġ", "<R>", "b"}},
		{"a word b", false, []string{"a", "Ġ", "word", "Ġ", "b"}},
		{"swordfish", false, []string{"s", "w", "o", "r", "d", "f", "i", "s", "h"}},
		{"<S>y", false, []string{"<", "S", ">", "y"}},
		{"<S>y", true, []string{"<S>", "y"}},
		{"<S>x", true, []string{"<S>x"}}, // the longest match wins
	} {
		ids, err := tok.Encode(c.text, EncodeOptions{ParseSpecial: c.special})
		if err != nil {
			t.Fatal(err)
		}
		if got := pieces(tok, ids); !slices.Equal(got, c.want) {
			t.Errorf("%q special %v: got %q, want %q", c.text, c.special, got, c.want)
		}
	}
	if tok.Type(256) != TypeUserDefined || tok.Type(258) != TypeControl {
		t.Errorf("types %v %v", tok.Type(256), tok.Type(258))
	}
}

// hfLosslessWant returns what Decode(Encode(s)) must give for reference
// tokenizer name, or false where the tokenizer does not promise it.
func hfLosslessWant(tok *Tokenizer, name, s string) (string, bool) {
	for _, tokText := range tok.tokens {
		if len(tokText) > 1 && strings.HasPrefix(tokText, "<") && strings.Contains(s, tokText) {
			return "", false // a token's text: it may come back as that token
		}
	}
	switch name {
	case "qwen3":
		return norm.NFC.String(s), true
	case "gemma3", "llama2", "phi3-style":
		return s, !strings.Contains(s, spaceMark)
	}
	return s, true
}

// FuzzHFEncodeDecode checks, on every reference tokenizer, that encoding
// never fails or panics and that decoding gives the text back where the
// tokenizer is lossless.
func FuzzHFEncodeDecode(f *testing.F) {
	for _, s := range []string{"Hello world", "e\u0301 नमस्ते", "👨‍👩‍👧 1234", "a\x00b\xff", "  \n\t x"} {
		f.Add(s)
	}
	dirs := hfTokenizerDirs(filepath.Join("testdata", "hf"))
	var toks []*Tokenizer
	for _, d := range dirs {
		tok, err := FromHFDir(d)
		if err != nil {
			f.Fatal(err)
		}
		toks = append(toks, tok)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for i, tok := range toks {
			for _, special := range []bool{false, true} {
				ids, err := tok.Encode(s, EncodeOptions{AddBOS: tok.AddBOS(), ParseSpecial: special})
				if err != nil {
					t.Fatalf("%s: %v", dirs[i], err)
				}
				got, err := tok.Decode(ids)
				if err != nil {
					t.Fatal(err)
				}
				if want, ok := hfLosslessWant(tok, filepath.Base(dirs[i]), s); ok && !special && utf8.ValidString(s) && got != want {
					t.Errorf("%s: Decode(Encode(%q)) = %q", dirs[i], s, got)
				}
			}
		}
	})
}
