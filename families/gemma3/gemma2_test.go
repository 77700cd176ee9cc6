package gemma3

import (
	"math"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/load"
)

func gemma2Config() map[string]any {
	return map[string]any{
		"architectures": []any{"Gemma2ForCausalLM"}, "model_type": "gemma2",
		"vocab_size": 64.0, "hidden_size": 32.0, "intermediate_size": 48.0, "num_hidden_layers": 4.0,
		"num_attention_heads": 4.0, "num_key_value_heads": 2.0, "head_dim": 16.0,
		"rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 64.0,
		"sliding_window": 4.0, "query_pre_attn_scalar": 16.0,
		"attn_logit_softcapping": 50.0, "final_logit_softcapping": 3.0,
	}
}

var toks = []int32{1, 5, 9, 33, 2, 60, 17, 41}

// TestGemma2 runs Gemma 2's settings (alternating local and global layers,
// (1+w) norms, soft caps) through the step laws, checks that the final
// soft cap bounds the logits, and that the GGUF form of the model (norms
// with the one folded in) gives the same logits.
func TestGemma2(t *testing.T) {
	m, err := FromHF(gemma2Config())
	if err != nil {
		t.Fatal(err)
	}
	d := m.(*families.Decoder)
	if w := d.Windows; len(w) != 4 || w[0] != 4 || w[1] != 0 || w[2] != 4 || w[3] != 0 || d.QKNorm {
		t.Fatalf("gemma2 layers: windows %v, QK norm %v", w, d.QKNorm)
	}
	w := familytest.Synth(t, m, 9)
	for name, v := range w {
		if strings.HasSuffix(name, "norm.weight") {
			for i := range v {
				v[i] -= 1 // Hugging Face stores offsets from one
			}
		}
	}
	familytest.CheckLayouts(t, m, familytest.MapBinder(w), toks, 16)

	n := len(toks)
	shape := families.StepShape{Rows: 1, New: n, Capacity: 16, Logits: families.AllTokens}
	want, err := familytest.NewRunner(m, familytest.MapBinder(w)).Step(shape, toks, familytest.Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, x := range want {
		if math.Abs(float64(x)) >= 3 {
			t.Fatalf("logit %v escapes the soft cap 3", x)
		}
	}
	g, err := m.Trace(families.StepSpec{Program: families.Decode, Shape: shape}, poot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	tanh := 0
	for _, e := range g.Eqns() {
		if sc := g.Scope(e.Scope); e.Op == poot.Tanh && (strings.HasSuffix(sc, "/attention") || strings.HasPrefix(sc, "head")) {
			tanh++
		}
	}
	if tanh != 4+1 {
		t.Errorf("%d soft caps, want one per layer and one on the logits", tanh)
	}

	kvs, err := d.GGUFMetadata()
	if err != nil {
		t.Fatal(err)
	}
	folded := map[string][]float32{}
	for name, v := range w {
		v = append([]float32(nil), v...)
		if strings.HasSuffix(name, "norm.weight") {
			for i := range v {
				v[i]++
			}
		}
		folded[name] = v
	}
	c, err := load.Open(familytest.WriteGGUF(t, m, kvs, folded))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	gm, err := FromGGUF(c.GGUF())
	if err != nil {
		t.Fatal(err)
	}
	got, err := familytest.NewRunner(gm, familytest.LoadBinder(c, gm.Weights())).Step(shape, toks, familytest.Seq(0, n), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if diff := familytest.MaxDiff32(got, want); diff > 1e-5 {
		t.Errorf("GGUF form of the Gemma 2 model: max |Δlogit| %.3g", diff)
	}
}
