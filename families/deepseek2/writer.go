package deepseek2

import (
	"cmp"
	"math"

	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// GGUFMetadata writes the keys llama.cpp reads: the converter's layout
// (one latent key/value head, the heads' widths under *_mla) for split
// k_b/v_b, the older plain layout for a fused kv_b. What llama.cpp's
// reading cannot express is an ErrUnsupported ConfigError: YaRN with
// mscale ≠ mscale_all_dim or other ramp ends, groups scored by their best
// expert.
func (m *Model) GGUFMetadata() ([]gguf.KV, error) {
	c, rc, y := m.MLA, m.Routing, m.Rope
	switch {
	case y.Scaling == ops.ScaleYaRN && (cmp.Or(y.BetaFast, 32) != 32 || cmp.Or(y.BetaSlow, 1) != 1):
		return nil, unsupported("rope.scaling.yarn_beta_fast", "llama.cpp reads YaRN's ramp ends as 32 and 1 here, not %v and %v", y.BetaFast, y.BetaSlow)
	case y.Scaling == ops.ScaleYaRN && !(y.MScale == y.MScaleAllDim && y.MScale != 0) && !(y.MScaleAllDim == 1 && y.MScale == 2+0.1*math.Log(y.Factor)):
		return nil, unsupported("rope.scaling.yarn_log_multiplier", "llama.cpp takes mscale = mscale_all_dim, here %v and %v", y.MScale, y.MScaleAllDim)
	case rc.Groups > 1 && rc.GroupScore != ops.GroupTop2Sum:
		return nil, unsupported("expert_group_count", "llama.cpp scores a group by its two best experts")
	}
	kvs := []gguf.KV{{Key: gguf.KeyArchitecture, Value: gguf.ValueOf(family)}}
	put := func(key string, v gguf.Value) { kvs = append(kvs, gguf.KV{Key: family + "." + key, Value: v}) }
	u := func(key string, n int) { put(key, gguf.ValueOf(uint32(n))) }
	fl := func(key string, x float64) { put(key, gguf.ValueOf(float32(x))) }
	routes := m.DenseLayers < m.Layers
	for _, k := range m.ints() {
		if k.gguf != "" && (*k.p != 0 || (k.need == routed && routes)) {
			u(k.gguf, *k.p)
		}
	}
	u("block_count", m.Layers)
	u("vocab_size", m.Vocab)
	fl("attention.layer_norm_rms_epsilon", m.Eps)
	fl("rope.freq_base", y.Theta)
	// The converter's layout is one key/value head of the latent and the
	// rotary key; the heads' own widths go under *_mla.
	heads, keys, values := c.Heads, c.NopeDim+c.RopeDim, c.ValueDim
	if !m.Fused {
		u("attention.key_length_mla", keys)
		u("attention.value_length_mla", values)
		heads, keys, values = 1, c.KVLoraRank+c.RopeDim, c.KVLoraRank
	}
	u("attention.head_count_kv", heads)
	u("attention.key_length", keys)
	u("attention.value_length", values)
	if y.Scaling == ops.ScaleYaRN {
		put("rope.scaling.type", gguf.ValueOf("yarn"))
		fl("rope.scaling.factor", y.Factor)
		u("rope.scaling.original_context_length", y.OrigContext)
		if y.MScale == y.MScaleAllDim {
			fl("rope.scaling.yarn_log_multiplier", 0.1*y.MScaleAllDim)
		}
	}
	if routes {
		put("expert_weights_norm", gguf.ValueOf(rc.Renormalize))
		u("expert_gating_func", map[ops.Gating]int{ops.SoftmaxTopK: 1, ops.SigmoidTopK: 2}[rc.Gating])
		fl("expert_weights_scale", cmp.Or(rc.Scale, 1))
	}
	return kvs, nil
}

// HFConfig writes the config.json of DeepSeek's modeling code: V3 for
// sigmoid gating or a selection bias, V2 otherwise. A model with split
// k_b/v_b has no Hugging Face form here (the checkpoint stores kv_b_proj
// whole, one tensor from two canonical ones), nor has routing that
// DeepSeek's gates do not implement.
func (m *Model) HFConfig() (map[string]any, error) {
	rc, y := m.Routing, m.Rope
	v3 := rc.Gating == ops.SigmoidTopK || m.SelectionBias
	arch, kind, method := "DeepseekV2ForCausalLM", "deepseek_v2", "greedy"
	if v3 {
		arch, kind = "DeepseekV3ForCausalLM", "deepseek_v3"
	}
	switch {
	case !m.Fused:
		return nil, unsupported("attn_k_b.weight", "Hugging Face checkpoints store kv_b_proj whole")
	case rc.Renormalize && rc.TopK == 1:
		return nil, unsupported("norm_topk_prob", "DeepSeek's gates do not normalise a single weight")
	case m.SelectionBias:
		method = "noaux_tc"
	case v3:
		return nil, unsupported("topk_method", "DeepSeek-V3's gate chooses with a selection bias")
	case rc.Renormalize && cmp.Or(rc.Scale, 1) != 1:
		return nil, unsupported("routed_scaling_factor", "DeepSeek-V2's gate does not scale normalised weights")
	case rc.Groups > 1 && rc.GroupScore == ops.GroupMax:
		method = "group_limited_greedy"
	case rc.Groups > 1:
		return nil, unsupported("topk_method", "DeepSeek-V2's gate scores a group by its best expert")
	}
	cfg := map[string]any{"architectures": []any{arch}, "model_type": kind, "vocab_size": m.Vocab, "num_hidden_layers": m.Layers,
		"num_key_value_heads": m.MLA.Heads, "rms_norm_eps": m.Eps, "rope_theta": y.Theta, "tie_word_embeddings": m.Tied,
		"attention_bias": false, "torch_dtype": "float32", "moe_layer_freq": 1, "norm_topk_prob": rc.Renormalize,
		"routed_scaling_factor": cmp.Or(rc.Scale, 1), "topk_method": method,
		"scoring_func": map[ops.Gating]string{ops.SoftmaxTopK: "softmax", ops.SigmoidTopK: "sigmoid"}[rc.Gating]}
	for _, k := range m.ints() {
		cfg[k.hf] = *k.p
	}
	if m.QLoraRank == 0 {
		cfg["q_lora_rank"] = nil
	}
	cfg["n_group"], cfg["topk_group"] = max(rc.Groups, 1), max(rc.TopGroups, 1)
	if y.Scaling == ops.ScaleYaRN {
		cfg["rope_scaling"] = map[string]any{"type": "yarn", "factor": y.Factor, "original_max_position_embeddings": y.OrigContext,
			"beta_fast": cmp.Or(y.BetaFast, 32), "beta_slow": cmp.Or(y.BetaSlow, 1), "mscale": y.MScale, "mscale_all_dim": y.MScaleAllDim}
	}
	return cfg, nil
}

// HFTensor returns v: the canonical and the Hugging Face forms agree.
func (m *Model) HFTensor(name string, v []float32) []float32 { return v }
