package mixtral

import "github.com/pootlabs/poot/families"

// hfStyle writes the config.json keys of MixtralForCausalLM: the experts
// and the window.
func hfStyle() families.HFStyle {
	return families.HFStyle{Architecture: "MixtralForCausalLM", ModelType: "mixtral", Keys: func(d *families.Decoder, cfg map[string]any) {
		cfg["num_local_experts"], cfg["num_experts_per_tok"], cfg["intermediate_size"] = d.MoE.Experts, d.MoE.Used, d.MoE.FFN
		if w := d.Window(0); w > 0 {
			cfg["sliding_window"] = w
		}
	}}
}
