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

// NormKind is the kind of a decoder's norms.
type NormKind uint8

// The norm kinds.
const (
	// RMS is RMSNorm: x·w/rms(x).
	RMS NormKind = iota
	// LayerNormKind is LayerNorm: (x-mean)·w/std(x) + bias, the bias a
	// zero handle when the model has none.
	LayerNormKind
)

// Norm applies a norm of kind k with weight w and bias (LayerNorm only;
// the zero handle for none).
func Norm[B any](b *poot.Builder[B], k NormKind, x, w, bias poot.Traced[B], eps float64, opts ...ops.NormOption) poot.Traced[B] {
	if k == LayerNormKind {
		return ops.LayerNorm(b, x, w, bias, eps, opts...)
	}
	return ops.RMSNorm(b, x, w, eps, opts...)
}

// StackWeights are the non-layer weights of a decoder; the biases are
// zero handles when absent.
type StackWeights[B any] struct {
	Embed      poot.Traced[B] // token embedding [vocab, dim]
	Norm       poot.Traced[B] // final norm [dim]
	NormBias   poot.Traced[B] // final LayerNorm's bias [dim]
	Output     poot.Traced[B] // head [vocab, dim]; the zero handle ties it to Embed
	OutputBias poot.Traced[B] // head bias [vocab]
}

// StackConfig configures Stack.
type StackConfig struct {
	Layers     int
	EmbedScale float64  // multiplies the embeddings; 0 means 1
	NormKind   NormKind // of the final norm
	Eps        float64  // final norm epsilon
	Norm       []ops.NormOption
	SoftCap    float64 // cap·tanh(logits/cap); 0 means none
	LogitScale float64 // divides the logits (Granite); 0 means 1
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
		h = Norm(b, cfg.NormKind, h, w.Norm, w.NormBias, cfg.Eps, cfg.Norm...)
		out := w.Output
		if out == (poot.Traced[B]{}) {
			out = w.Embed
		}
		logits = ops.Linear(b, h, out, w.OutputBias)
		if cfg.LogitScale != 0 && cfg.LogitScale != 1 {
			logits = ops.MulScalar(b, logits, 1/cfg.LogitScale)
		}
		if cfg.SoftCap > 0 {
			logits = ops.SoftCap(b, logits, cfg.SoftCap)
		}
	})
	return logits, hidden
}

// LayerNorms are a residual pair's norms: the pre-norms of the mixer and
// the feed-forward, their LayerNorm biases and their optional post-norms
// (zero handles when absent), and how the pair is wired.
type LayerNorms[B any] struct {
	Mixer, MixerPost, FFN, FFNPost poot.Traced[B]
	MixerBias, FFNBias             poot.Traced[B]
	Kind                           NormKind
	// Parallel runs both branches from the layer's input:
	// x + mixer(norm(x)) + ffn(norm'(x)) (GPT-J, GPT-NeoX, Phi-2, Falcon),
	// with norm' the mixer's own norm when FFN is the zero handle.
	Parallel bool
	// Scale multiplies each branch's output before it joins the residual
	// stream (Granite's residual multiplier); 0 means 1.
	Scale   float64
	Eps     float64
	Options []ops.NormOption
}

