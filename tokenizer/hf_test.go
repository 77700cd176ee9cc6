package tokenizer

import (
	"encoding/json"
	"errors"
	"path/filepath"
	"slices"
	"testing"

	"github.com/pootlabs/poot/gguf"
)

// hfFromGGUF writes the vocabulary of a byte-level BPE GGUF as a
// tokenizer.json with the given pre-tokenizer, so that the llama.cpp cases
// can check FromHFJSON too.
func hfFromGGUF(t *testing.T, path string, preTokenizer any, mergesAsPairs bool) ([]byte, HFConfig) {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tokens, _ := f.Strings(KeyTokens)
	types, _ := f.Ints(KeyTokenType)
	merges, _ := f.Strings(KeyMerges)
	vocab := map[string]int{}
	var added []map[string]any
	for i, s := range tokens {
		vocab[s] = i
		if types[i] == int32(TypeControl) || types[i] == int32(TypeUserDefined) {
			added = append(added, map[string]any{"id": i, "content": s, "special": types[i] == int32(TypeControl)})
		}
	}
	var m any = merges
	if mergesAsPairs {
		pairs := make([][2]string, len(merges))
		for i, s := range merges {
			p := ranksKey(s)
			pairs[i] = [2]string{p.left, p.right}
		}
		m = pairs
	}
	doc := map[string]any{
		"added_tokens":  added,
		"normalizer":    nil,
		"pre_tokenizer": preTokenizer,
		"decoder":       map[string]any{"type": "ByteLevel"},
		"model":         map[string]any{"type": "BPE", "vocab": vocab, "merges": m},
	}
	data, err := json.Marshal(doc)
	if err != nil {
		t.Fatal(err)
	}
	bos, _ := f.Uint(KeyBOS)
	eos, _ := f.Uint(KeyEOS)
	return data, HFConfig{BOSToken: tokens[bos], EOSToken: tokens[eos]}
}

func ranksKey(s string) pair {
	for p := range ranksFromStrings([]string{s}) {
		return p
	}
	return pair{}
}

func split(regex string) map[string]any {
	return map[string]any{"type": "Split", "pattern": map[string]any{"Regex": regex}, "behavior": "Isolated", "invert": false}
}

func byteLevel(useRegex bool) map[string]any {
	return map[string]any{"type": "ByteLevel", "add_prefix_space": false, "trim_offsets": true, "use_regex": useRegex}
}

func sequence(items ...any) map[string]any {
	return map[string]any{"type": "Sequence", "pretokenizers": items}
}

func TestHFJSONAgainstLlamaCppCases(t *testing.T) {
	dir := refPath(t, "vocab")
	cases := []struct {
		vocab string
		pre   any
		pairs bool
	}{
		{"gpt-2", byteLevel(true), false},
		{"gpt-2", sequence(split(gpt2Pattern), byteLevel(false)), true},
		{"mpt", byteLevel(true), false},
		{"starcoder", sequence(map[string]any{"type": "Digits", "individual_digits": true}, byteLevel(true)), false},
		{"falcon", sequence(split(`[\p{P}\$\+<=>\^~\|`+"`"+`]+`), byteLevel(true), split(`[0-9][0-9][0-9]`)), true},
		{"deepseek-coder", sequence(split(`[\r\n]`), split(`\s?\p{L}+`), split(`\s?\p{P}+`), split(`[一-龥ࠀ-一가-퟿]+`), map[string]any{"type": "Digits", "individual_digits": true}, byteLevel(false)), false},
		{"deepseek-llm", sequence(split(`[\r\n]`), split(`\s?[A-Za-zµÀ-ÖØ-öø-ƺ]+`), split(`\s?[!-/:-~！-／：-～‘-‟　-。]+`), split(`\s+$`), split(`[一-龥ࠀ-一가-퟿]+`), split(`\p{N}+`), byteLevel(false)), false},
	}
	for i, c := range cases {
		t.Run(c.vocab, func(t *testing.T) {
			if testing.Short() && i > 0 {
				t.Skip("large tokenizer.json round trips are skipped in -short mode")
			}
			path := filepath.Join(dir, "ggml-vocab-"+c.vocab+".gguf")
			data, cfg := hfFromGGUF(t, path, c.pre, c.pairs)
			tok, err := FromHFJSON(data, cfg)
			if err != nil {
				t.Fatal(err)
			}
			if tok.Model() != BPE {
				t.Fatalf("model %v", tok.Model())
			}
			inputs, want := vocabCases(t, path)
			for i, in := range inputs {
				got, err := tok.Encode(in, EncodeOptions{})
				if err != nil || !slices.Equal(got, want[i]) {
					t.Errorf("case %d %q:\n got %v %v\nwant %v", i, in, got, err, want[i])
				}
				if err == nil {
					if text, _ := tok.Decode(got); text != in && c.vocab == "gpt-2" {
						t.Errorf("case %d: Decode = %q, want %q", i, text, in)
					}
				}
			}
		})
	}
}

