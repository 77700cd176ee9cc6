package cpu_test

import (
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/load"
)

// TestSynthesizedFamilies holds the CPU backend to the oracle on a
// random-weight checkpoint of every family with a tiny preset (llama,
// gemma3 with sliding windows, the mixture-of-experts families), F32 and
// Q8_0 matrices, every pass on and each off.
func TestSynthesizedFamilies(t *testing.T) {
	for _, p := range synth.Presets() {
		if p.Name != "tiny" {
			continue
		}
		for _, dt := range []poot.DType{poot.F32, poot.Q8_0} {
			m, err := synth.Model(p.Family, p.Config)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), p.Family+"-"+dt.String()+".gguf")
			// Strong weights for F32, where the passes must agree to float
			// noise; small-model weights for Q8_0, whose int8 activations
			// (llama.cpp's rounding, which the oracle does not do) sharp
			// attention at strong weights amplifies past the bound below.
			scale := synth.DefaultScale
			if dt.Packed() {
				scale = 0.02
			}
			if err := synth.Write(m, path, synth.Options{Type: dt, Seed: 3, Scale: scale}); err != nil {
				t.Fatal(err)
			}
			c, err := load.Open(path)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			mm, err := registry.FromGGUF(c.GGUF())
			if err != nil {
				t.Fatal(err)
			}
			md := &model{m: mm, c: c}
			// F32: the avx512 prompt tiles add over K in another order than
			// the oracle (qwen35moe prefill 5.1e-6 of the range, 2.9e-6 at
			// avx2); 1e-5 is the F32 agreement bound the other interpreters use.
			tol := 1e-5
			if dt.Packed() {
				tol = 4e-2
			}
			for _, cfg := range passConfigs() {
				t.Run(p.Family+"/"+dt.String()+"/"+cfg.name, func(t *testing.T) { checkModel(t, md, tol, cfg.in) })
			}
		}
	}
}
