package llama

import (
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
)

func open(t *testing.T, name string) (familytest.Binder, families.Model) {
	t.Helper()
	c := familytest.Open(t, name)
	m, err := FromGGUF(c.GGUF())
	if err != nil {
		t.Fatal(err)
	}
	return familytest.LoadBinder(c, m.Weights()), m
}

// TestReference compares with llama.cpp's logits at every position and its
// greedy tokens. F32 files must agree within 1e-3. Half and quantized files
// get looser bounds: llama.cpp rounds the activations to the weight's
// format inside its dot products (F16, or Q8_0 blocks for Q8_0 and Q4_0
// weights), while poot decodes the weight and keeps activations in F32.
func TestReference(t *testing.T) {
	for _, c := range []struct {
		model, ref string
		capacity   int
		tol        float64
		greedy     bool // greedy tokens must all match
	}{
		{"stories260K-f32.gguf", "stories260K-f32.llamacpp.ref.json", 128, 1e-3, true},
		{"stories260K-f32.gguf", "stories260K.llama2c.ref.json", 128, 1e-3, true},
		{"tiny-llama-f32.gguf", "tiny-llama-f32.ref.json", 32, 1e-3, true},
		{"tiny-qwen3-f32.gguf", "tiny-qwen3-f32.ref.json", 32, 1e-3, true},
		{"tiny-llama-f16.gguf", "tiny-llama-f16.ref.json", 32, 1e-3, true},
		{"tiny-qwen3-f16.gguf", "tiny-qwen3-f16.ref.json", 32, 1e-3, true},
		{"stories260K-q8_0.gguf", "stories260K-q8_0.llamacpp.ref.json", 128, 0.4, true},
		{"stories260K-q4_0.gguf", "stories260K-q4_0.llamacpp.ref.json", 128, 0.4, true},
	} {
		t.Run(c.model, func(t *testing.T) {
			bind, m := open(t, c.model)
			ref := familytest.ReadRef(t, filepath.Join(familytest.Dir(t), c.ref))
			familytest.CheckReference(t, m, bind, ref, c.capacity, c.tol, c.greedy)
		})
	}
}

func TestLayouts(t *testing.T) {
	for _, name := range []string{"tiny-llama-f32.gguf", "tiny-qwen3-f32.gguf", "tiny-llama-f16.gguf"} {
		t.Run(name, func(t *testing.T) {
			bind, m := open(t, name)
			toks := []int32{1, 15, 27, 100, 200, 300, 400, 500}
			familytest.CheckLayouts(t, m, bind, toks, 16)
		})
	}
}
