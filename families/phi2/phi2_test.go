package phi2_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pootlabs/poot/driver/drivertest"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

func ref(t *testing.T, name string) *familytest.Ref {
	return familytest.ReadRef(t, filepath.Join("testdata", name+".ref.json"))
}

// TestReference holds every interpreter to llama.cpp on random Phi-2s
// with strong weights (matrices N(0, 0.25), logits spanning ±7): F32
// within 1e-3 of the logit range (ggml computes GELU through an F16
// table), F16 within 2e-3 (ggml also rounds the activations of F16
// products to F16).
func TestReference(t *testing.T) {
	for _, c := range []struct {
		name string
		frac float64
	}{{"tiny-f32", 1e-3}, {"tiny-f16", 2e-3}} {
		t.Run(c.name, func(t *testing.T) {
			r := ref(t, c.name)
			drivertest.CheckFamily(t, drivertest.Family{Checkpoint: filepath.Join("testdata", c.name+".gguf"), Ref: r, Tol: r.Relative(c.frac)})
		})
	}
}

// TestFusedQKV rewrites the F32 fixture with Q, K and V (and their
// biases) fused into attn_qkv, as older Phi-2 conversions store them: the
// family reads the fused form and gives the same logits.
func TestFusedQKV(t *testing.T) {
	c := familytest.OpenTestdata(t, "tiny-f32.gguf")
	f := c.GGUF()
	data := familytest.EditGGUF(t, f, f.KVs(), func(ts []gguf.WriterTensor) []gguf.WriterTensor {
		byName := map[string]gguf.WriterTensor{}
		for _, w := range ts {
			byName[w.Name] = w
		}
		var out []gguf.WriterTensor
		for _, w := range ts {
			var l int
			var role string
			fmt.Sscanf(w.Name, "blk.%d.%s", &l, &role)
			switch kind, _ := strings.CutPrefix(role, "attn_"); kind {
			case "k.weight", "k.bias", "v.weight", "v.bias":
				continue // in attn_qkv
			case "q.weight", "q.bias":
				p, suffix := fmt.Sprintf("blk.%d.attn_", l), kind[1:]
				parts := []gguf.WriterTensor{byName[p+"q"+suffix], byName[p+"k"+suffix], byName[p+"v"+suffix]}
				fused := gguf.WriterTensor{Name: p + "qkv" + suffix, GGMLType: w.GGMLType, Shape: w.Shape.Clone()}
				fused.Shape[0] = 0
				for _, part := range parts {
					fused.Shape[0] += part.Shape[0]
					fused.Data = append(fused.Data, part.Data...)
				}
				w = fused
			}
			out = append(out, w)
		}
		return out
	})
	path := filepath.Join(t.TempDir(), "fused.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	m, err := registry.FromGGUF(familytest.ParseGGUF(t, data))
	if err != nil {
		t.Fatal(err)
	}
	if d := m.(*families.Decoder); !d.FusedQKV || !d.QKVBias {
		t.Fatalf("fused file read as FusedQKV %v, QKVBias %v", d.FusedQKV, d.QKVBias)
	}
	r := ref(t, "tiny-f32")
	drivertest.CheckFamily(t, drivertest.Family{Checkpoint: path, Ref: r, Tol: r.Relative(1e-3), Interps: []string{"oracle", "cpu"}})
}

// TestBrokenFamiliesFail is the tolerance's own test: Phi-2 with the
// rotary layout wrong (adjacent pairs instead of NeoX halves), rope over
// the whole head instead of its first half, or no rope at all, all differ
// from llama.cpp by far more than TestReference allows, on the same
// strong-weight fixture.
func TestBrokenFamiliesFail(t *testing.T) {
	c := familytest.OpenTestdata(t, "tiny-f32.gguf")
	m, err := registry.FromGGUF(c.GGUF())
	if err != nil {
		t.Fatal(err)
	}
	r := ref(t, "tiny-f32")
	tol := r.Relative(1e-3)
	for _, b := range []struct {
		name   string
		broken func(d *families.Decoder)
	}{
		{"interleaved rope", func(d *families.Decoder) { d.Rope.Layout = ops.RopeInterleaved }},
		{"rope over the whole head", func(d *families.Decoder) { d.Rope.Dims = d.HeadDim }},
		{"no rope", func(d *families.Decoder) { d.Rope.Theta = 1e30 }},
	} {
		t.Run(b.name, func(t *testing.T) {
			d := *m.(*families.Decoder)
			b.broken(&d)
			got := familytest.LogitsOn(t, nil, &d, familytest.LoadBinder(c, d.Weights()), r.Tokens()[:len(r.Logits)], 64)
			worst := 0.0
			for i, row := range got {
				worst = max(worst, familytest.MaxDiff(row, r.Logits[i]))
			}
			if worst < 20*tol {
				t.Errorf("broken family within %.3g of llama.cpp (tolerance %.3g): the reference cannot tell", worst, tol)
			}
			t.Logf("max |Δlogit| %.3g, %.0f× the tolerance", worst, worst/tol)
		})
	}
}

// TestSafetensors writes the tiny preset as a Hugging Face directory
// (config.json, PhiForCausalLM names: dense, fc1, fc2, final_layernorm)
// from the seed of the F32 fixture: the same weights, so llama.cpp's
// outputs on the GGUF hold for it.
func TestSafetensors(t *testing.T) {
	dir := drivertest.Synth(t, "phi2", "tiny", synth.Options{Format: "safetensors", Seed: 7, Scale: 0.25})
	r := ref(t, "tiny-f32")
	drivertest.CheckFamily(t, drivertest.Family{Checkpoint: dir, Ref: r, Tol: r.Relative(1e-3), Interps: []string{"oracle", "cpu"}})
}
