package tokenizer

import (
	"slices"
	"strings"
	"testing"
	"time"
)

func TestPreTokenizerSplits(t *testing.T) {
	cases := []struct {
		pre  string
		text string
		want []string
	}{
		// GPT-2: contractions are lower-case only; a run of spaces gives
		// all but the last to its own word.
		{"gpt-2", "Hello  world", []string{"Hello", " ", " world"}},
		{"gpt-2", "it's IT'S", []string{"it", "'s", " IT", "'", "S"}},
		{"gpt-2", "a\n\nb", []string{"a", "\n", "\n", "b"}},
		{"gpt-2", "x   ", []string{"x", "   "}},
		{"gpt-2", " 2024!!", []string{" 2024", "!!"}},
		{"gpt-2", "héllo wörld", []string{"héllo", " wörld"}},
		{"gpt-2", "日本 語", []string{"日本", " 語"}},
		// Llama 3: case-insensitive contractions, digits in threes, a space
		// or punctuation joins the following letters, newlines end runs.
		{"llama-bpe", "Hello world", []string{"Hello", " world"}},
		{"llama-bpe", "IT'S it's", []string{"IT", "'S", " it", "'s"}},
		{"llama-bpe", "1234567", []string{"123", "456", "7"}},
		{"llama-bpe", "  hello", []string{" ", " hello"}},
		{"llama-bpe", "x  \n  y", []string{"x", "  \n", " ", " y"}},
		{"llama-bpe", "...!!!\n\nfoo", []string{"...!!!\n\n", "foo"}},
		{"llama-bpe", "(word", []string{"(word"}},
		{"llama-bpe", "hello  ", []string{"hello", "  "}},
		{"llama-bpe", "a\r\nb", []string{"a", "\r\n", "b"}},
		// Qwen2: the same with single digits.
		{"qwen2", "1234 x", []string{"1", "2", "3", "4", " x"}},
		// llama.cpp's default (and gpt-neox): punctuation runs, then GPT-2,
		// then digit runs, then three ASCII digits.
		{"default", "Hello, world!!! 1234", []string{"Hello", ",", " world", "!!!", " ", "123", "4"}},
		{"", "a$b", []string{"a", "$", "b"}},
		// StarCoder: every digit alone first.
		{"starcoder", "x 123", []string{"x", " ", "1", "2", "3"}},
		// Falcon: the backtick joins the punctuation class; GPT-2 keeps
		// " 12345" whole and the three-digit pass then cuts it.
		{"falcon", "a`b 12345", []string{"a", "`", "b", " ", "123", "45"}},
		// DeepSeek Coder: newlines alone, letters with one leading space.
		{"deepseek-coder", "ab\ncd 12", []string{"ab", "\n", "cd", " ", "1", "2"}},
		// Tekken: case-aware words (an upper run then lower letters),
		// single digits, punctuation runs with trailing newlines or slashes.
		{"tekken", "Hello World", []string{"Hello", " World"}},
		{"tekken", "HTTPServer abcDef ABC", []string{"HTTPServer", " abc", "Def", " ABC"}},
		{"tekken", "it's 42", []string{"it", "'s", " ", "4", "2"}},
		{"tekken", "x /\n\ny", []string{"x", " /\n\n", "y"}},
		// Non-ASCII letters lose their case in llama.cpp's matching, so an
		// accented capital is "lower" too and ends the word at once.
		{"tekken", "ÉCOLE", []string{"É", "COLE"}},
		// GPT-4o: contractions stay with their word, digits in threes.
		{"gpt-4o", "it's IT'S 1234567", []string{"it's", " IT'S", " ", "123", "456", "7"}},
		{"gpt-4o", "Hello\n\n", []string{"Hello", "\n\n"}},
		// BLOOM: words stop at spaces and a few punctuation marks.
		{"bloom", "Hi, there.", []string{"Hi", ",", " there", "."}},
	}
	for _, c := range cases {
		p, ok := preTokenizerByName(c.pre)
		if !ok {
			t.Fatalf("pre-tokenizer %q unknown", c.pre)
		}
		got := p.split(c.text)
		if !slices.Equal(got, c.want) {
			t.Errorf("%s %q: got %q, want %q", c.pre, c.text, got, c.want)
		}
	}
}

func TestPreTokenizerNames(t *testing.T) {
	for _, name := range []string{"default", "gpt-2", "llama-bpe", "llama3", "qwen2", "deepseek-llm", "deepseek-coder", "falcon", "starcoder", "mpt", "olmo", "dbrx", "smaug-bpe", "stablelm2", "command-r", "refact", "bloom", "poro-chat"} {
		if _, ok := preTokenizerByName(name); !ok {
			t.Errorf("%q not supported", name)
		}
	}
	for _, name := range []string{"deepseek-v3", "kimi-k2", "nonsense"} {
		if _, ok := preTokenizerByName(name); ok {
			t.Errorf("%q claimed supported", name)
		}
	}
}

