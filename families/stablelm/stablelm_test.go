package stablelm_test

import (
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/driver/drivertest"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/registry"
)

// TestReference holds every interpreter to llama.cpp on random StableLMs
// with strong weights (matrices N(0, 0.25), logits spanning ±8), F32
// within 1e-5 of the logit range (poot and ggml differ by float rounding):
// sequential layers in F32 and F16 (ggml rounds the activations of F16
// products to F16: 2e-3 of the range), and parallel layers from one norm.
func TestReference(t *testing.T) {
	for _, c := range []struct {
		name     string
		frac     float64
		parallel bool
	}{{"tiny-f32", 1e-5, false}, {"tiny-f16", 2e-3, false}, {"tiny-parallel-f32", 1e-5, true}} {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join("testdata", c.name+".gguf")
			m, err := registry.FromGGUF(familytest.OpenTestdata(t, c.name+".gguf").GGUF())
			if err != nil {
				t.Fatal(err)
			}
			if d := m.(*families.Decoder); d.Parallel != c.parallel || d.SharedNorm != c.parallel || d.Norm != families.LayerNormKind || !d.NormBias || !d.QKVBias {
				t.Fatalf("read as parallel %v, shared norm %v, norm %v with bias %v, QKV bias %v", d.Parallel, d.SharedNorm, d.Norm, d.NormBias, d.QKVBias)
			}
			r := familytest.ReadRef(t, filepath.Join("testdata", c.name+".ref.json"))
			drivertest.CheckFamily(t, drivertest.Family{Checkpoint: path, Ref: r, Tol: r.Relative(c.frac)})
		})
	}
}

// TestSafetensors writes the tiny presets as Hugging Face directories
// (StableLmForCausalLM, use_qkv_bias, use_parallel_residual) from the
// seeds of the F32 fixtures: the same weights, so llama.cpp's outputs on
// the GGUF files hold for them.
func TestSafetensors(t *testing.T) {
	for _, c := range []struct {
		preset, ref string
		seed        uint64
	}{{"tiny", "tiny-f32", 7}, {"tiny-parallel", "tiny-parallel-f32", 8}} {
		t.Run(c.preset, func(t *testing.T) {
			dir := drivertest.Synth(t, "stablelm", c.preset, synth.Options{Format: "safetensors", Seed: c.seed, Scale: 0.25})
			r := familytest.ReadRef(t, filepath.Join("testdata", c.ref+".ref.json"))
			drivertest.CheckFamily(t, drivertest.Family{Checkpoint: dir, Ref: r, Tol: r.Relative(1e-5), Interps: []string{"oracle", "cpu"}})
		})
	}
}
