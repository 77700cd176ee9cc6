package tokenizer

import (
	"path/filepath"
	"strings"
	"testing"
)

const benchParagraph = `The quick brown fox jumps over the lazy dog. In 1969, humans first walked on the Moon; ` +
	`it was a "giant leap for mankind". Tokenizers split text like this into pieces: words, ` +
	`sub-words, digits (3.14159), punctuation!? and whitespace   runs.
Lily's mom said she'd bake 12 cookies, but they're already gone.`

func benchmarkEncode(b *testing.B, tok *Tokenizer) {
	text := strings.Repeat(benchParagraph+"\n", 4)
	ids, err := tok.Encode(text, EncodeOptions{})
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for b.Loop() {
		if _, err := tok.Encode(text, EncodeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(ids))*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}

// BenchmarkEncode measures encoding speed on English text, in tokens per
// second, for a SentencePiece and two byte-level BPE vocabularies.
func BenchmarkEncode(b *testing.B) {
	for _, name := range []string{"llama-spm", "gpt-2", "deepseek-llm"} {
		b.Run(name, func(b *testing.B) {
			benchmarkEncode(b, loadGGUF(b, filepath.Join(refPath(b, "vocab"), "ggml-vocab-"+name+".gguf")))
		})
	}
}

// BenchmarkDecode measures decoding speed in tokens per second.
func BenchmarkDecode(b *testing.B) {
	tok := loadGGUF(b, filepath.Join(refPath(b, "vocab"), "ggml-vocab-llama-spm.gguf"))
	ids, _ := tok.Encode(strings.Repeat(benchParagraph, 4), EncodeOptions{})
	for b.Loop() {
		if _, err := tok.Decode(ids); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(len(ids))*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