func TestPreTokenizerCoversText(t *testing.T) {
	// Every pre-tokenizer partitions the text: the words concatenate to it.
	text := "It's 2024 — \"quotes\", ‘curly’ 日本語 한국어 Ελληνικά\u00a0nbsp\u3000ideo  \n\t end  "
	for _, name := range []string{"default", "gpt-2", "llama-bpe", "qwen2", "deepseek-llm", "deepseek-coder", "falcon", "starcoder", "bloom", "tekken", "gpt-4o"} {
		p, _ := preTokenizerByName(name)
		words := p.split(text)
		joined := ""
		for _, w := range words {
			if w == "" {
				t.Errorf("%s: empty word", name)
			}
			joined += w
		}
		if joined != text {
			t.Errorf("%s: words %q do not cover the text", name, words)
		}
	}
}

// overrideMetadata replaces some keys of another Metadata.
type overrideMetadata struct {
	Metadata
	over mapMetadata
}

func (o overrideMetadata) String(k string) (string, error) {
	if o.over.Has(k) {
		return o.over.String(k)
	}
	return o.Metadata.String(k)
}

func (o overrideMetadata) Has(k string) bool { return o.over.Has(k) || o.Metadata.Has(k) }

func TestLlama3AndQwen2OnGPT2Vocab(t *testing.T) {
	f := openGGUF(t, "ggml-vocab-gpt-2.gguf")
	defer f.Close()
	llama3, err := FromGGUF(overrideMetadata{f, mapMetadata{KeyPre: "llama-bpe"}})
	if err != nil {
		t.Fatal(err)
	}
	qwen2, err := FromGGUF(overrideMetadata{f, mapMetadata{KeyPre: "qwen2"}})
	if err != nil {
		t.Fatal(err)
	}
	gpt2, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	if !llama3.AddBOS() || qwen2.AddBOS() || gpt2.AddBOS() {
		t.Errorf("AddBOS: llama3 %v qwen2 %v gpt2 %v", llama3.AddBOS(), qwen2.AddBOS(), gpt2.AddBOS())
	}
	text := "Numbers 1234567 and IT'S\n\n  done"
	for _, c := range []struct {
		tok  *Tokenizer
		want []string
	}{
		// GPT-2 has no "'S" token, so the Llama 3 word "'S" merges to "'" "S";
		// "\n\n " is one GPT-2 word but "\n\n" and " " in Llama 3.
		{gpt2, []string{"Numbers", "Ġand", "ĠIT", "'", "S", "ĊĊ", "Ġ", "Ġdone"}},
		{llama3, []string{"Numbers", "Ġ", "123", "456", "7", "Ġand", "ĠIT", "'", "S", "ĊĊ", "Ġ", "Ġdone"}},
		{qwen2, []string{"Numbers", "Ġ", "1", "2", "3", "4", "5", "6", "7", "Ġand", "ĠIT", "'", "S", "ĊĊ", "Ġ", "Ġdone"}},
	} {
		ids, err := c.tok.Encode(text, EncodeOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := pieces(c.tok, ids)
		if c.tok == gpt2 {
			// GPT-2 keeps " 1234567" as one word; only check the rest.
			got = slices.DeleteFunc(got, func(s string) bool { return len(s) > 0 && (s[len(s)-1] >= '0' && s[len(s)-1] <= '9') })
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("got %q, want %q", got, c.want)
		}
		if back, _ := c.tok.Decode(ids); back != text {
			t.Errorf("Decode = %q", back)
		}
	}
}

func TestPreTokenizersAreLinear(t *testing.T) {
	// Long runs that a careless matcher rescans at every position.
	long := strings.Repeat(" ", 200000) + "1" + strings.Repeat("A", 200000) + "é" + strings.Repeat("\n ", 100000) + "x"
	for _, name := range []string{"default", "gpt-2", "llama-bpe", "qwen2", "deepseek-llm", "deepseek-coder", "falcon", "starcoder", "bloom", "tekken", "gpt-4o"} {
		p, _ := preTokenizerByName(name)
		start := time.Now()
		words := p.split(long)
		if d := time.Since(start); d > 5*time.Second {
			t.Errorf("%s: %v for %d runes", name, d, len([]rune(long)))
		}
		if strings.Join(words, "") != long {
			t.Errorf("%s: words do not cover the text", name)
		}
	}
}
