package qwen3moe

import "github.com/pootlabs/poot/families"

// hfStyle writes the config.json keys of Qwen3MoeForCausalLM: the
// experts and the dense layers among them.
func hfStyle() families.HFStyle {
	return families.HFStyle{Architecture: "Qwen3MoeForCausalLM", ModelType: "qwen3_moe", Keys: func(d *families.Decoder, cfg map[string]any) {
		cfg["num_experts"], cfg["num_experts_per_tok"] = d.MoE.Experts, d.MoE.Used
		cfg["moe_intermediate_size"], cfg["norm_topk_prob"] = d.MoE.FFN, d.MoE.Renormalize
		if d.MoELayers != nil {
			only := []int{}
			for l, routed := range d.MoELayers {
				if !routed {
					only = append(only, l)
				}
			}
			cfg["mlp_only_layers"] = only
		}
	}}
}
