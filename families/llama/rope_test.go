package llama

import (
	"testing"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/ops"
)

func llama31Config() map[string]any {
	return map[string]any{
		"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama",
		"vocab_size": 64.0, "hidden_size": 32.0, "intermediate_size": 48.0, "num_hidden_layers": 2.0,
		"num_attention_heads": 4.0, "num_key_value_heads": 2.0,
		"rms_norm_eps": 1e-5, "rope_theta": 500000.0, "max_position_embeddings": 256.0,
		"rope_scaling": map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
			"high_freq_factor": 4.0, "original_max_position_embeddings": 16.0},
	}
}

// TestLlama3RopeScaling checks the two routes to Llama 3.1's scaled
// frequencies against each other: config.json's rope_scaling, computed in
// the graph, and a GGUF-style rope_freqs table of divisors (what
// llama.cpp's converter writes), computed on the host in float64.
func TestLlama3RopeScaling(t *testing.T) {
	m, err := FromHF(llama31Config())
	if err != nil {
		t.Fatal(err)
	}
	d := m.(*families.Decoder)
	if d.Rope.Scaling != ops.ScaleLlama3 {
		t.Fatalf("scaling %v", d.Rope.Scaling)
	}
	plain := *d
	plain.Rope.RopeConfig.Scaling = ops.ScaleNone
	table := plain
	table.Rope.FreqFactors = true

	base, err := plain.Rope.InvFreq()
	if err != nil {
		t.Fatal(err)
	}
	scaled, err := d.Rope.InvFreq()
	if err != nil {
		t.Fatal(err)
	}
	w := familytest.Synth(t, m, 4)
	factors := make([]float32, len(base))
	for i := range base {
		factors[i] = float32(base[i] / scaled[i])
	}
	tw := map[string][]float32{"rope_freqs.weight": factors}
	for k, v := range w {
		tw[k] = v
	}

	seq := []int32{1, 5, 9, 33, 2, 60, 17, 41, 7, 8, 9, 10}
	n := len(seq)
	shape := families.StepShape{Rows: 1, New: n, Capacity: 64, Logits: families.AllTokens}
	pos := familytest.Seq(40, n) // far enough for the low frequencies to matter
	run := func(m families.Model, w map[string][]float32) []float32 {
		out, err := familytest.NewRunner(m, familytest.MapBinder(w)).Step(shape, seq, pos, nil, nil)
		if err != nil {
			t.Fatal(err)
		}
		return out
	}
	inGraph, viaTable, unscaled := run(d, w), run(&table, tw), run(&plain, w)
	if diff := familytest.MaxDiff32(inGraph, viaTable); diff > 1e-5 {
		t.Errorf("llama3 scaling in the graph vs rope_freqs table: max |Δlogit| %.3g", diff)
	}
	if diff := familytest.MaxDiff32(inGraph, unscaled); diff < 1e-4 {
		t.Errorf("scaling changed the logits by only %.3g; the test does not exercise it", diff)
	}
}
