package gptoss

import (
	"fmt"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// GGUFMetadata writes the keys FromGGUF reads. Settings llama.cpp's
// gpt-oss cannot express (another clamp, YaRN ramp ends or attention
// factor, a layer pattern no period gives) are an ErrUnsupported error.
func (m *Model) GGUFMetadata() ([]gguf.KV, error) {
	c := m.Rope.RopeConfig
	unsupported := func(key, detail string) ([]gguf.KV, error) {
		return nil, &families.ConfigError{Source: Family, Key: key, Err: families.ErrUnsupported, Detail: "llama.cpp's gpt-oss has no key for " + detail}
	}
	switch _, _, ok := pattern(m.Decoder); {
	case !ok:
		return unsupported("attention.sliding_window_pattern", "windowed layers that no period gives")
	case m.Limit != Limit:
		return unsupported("swiglu_limit", fmt.Sprintf("a clamp other than %v", Limit))
	case c.Scaling == ops.ScaleYaRN && (c.BetaFast != 32 || c.BetaSlow != 1 || c.AttnFactor != 0):
		return unsupported("rope.scaling", "YaRN ramp ends other than 32 and 1 or an attention factor")
	}
	return m.Decoder.GGUFMetadata()
}

// ggufStyle writes llama.cpp's gpt-oss keys: the window and the pattern
// of windowed layers.
func ggufStyle() families.GGUFStyle {
	return families.GGUFStyle{Architecture: Family, Keys: func(d *families.Decoder, put func(string, gguf.Value)) {
		window, period, _ := pattern(d)
		put("attention.sliding_window", gguf.ValueOf(uint32(window)))
		put("attention.sliding_window_pattern", gguf.ValueOf(uint32(period)))
	}}
}

// hfStyle writes the config.json keys of GptOssForCausalLM: the layer
// types, the window, the clamp and the experts.
func hfStyle(limit float64) families.HFStyle {
	return families.HFStyle{Architecture: "GptOssForCausalLM", ModelType: "gpt_oss", Keys: func(d *families.Decoder, cfg map[string]any) {
		types := make([]any, d.Layers)
		for l := range types {
			types[l] = "full_attention"
			if d.Window(l) > 0 {
				types[l] = "sliding_attention"
			}
		}
		window, _, _ := pattern(d)
		cfg["layer_types"], cfg["sliding_window"], cfg["attention_bias"], cfg["swiglu_limit"] = types, window, true, limit
		cfg["num_local_experts"], cfg["num_experts_per_tok"] = d.MoE.Experts, d.MoE.Used
	}}
}