// Layer is the residual pair every standard decoder layer is:
// x += post(mixer(norm(x))); x += post(ffn(norm(x))), or both branches
// from x when n.Parallel.
func Layer[B any](b *poot.Builder[B], x poot.Traced[B], n LayerNorms[B], mixer, ffn func(h poot.Traced[B]) poot.Traced[B]) poot.Traced[B] {
	in := x
	var shared poot.Traced[B]
	branch := func(name string, pre, bias, post poot.Traced[B], f func(poot.Traced[B]) poot.Traced[B]) poot.Traced[B] {
		var y poot.Traced[B]
		b.Scope(name, func() {
			from := x
			if n.Parallel {
				from = in
			}
			h := shared
			if !n.Parallel || pre != (poot.Traced[B]{}) || h == (poot.Traced[B]{}) {
				h = Norm(b, n.Kind, from, pre, bias, n.Eps, n.Options...)
				shared = h
			}
			y = f(h)
			if post != (poot.Traced[B]{}) {
				y = ops.RMSNorm(b, y, post, n.Eps, n.Options...)
			}
			if n.Scale != 0 && n.Scale != 1 {
				y = ops.MulScalar(b, y, n.Scale)
			}
			if !n.Parallel {
				x = b.Add(x, y)
			}
		})
		return y
	}
	a := branch("attn", n.Mixer, n.MixerBias, n.MixerPost, mixer)
	f := branch("ffn", n.FFN, n.FFNBias, n.FFNPost, ffn)
	if n.Parallel {
		// llama.cpp's order: (attn + ffn) + x for Phi-2, (ffn + x) + attn
		// for GPT-NeoX; float sums differ only in rounding.
		x = b.Add(b.Add(a, f), in)
	}
	return x
}

// AttentionWeights are one attention layer's weights; biases and QK norms
// are zero handles when absent. A fused projection QKV [(heads+2·kv
// heads)·head dim, dim] (with QKVBias) stands for Q, K and V: one
// contraction, its columns split into queries, keys and values.
type AttentionWeights[B any] struct {
	Q, K, V, Out                 poot.Traced[B]
	QBias, KBias, VBias, OutBias poot.Traced[B]
	QKV, QKVBias                 poot.Traced[B]
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
	var q, k, v poot.Traced[B]
	if w.QKV != (poot.Traced[B]{}) {
		hd := b.Dim(w.QKV, 0) / (c.Heads + 2*c.KVHeads)
		q, k, v = ops.SplitQKV(b, ops.Linear(b, h, w.QKV, w.QKVBias), c.Heads, c.KVHeads, hd)
	} else {
		q, k, v = ops.Linear(b, h, w.Q, w.QBias), ops.Linear(b, h, w.K, w.KBias), ops.Linear(b, h, w.V, w.VBias)
	}
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

// FFNWeights are a feed-forward's projections: gate and up [hidden, dim],
// down [dim, hidden], and their biases (zero handles when absent). Without
// a gate the feed-forward is ungated.
type FFNWeights[B any] struct {
	Gate, Up, Down             poot.Traced[B]
	GateBias, UpBias, DownBias poot.Traced[B]
}

// FeedForward is down(act(gate·h) ⊙ up·h) (SwiGLU, or GeGLU with tanh
// GELU) when w has a gate, and down(act(up·h)) when it has none; biases
// are added where given.
func FeedForward[B any](b *poot.Builder[B], h poot.Traced[B], w FFNWeights[B], act Activation) poot.Traced[B] {
	none := poot.Traced[B]{}
	if w.Gate == none {
		f := ops.SiLU[B]
		if act == GELUTanh {
			f = ops.GeLU[B]
		}
		return ops.FFN(b, h, w.Up, w.UpBias, w.Down, w.DownBias, f)
	}
	glu := ops.SwiGLU[B]
	if act == GELUTanh {
		glu = ops.GeGLU[B]
	}
	if w.GateBias == none && w.UpBias == none && w.DownBias == none {
		return ops.GatedFFN(b, h, w.Gate, w.Up, w.Down, glu)
	}
	return ops.Linear(b, glu(b, ops.Linear(b, h, w.Gate, w.GateBias), ops.Linear(b, h, w.Up, w.UpBias)), w.Down, w.DownBias)
}

// RoutedFFN is the mixture-of-experts feed-forward: route each token to
// its experts and run them in the sparse form (one indexed contraction per
// projection over the chosen experts only).
func RoutedFFN[B any](b *poot.Builder[B], h poot.Traced[B], w ops.MoEWeights[B], cfg ops.MoEConfig) poot.Traced[B] {
	return ops.MoESparse(b, h, w, cfg)
}
