package gptneox_test

import (
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/driver/drivertest"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/registry"
)

// TestReference holds every interpreter to llama.cpp on random GPT-NeoX
// models with strong weights (synth's default N(0, 0.25)): parallel
// residuals in F32 (within 1e-3 of the logit range: ggml computes GELU
// through an F16 table) and F16 (2e-3: ggml also rounds the activations of
// F16 products to F16), and sequential residuals.
func TestReference(t *testing.T) {
	for _, c := range []struct {
		name     string
		frac     float64
		parallel bool
	}{{"tiny-f32", 1e-3, true}, {"tiny-f16", 2e-3, true}, {"tiny-sequential-f32", 1e-3, false}} {
		t.Run(c.name, func(t *testing.T) {
			m, err := registry.FromGGUF(familytest.OpenTestdata(t, c.name+".gguf").GGUF())
			if err != nil {
				t.Fatal(err)
			}
			if d := m.(*families.Decoder); d.Parallel != c.parallel || d.SharedNorm || !d.FusedQKV || !d.QKVBias || !d.FFNBias || !d.Ungated {
				t.Fatalf("read as parallel %v, shared norm %v, fused QKV %v with bias %v, ungated %v with biases %v", d.Parallel, d.SharedNorm, d.FusedQKV, d.QKVBias, d.Ungated, d.FFNBias)
			}
			r := familytest.ReadRef(t, filepath.Join("testdata", c.name+".ref.json"))
			drivertest.CheckFamily(t, drivertest.Family{Checkpoint: filepath.Join("testdata", c.name+".gguf"), Ref: r, Tol: r.Relative(c.frac)})
		})
	}
}

// TestSafetensors writes the tiny presets as Hugging Face directories
// (query_key_value stored head by head, reordered at load) from the seeds
// of the F32 fixtures: the same weights, so llama.cpp's outputs on the GGUF
// files hold for them.
func TestSafetensors(t *testing.T) {
	for _, c := range []struct {
		preset, ref string
		seed        uint64
	}{{"tiny", "tiny-f32", 7}, {"tiny-sequential", "tiny-sequential-f32", 8}} {
		t.Run(c.preset, func(t *testing.T) {
			dir := drivertest.Synth(t, "gptneox", c.preset, synth.Options{Format: "safetensors", Seed: c.seed})
			r := familytest.ReadRef(t, filepath.Join("testdata", c.ref+".ref.json"))
			drivertest.CheckFamily(t, drivertest.Family{Checkpoint: dir, Ref: r, Tol: r.Relative(1e-3), Interps: []string{"oracle", "cpu"}})
		})
	}
}
