package falcon_test

import (
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/driver/drivertest"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/registry"
)

// TestReference holds every interpreter to llama.cpp on random Falcons
// with grouped key/value heads and strong weights (synth's default N(0,
// 0.25)): F32 within 1e-3 of the logit range (ggml computes GELU through
// an F16 table), F16 within 2e-3 (ggml also rounds the activations of F16
// products to F16).
func TestReference(t *testing.T) {
	for _, c := range []struct {
		name string
		frac float64
	}{{"tiny-f32", 1e-3}, {"tiny-f16", 2e-3}} {
		t.Run(c.name, func(t *testing.T) {
			m, err := registry.FromGGUF(familytest.OpenTestdata(t, c.name+".gguf").GGUF())
			if err != nil {
				t.Fatal(err)
			}
			if d := m.(*families.Decoder); !d.Parallel || !d.SharedNorm || !d.FusedQKV || d.QKVBias || d.FFNBias || !d.Ungated || d.KVHeads != 2 {
				t.Fatalf("read as parallel %v, shared norm %v, fused QKV %v with bias %v, ungated %v with biases %v, %d kv heads", d.Parallel, d.SharedNorm, d.FusedQKV, d.QKVBias, d.Ungated, d.FFNBias, d.KVHeads)
			}
			r := familytest.ReadRef(t, filepath.Join("testdata", c.name+".ref.json"))
			drivertest.CheckFamily(t, drivertest.Family{Checkpoint: filepath.Join("testdata", c.name+".gguf"), Ref: r, Tol: r.Relative(c.frac)})
		})
	}
}

// TestSafetensors writes the tiny preset as a Hugging Face directory
// (query_key_value stored group by group, reordered at load) from the
// seed of the F32 fixture: the same weights, so llama.cpp's outputs on the
// GGUF file hold for it.
func TestSafetensors(t *testing.T) {
	dir := drivertest.Synth(t, "falcon", "tiny", synth.Options{Format: "safetensors", Seed: 7})
	r := familytest.ReadRef(t, filepath.Join("testdata", "tiny-f32.ref.json"))
	drivertest.CheckFamily(t, drivertest.Family{Checkpoint: dir, Ref: r, Tol: r.Relative(1e-3), Interps: []string{"oracle", "cpu"}})
}
