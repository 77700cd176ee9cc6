package gguf

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
)

// refDir holds the shared reference checkpoints; see its README.md.
const refDir = "../../shared/refmodels"

func refFiles(t *testing.T) []string {
	t.Helper()
	var paths []string
	for _, pattern := range []string{"*.gguf", "quant/*.gguf", "vocab/*.gguf"} {
		m, err := filepath.Glob(filepath.Join(refDir, pattern))
		if err != nil {
			t.Fatal(err)
		}
		paths = append(paths, m...)
	}
	if len(paths) == 0 {
		t.Skipf("no reference GGUF files under %s (the shared refmodels folder is absent)", refDir)
	}
	return paths
}

// TestRefModelsOpen opens every reference GGUF and checks invariants that
// must hold for any valid file.
func TestRefModelsOpen(t *testing.T) {
	for _, path := range refFiles(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			f, err := Open(path)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			if len(f.KVs()) == 0 {
				t.Error("no metadata")
			}
			// The quant fixtures are bare containers without a model family.
			if _, err := f.Architecture(); err != nil && filepath.Base(filepath.Dir(path)) != "quant" {
				t.Error(err)
			}
			raw, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			for _, ti := range f.Tensors() {
				data, err := f.TensorData(ti.Name)
				if err != nil {
					t.Errorf("%s: %v", ti.Name, err)
					continue
				}
				tt, err := ti.TensorType()
				if err != nil {
					t.Errorf("%s: %v", ti.Name, err)
					continue
				}
				if got := int64(len(data)); got != tt.Bytes() || got != ti.Size {
					t.Errorf("%s: %d bytes, poot type %v says %d, info says %d", ti.Name, got, tt, tt.Bytes(), ti.Size)
				}
				start := f.DataOffset() + int64(ti.Offset)
				if !bytes.Equal(data, raw[start:start+int64(len(data))]) {
					t.Errorf("%s: mapped data differs from the file", ti.Name)
				}
			}
		})
	}
}

func TestStories260KFacts(t *testing.T) {
	path := filepath.Join(refDir, "stories260K-f32.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("reference model absent: %v", err)
	}
	f, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if arch, err := f.Architecture(); err != nil || arch != "llama" {
		t.Errorf("Architecture() = %q, %v; want llama", arch, err)
	}
	if n, err := f.Uint("llama.embedding_length"); err != nil || n != 64 {
		t.Errorf("llama.embedding_length = %d, %v; want 64", n, err)
	}
	if n, err := f.Int("llama.context_length"); err != nil || n != 512 {
		t.Errorf("llama.context_length = %d, %v; want 512", n, err)
	}
	if eps, err := f.Float("llama.attention.layer_norm_rms_epsilon"); err != nil || float32(eps) != 1e-5 {
		t.Errorf("rms epsilon = %g, %v; want 1e-5", eps, err)
	}
	tokens, err := f.Strings("tokenizer.ggml.tokens")
	if err != nil || len(tokens) != 512 || tokens[1] != "<s>" || tokens[2] != "</s>" {
		t.Errorf("tokens: len %d, err %v", len(tokens), err)
	}
	scores, err := f.Floats("tokenizer.ggml.scores")
	if err != nil || len(scores) != 512 || scores[259] != 0 || scores[260] != -1 {
		t.Errorf("scores: len %d, err %v", len(scores), err)
	}
	types, err := f.Ints("tokenizer.ggml.token_type")
	if err != nil || len(types) != 512 || types[0] != 2 || types[1] != 3 || types[3] != 6 || types[300] != 1 {
		t.Errorf("token types: %v, err %v", types[:4], err)
	}
	if f.Has("llama.rope.freq_base") {
		t.Error("llama.rope.freq_base present; the README says it is absent")
	}
	if _, err := f.String("llama.embedding_length"); !errors.Is(err, ErrWrongType) {
		t.Errorf("String on a uint32 key: err = %v, want ErrWrongType", err)
	}
	if _, err := f.Uint("no.such.key"); !errors.Is(err, ErrKeyNotFound) {
		t.Errorf("missing key: err = %v, want ErrKeyNotFound", err)
	}

	ti, ok := f.Tensor("blk.0.attn_k.weight")
	if !ok {
		t.Fatal("blk.0.attn_k.weight missing")
	}
	if len(ti.Dims) != 2 || ti.Dims[0] != 64 || ti.Dims[1] != 32 {
		t.Errorf("GGUF dims = %v, want [64 32]", ti.Dims)
	}
	tt, err := ti.TensorType()
	if err != nil || !tt.Equal(poot.T(poot.F32, 32, 64)) {
		t.Errorf("TensorType = %v, %v; want f32[32,64]", tt, err)
	}
	if len(f.Tensors()) != 3+9*5 {
		t.Errorf("%d tensors, want %d", len(f.Tensors()), 3+9*5)
	}
}

func TestQuantFixtureTypes(t *testing.T) {
	want := map[string]poot.DType{
		"q8_0": poot.Q8_0, "q4_0": poot.Q4_0, "q4_1": poot.Q4_1, "q5_0": poot.Q5_0, "q5_1": poot.Q5_1,
		"q4_K": poot.Q4_K, "q5_K": poot.Q5_K, "q6_K": poot.Q6_K, "q8_K": poot.Q8_K, "f16": poot.F16, "bf16": poot.BF16,
	}
	for name, dt := range want {
		path := filepath.Join(refDir, "quant", "quant-"+name+".gguf")
		if _, err := os.Stat(path); err != nil {
			t.Skipf("quant fixtures absent: %v", err)
		}
		f, err := Open(path)
		if err != nil {
			t.Fatal(err)
		}
		ti, _ := f.Tensor("quantized")
		tt, err := ti.TensorType()
		if err != nil || !tt.Equal(poot.T(dt, 16, 512)) {
			t.Errorf("%s: quantized is %v, %v; want %v", name, tt, err, poot.T(dt, 16, 512))
		}
		if typ, err := f.String("fixture.type"); err != nil || typ != name {
			t.Errorf("%s: fixture.type = %q, %v", name, typ, err)
		}
		f.Close()
	}
}
