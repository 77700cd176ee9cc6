// Package olmo2 is the OLMo 2 family (AI2's Olmo2ForCausalLM, GGUF
// architecture olmo2). Its layers are not the standard decoder's: there
// are no pre-norms, each branch's output is normalised before it joins the
// residual stream,
//
//	x = x + RMSNorm(attention(x))
//	x = x + RMSNorm(SwiGLU(x))
//
// and the queries and keys are RMS-normalised over the whole projection
// (attn_q_norm is [heads·head_dim], not one head's width) before NeoX
// rotary embedding. The head is never tied in llama.cpp's reading, which
// requires output.weight; a config.json that ties it is read as tied.
//
// OLMo 3 checkpoints, which llama.cpp also writes as olmo2, add
// sliding-window layers; they are an ErrUnsupported ConfigError naming
// the window key, as are attention biases (llama.cpp's olmo2 graph reads
// none).
package olmo2

import (
	"fmt"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// Row is the family's registry row.
var Row = families.Row{
	Family:            "olmo2",
	GGUFArchitectures: []string{"olmo2"},
	HFArchitectures:   []string{"Olmo2ForCausalLM"},
	HFModelTypes:      []string{"olmo2"},
	FromGGUF:          FromGGUF,
	FromHF:            FromHF,
}

// Model is one OLMo 2 model: the standard decoder's hyperparameters, weight
// map and writers, traced by the family's own layers.
type Model struct{ *families.Decoder }

type brand struct{}

// FromGGUF configures a model from a GGUF file.
func FromGGUF(f *gguf.File) (families.Model, error) {
	d, r := families.GGUFDecoder(f, "olmo2", ops.RopeNeoX)
	if w := r.IntOr("attention.sliding_window", 0); w > 0 {
		r.Fail("attention.sliding_window", families.ErrUnsupported, "sliding-window layers (OLMo 3)")
	}
	m, err := finish(d, r, families.GGUF)
	if err == nil && (d.QKVBias || d.OutBias) {
		return nil, &families.ConfigError{Source: "gguf", Key: "blk.0.attn_q.bias", Err: families.ErrUnsupported,
			Detail: "attention biases, which llama.cpp's olmo2 graph does not read"}
	}
	return m, err
}

// FromHF configures a model from a config.json.
func FromHF(cfg map[string]any) (families.Model, error) {
	d, r := families.HFDecoder(cfg, "olmo2", false)
	if r.Has("sliding_window") {
		r.Fail("sliding_window", families.ErrUnsupported, "sliding-window layers (OLMo 3)")
	}
	if r.BoolOr("attention_bias", false) {
		r.Fail("attention_bias", families.ErrUnsupported, "OLMo 2 attention biases")
	}
	return finish(d, r, families.Safetensors)
}

func finish(d *families.Decoder, r *families.Reader, c families.Container) (families.Model, error) {
	d.Name = "olmo2"
	families.DenseWidths(r, d)
	d.Weight = families.HFNames().With(map[string]string{
		"attn_norm.weight":           "",
		"ffn_norm.weight":            "",
		"post_attention_norm.weight": "post_attention_layernorm.weight",
		"post_ffw_norm.weight":       "post_feedforward_layernorm.weight",
	}).In(c)
	d.GGUF.Architecture = "olmo2"
	d.HF = families.HFStyle{Architecture: "Olmo2ForCausalLM", ModelType: "olmo2"}
	if _, err := families.Finish(d, r); err != nil {
		return nil, err
	}
	return &Model{d}, nil
}

// LayerKinds names each layer.
func (m *Model) LayerKinds() []string {
	out := make([]string, m.Layers)
	for l := range out {
		out[l] = "attention(qk-norm, post-norm)+dense(post-norm)"
	}
	return out
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
	q := d.Heads * d.HeadDim
	rot := step.Rotary(d.Rope, none)
	layer := func(l int, x poot.Traced[brand]) poot.Traced[brand] {
		p, kv := fmt.Sprintf("blk.%d.", l), d.LayerKV(l)*d.HeadDim
		// x += RMSNorm(f(x)): the branch's norm comes after it.
		branch := func(name, norm string, f func(h poot.Traced[brand]) poot.Traced[brand]) {
			b.Scope(name, func() { x = b.Add(x, ops.RMSNorm(b, f(x), w(p+norm, d.Dim), d.Eps)) })
		}
		branch("attn", "post_attention_norm.weight", func(h poot.Traced[brand]) poot.Traced[brand] {
			qh := ops.RMSNorm(b, ops.Linear(b, h, w(p+"attn_q.weight", q, d.Dim), none), w(p+"attn_q_norm.weight", q), d.Eps)
			kh := ops.RMSNorm(b, ops.Linear(b, h, w(p+"attn_k.weight", kv, d.Dim), none), w(p+"attn_k_norm.weight", kv), d.Eps)
			vh := ops.Linear(b, h, w(p+"attn_v.weight", kv, d.Dim), none)
			return families.AttendProjected(step, qh, kh, vh, w(p+"attn_output.weight", d.Dim, q), none,
				families.AttentionConfig[brand]{Layer: l, Heads: d.Heads, KVHeads: d.LayerKV(l), Rotary: rot})
		})
		branch("ffn", "post_ffw_norm.weight", func(h poot.Traced[brand]) poot.Traced[brand] {
			return families.FeedForward(b, h, families.FFNWeights[brand]{
				Gate: w(p+"ffn_gate.weight", d.FFN, d.Dim), Up: w(p+"ffn_up.weight", d.FFN, d.Dim), Down: w(p+"ffn_down.weight", d.Dim, d.FFN),
			}, families.SiLU)
		})
		return x
	}
	stack := families.StackWeights[brand]{Embed: w("token_embd.weight", d.Vocab, d.Dim), Norm: w("output_norm.weight", d.Dim)}
	if !d.Tied {
		stack.Output = w("output.weight", d.Vocab, d.Dim)
	}
	return families.Stack(step, stack, families.StackConfig{Layers: d.Layers, Eps: d.Eps}, layer)
}
