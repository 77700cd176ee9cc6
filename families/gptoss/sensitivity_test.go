package gptoss_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/gptoss"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/ops"
)

// TestReferenceSensitivity shows that the F32 reference checks each
// feature: the model without it (sinks, biases, the window, YaRN or its
// attention factor 1 + 0.1·ln 4, the clamp) misses llama.cpp's logits by far more than the tolerance.
func TestReferenceSensitivity(t *testing.T) {
	ref := familytest.ReadRef(t, filepath.Join("testdata", "tiny-f32.ref.json"))
	ck, err := load.Open(filepath.Join("testdata", "tiny-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer ck.Close()
	m, err := registry.FromCheckpoint(ck)
	if err != nil {
		t.Fatal(err)
	}
	values := map[string][]float32{}
	get := familytest.GGUFValues(ck.GGUF())
	for _, s := range familytest.Tensors(t, m) {
		if values[s.Name], err = get(s.Name); err != nil {
			t.Fatal(err)
		}
	}
	n := len(ref.Logits)
	worst := func(m families.Model, w map[string][]float32) float64 {
		out, err := familytest.NewRunner(m, familytest.MapBinder(w)).Step(families.StepShape{Rows: 1, New: n, Capacity: 32, Logits: families.AllTokens},
			ref.Tokens()[:n], familytest.Seq(0, n), nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		d, vocab := 0.0, m.Schema().Vocab
		for i := range n {
			d = max(d, familytest.MaxDiff(out[i*vocab:(i+1)*vocab], ref.Logits[i]))
		}
		return d
	}
	if d := worst(m, values); d > 1e-3 {
		t.Fatalf("unchanged model: max |Δlogit| %.3g", d)
	}
	without := func(suffix string, v float32) map[string][]float32 {
		w := map[string][]float32{}
		for name, x := range values {
			if strings.HasSuffix(name, suffix) {
				x = append([]float32(nil), x...)
				for i := range x {
					x[i] = v
				}
			}
			w[name] = x
		}
		return w
	}
	changed := func(f func(m *gptoss.Model)) families.Model {
		c := *m.(*gptoss.Model)
		d := *c.Decoder
		d.Windows = append([]int(nil), d.Windows...)
		c.Decoder = &d
		f(&c)
		return &c
	}
	for _, c := range []struct {
		name string
		m    families.Model
		w    map[string][]float32
	}{
		{"no sinks", m, without("attn_sinks.weight", -1e30)},
		{"no attention output bias", m, without("attn_output.bias", 0)},
		{"no router bias", m, without("ffn_gate_inp.bias", 0)},
		{"no expert down bias", m, without("ffn_down_exps.bias", 0)},
		{"no window", changed(func(m *gptoss.Model) { m.Windows[0] = 0 }), values},
		{"no YaRN", changed(func(m *gptoss.Model) { m.Rope.Scaling = ops.ScaleNone }), values},
		{"YaRN without its attention factor", changed(func(m *gptoss.Model) { m.Rope.AttnFactor = 1 }), values},
		{"no clamp", changed(func(m *gptoss.Model) { m.Limit = 1e9 }), values},
	} {
		d := worst(c.m, c.w)
		t.Logf("%s: max |Δlogit| %.3g", c.name, d)
		if d < 1e-2 {
			t.Errorf("%s: max |Δlogit| only %.3g: the reference does not check it", c.name, d)
		}
	}
}
