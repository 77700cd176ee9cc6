package llama

import (
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
)

// qwen25Config has the shapes of a 24-layer dense decoder (Qwen2.5-0.5B:
// width 896, 14 query and 2 key/value heads of 64, FFN 4864, vocabulary
// 151936, QKV biases, tied head).
func qwen25Config() map[string]any {
	return map[string]any{
		"architectures": []any{"Qwen2ForCausalLM"}, "model_type": "qwen2",
		"vocab_size": 151936.0, "hidden_size": 896.0, "intermediate_size": 4864.0,
		"num_hidden_layers": 24.0, "num_attention_heads": 14.0, "num_key_value_heads": 2.0,
		"rms_norm_eps": 1e-6, "rope_theta": 1e6, "max_position_embeddings": 32768.0,
		"tie_word_embeddings": true,
	}
}

// BenchmarkTraceLlama24 traces one decode step (one row, one new token,
// capacity 4096) of a 24-layer dense decoder through the family code, and
// reports the equations and dispatches of the graph.
func BenchmarkTraceLlama24(b *testing.B) {
	m, err := FromHF(qwen25Config())
	if err != nil {
		b.Fatal(err)
	}
	spec := families.StepSpec{Program: families.Decode, Shape: families.StepShape{Rows: 1, New: 1, Capacity: 4096}}
	var g *poot.Graph
	for b.Loop() {
		if g, err = m.Trace(spec, poot.Limits{}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(g.NumEqns()), "eqns")
	b.ReportMetric(float64(poot.DispatchCount(g)), "dispatches")
}
