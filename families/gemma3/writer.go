package gemma3

import (
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
)

// hfStyle writes Gemma's own config.json keys: norms stored as offsets from
// one, the window and per-layer attention types, the local rope base, the
// query scale and the soft caps.
func hfStyle(gemma2 bool) families.HFStyle {
	st := families.HFStyle{Architecture: "Gemma3ForCausalLM", ModelType: "gemma3_text", NormOffset: true}
	if gemma2 {
		st.Architecture, st.ModelType = "Gemma2ForCausalLM", "gemma2"
	}
	st.Keys = func(d *families.Decoder, cfg map[string]any) {
		types := make([]any, d.Layers)
		window := 0
		for l := range types {
			types[l] = "full_attention"
			if w := d.Window(l); w > 0 {
				types[l], window = "sliding_attention", w
			}
		}
		cfg["layer_types"], cfg["sliding_window"] = types, window
		cfg["rope_local_base_freq"] = d.LocalRope.Theta
		cfg["query_pre_attn_scalar"] = families.PreAttnScalar(d)
		cfg["hidden_activation"] = "gelu_pytorch_tanh"
		if d.AttnSoftCap > 0 {
			cfg["attn_logit_softcapping"] = d.AttnSoftCap
		}
		if d.FinalSoftCap > 0 {
			cfg["final_logit_softcapping"] = d.FinalSoftCap
		}
	}
	return st
}

// ggufStyle writes llama.cpp's Gemma keys: the window, the local/global
// pattern (Gemma 3), the local rope base and the soft caps.
func ggufStyle(gemma2 bool) families.GGUFStyle {
	st := families.GGUFStyle{Architecture: "gemma3"}
	if gemma2 {
		st.Architecture = "gemma2"
	}
	st.Keys = func(d *families.Decoder, put func(string, gguf.Value)) {
		window, pattern := 0, d.Layers+1
		for l := range d.Layers {
			if w := d.Window(l); w > 0 {
				window = w
			} else if pattern > d.Layers {
				pattern = l + 1
			}
		}
		put("attention.sliding_window", gguf.ValueOf(uint32(window)))
		if !gemma2 {
			put("attention.sliding_window_pattern", gguf.ValueOf(uint32(pattern)))
		}
		put("rope.freq_base_swa", gguf.ValueOf(float32(d.LocalRope.Theta)))
		if d.AttnSoftCap > 0 {
			put("attn_logit_softcapping", gguf.ValueOf(float32(d.AttnSoftCap)))
		}
		if d.FinalSoftCap > 0 {
			put("final_logit_softcapping", gguf.ValueOf(float32(d.FinalSoftCap)))
		}
	}
	return st
}
