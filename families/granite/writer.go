package granite

import (
	"math"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
)

// ggufKeys writes llama.cpp's granite keys beside the standard ones.
func (m *Model) ggufKeys(d *families.Decoder, put func(string, gguf.Value)) {
	put("logit_scale", gguf.ValueOf(float32(d.LogitScale)))
	put("residual_scale", gguf.ValueOf(float32(d.ResidualScale)))
	if d.EmbedScale != 0 {
		put("embedding_scale", gguf.ValueOf(float32(d.EmbedScale)))
	}
	if d.AttnScale != 0 {
		put("attention.scale", gguf.ValueOf(float32(d.AttnScale)))
	}
}

// hfKeys writes Granite's config.json multipliers, each explicitly: Hugging
// Face's defaults (1) are not llama.cpp's.
func (m *Model) hfKeys(d *families.Decoder, cfg map[string]any) {
	attn, embed := d.AttnScale, d.EmbedScale
	if attn == 0 {
		attn = 1 / math.Sqrt(float64(d.HeadDim))
	}
	if embed == 0 {
		embed = 1
	}
	cfg["attention_multiplier"], cfg["embedding_multiplier"] = attn, embed
	cfg["residual_multiplier"], cfg["logits_scaling"] = d.ResidualScale, d.LogitScale
	cfg["attention_bias"], cfg["mlp_bias"] = d.QKVBias, d.FFNBias
}

// HFConfig writes the model's config.json. Granite's attention_bias gives
// the query, key, value and output projections biases together, so a
// GGUF model with some of them only has no config.json form.
func (m *Model) HFConfig() (map[string]any, error) {
	if m.QKVBias != m.OutBias {
		return nil, &families.ConfigError{Source: "granite", Key: "attention_bias", Err: families.ErrUnsupported,
			Detail: "biases on the query, key and value projections but not the output one, or the other way round"}
	}
	return m.Decoder.HFConfig()
}
