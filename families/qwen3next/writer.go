package qwen3next

import (
	"fmt"
	"math"
	"strings"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
)

// GGUFMetadata writes llama.cpp's keys of the model's architecture.
func (m *Model) GGUFMetadata() ([]gguf.KV, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	if m.MoE != nil && !m.MoE.Renormalize {
		return nil, &families.ConfigError{Source: m.Name, Key: "norm_topk_prob", Err: families.ErrUnsupported, Detail: "llama.cpp always renormalises the routing weights"}
	}
	kvs, err := m.Decoder.GGUFMetadata()
	if err != nil {
		return nil, err
	}
	put := func(key string, v gguf.Value) { kvs = append(kvs, gguf.KV{Key: m.Name + "." + key, Value: v}) }
	u := func(n int) gguf.Value { return gguf.ValueOf(uint32(n)) }
	if m.MoE != nil {
		put("expert_shared_feed_forward_length", u(m.SharedFFN))
	}
	if m.variant().qwen35 {
		put("rope.dimension_sections", gguf.ArrayOf([]int32{int32(m.Sections[0]), int32(m.Sections[1]), int32(m.Sections[2]), int32(m.Sections[3])}))
	}
	put("ssm.conv_kernel", u(m.ConvKernel))
	put("ssm.state_size", u(m.StateSize))
	put("ssm.group_count", u(m.KeyHeads))
	put("ssm.time_step_rank", u(m.ValueHeads))
	put("ssm.inner_size", u(m.ValueHeads*m.StateSize))
	if interval, ok := m.interval(); ok {
		put("full_attention_interval", u(interval))
	} else {
		layers := make([]uint32, m.Layers)
		for l, rec := range m.Recurrent {
			if rec {
				layers[l] = 1
			}
		}
		put("attention.recurrent_layers", gguf.ArrayOf(layers))
	}
	if m.ExpertScale != 0 {
		put("expert_weights_scale", gguf.ValueOf(float32(m.ExpertScale)))
	}
	if m.AttnScale != 0 {
		put("attention.scale", gguf.ValueOf(float32(m.AttnScale)))
	}
	return kvs, nil
}

// HFConfig writes the config.json of the model's architecture.
func (m *Model) HFConfig() (map[string]any, error) {
	unsupported := func(key, detail string) (map[string]any, error) {
		return nil, &families.ConfigError{Source: m.Name, Key: key, Err: families.ErrUnsupported, Detail: detail}
	}
	qwen35 := m.variant().qwen35
	switch err := m.Validate(); {
	case err != nil:
		return nil, err
	case !m.Fused && !qwen35:
		return unsupported("linear_attn.in_proj_qkvz", "Hugging Face stores q, k, v and z as one projection whose rows interleave them by key head; this model's attn_qkv and attn_gate cannot be written as it")
	case m.ExpertScale != 0 || m.AttnScale != 0:
		return unsupported("expert_weights_scale", "the config.json has no routed or attention scale")
	case qwen35 && stillPairs(m.Sections, m.Rope.Dims/2) != nil:
		return unsupported("rope.dimension_sections", fmt.Sprintf("sections %v leave rotary pairs at position 0, which Hugging Face rotates", m.Sections))
	}
	cfg, err := m.Decoder.HFConfig()
	if err != nil {
		return nil, err
	}
	types := make([]any, m.Layers)
	for l, rec := range m.Recurrent {
		types[l] = "full_attention"
		if rec {
			types[l] = "linear_attention"
		}
	}
	cfg["layer_types"] = types
	if n, ok := m.interval(); ok {
		cfg["full_attention_interval"] = n
	}
	cfg["partial_rotary_factor"] = float64(m.Rope.Dims) / float64(m.HeadDim)
	if qwen35 {
		cfg["rope_parameters"] = map[string]any{"rope_type": "default", "rope_theta": m.Rope.Theta, "partial_rotary_factor": cfg["partial_rotary_factor"],
			"mrope_section": []any{m.Sections[0], m.Sections[1], m.Sections[2]}, "mrope_interleaved": true}
	}
	cfg["linear_conv_kernel_dim"], cfg["linear_key_head_dim"], cfg["linear_value_head_dim"] = m.ConvKernel, m.StateSize, m.StateSize
	cfg["linear_num_key_heads"], cfg["linear_num_value_heads"] = m.KeyHeads, m.ValueHeads
	if m.MoE != nil {
		cfg["num_experts"], cfg["num_experts_per_tok"], cfg["moe_intermediate_size"] = m.MoE.Experts, m.MoE.Used, m.MoE.FFN
		cfg["norm_topk_prob"], cfg["shared_expert_intermediate_size"] = m.MoE.Renormalize, m.SharedFFN
	}
	cfg["hidden_act"] = "silu"
	return cfg, nil
}

// HFTensor converts a canonical (GGUF) tensor to its Hugging Face form: the
// RMSNorms other than the gated one lose the one llama.cpp folded in, the
// stored rate A becomes A_log, and tiled value heads are grouped again.
func (m *Model) HFTensor(name string, v []float32) []float32 {
	if per := m.ValueHeads / max(m.KeyHeads, 1); m.TiledHeads && per > 1 {
		kd := 2 * m.KeyHeads * m.StateSize
		regroup := func(x []float32, outer int) { copy(x, regroupHeads(x, outer, per, m.KeyHeads)) }
		_, role, _ := strings.Cut(strings.TrimPrefix(name, "blk."), ".")
		switch role {
		case "attn_qkv.weight":
			regroup(v[kd*m.Dim:], 1)
		case "ssm_conv1d.weight":
			regroup(v[kd*m.ConvKernel:], 1)
		case "attn_gate.weight", "ssm_beta.weight", "ssm_alpha.weight", "ssm_dt.bias", "ssm_a":
			regroup(v, 1)
		case "ssm_out.weight":
			regroup(v, m.Dim)
		}
	}
	switch {
	case strings.HasSuffix(name, ".ssm_a"):
		for i, a := range v {
			v[i] = float32(math.Log(-float64(a)))
		}
	case strings.HasSuffix(name, "norm.weight") && !strings.HasSuffix(name, "ssm_norm.weight"):
		for i := range v {
			v[i]--
		}
	}
	return v
}
