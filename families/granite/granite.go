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
	"fmt"
	"math"

	"github.com/pootlabs/poot"
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

// Model is one Granite model: the standard decoder's hyperparameters
// (EmbedScale and AttnScale are Granite's embedding and attention
// multipliers) and writers, traced by the family's own layers.
type Model struct {
	*families.Decoder
	// ResidualScale multiplies each branch's output before it joins the
	// residual stream.
	ResidualScale float64
	// LogitScale divides the logits.
	LogitScale float64
	// MLPBias says the feed-forward projections have biases.
	MLPBias bool
}

type brand struct{}

// FromGGUF configures a model from a GGUF file.
func FromGGUF(f *gguf.File) (families.Model, error) {
	d, r := families.GGUFDecoder(f, "granite", ops.RopeInterleaved)
	m := &Model{Decoder: d, LogitScale: r.Float("logit_scale"), ResidualScale: r.FloatOr("residual_scale", 0)}
	if m.ResidualScale == 0 {
		m.ResidualScale = 1 // llama.cpp's reading
	}
	d.EmbedScale = r.FloatOr("embedding_scale", 0)
	d.AttnScale = r.FloatOr("attention.scale", 0)
	if !r.BoolOr("rope.scaling.finetuned", true) {
		r.Fail("rope.scaling.finetuned", families.ErrUnsupported, "granite without rotary embedding")
	}
	if d.MoE != nil {
		r.Fail("expert_count", families.ErrUnsupported, "granite mixtures of experts (granitemoe)")
	}
	_, m.MLPBias = f.Tensor("blk.0.ffn_gate.bias")
	return finish(m, r, families.GGUF)
}

// FromHF configures a model from a config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	d, r := families.HFDecoder(cfg, "granite", false)
	m := &Model{Decoder: d, LogitScale: r.FloatOr("logits_scaling", 1), ResidualScale: r.FloatOr("residual_multiplier", 1),
		MLPBias: r.BoolOr("mlp_bias", false)}
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
	case !(m.LogitScale > 0) || math.IsInf(m.LogitScale, 0):
		r.Fail(logit, families.ErrWrongType, "logit scale %v must be positive", m.LogitScale)
	case math.IsNaN(m.ResidualScale) || math.IsInf(m.ResidualScale, 0):
		r.Fail(residual, families.ErrWrongType, "residual scale %v", m.ResidualScale)
	case math.IsInf(d.AttnScale, 0):
		r.Fail(attn, families.ErrWrongType, "attention scale %v", d.AttnScale)
	case r.GGUF() && r.Has("deepstack_mapping"):
		r.Fail("deepstack_mapping", families.ErrUnsupported, "Granite Vision's deepstack inputs")
	}
	d.Weight = families.HFNames().With(map[string]string{
		"ffn_gate.bias": "mlp.gate_proj.bias", "ffn_up.bias": "mlp.up_proj.bias", "ffn_down.bias": "mlp.down_proj.bias",
	}).In(c)
	d.GGUF = families.GGUFStyle{Architecture: "granite", Keys: m.ggufKeys}
	d.HF = families.HFStyle{Architecture: "GraniteForCausalLM", ModelType: "granite", Keys: m.hfKeys}
	if _, err := families.Finish(d, r); err != nil {
		return nil, err
	}
	return m, nil
}

// Trace checks spec against the schema and records the step.
func (m *Model) Trace(spec families.StepSpec, limits poot.Limits) (*poot.Graph, error) {
	if err := m.Validate(); err != nil {
		return nil, err
	}
	return families.TraceLayers(m.Name, m.Schema(), spec, limits, m.trace)
}

func (m *Model) trace(step *families.Step[brand]) (logits, hidden poot.Traced[brand]) {
	d, b := m.Decoder, step.B
	w := func(name string, dims ...int) poot.Traced[brand] { return b.Constant(name, poot.T(poot.F32, dims...)) }
	var none poot.Traced[brand]
	stack := families.StackWeights[brand]{Embed: w("token_embd.weight", d.Vocab, d.Dim)}
	var freq poot.Traced[brand]
	if d.Rope.FreqFactors {
		freq = w("rope_freqs.weight", d.Rope.Dims/2)
	}
	rot := step.Rotary(d.Rope, freq)
	q := d.Heads * d.HeadDim
	layer := func(l int, x poot.Traced[brand]) poot.Traced[brand] {
		p, kv := fmt.Sprintf("blk.%d.", l), d.LayerKV(l)*d.HeadDim
		opt := func(on bool, name string, dims ...int) poot.Traced[brand] {
			if !on {
				return none
			}
			return w(p+name, dims...)
		}
		// x += s·f(RMSNorm(x)): each branch's output is scaled before it
		// joins the residual stream.
		branch := func(name, norm string, f func(h poot.Traced[brand]) poot.Traced[brand]) {
			b.Scope(name, func() {
				y := f(ops.RMSNorm(b, x, w(p+norm, d.Dim), d.Eps))
				if m.ResidualScale != 1 {
					y = ops.MulScalar(b, y, m.ResidualScale)
				}
				x = b.Add(x, y)
			})
		}
		branch("attn", "attn_norm.weight", func(h poot.Traced[brand]) poot.Traced[brand] {
			return families.Attention(step, h, families.AttentionWeights[brand]{
				Q: w(p+"attn_q.weight", q, d.Dim), K: w(p+"attn_k.weight", kv, d.Dim), V: w(p+"attn_v.weight", kv, d.Dim),
				QBias: opt(d.QKVBias, "attn_q.bias", q), KBias: opt(d.QKVBias, "attn_k.bias", kv), VBias: opt(d.QKVBias, "attn_v.bias", kv),
				Out: w(p+"attn_output.weight", d.Dim, q), OutBias: opt(d.OutBias, "attn_output.bias", d.Dim),
			}, families.AttentionConfig[brand]{Layer: l, Heads: d.Heads, KVHeads: d.LayerKV(l), Scale: d.AttnScale, Rotary: rot})
		})
		branch("ffn", "ffn_norm.weight", func(h poot.Traced[brand]) poot.Traced[brand] {
			gate := ops.Linear(b, h, w(p+"ffn_gate.weight", d.FFN, d.Dim), opt(m.MLPBias, "ffn_gate.bias", d.FFN))
			up := ops.Linear(b, h, w(p+"ffn_up.weight", d.FFN, d.Dim), opt(m.MLPBias, "ffn_up.bias", d.FFN))
			return ops.Linear(b, ops.SwiGLU(b, gate, up), w(p+"ffn_down.weight", d.Dim, d.FFN), opt(m.MLPBias, "ffn_down.bias", d.Dim))
		})
		return x
	}
	stack.Norm = w("output_norm.weight", d.Dim)
	if !d.Tied {
		stack.Output = w("output.weight", d.Vocab, d.Dim)
	}
	logits, hidden = families.Stack(step, stack, families.StackConfig{Layers: d.Layers, EmbedScale: d.EmbedScale, Eps: d.Eps}, layer)
	if m.LogitScale != 1 {
		b.Scope("head", func() { logits = ops.MulScalar(b, logits, 1/m.LogitScale) })
	}
	return logits, hidden
}
