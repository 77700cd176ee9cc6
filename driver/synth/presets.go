package synth

// Preset is a named model shape: a Hugging Face config.json for a family.
type Preset struct {
	Name        string
	Family      string
	Description string
	Config      map[string]any
}

// TinyVocab is the vocabulary size of the tiny presets.
const TinyVocab = 512

func tinyLlama() map[string]any {
	return map[string]any{
		"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama",
		"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
		"intermediate_size": 128, "vocab_size": TinyVocab, "max_position_embeddings": 256,
		"rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": false,
	}
}

// Presets lists the presets, tiny shapes first.
func Presets() []Preset {
	gemma := tinyLlama()
	gemma["architectures"], gemma["model_type"] = []any{"Gemma3ForCausalLM"}, "gemma3_text"
	gemma["num_hidden_layers"], gemma["head_dim"], gemma["sliding_window"], gemma["sliding_window_pattern"] = 3, 16, 4, 3
	gemma["rope_theta"], gemma["rope_local_base_freq"], gemma["rms_norm_eps"] = 1e6, 1e4, 1e-6
	delete(gemma, "tie_word_embeddings")
	qwen := tinyLlama()
	qwen["architectures"], qwen["model_type"] = []any{"Qwen3MoeForCausalLM"}, "qwen3_moe"
	qwen["num_experts"], qwen["num_experts_per_tok"], qwen["moe_intermediate_size"], qwen["head_dim"] = 4, 2, 32, 16
	mixtral := tinyLlama()
	mixtral["architectures"], mixtral["model_type"] = []any{"MixtralForCausalLM"}, "mixtral"
	mixtral["num_local_experts"], mixtral["num_experts_per_tok"] = 4, 2
	llama4 := map[string]any{
		"architectures": []any{"Llama4ForCausalLM"}, "model_type": "llama4_text",
		"hidden_size": 64, "num_hidden_layers": 4, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16,
		"intermediate_size": 32, "intermediate_size_mlp": 96, "num_local_experts": 4, "num_experts_per_tok": 1,
		"interleave_moe_layer_step": 2, "vocab_size": TinyVocab, "max_position_embeddings": 256,
		"rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": false, "attention_chunk_size": 8192,
		"use_qk_norm": true, "attn_temperature_tuning": true, "floor_scale": 8192, "attn_scale": 0.1,
	}
	scout := map[string]any{
		"architectures": []any{"Llama4ForCausalLM"}, "model_type": "llama4_text",
		"hidden_size": 5120, "num_hidden_layers": 48, "num_attention_heads": 40, "num_key_value_heads": 8, "head_dim": 128,
		"intermediate_size": 8192, "intermediate_size_mlp": 16384, "num_local_experts": 16, "num_experts_per_tok": 1,
		"interleave_moe_layer_step": 1, "vocab_size": 202048, "max_position_embeddings": 10485760,
		"rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": false, "attention_chunk_size": 8192,
		"use_qk_norm": true, "attn_temperature_tuning": true, "floor_scale": 8192, "attn_scale": 0.1,
		"rope_scaling": map[string]any{"rope_type": "llama3", "factor": 16.0, "low_freq_factor": 1.0,
			"high_freq_factor": 1.0, "original_max_position_embeddings": 8192},
	}
	oss := tinyLlama()
	oss["architectures"], oss["model_type"], oss["head_dim"], oss["num_local_experts"], oss["num_experts_per_tok"], oss["intermediate_size"], oss["sliding_window"] = []any{"GptOssForCausalLM"}, "gpt_oss", 16, 4, 2, 32, 4
	oss["rope_theta"], oss["rope_scaling"] = 150000.0, map[string]any{"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64}
	oss20b := map[string]any{"architectures": []any{"GptOssForCausalLM"}, "model_type": "gpt_oss", "hidden_size": 2880, "num_hidden_layers": 24, "num_attention_heads": 64, "num_key_value_heads": 8, "head_dim": 64, "intermediate_size": 2880, "num_local_experts": 32, "num_experts_per_tok": 4, "vocab_size": 201088, "max_position_embeddings": 131072, "rms_norm_eps": 1e-5, "rope_theta": 150000.0, "sliding_window": 128, "rope_scaling": map[string]any{"rope_type": "yarn", "factor": 32.0, "beta_fast": 32.0, "beta_slow": 1.0, "original_max_position_embeddings": 4096}}
	next := tinyLlama()
	next["architectures"], next["model_type"], next["num_hidden_layers"], next["full_attention_interval"], next["head_dim"], next["partial_rotary_factor"] = []any{"Qwen3NextForCausalLM"}, "qwen3_next", 3, 2, 16, 0.25
	next["linear_conv_kernel_dim"], next["linear_key_head_dim"], next["linear_value_head_dim"], next["linear_num_key_heads"], next["linear_num_value_heads"] = 4, 16, 16, 2, 4
	next["num_experts"], next["num_experts_per_tok"], next["moe_intermediate_size"], next["shared_expert_intermediate_size"], next["rms_norm_eps"], next["rope_theta"] = 4, 2, 16, 16, 1e-6, 1e6
	olmo2 := tinyLlama()
	olmo2["architectures"], olmo2["model_type"], olmo2["rms_norm_eps"], olmo2["rope_theta"] = []any{"Olmo2ForCausalLM"}, "olmo2", 1e-6, 500000.0
	olmo2b := map[string]any{"architectures": []any{"Olmo2ForCausalLM"}, "model_type": "olmo2", "hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 16, "num_key_value_heads": 16,
		"intermediate_size": 8192, "vocab_size": 100352, "max_position_embeddings": 4096, "rms_norm_eps": 1e-6, "rope_theta": 500000.0, "tie_word_embeddings": false}
	phi3 := tinyLlama()
	phi3["architectures"], phi3["model_type"], phi3["partial_rotary_factor"] = []any{"Phi3ForCausalLM"}, "phi3", 0.5
	phi3["original_max_position_embeddings"], phi3["sliding_window"] = 256, 128
	phi3mini := map[string]any{"architectures": []any{"Phi3ForCausalLM"}, "model_type": "phi3", "hidden_size": 3072, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 32,
		"intermediate_size": 8192, "vocab_size": 32064, "max_position_embeddings": 4096, "original_max_position_embeddings": 4096, "sliding_window": 2047, "rms_norm_eps": 1e-5, "rope_theta": 10000.0}
	// llama.cpp's converter writes Phi-2's feed-forward width as four
	// times the model's, whatever config.json says, as Phi-2's is.
	phi2 := map[string]any{"architectures": []any{"PhiForCausalLM"}, "model_type": "phi", "hidden_size": 64, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 4, "intermediate_size": 256, "vocab_size": TinyVocab, "max_position_embeddings": 256,
		"layer_norm_eps": 1e-5, "rope_theta": 10000.0, "partial_rotary_factor": 0.5}
	phi2big := map[string]any{"architectures": []any{"PhiForCausalLM"}, "model_type": "phi", "hidden_size": 2560, "num_hidden_layers": 32,
		"num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 10240, "vocab_size": 51200, "max_position_embeddings": 2048,
		"layer_norm_eps": 1e-5, "rope_theta": 10000.0, "partial_rotary_factor": 0.4}
	stable := map[string]any{"architectures": []any{"StableLmForCausalLM"}, "model_type": "stablelm", "hidden_size": 64, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_key_value_heads": 2, "intermediate_size": 128, "vocab_size": TinyVocab, "max_position_embeddings": 256,
		"layer_norm_eps": 1e-5, "rope_theta": 10000.0, "partial_rotary_factor": 0.25, "use_qkv_bias": true}
	stablePar := map[string]any{}
	for k, v := range stable {
		stablePar[k] = v
	}
	stablePar["use_parallel_residual"] = true
	stable2 := map[string]any{"architectures": []any{"StableLmForCausalLM"}, "model_type": "stablelm", "hidden_size": 2048, "num_hidden_layers": 24,
		"num_attention_heads": 32, "num_key_value_heads": 32, "intermediate_size": 5632, "vocab_size": 100352, "max_position_embeddings": 4096,
		"layer_norm_eps": 1e-5, "rope_theta": 10000.0, "partial_rotary_factor": 0.25, "use_qkv_bias": true}
	neox := map[string]any{"architectures": []any{"GPTNeoXForCausalLM"}, "model_type": "gpt_neox", "hidden_size": 64, "num_hidden_layers": 2,
		"num_attention_heads": 4, "intermediate_size": 256, "vocab_size": TinyVocab, "max_position_embeddings": 256,
		"layer_norm_eps": 1e-5, "rotary_emb_base": 10000.0, "rotary_pct": 0.25, "use_parallel_residual": true}
	neoxSeq := map[string]any{}
	for k, v := range neox {
		neoxSeq[k] = v
	}
	neoxSeq["use_parallel_residual"] = false
	pythia := map[string]any{"architectures": []any{"GPTNeoXForCausalLM"}, "model_type": "gpt_neox", "hidden_size": 2048, "num_hidden_layers": 16,
		"num_attention_heads": 8, "intermediate_size": 8192, "vocab_size": 50304, "max_position_embeddings": 2048,
		"layer_norm_eps": 1e-5, "rotary_emb_base": 10000.0, "rotary_pct": 0.25, "use_parallel_residual": true}
	falcon := map[string]any{"architectures": []any{"FalconForCausalLM"}, "model_type": "falcon", "hidden_size": 64, "num_hidden_layers": 2,
		"num_attention_heads": 4, "num_kv_heads": 2, "ffn_hidden_size": 256, "vocab_size": TinyVocab, "max_position_embeddings": 256,
		"layer_norm_epsilon": 1e-5, "rope_theta": 10000.0, "parallel_attn": true, "bias": false, "alibi": false, "new_decoder_architecture": false, "tie_word_embeddings": false}
	falcon7b := map[string]any{"architectures": []any{"FalconForCausalLM"}, "model_type": "falcon", "hidden_size": 4544, "num_hidden_layers": 32,
		"num_attention_heads": 71, "multi_query": true, "vocab_size": 65024, "max_position_embeddings": 2048,
		"layer_norm_epsilon": 1e-5, "rope_theta": 10000.0, "parallel_attn": true, "bias": false, "alibi": false, "new_decoder_architecture": false}
	granite := tinyLlama()
	granite["architectures"], granite["model_type"], granite["attention_bias"], granite["mlp_bias"] = []any{"GraniteForCausalLM"}, "granite", true, true
	granite["embedding_multiplier"], granite["residual_multiplier"], granite["attention_multiplier"], granite["logits_scaling"] = 12.0, 0.22, 0.0625, 4.0
	granite2b := map[string]any{"architectures": []any{"GraniteForCausalLM"}, "model_type": "granite", "hidden_size": 2048, "num_hidden_layers": 40, "num_attention_heads": 32, "num_key_value_heads": 8,
		"intermediate_size": 8192, "vocab_size": 49155, "max_position_embeddings": 4096, "rms_norm_eps": 1e-5, "rope_theta": 10000.0, "tie_word_embeddings": true,
		"embedding_multiplier": 12.0, "residual_multiplier": 0.22, "attention_multiplier": 0.015625, "logits_scaling": 8.0}
	q35 := map[string]any{"architectures": []any{"Qwen3_5ForCausalLM"}, "model_type": "qwen3_5_text", "hidden_size": 64, "num_hidden_layers": 3, "full_attention_interval": 2, "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "intermediate_size": 32, "vocab_size": TinyVocab, "max_position_embeddings": 256, "rms_norm_eps": 1e-6, "tie_word_embeddings": false,
		"rope_parameters": map[string]any{"rope_theta": 1e7, "partial_rotary_factor": 0.5, "mrope_section": []any{2, 1, 1}}, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 16, "linear_value_head_dim": 16, "linear_num_key_heads": 2, "linear_num_value_heads": 4}
	q35moe := map[string]any{"architectures": []any{"Qwen3_5MoeForCausalLM"}, "model_type": "qwen3_5_moe_text", "num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 16, "shared_expert_intermediate_size": 16}
	q35a3b := map[string]any{"architectures": []any{"Qwen3_5MoeForCausalLM"}, "model_type": "qwen3_5_moe_text", "hidden_size": 2048, "num_hidden_layers": 40, "full_attention_interval": 4, "num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "vocab_size": 248320, "max_position_embeddings": 262144, "rms_norm_eps": 1e-6, "tie_word_embeddings": false,
		"rope_parameters": map[string]any{"rope_theta": 1e7, "partial_rotary_factor": 0.25, "mrope_section": []any{11, 11, 10}}, "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
		"num_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "mtp_num_hidden_layers": 1}
	q35small := map[string]any{"architectures": []any{"Qwen3_5ForCausalLM"}, "model_type": "qwen3_5_text", "hidden_size": 1024, "num_hidden_layers": 24, "full_attention_interval": 4, "num_attention_heads": 8, "num_key_value_heads": 2, "head_dim": 256, "intermediate_size": 3584, "vocab_size": 248320, "max_position_embeddings": 262144, "rms_norm_eps": 1e-6, "tie_word_embeddings": true,
		"rope_parameters": q35a3b["rope_parameters"], "linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 16, "mtp_num_hidden_layers": 1}
	for k, v := range q35 {
		if _, ok := q35moe[k]; !ok && k != "intermediate_size" {
			q35moe[k] = v
		}
	}
	llama1b := map[string]any{
		"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama",
		"hidden_size": 2048, "num_hidden_layers": 16, "num_attention_heads": 32, "num_key_value_heads": 8,
		"head_dim": 64, "intermediate_size": 8192, "vocab_size": 128256, "max_position_embeddings": 131072,
		"rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": true,
		"rope_scaling": map[string]any{"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
			"high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
	}
	llama8b := map[string]any{
		"architectures": []any{"LlamaForCausalLM"}, "model_type": "llama",
		"hidden_size": 4096, "num_hidden_layers": 32, "num_attention_heads": 32, "num_key_value_heads": 8,
		"head_dim": 128, "intermediate_size": 14336, "vocab_size": 128256, "max_position_embeddings": 131072,
		"rms_norm_eps": 1e-5, "rope_theta": 500000.0, "tie_word_embeddings": false,
		"rope_scaling": map[string]any{"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
			"high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
	}
	return []Preset{
		{"tiny", "llama", "llama, dim 64, 2 layers, 4 heads / 2 kv heads, ffn 128, vocab 512", tinyLlama()},
		{"tiny", "gemma3", "gemma3, dim 64, 3 layers (2 sliding-window, 1 global), GeGLU, vocab 512", gemma},
		{"tiny", "qwen3moe", "qwen3moe, dim 64, 2 layers, 4 experts (2 used), vocab 512", qwen},
		{"tiny", "mixtral", "mixtral, dim 64, 2 layers, 4 experts (2 used), vocab 512", mixtral},
		{"tiny", "llama4", "llama4, dim 64, 4 layers (3 chunked with rope, 1 global without), dense and routed (4 experts, 1 used, shared) layers alternating, vocab 512", llama4},
		{"scout", "llama4", "Llama-4-Scout-17B-16E text shape: dim 5120, 48 layers, 40 heads / 8 kv heads, 16 experts (1 used) and a shared expert in every layer, vocab 202048, llama3 rope scaling", scout},
		{"tiny", "gpt-oss", "gpt-oss, dim 64, 2 layers (window 4, full), 4 heads / 2 kv heads with sinks and biases, 4 experts (2 used), YaRN x4, vocab 512", oss},
		{"gpt-oss-20b", "gpt-oss", "gpt-oss-20b shape: dim 2880, 24 layers alternating window 128 and full, 64 heads / 8 kv heads, 32 experts (4 used) of 2880, vocab 201088, YaRN x32", oss20b},
		{"tiny", "qwen3next", "qwen3next, dim 64, 3 layers (gated delta net, gated attention, gated delta net), 4 experts (2 used) and a shared expert, rope on 4 of 16 channels, vocab 512", next},
		{"80b-a3b", "qwen3next", "Qwen3-Next-80B-A3B shape: dim 2048, 48 layers (every 4th attention, 16 heads / 2 kv heads of 256), gated delta nets of 16 key / 32 value heads of 128, 512 experts (10 used) of 512 and a shared one, vocab 151936", map[string]any{
			"architectures": []any{"Qwen3NextForCausalLM"}, "model_type": "qwen3_next", "hidden_size": 2048, "num_hidden_layers": 48, "full_attention_interval": 4,
			"num_attention_heads": 16, "num_key_value_heads": 2, "head_dim": 256, "partial_rotary_factor": 0.25, "intermediate_size": 5120, "vocab_size": 151936,
			"linear_conv_kernel_dim": 4, "linear_key_head_dim": 128, "linear_value_head_dim": 128, "linear_num_key_heads": 16, "linear_num_value_heads": 32,
			"num_experts": 512, "num_experts_per_tok": 10, "moe_intermediate_size": 512, "shared_expert_intermediate_size": 512, "norm_topk_prob": true,
			"max_position_embeddings": 262144, "rms_norm_eps": 1e-6, "rope_theta": 1e7, "tie_word_embeddings": false}},
		{"tiny", "deepseek2", "deepseek-v3, dim 64, 3 layers (1 dense, 2 with 8 experts in 4 groups, 2 groups and 2 experts used, 1 shared), latent 16 + rope 8, q rank 16, sigmoid gating with a selection bias, YaRN ×4 with mscale 0.707, vocab 512", map[string]any{"architectures": []any{"DeepseekV3ForCausalLM"}, "model_type": "deepseek_v3", "vocab_size": TinyVocab, "hidden_size": 64, "num_hidden_layers": 3, "num_attention_heads": 4, "num_key_value_heads": 4, "q_lora_rank": 16, "kv_lora_rank": 16, "qk_nope_head_dim": 8, "qk_rope_head_dim": 8, "v_head_dim": 8, "intermediate_size": 32, "first_k_dense_replace": 1, "n_routed_experts": 8, "num_experts_per_tok": 2, "moe_intermediate_size": 8, "n_shared_experts": 1, "n_group": 4, "topk_group": 2, "topk_method": "noaux_tc", "scoring_func": "sigmoid", "norm_topk_prob": true, "routed_scaling_factor": 2.5, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 256, "tie_word_embeddings": false, "rope_scaling": map[string]any{"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64, "beta_fast": 32, "beta_slow": 1, "mscale": 0.707, "mscale_all_dim": 0.707}}},
		{"deepseek-v3", "deepseek2", "DeepSeek-V3 / R1 shape: dim 7168, 61 layers (3 dense), 128 heads, latent 512 + rope 64, q rank 1536, 256 experts (8 used) in 8 groups (4 used), 1 shared, sigmoid gating with a selection bias, YaRN ×40, vocab 129280", map[string]any{"architectures": []any{"DeepseekV3ForCausalLM"}, "model_type": "deepseek_v3", "vocab_size": 129280, "hidden_size": 7168, "num_hidden_layers": 61, "num_attention_heads": 128, "num_key_value_heads": 128, "q_lora_rank": 1536, "kv_lora_rank": 512, "qk_nope_head_dim": 128, "qk_rope_head_dim": 64, "v_head_dim": 128, "intermediate_size": 18432, "first_k_dense_replace": 3, "n_routed_experts": 256, "num_experts_per_tok": 8, "moe_intermediate_size": 2048, "n_shared_experts": 1, "n_group": 8, "topk_group": 4, "topk_method": "noaux_tc", "scoring_func": "sigmoid", "norm_topk_prob": true, "routed_scaling_factor": 2.5, "rms_norm_eps": 1e-6, "rope_theta": 10000.0, "max_position_embeddings": 163840, "tie_word_embeddings": false, "rope_scaling": map[string]any{"type": "yarn", "factor": 40.0, "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0}}},
		{"tiny", "olmo2", "olmo2, dim 64, 2 layers, 4 heads / 2 kv heads, post-norms, whole-projection QK norms, ffn 128, vocab 512", olmo2},
		{"tiny", "phi3", "phi3, dim 64, 2 layers, 4 heads / 2 kv heads, fused QKV and gate/up, half the head dims rotated, window 128, vocab 512", phi3},
		{"tiny", "phi2", "phi2, dim 64, 2 layers, 4 heads, parallel attention and GELU feed-forward 256 from one LayerNorm, biases everywhere, half the head dims rotated, vocab 512", phi2},
		{"tiny", "stablelm", "stablelm, dim 64, 2 layers, 4 heads / 2 kv heads, LayerNorms with biases, QKV biases, a quarter of the head dims rotated, vocab 512", stable},
		{"tiny-parallel", "stablelm", "the tiny stablelm with parallel residuals from one norm (use_parallel_residual)", stablePar},
		{"tiny", "gptneox", "gptneox, dim 64, 2 layers, 4 heads, fused QKV stored head by head, parallel residuals from two LayerNorms, GELU feed-forward 256, a quarter of the head dims rotated, vocab 512", neox},
		{"tiny-sequential", "gptneox", "the tiny gptneox with sequential residuals (use_parallel_residual false)", neoxSeq},
		{"tiny", "falcon", "falcon, dim 64, 2 layers, 4 heads / 2 kv heads, fused QKV stored by group, parallel attention and GELU feed-forward 256 from one LayerNorm, vocab 512", falcon},
		{"tiny", "granite", "granite, dim 64, 2 layers, 4 heads / 2 kv heads, embedding, residual, attention and logit multipliers, attention and MLP biases, vocab 512", granite},
		{"tiny", "qwen35", "qwen35, dim 64, 3 layers (gated delta net, gated attention, gated delta net), dense ffn 32, 4/2 attention heads of 16 with sectioned rope [2 1 1] on 8 channels, delta nets of 2 key and 4 value heads of 16, vocab 512", q35},
		{"tiny", "qwen35moe", "qwen35moe, the tiny qwen35 with 4 experts (2 used) of 16 and a shared expert of 16", q35moe},
		{"0.8b", "qwen35", "Qwen3.5-0.8B text shape: dim 1024, 24 layers (every 4th attention, 8 heads / 2 kv heads of 256, rope sections [11 11 10] on 64 channels), gated delta nets of 16 key / 16 value heads of 128, ffn 3584, tied head, vocab 248320", q35small},
		{"35b-a3b", "qwen35moe", "Qwen3.5-35B-A3B text shape: dim 2048, 40 layers (every 4th attention, 16 heads / 2 kv heads of 256, rope sections [11 11 10] on 64 channels), gated delta nets of 16 key / 32 value heads of 128, 256 experts (8 used) of 512 and a shared one, vocab 248320", q35a3b},
		{"llama3.2-1b", "llama", "Llama-3.2-1B shape: dim 2048, 16 layers, 32 heads / 8 kv heads, ffn 8192, vocab 128256, llama3 rope scaling", llama1b},
		{"llama3.1-8b", "llama", "Llama-3.1-8B shape: dim 4096, 32 layers, 32 heads / 8 kv heads, ffn 14336, vocab 128256, untied head, llama3 rope scaling", llama8b},
		{"olmo2-1b", "olmo2", "OLMo-2-0425-1B shape: dim 2048, 16 layers, 16 heads, ffn 8192, vocab 100352", olmo2b},
		{"phi3-mini-4k", "phi3", "Phi-3-mini-4k shape: dim 3072, 32 layers, 32 heads, ffn 8192, vocab 32064, window 2047", phi3mini},
		{"phi-2", "phi2", "Phi-2 shape: dim 2560, 32 layers, 32 heads, ffn 10240, 32 of 80 head dims rotated, vocab 51200", phi2big},
		{"stablelm2-1.6b", "stablelm", "StableLM-2-1.6B shape: dim 2048, 24 layers, 32 heads, ffn 5632, QKV biases, vocab 100352", stable2},
		{"pythia-1b", "gptneox", "Pythia-1B shape: dim 2048, 16 layers, 8 heads, ffn 8192, vocab 50304", pythia},
		{"falcon-7b", "falcon", "Falcon-7B shape: dim 4544, 32 layers, 71 heads / 1 kv head, ffn 18176, tied head, vocab 65024", falcon7b},
		{"granite3-2b", "granite", "Granite-3.0-2B shape: dim 2048, 40 layers, 32 heads / 8 kv heads, ffn 8192, vocab 49155, tied head, Granite's multipliers", granite2b},
	}
}
