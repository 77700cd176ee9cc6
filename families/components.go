package families

import (
	"fmt"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
)

// Rotary returns the step's cos/sin tables for rope, computed once per
// distinct configuration and shared by every layer that uses it. freq is the
// optional GGUF rope_freqs table (divisors of the frequencies), the zero
// handle when absent or not wanted.
func (s *Step[B]) Rotary(r Rope, freq poot.Traced[B]) ops.Rotary[B] {
	b := s.B
	var out ops.Rotary[B]
	b.Scope("rope", func() {
		inv := ops.RopeInvFreq(b, r.RopeConfig)
		if r.FreqFactors && freq != (poot.Traced[B]{}) {
			inv = b.Div(inv, ops.AsF32(b, freq))
		}
		out = ops.RopeTables(b, s.Pos, inv, r.AttentionFactor(), r.Layout)
	})
	return out
}

// StackWeights are the non-layer weights of a decoder.
type StackWeights[B any] struct {
	Embed  poot.Traced[B] // token embedding [vocab, dim]
	Norm   poot.Traced[B] // final norm [dim]
	Output poot.Traced[B] // head [vocab, dim]; the zero handle ties it to Embed
}

// StackConfig configures Stack.
type StackConfig struct {
	Layers     int
	EmbedScale float64 // multiplies the embeddings; 0 means 1
	Eps        float64 // final RMSNorm epsilon
	Norm       []ops.NormOption
	SoftCap    float64 // cap·tanh(logits/cap); 0 means none
}

// Stack is a decoder's outer shape: embed the step's tokens (scaled when
// asked), run layer l in scope "layer.<l>" for every layer, apply the final
// norm and the head (tied to the embedding when w.Output is absent, soft
// capped when asked). It returns the logits, shaped as the step's Logits
// mode says, and the final hidden states before the norm,
// f32[rows*new, dim].
func Stack[B any](step *Step[B], w StackWeights[B], cfg StackConfig, layer func(l int, x poot.Traced[B]) poot.Traced[B]) (logits, hidden poot.Traced[B]) {
	b := step.B
	var x poot.Traced[B]
	b.Scope("embed", func() {
		x = ops.AsF32(b, b.Gather(w.Embed, step.Tokens))
		if cfg.EmbedScale != 0 && cfg.EmbedScale != 1 {
			x = ops.MulScalar(b, x, cfg.EmbedScale)
		}
	})
	for l := range cfg.Layers {
		b.Scope(fmt.Sprintf("layer.%d", l), func() { x = layer(l, x) })
	}
	hidden = x
	b.Scope("head", func() {
		h := x
		if step.Shape.Logits == LastToken {
			h = step.Last(h)
		}
		h = ops.RMSNorm(b, h, w.Norm, cfg.Eps, cfg.Norm...)
		out := w.Output
		if out == (poot.Traced[B]{}) {
			out = w.Embed
		}
		logits = ops.Linear(b, h, out, poot.Traced[B]{})
		if cfg.SoftCap > 0 {
			logits = ops.SoftCap(b, logits, cfg.SoftCap)
		}
	})
	return logits, hidden
}

// LayerNorms are a residual pair's norms: the pre-norms of the mixer and
// the feed-forward, and their optional post-norms (zero handles when
// absent).
type LayerNorms[B any] struct {
	Mixer, MixerPost, FFN, FFNPost poot.Traced[B]
	Eps                            float64
	Options                        []ops.NormOption
}

// Layer is the residual pair every standard decoder layer is:
// x += post(mixer(norm(x))); x += post(ffn(norm(x))), with RMSNorms.
func Layer[B any](b *poot.Builder[B], x poot.Traced[B], n LayerNorms[B], mixer, ffn func(h poot.Traced[B]) poot.Traced[B]) poot.Traced[B] {
	branch := func(name string, pre, post poot.Traced[B], f func(poot.Traced[B]) poot.Traced[B]) {
		b.Scope(name, func() {
			y := f(ops.RMSNorm(b, x, pre, n.Eps, n.Options...))
			if post != (poot.Traced[B]{}) {
				y = ops.RMSNorm(b, y, post, n.Eps, n.Options...)
			}
			x = b.Add(x, y)
		})
	}
	branch("attn", n.Mixer, n.MixerPost, mixer)
	branch("ffn", n.FFN, n.FFNPost, ffn)
	return x
}

