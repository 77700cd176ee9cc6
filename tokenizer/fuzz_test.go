package tokenizer

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"
)

// fuzzSPM returns the llama.cpp SentencePiece vocabulary when the shared
// fixtures are present, and the small hand-built one otherwise, so the fuzz
// target always runs.
func fuzzSPM(f *testing.F) *Tokenizer {
	p := filepath.Join(refDir, "vocab", "ggml-vocab-llama-spm.gguf")
	if _, err := os.Stat(p); err == nil {
		return loadGGUF(f, p)
	}
	md, _ := spmVocab()
	tok, err := FromGGUF(md)
	if err != nil {
		f.Fatal(err)
	}
	return tok
}

// FuzzEncodeDecode checks that SentencePiece encoding never fails or panics,
// that every id it returns is in the vocabulary, and that decoding gives the
// text back with the leading space encoding adds (for valid UTF-8 without
// special-token texts, which encode with their own spacing rules).
func FuzzEncodeDecode(f *testing.F) {
	tok := fuzzSPM(f)
	for _, s := range []string{"", " ", "Hello world", "  two  spaces ", "\n\n\t", "日本語のテキスト", "emoji 😀✓", "<s>text</s>", "\xff\xfe invalid", "123 4567"} {
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, s string, parseSpecial bool) {
		ids, err := tok.Encode(s, EncodeOptions{ParseSpecial: parseSpecial})
		if err != nil {
			t.Fatalf("Encode(%q): %v", s, err)
		}
		for _, id := range ids {
			if id < 0 || int(id) >= tok.VocabSize() {
				t.Fatalf("Encode(%q) gave id %d", s, id)
			}
		}
		got, err := tok.Decode(ids)
		if err != nil {
			t.Fatal(err)
		}
		// "▁" in the input is indistinguishable from an encoded space.
		if parseSpecial || !utf8.ValidString(s) || strings.Contains(s, spaceMark) {
			return
		}
		for _, id := range tok.special {
			if strings.Contains(s, tok.Piece(id)) {
				return
			}
		}
		want := s
		if s != "" {
			want = " " + s
		}
		if got != want {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
	})
}

// FuzzBPEEncode checks that byte-level BPE encoding of any input, with the
// pre-tokenizers of several vocabularies, never fails and decodes back to
// the valid UTF-8 input.
func FuzzBPEEncode(f *testing.F) {
	var toks []*Tokenizer
	for _, name := range []string{"gpt-2", "deepseek-llm", "deepseek-coder", "starcoder", "gpt-neox"} {
		p := filepath.Join(refDir, "vocab", "ggml-vocab-"+name+".gguf")
		if _, err := os.Stat(p); err == nil {
			toks = append(toks, loadGGUF(f, p))
		}
	}
	if len(toks) == 0 {
		f.Skip("reference vocabularies not available")
	}
	for _, s := range []string{"", "Hello world", "   \n\n  x", "it's 12345 $$", "日本語 한국어 Ελληνικά", "\xc3("} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range toks {
			ids, err := tok.Encode(s, EncodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			got, err := tok.Decode(ids)
			if err != nil {
				t.Fatal(err)
			}
			if utf8.ValidString(s) && got != s {
				t.Fatalf("Decode(Encode(%q)) = %q", s, got)
			}
		}
	})
}

// FuzzFromLlama2C checks that any bytes either load as a llama2.c
// vocabulary that can encode and decode, or give a *LoadError.
func FuzzFromLlama2C(f *testing.F) {
	if data, err := os.ReadFile(filepath.Join(refDir, "tok512.bin")); err == nil {
		f.Add(data)
	}
	f.Add([]byte{4, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 'a'})
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := FromLlama2C(data)
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error %v is not a *LoadError", err)
			}
			return
		}
		ids, err := tok.Encode("Hello, wörld 😀", EncodeOptions{AddBOS: tok.BOS() >= 0, ParseSpecial: true})
		if err == nil {
			if _, err := tok.Decode(ids); err != nil {
				t.Fatal(err)
			}
		}
	})
}

// FuzzFromHFJSON checks that any tokenizer.json either loads and encodes
// without panicking, or gives a *LoadError.
func FuzzFromHFJSON(f *testing.F) {
	f.Add(llama2StyleJSON())
	f.Add([]byte(`{"pre_tokenizer":{"type":"ByteLevel"},"model":{"type":"BPE","vocab":{"a":0,"b":1,"ab":2},"merges":[["a","b"]]},"added_tokens":[{"id":3,"content":"<x>","special":true}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		tok, err := FromHFJSON(data)
		if err != nil {
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("error %v is not a *LoadError", err)
			}
			return
		}
		for _, special := range []bool{false, true} {
			ids, err := tok.Encode("ab <x> hello wörld 12", EncodeOptions{ParseSpecial: special})
			if err == nil {
				if _, err := tok.Decode(ids); err != nil {
					t.Fatal(err)
				}
			}
		}
	})
}