// llama2StyleJSON is a SentencePiece-like tokenizer.json in the shape of
// Llama 2's: Prepend/Replace normalizer, merges over "▁" text, byte fallback.
func llama2StyleJSON() []byte {
	vocab := map[string]int{"<unk>": 0, "<s>": 1, "</s>": 2}
	for b := range 256 {
		vocab[byteTokenText(byte(b))] = 3 + b
	}
	for i, s := range []string{"▁", "h", "e", "l", "o", "w", "▁h", "▁he", "ll", "▁hell", "▁hello", "▁w", "<|tool|>"} {
		vocab[s] = 259 + i
	}
	doc := map[string]any{
		"added_tokens": []map[string]any{
			{"id": 0, "content": "<unk>", "special": true},
			{"id": 1, "content": "<s>", "special": true},
			{"id": 2, "content": "</s>", "special": true},
			{"id": 271, "content": "<|tool|>", "special": false, "normalized": false},
		},
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		}},
		"pre_tokenizer": nil,
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		"post_processor": map[string]any{"type": "TemplateProcessing", "single": []any{
			map[string]any{"SpecialToken": map[string]any{"id": "<s>", "type_id": 0}},
			map[string]any{"Sequence": map[string]any{"id": "A", "type_id": 0}},
		}},
		"model": map[string]any{
			"type": "BPE", "unk_token": "<unk>", "byte_fallback": true,
			"vocab":  vocab,
			"merges": []string{"▁ h", "▁h e", "l l", "▁he ll", "▁hell o", "▁ w"},
		},
	}
	data, _ := json.Marshal(doc)
	return data
}

func TestHFJSONSentencePieceLike(t *testing.T) {
	tok, err := FromHFJSON(llama2StyleJSON())
	if err != nil {
		t.Fatal(err)
	}
	if tok.Model() != SPM || !tok.AddBOS() || tok.BOS() != 1 || tok.EOS() != 2 {
		t.Fatalf("model %v AddBOS %v BOS %d EOS %d", tok.Model(), tok.AddBOS(), tok.BOS(), tok.EOS())
	}
	ids, err := tok.Encode("hello wé<|tool|>hello", EncodeOptions{AddBOS: true})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"<s>", "▁hello", "▁w", "<0xC3>", "<0xA9>", "<|tool|>", "▁hello"}
	if got := pieces(tok, ids); !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	text, _ := tok.Decode(ids)
	if text != "hello wé<|tool|> hello" {
		t.Errorf("Decode = %q", text)
	}
}

func TestHFJSONErrors(t *testing.T) {
	for name, doc := range map[string]string{
		"not json":       `{`,
		"wordpiece":      `{"model":{"type":"WordPiece","vocab":{"a":0}}}`,
		"back-reference": `{"pre_tokenizer":{"type":"Split","pattern":{"Regex":"(a)\\1"},"behavior":"Isolated"},"decoder":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`,
		"bad merges":     `{"model":{"type":"BPE","vocab":{"a":0},"merges":[1,2]}}`,
		"merge no space": `{"model":{"type":"BPE","vocab":{"a":0},"merges":["ab"]}}`,
		"negative id":    `{"model":{"type":"BPE","vocab":{"a":-1},"merges":[]}}`,
		"scripts pre":    `{"pre_tokenizer":{"type":"UnicodeScripts"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`,
		"precompiled":    `{"normalizer":{"type":"Precompiled","precompiled_charsmap":""},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`,
		"merge result":   `{"model":{"type":"BPE","vocab":{"a":0,"b":1},"merges":["a b"]}}`,
		"dropout":        `{"model":{"type":"BPE","dropout":0.1,"vocab":{"a":0},"merges":[]}}`,
		"bad behavior":   `{"pre_tokenizer":{"type":"Split","pattern":{"String":"a"},"behavior":"Sideways"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`,
		"template token": `{"post_processor":{"type":"TemplateProcessing","single":[{"SpecialToken":{"id":"<s>"}},{"Sequence":{"id":"A"}}]},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`,
	} {
		_, err := FromHFJSON([]byte(doc))
		var le *LoadError
		if !errors.As(err, &le) {
			t.Errorf("%s: got %v, want a *LoadError", name, err)
		}
	}
	_, err := FromHFJSON([]byte(`{"pre_tokenizer":{"type":"Split","pattern":{"Regex":"\\Gx"},"behavior":"Isolated"},"model":{"type":"BPE","vocab":{"a":0},"merges":[]}}`))
	var re *RegexError
	if !errors.Is(err, ErrUnsupported) || !errors.As(err, &re) || re.Pattern != `\Gx` {
		t.Errorf("unsupported regex: %v, want a *RegexError naming it", err)
	}
}

