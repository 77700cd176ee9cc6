package llama

import "github.com/pootlabs/poot/families"

// hfStyle writes the model back as the Hugging Face architecture of its
// model type (Mixtral when it has experts).
func hfStyle(modelType string, d *families.Decoder) families.HFStyle {
	arch := map[string]string{"llama": "LlamaForCausalLM", "mistral": "MistralForCausalLM",
		"qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM"}[modelType]
	if d.MoE != nil {
		return families.HFStyle{Architecture: "MixtralForCausalLM", ModelType: "mixtral", Keys: func(d *families.Decoder, cfg map[string]any) {
			cfg["num_local_experts"], cfg["num_experts_per_tok"], cfg["intermediate_size"] = d.MoE.Experts, d.MoE.Used, d.MoE.FFN
		}}
	}
	return families.HFStyle{Architecture: arch, ModelType: modelType}
}
