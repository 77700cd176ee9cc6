package phi3

import (
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
)

// ggufKeys writes llama.cpp's phi3 keys beside the standard ones.
func (m *Model) ggufKeys(d *families.Decoder, put func(string, gguf.Value)) {
	put("rope.scaling.original_context_length", gguf.ValueOf(uint32(m.OrigContext)))
	if m.AttnFactor != 1 || m.LongRoPE != nil {
		put("rope.scaling.attn_factor", gguf.ValueOf(float32(m.AttnFactor)))
	}
	put("attention.sliding_window", gguf.ValueOf(uint32(d.Window(0))))
}

// hfKeys writes Phi-3's config.json keys beside the standard ones.
func (m *Model) hfKeys(d *families.Decoder, cfg map[string]any) {
	cfg["original_max_position_embeddings"] = m.OrigContext
	if w := d.Window(0); w > 0 {
		cfg["sliding_window"] = w
	}
	if lr := m.LongRoPE; lr != nil {
		list := func(v []float64) []any {
			out := make([]any, len(v))
			for i, x := range v {
				out[i] = x
			}
			return out
		}
		cfg["rope_scaling"] = map[string]any{"type": "longrope", "long_factor": list(lr.Long), "short_factor": list(lr.Short), "attention_factor": m.AttnFactor}
	}
}

// GGUFMetadata writes the model's GGUF metadata. A LongRoPE model read
// from config.json cannot be: its tables are GGUF tensors, which a trace
// of the config.json model does not declare (it reads them from the
// configuration), so a writer would not write them.
func (m *Model) GGUFMetadata() ([]gguf.KV, error) {
	if m.LongRoPE != nil && !m.LongRoPE.Tensors {
		return nil, &families.ConfigError{Source: "phi3", Key: LongFactors, Err: families.ErrUnsupported,
			Detail: "LongRoPE tables configured by config.json are not written as GGUF tensors"}
	}
	return m.Decoder.GGUFMetadata()
}

// HFConfig writes the model's config.json; a GGUF model whose LongRoPE
// tables are not stored F32 cannot give their values.
func (m *Model) HFConfig() (map[string]any, error) {
	if lr := m.LongRoPE; lr != nil && (lr.Long == nil || lr.Short == nil) {
		return nil, &families.ConfigError{Source: "phi3", Key: LongFactors, Err: families.ErrUnsupported, Detail: "the LongRoPE tables are not stored as F32"}
	}
	return m.Decoder.HFConfig()
}
