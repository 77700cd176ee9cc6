// Package parallel is a worked example of writing a model family for poot:
// a decoder whose layers run attention and the feed-forward side by side
// from one norm (the "parallel residual" of GPT-J and PaLM):
//
//	h = norm(x);  x = x + attention(h) + ffn(h)
//
// The family is three things: a configuration (Model), the weights it reads
// (Tensors) and a tracer (Trace) that records one step through a builder,
// reusing the shared components (families.Stack, families.Attention,
// families.FeedForward). A registry row (Row) lets the driver find it from a
// GGUF file's general.architecture. Nothing in the driver, the loader or
// the interpreters changes.
//
// See main.go for a program that writes a random-weight checkpoint of this
// family, opens it through the driver and generates text.
package parallel

import (
	"fmt"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/ops"
)

// Architecture is the GGUF general.architecture of the family.
const Architecture = "parallel"

// Model is one configured model of the family.
type Model struct {
	Vocab, Dim, Layers, Heads, KVHeads, FFN, MaxContext int
	Eps, RopeTheta                                      float64
}

// brand keeps this family's traced handles apart from every other
// builder's at compile time.
type brand struct{}

// Family returns the family's registry name.
func (m *Model) Family() string { return Architecture }

func (m *Model) headDim() int { return m.Dim / m.Heads }

// Schema gives the driver the model's vocabulary and context. The weights
// and cache states are read from Trace (families.Tensors, families.States).
func (m *Model) Schema() families.Schema {
	return families.Schema{Vocab: m.Vocab, Dim: m.Dim, Layers: m.Layers, MaxContext: m.MaxContext}
}

// Weights says the checkpoint stores the canonical (GGUF) names.
func (m *Model) Weights() families.WeightMap { return families.WeightMap{Container: families.GGUF} }

// Trace records one step. It reads like the paper: embed, then per layer
// x + attention(norm(x)) + ffn(norm(x)), then the final norm and head.
func (m *Model) Trace(spec families.StepSpec, limits poot.Limits) (*poot.Graph, error) {
	if err := m.Schema().Check(Architecture, spec.Shape); err != nil {
		return nil, err
	}
	b := poot.NewBuilder[brand](limits)
	step := families.NewStep(b, spec.Shape, m.Vocab)
	w := func(name string, dims ...int) poot.Traced[brand] { return b.Constant(name, poot.T(poot.F32, dims...)) }
	rope := step.Rotary(families.Rope{Layout: ops.RopeNeoX, RopeConfig: ops.RopeConfig{Dims: m.headDim(), Theta: m.RopeTheta}}, poot.Traced[brand]{})
	q, kv := m.Dim, m.KVHeads*m.headDim()

	layer := func(l int, x poot.Traced[brand]) poot.Traced[brand] {
		p := fmt.Sprintf("blk.%d.", l)
		h := ops.RMSNorm(b, x, w(p+"norm.weight", m.Dim), m.Eps)
		attn := families.Attention(step, h,
			families.AttentionWeights[brand]{Q: w(p+"attn_q.weight", q, m.Dim), K: w(p+"attn_k.weight", kv, m.Dim),
				V: w(p+"attn_v.weight", kv, m.Dim), Out: w(p+"attn_output.weight", m.Dim, q)},
			families.AttentionConfig[brand]{Layer: l, Heads: m.Heads, KVHeads: m.KVHeads, Rotary: rope})
		ffn := families.FeedForward(b, h,
			families.FFNWeights[brand]{Gate: w(p+"ffn_gate.weight", m.FFN, m.Dim), Up: w(p+"ffn_up.weight", m.FFN, m.Dim),
				Down: w(p+"ffn_down.weight", m.Dim, m.FFN)}, families.SiLU)
		return b.Add(x, b.Add(attn, ffn))
	}
	logits, _ := families.Stack(step,
		families.StackWeights[brand]{Embed: w("token_embd.weight", m.Vocab, m.Dim), Norm: w("output_norm.weight", m.Dim),
			Output: w("output.weight", m.Vocab, m.Dim)},
		families.StackConfig{Layers: m.Layers, Eps: m.Eps}, layer)
	return step.Finish(logits)
}

// GGUFMetadata writes the keys FromGGUF reads.
func (m *Model) GGUFMetadata() ([]gguf.KV, error) {
	u := func(n int) gguf.Value { return gguf.ValueOf(uint32(n)) }
	k := func(key string, v gguf.Value) gguf.KV { return gguf.KV{Key: Architecture + "." + key, Value: v} }
	return []gguf.KV{
		{Key: gguf.KeyArchitecture, Value: gguf.ValueOf(Architecture)},
		k("embedding_length", u(m.Dim)), k("block_count", u(m.Layers)), k("feed_forward_length", u(m.FFN)),
		k("attention.head_count", u(m.Heads)), k("attention.head_count_kv", u(m.KVHeads)),
		k("context_length", u(m.MaxContext)), k("vocab_size", u(m.Vocab)),
		k("attention.layer_norm_rms_epsilon", gguf.ValueOf(float32(m.Eps))),
		k("rope.freq_base", gguf.ValueOf(float32(m.RopeTheta))),
	}, nil
}

// FromGGUF configures a model from a GGUF file's metadata.
func FromGGUF(f *gguf.File) (families.Model, error) {
	r := families.GGUFReader(f, Architecture)
	m := &Model{
		Dim: r.Positive("embedding_length"), Layers: r.Positive("block_count"), FFN: r.Positive("feed_forward_length"),
		Heads: r.Positive("attention.head_count"), Vocab: r.Positive("vocab_size"),
		MaxContext: r.IntOr("context_length", 0), Eps: r.FloatOr("attention.layer_norm_rms_epsilon", 1e-5),
		RopeTheta: r.FloatOr("rope.freq_base", 10000),
	}
	m.KVHeads = r.IntOr("attention.head_count_kv", m.Heads)
	if err := r.Err(); err != nil {
		return nil, err
	}
	if m.Dim%m.Heads != 0 || m.KVHeads < 1 || m.Heads%m.KVHeads != 0 {
		return nil, &families.ConfigError{Source: "gguf", Key: Architecture + ".attention.head_count", Err: families.ErrInconsistent,
			Detail: fmt.Sprintf("dim %d, heads %d, kv heads %d", m.Dim, m.Heads, m.KVHeads)}
	}
	return m, nil
}

// Row is the family's registry row.
var Row = families.Row{Family: Architecture, GGUFArchitectures: []string{Architecture}, FromGGUF: FromGGUF}