// AttentionWeights are one attention layer's weights; biases and QK norms
// are zero handles when absent.
type AttentionWeights[B any] struct {
	Q, K, V, Out                 poot.Traced[B]
	QBias, KBias, VBias, OutBias poot.Traced[B]
	QNorm, KNorm                 poot.Traced[B]
}

// AttentionConfig configures one attention layer.
type AttentionConfig[B any] struct {
	Layer   int // names the layer's caches
	Heads   int
	KVHeads int
	Eps     float64 // QK-norm epsilon
	Norm    []ops.NormOption
	Scale   float64       // score multiplier; 0 means 1/sqrt(head dim)
	SoftCap float64       // cap·tanh(s/cap) on the scores; 0 means none
	Window  int           // sliding window; 0 means global
	Rotary  ops.Rotary[B] // the layer's cos/sin tables (Step.Rotary); zero for no rotary embedding
}

// Attention is the attention mixer: project h f32[rows*new, dim] to
// queries, keys and values (with biases and per-head QK norms when given),
// rotate queries and keys, write the new keys and values to the layer's
// cache and read every row's cache back, attend causally within the
// configured window with grouped-query heads, and project the result.
func Attention[B any](step *Step[B], h poot.Traced[B], w AttentionWeights[B], c AttentionConfig[B]) poot.Traced[B] {
	b, sh := step.B, step.Shape
	rot := c.Rotary
	if c.Heads < 1 || c.KVHeads < 1 || c.Heads%c.KVHeads != 0 {
		b.Fail(&ConfigError{Source: "attention", Key: "heads", Err: ErrInconsistent, Detail: fmt.Sprintf("%d query heads, %d key/value heads", c.Heads, c.KVHeads)})
		return h
	}
	q := ops.Linear(b, h, w.Q, w.QBias)
	k := ops.Linear(b, h, w.K, w.KBias)
	v := ops.Linear(b, h, w.V, w.VBias)
	if w.QNorm != (poot.Traced[B]{}) {
		q = ops.RMSNormHeads(b, q, w.QNorm, c.Heads, c.Eps, c.Norm...)
	}
	if w.KNorm != (poot.Traced[B]{}) {
		k = ops.RMSNormHeads(b, k, w.KNorm, c.KVHeads, c.Eps, c.Norm...)
	}
	if rot.Cos != (poot.Traced[B]{}) {
		q = ops.RoPE(b, q, c.Heads, rot)
		k = ops.RoPE(b, k, c.KVHeads, rot)
	}
	kAll := step.Cache(CacheName("k", c.Layer), k) // [rows*cap, kv*hd]
	vAll := step.Cache(CacheName("v", c.Layer), v)
	out := ops.Attention(b, q, kAll, vAll, step.Mask(c.Window), ops.AttentionConfig[B]{
		Heads: c.Heads, KVHeads: c.KVHeads, HeadDim: b.Dim(q, -1) / c.Heads, Rows: sh.Rows,
		Scale: c.Scale, SoftCap: c.SoftCap,
	})
	return ops.Linear(b, out, w.Out, w.OutBias)
}

// FFNWeights are a gated feed-forward's projections: gate and up
// [hidden, dim], down [dim, hidden].
type FFNWeights[B any] struct{ Gate, Up, Down poot.Traced[B] }

// GatedFFN is down(act(gate·h) ⊙ up·h): SwiGLU or GeGLU (tanh GELU).
func GatedFFN[B any](b *poot.Builder[B], h poot.Traced[B], w FFNWeights[B], act Activation) poot.Traced[B] {
	glu := ops.SwiGLU[B]
	if act == GELUTanh {
		glu = ops.GeGLU[B]
	}
	return ops.GatedFFN(b, h, w.Gate, w.Up, w.Down, glu)
}

// RoutedFFN is the mixture-of-experts feed-forward: route each token to
// its experts and run them in the sparse form (one indexed contraction per
// projection over the chosen experts only).
func RoutedFFN[B any](b *poot.Builder[B], h poot.Traced[B], w ops.MoEWeights[B], cfg ops.MoEConfig) poot.Traced[B] {
	return ops.MoESparse(b, h, w, cfg)
}
