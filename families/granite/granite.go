// Package granite is IBM's Granite family (GraniteForCausalLM, GGUF
// architecture granite): Llama's layers with four multipliers,
//
//	x = embedding_multiplier · embed(token)
//	x = x + residual_multiplier · attention(RMSNorm(x))   (scores scaled by attention_multiplier)
//	x = x + residual_multiplier · SwiGLU(RMSNorm(x))
//	logits = head(RMSNorm(x)) / logits_scaling
//
// GGUF stores them as granite.embedding_scale, granite.residual_scale,
// granite.attention.scale and granite.logit_scale (required). As in
// llama.cpp, an absent or zero embedding or residual scale means 1 and an
// absent attention scale 1/sqrt(head_dim); config.json's defaults are
// Hugging Face's, 1 for each multiplier (attention_multiplier too). The
// attention, the output projection and the feed-forward may have biases
// (attention_bias, mlp_bias).
//
// llama.cpp's converter permutes Granite's Q and K rows as it does
// Llama's, so GGUF granite runs with the interleaved rotary layout and
// config.json with NeoX (see package families). Granite mixtures of
// experts (granitemoe), Granite Vision's deepstack inputs and GGUF files
// that switch rotary embedding off (rope.scaling.finetuned false, the
// hybrid models) are ErrUnsupported ConfigErrors naming the key.
package granite

import (
	"math"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// Row is the family's registry row.
var Row = families.Row{
	Family:            "granite",
	GGUFArchitectures: []string{"granite"},
	HFArchitectures:   []string{"GraniteForCausalLM"},
	HFModelTypes:      []string{"granite"},
	FromGGUF:          FromGGUF,
	FromHF:            FromHF,
}

// Model is one Granite model: the standard decoder (EmbedScale,
// AttnScale, ResidualScale and LogitScale are Granite's four multipliers,
// FFNBias its mlp_bias) with Granite's writers.
type Model struct{ *families.Decoder }

// FromGGUF configures a model from a GGUF file.
func FromGGUF(f *gguf.File) (families.Model, error) {
	d, r := families.GGUFDecoder(f, "granite", ops.RopeInterleaved)
	m := &Model{Decoder: d}
	d.LogitScale, d.ResidualScale = r.Float("logit_scale"), r.FloatOr("residual_scale", 0)
	if d.ResidualScale == 0 {
		d.ResidualScale = 1 // llama.cpp's reading
	}
	d.EmbedScale = r.FloatOr("embedding_scale", 0)
	d.AttnScale = r.FloatOr("attention.scale", 0)
	if !r.BoolOr("rope.scaling.finetuned", true) {
		r.Fail("rope.scaling.finetuned", families.ErrUnsupported, "granite without rotary embedding")
	}
	if d.MoE != nil {
		r.Fail("expert_count", families.ErrUnsupported, "granite mixtures of experts (granitemoe)")
	}
	_, d.FFNBias = f.Tensor("blk.0.ffn_gate.bias")
	return finish(m, r, families.GGUF)
}

// FromHF configures a model from a config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	d, r := families.HFDecoder(cfg, "granite", false)
	m := &Model{Decoder: d}
	d.LogitScale, d.ResidualScale, d.FFNBias = r.FloatOr("logits_scaling", 1), r.FloatOr("residual_multiplier", 1), r.BoolOr("mlp_bias", false)
	d.EmbedScale = r.FloatOr("embedding_multiplier", 1)
	d.AttnScale = r.FloatOr("attention_multiplier", 1)
	d.QKVBias = r.BoolOr("attention_bias", false)
	d.OutBias = d.QKVBias
	return finish(m, r, families.Safetensors)
}

func finish(m *Model, r *families.Reader, c families.Container) (families.Model, error) {
	d := m.Decoder
	d.Name = "granite"
	families.DenseWidths(r, d)
	logit, residual, attn := "logits_scaling", "residual_multiplier", "attention_multiplier"
	if r.GGUF() {
		logit, residual, attn = "logit_scale", "residual_scale", "attention.scale"
	}
	switch {
	case !(d.LogitScale > 0) || math.IsInf(d.LogitScale, 0):
		r.Fail(logit, families.ErrWrongType, "logit scale %v must be positive", d.LogitScale)
	case math.IsNaN(d.ResidualScale) || math.IsInf(d.ResidualScale, 0):
		r.Fail(residual, families.ErrWrongType, "residual scale %v", d.ResidualScale)
	case math.IsInf(d.AttnScale, 0):
		r.Fail(attn, families.ErrWrongType, "attention scale %v", d.AttnScale)
	case r.GGUF() && r.Has("deepstack_mapping"):
		r.Fail("deepstack_mapping", families.ErrUnsupported, "Granite Vision's deepstack inputs")
	}
	d.Weight = families.HFNames().In(c)
	d.GGUF = families.GGUFStyle{Architecture: "granite", Keys: m.ggufKeys}
	d.HF = families.HFStyle{Architecture: "GraniteForCausalLM", ModelType: "granite", Keys: m.hfKeys}
	if _, err := families.Finish(d, r); err != nil {
		return nil, err
	}
	return m, nil
}
