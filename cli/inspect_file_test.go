package cli

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/gguf"
)

// inspect describes GGUF files that hold no model: a vocabulary alone,
// tensors alone.
func TestInspectFileWithoutModel(t *testing.T) {
	f, err := gguf.Open(tinyModel)
	if err != nil {
		t.Fatal(err)
	}
	var vocab []gguf.KV
	for _, kv := range f.KVs() {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			vocab = append(vocab, kv)
		}
	}
	f.Close()
	dir := t.TempDir()
	vocabPath, tensorPath := filepath.Join(dir, "vocab.gguf"), filepath.Join(dir, "tensors.gguf")
	if err := gguf.WriteFile(vocabPath, vocab, nil, 32); err != nil {
		t.Fatal(err)
	}
	// llama.cpp's vocabulary files name an architecture and hold no tensors.
	archVocab := filepath.Join(dir, "llama-vocab.gguf")
	if err := gguf.WriteFile(archVocab, append([]gguf.KV{{Key: "general.architecture", Value: gguf.ValueOf("llama")}}, vocab...), nil, 32); err != nil {
		t.Fatal(err)
	}
	if err := gguf.WriteFile(tensorPath, nil, []gguf.WriterTensor{{Name: "w", DType: poot.F32, Shape: poot.Shape{2, 3}, Data: make([]byte, 24)}}, 32); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		path        string
		params      int64
		vocabulary  int
		wantMetaKey string
	}{{vocabPath, 0, 512, "tokenizer.ggml.tokens"}, {archVocab, 0, 512, "general.architecture"}, {tensorPath, 6, 0, ""}} {
		out, errOut, status := runPoot("inspect", "-m", c.path, "--json")
		var in inspection
		if status != 0 || json.Unmarshal([]byte(out), &in) != nil {
			t.Fatalf("inspect %s: status %d, %s %s", c.path, status, out, errOut)
		}
		if in.NoModel == "" || in.Parameters != c.params || in.Vocabulary != c.vocabulary || in.FileSize == 0 || in.Decode != nil {
			t.Errorf("inspect %s: %+v", c.path, in)
		}
		if _, ok := in.Metadata[c.wantMetaKey]; c.wantMetaKey != "" && !ok {
			t.Errorf("inspect %s: no %s in the metadata", c.path, c.wantMetaKey)
		}
		text, _, status := runPoot("inspect", "-m", c.path)
		if status != 0 || !strings.Contains(text, "file size") || !strings.Contains(text, "model  ") {
			t.Errorf("inspect %s (text): status %d\n%s", c.path, status, text)
		}
	}
	// A model shows its parameter count and metadata too.
	out, _, status := runPoot("inspect", "-m", tinyModel, "--json")
	var in inspection
	if status != 0 || json.Unmarshal([]byte(out), &in) != nil || in.Parameters == 0 || in.Metadata["general.architecture"] != `"llama"` || in.Decode == nil {
		t.Errorf("inspect tiny: %+v", in)
	}
}
