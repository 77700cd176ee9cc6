package llama4

import (
	"fmt"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

func unsupported(key, format string, args ...any) error {
	return &families.ConfigError{Source: "llama4", Key: key, Err: families.ErrUnsupported, Detail: fmt.Sprintf(format, args...)}
}

// ggufLayout reports whether the model's layer pattern is one a GGUF file
// can state: llama.cpp derives the pattern, the chunk size and the
// temperature from two keys and the expert count.
func (m *Model) ggufLayout() (chunked bool, period int, err error) {
	chunked = m.Chunk > 0
	period = ggufPeriod
	if chunked {
		// The period is the distance between the global layers.
		for l, c := range m.Chunked {
			if !c {
				period = l + 1
				break
			}
		}
	}
	want := &Model{Layers: m.Layers, Experts: m.Experts}
	want.pattern(chunked, period)
	switch {
	case chunked && m.Chunk != ggufChunk:
		return false, 0, unsupported("attention_chunk_size", "GGUF readers fix chunks at %d positions, the model has %d", ggufChunk, m.Chunk)
	case fmt.Sprint(want.Chunked, want.NoRope) != fmt.Sprint(m.Chunked, m.NoRope):
		return false, 0, unsupported("no_rope_layers", "the layer pattern %v (chunked) / %v (no rope) has no GGUF form", m.Chunked, m.NoRope)
	case chunked != (m.TempFloorScale > 0) || (chunked && (m.TempFloorScale != tempFloorScale || m.TempScale != tempScale)):
		return false, 0, unsupported("attn_temperature_tuning", "GGUF readers tune the temperature with floor %d and scale %g exactly when chunking", tempFloorScale, tempScale)
	case m.QKNorm != (m.Experts != 128):
		return false, 0, unsupported("use_qk_norm", "GGUF readers decide the QK norms by the expert count (none with 128)")
	case m.Rope.Scaling != ops.ScaleNone || m.Rope.FreqFactors:
		return false, 0, unsupported("rope_scaling", "rope scaling is stored as a rope_freqs table in GGUF; write the model without it")
	}
	return chunked, period, nil
}

// GGUFMetadata writes the keys FromGGUF reads back to the same model.
func (m *Model) GGUFMetadata() ([]gguf.KV, error) {
	chunked, period, err := m.ggufLayout()
	if err != nil {
		return nil, err
	}
	kvs := []gguf.KV{{Key: gguf.KeyArchitecture, Value: gguf.ValueOf("llama4")}}
	put := func(key string, v gguf.Value) { kvs = append(kvs, gguf.KV{Key: "llama4." + key, Value: v}) }
	u := func(n int) gguf.Value { return gguf.ValueOf(uint32(n)) }
	f := func(x float64) gguf.Value { return gguf.ValueOf(float32(x)) }
	if m.MaxContext > 0 {
		put("context_length", u(m.MaxContext))
	}
	put("embedding_length", u(m.Dim))
	put("block_count", u(m.Layers))
	put("feed_forward_length", u(m.FFN))
	put("attention.head_count", u(m.Heads))
	put("attention.head_count_kv", u(m.KVHeads))
	put("attention.key_length", u(m.HeadDim))
	put("attention.value_length", u(m.HeadDim))
	put("attention.layer_norm_rms_epsilon", f(m.Eps))
	put("rope.freq_base", f(m.Rope.Theta))
	put("rope.dimension_count", u(m.Rope.Dims))
	put("vocab_size", u(m.Vocab))
	put("expert_count", u(m.Experts))
	put("expert_used_count", u(m.Used))
	put("expert_feed_forward_length", u(m.ExpertFFN))
	put("interleave_moe_layer_step", u(m.MoEStep))
	if !chunked {
		put("attention.sliding_window", u(0))
	} else if period != ggufPeriod {
		put("attention.sliding_window_pattern", u(period))
	}
	if m.AttnScale != 0 {
		put("attention.scale", f(m.AttnScale))
	}
	return kvs, nil
}

// HFConfig writes the config.json of a Llama4ForCausalLM.
func (m *Model) HFConfig() (map[string]any, error) {
	if m.Rope.FreqFactors {
		return nil, unsupported("rope_freqs.weight", "GGUF frequency factors have no config.json form")
	}
	if m.AttnScale != 0 {
		return nil, unsupported("attention.scale", "a score scale has no config.json form")
	}
	noRope := make([]int, m.Layers)
	for l, nr := range m.NoRope {
		if !nr {
			noRope[l] = 1
		}
		if m.Chunked[l] != (m.Chunk > 0 && !nr) {
			return nil, unsupported("attention_chunk_size", "Hugging Face chunks exactly the layers with rope")
		}
	}
	cfg := map[string]any{
		"architectures": []any{"Llama4ForCausalLM"}, "model_type": "llama4_text",
		"vocab_size": m.Vocab, "hidden_size": m.Dim, "num_hidden_layers": m.Layers,
		"num_attention_heads": m.Heads, "num_key_value_heads": m.KVHeads, "head_dim": m.HeadDim,
		"intermediate_size": m.ExpertFFN, "intermediate_size_mlp": m.FFN,
		"num_local_experts": m.Experts, "num_experts_per_tok": m.Used, "interleave_moe_layer_step": m.MoEStep,
		"rms_norm_eps": m.Eps, "rope_theta": m.Rope.Theta, "max_position_embeddings": m.MaxContext,
		"tie_word_embeddings": m.Tied, "no_rope_layers": noRope, "use_qk_norm": m.QKNorm,
		"attn_temperature_tuning": m.TempFloorScale > 0, "torch_dtype": "float32",
	}
	if m.Chunk > 0 {
		cfg["attention_chunk_size"] = m.Chunk
	}
	if m.TempFloorScale > 0 {
		cfg["floor_scale"], cfg["attn_scale"] = m.TempFloorScale, m.TempScale
	}
	switch c := m.Rope.RopeConfig; c.Scaling {
	case ops.ScaleNone:
	case ops.ScaleLlama3:
		cfg["rope_scaling"] = map[string]any{"rope_type": "llama3", "factor": c.Factor, "low_freq_factor": c.LowFreqFactor,
			"high_freq_factor": c.HighFreqFactor, "original_max_position_embeddings": c.OrigContext}
	default:
		return nil, unsupported("rope_scaling", "scaling %v", c.Scaling)
	}
	return cfg, nil
}

// HFTensor returns v unchanged: Llama 4 stores the same rotary layout in
// both containers, and its norms are plain.
func (m *Model) HFTensor(name string, v []float32) []float32 { return v }