func TestParseHFConfig(t *testing.T) {
	cfg, err := ParseHFConfig([]byte(`{"bos_token":{"content":"<s>","lstrip":false},"eos_token":"</s>","add_bos_token":false}`))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.BOSToken != "<s>" || cfg.EOSToken != "</s>" || cfg.AddBOSToken == nil || *cfg.AddBOSToken || cfg.AddEOSToken != nil {
		t.Errorf("%+v", cfg)
	}
	tok, err := FromHFJSON(llama2StyleJSON(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if tok.AddBOS() {
		t.Errorf("add_bos_token false in the config is ignored")
	}
}

func TestHFJSONIgnoreMerges(t *testing.T) {
	doc := func(ignore bool) []byte {
		d, _ := json.Marshal(map[string]any{
			"pre_tokenizer": sequence(split(`(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+`), byteLevel(false)),
			"model": map[string]any{"type": "BPE", "ignore_merges": ignore,
				"vocab":  map[string]int{"a": 0, "b": 1, "c": 2, "abc": 3, "ab": 4, "Ġ": 5, "1": 6, "11": 7, "111": 8},
				"merges": []string{"a b", "1 1", "11 1"}},
		})
		return d
	}
	for _, c := range []struct {
		ignore bool
		want   []string
	}{
		{false, []string{"ab", "c", "Ġ", "111", "1"}},
		{true, []string{"abc", "Ġ", "111", "1"}},
	} {
		tok, err := FromHFJSON(doc(c.ignore))
		if err != nil {
			t.Fatal(err)
		}
		ids, err := tok.Encode("abc 1111", EncodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := pieces(tok, ids); !slices.Equal(got, c.want) {
			t.Errorf("ignore_merges %v: got %q, want %q", c.ignore, got, c.want)
		}
	}
}

func TestHFJSONMetaspace(t *testing.T) {
	var doc map[string]any
	if err := json.Unmarshal(llama2StyleJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["normalizer"] = nil
	for _, c := range []struct {
		scheme string
		split  bool
		want   []string
	}{
		{"first", false, []string{"<s>", "h", "e", "ll", "o", "▁w", "<|tool|>", "h", "e", "ll", "o"}},
		{"always", false, []string{"<s>", "▁hello", "▁w", "<|tool|>", "▁hello"}},
		{"always", true, []string{"<s>", "▁hello", "▁w", "<|tool|>", "▁hello"}},
		{"never", false, []string{"<s>", "h", "e", "ll", "o", "▁w", "<|tool|>", "h", "e", "ll", "o"}},
	} {
		doc["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "▁", "prepend_scheme": c.scheme, "split": c.split}
		data, _ := json.Marshal(doc)
		tok, err := FromHFJSON(data)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := tok.Encode("<s>hello w<|tool|>hello", EncodeOptions{ParseSpecial: true})
		if err != nil {
			t.Fatal(err)
		}
		if got := pieces(tok, ids); !slices.Equal(got, c.want) {
			t.Errorf("%s split %v: got %q, want %q", c.scheme, c.split, got, c.want)
		}
	}
}

// TestHFJSONSentencePieceFromStories writes the stories260K vocabulary as a
// Llama-2-style tokenizer.json, with merges derived from the scores the way
// Hugging Face's SentencePiece converter derives them, and checks that
// merging by rank gives llama.cpp's merging by score.
func TestHFJSONSentencePieceFromStories(t *testing.T) {
	ref := loadGGUF(t, refPath(t, "stories260K-f32.gguf"))
	vocab := map[string]int{}
	for id := range int32(ref.VocabSize()) {
		vocab[ref.Piece(id)] = int(id)
	}
	type merge struct {
		l, r  string
		score float32
	}
	var merges []merge
	for id := range int32(ref.VocabSize()) {
		if ref.Type(id) != TypeNormal {
			continue
		}
		p := ref.Piece(id)
		var local []merge
		for i := 1; i < len(p); i++ {
			if _, ok := vocab[p[:i]]; !ok {
				continue
			}
			if _, ok := vocab[p[i:]]; ok {
				local = append(local, merge{p[:i], p[i:], ref.Score(id)})
			}
		}
		slices.SortFunc(local, func(a, b merge) int {
			if vocab[a.l] != vocab[b.l] {
				return vocab[a.l] - vocab[b.l]
			}
			return vocab[a.r] - vocab[b.r]
		})
		merges = append(merges, local...)
	}
	slices.SortStableFunc(merges, func(a, b merge) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		}
		return 0
	})
	strs := make([]string, len(merges))
	for i, m := range merges {
		strs[i] = m.l + " " + m.r
	}
	var doc map[string]any
	if err := json.Unmarshal(llama2StyleJSON(), &doc); err != nil {
		t.Fatal(err)
	}
	doc["added_tokens"] = []map[string]any{{"id": 0, "content": "<unk>", "special": true}, {"id": 1, "content": "<s>", "special": true}, {"id": 2, "content": "</s>", "special": true}}
	doc["model"] = map[string]any{"type": "BPE", "unk_token": "<unk>", "byte_fallback": true, "vocab": vocab, "merges": strs}
	data, _ := json.Marshal(doc)
	tok, err := FromHFJSON(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, text := range []string{"Once upon a time", benchParagraph, "Lily's mom said: \"No, thank you!\"\n\tThe end. 42 ✓"} {
		a, _ := tok.Encode(text, EncodeOptions{AddBOS: true})
		b, _ := ref.Encode(text, EncodeOptions{AddBOS: true})
		if !slices.Equal(a, b) {
			t.Errorf("%q:\ntokenizer.json %q\n          GGUF %q", text, pieces(tok, a), pieces(ref, b))
		}
	}
}
