package nb

import (
	"math"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
)

// This file holds the composites of package ops as methods. Each records
// exactly what the ops function records, in the same scope, so a graph
// made here prints and lowers like a family's.

// RMSNorm returns x / sqrt(mean(x²) + eps) · w over x's last axis; w has
// x's last extent, or is the zero Value for no weight.
func (g *Graph) RMSNorm(x, w Value, eps float64) Value {
	return g.apply("rms_norm", mayOmit(1), func(b *builder, in []handle) handle {
		return ops.RMSNorm(b, in[0], in[1], eps)
	}, x, w)
}

// LayerNorm returns (x - mean) / sqrt(var + eps) · w + bias over x's last
// axis; w and bias may be the zero Value.
func (g *Graph) LayerNorm(x, w, bias Value, eps float64) Value {
	return g.apply("layer_norm", mayOmit(1, 2), func(b *builder, in []handle) handle {
		return ops.LayerNorm(b, in[0], in[1], in[2], eps)
	}, x, w, bias)
}

// L2Norm returns x / sqrt(Σx² + eps) over x's last axis.
func (g *Graph) L2Norm(x Value, eps float64) Value {
	return g.unary("l2_norm", func(b *builder, x handle) handle { return ops.L2Norm(b, x, eps) }, x)
}

// RMSNormHeads applies RMSNorm to each of the heads of x [..., heads·D]
// with one weight w [D] (or none).
func (g *Graph) RMSNormHeads(x, w Value, heads int, eps float64) Value {
	return g.apply("rms_norm_heads", mayOmit(1), func(b *builder, in []handle) handle {
		return ops.RMSNormHeads(b, in[0], in[1], heads, eps)
	}, x, w)
}

// Linear returns x·wᵀ + bias: x [..., K], w [N, K] (a weight laid out
// [out, in], any float dtype, read as stored), bias [N] or the zero Value;
// the result is [..., N].
func (g *Graph) Linear(x, w, bias Value) Value {
	return g.apply("linear", mayOmit(2), func(b *builder, in []handle) handle {
		return ops.Linear(b, in[0], in[1], in[2])
	}, x, w, bias)
}

// Embed returns the rows of table [vocab, C] for the i32 token ids tokens,
// as f32 (a half-precision or quantized table is decoded).
func (g *Graph) Embed(table, tokens Value) Value {
	return g.apply("embed", 0, func(b *builder, in []handle) handle {
		return ops.AsF32(b, b.Gather(in[0], in[1]))
	}, table, tokens)
}

// Mean returns the mean of x over axis, keeping the axis with extent 1.
func (g *Graph) Mean(x Value, axis int) Value {
	return g.unary("mean", func(b *builder, x handle) handle { return ops.Mean(b, x, axis) }, x)
}

// Softmax returns exp(x)/Σexp(x) over axis, computed stably.
func (g *Graph) Softmax(x Value, axis int) Value {
	return g.unary("softmax", func(b *builder, x handle) handle { return ops.Softmax(b, x, axis) }, x)
}

// LogSumExp returns log Σ exp(x) over axis, keeping the axis with extent 1.
func (g *Graph) LogSumExp(x Value, axis int) Value {
	return g.unary("logsumexp", func(b *builder, x handle) handle { return ops.LogSumExp(b, x, axis) }, x)
}

// Sigmoid returns 1/(1+exp(-x)).
func (g *Graph) Sigmoid(x Value) Value { return g.unary("sigmoid", ops.Sigmoid[brand], x) }

// SiLU returns x·sigmoid(x) (swish).
func (g *Graph) SiLU(x Value) Value { return g.unary("silu", ops.SiLU[brand], x) }

// GeLU returns the tanh approximation of the Gaussian error linear unit.
func (g *Graph) GeLU(x Value) Value { return g.unary("gelu", ops.GeLU[brand], x) }

// GeLUErf returns the exact Gaussian error linear unit, 0.5·x·(1+erf(x/√2)).
func (g *Graph) GeLUErf(x Value) Value { return g.unary("gelu_erf", ops.GeLUErf[brand], x) }

// ReLU returns max(x, 0).
func (g *Graph) ReLU(x Value) Value {
	return g.unary("relu", func(b *builder, x handle) handle { return b.Max(x, b.FullLike(x, 0)) }, x)
}

// SoftCap returns limit·tanh(x/limit), a smooth clamp to (-limit, limit).
func (g *Graph) SoftCap(x Value, limit float64) Value {
	return g.unary("soft_cap", func(b *builder, x handle) handle { return ops.SoftCap(b, x, limit) }, x)
}

// SwiGLU returns SiLU(gate)·up.
func (g *Graph) SwiGLU(gate, up Value) Value {
	return g.apply("swiglu", 0, func(b *builder, in []handle) handle { return ops.SwiGLU(b, in[0], in[1]) }, gate, up)
}

// GeGLU returns GeLU(gate)·up.
func (g *Graph) GeGLU(gate, up Value) Value {
	return g.apply("geglu", 0, func(b *builder, in []handle) handle { return ops.GeGLU(b, in[0], in[1]) }, gate, up)
}

func glu(name string) (ops.GLU[brand], bool) {
	switch name {
	case "swiglu":
		return ops.SwiGLU[brand], true
	case "geglu":
		return ops.GeGLU[brand], true
	case "geglu_erf":
		return ops.GeGLUErf[brand], true
	}
	return nil, false
}

func activation(name string) (ops.Activation[brand], bool) {
	switch name {
	case "silu":
		return ops.SiLU[brand], true
	case "gelu":
		return ops.GeLU[brand], true
	case "gelu_erf":
		return ops.GeLUErf[brand], true
	}
	return nil, false
}

// GatedFFN returns down(act(gate(x), up(x))) with weights wGate, wUp [F, C]
// and wDown [C, F]; act is "swiglu", "geglu" or "geglu_erf".
func (g *Graph) GatedFFN(x, wGate, wUp, wDown Value, act string) Value {
	return g.apply("gated_ffn", 0, func(b *builder, in []handle) handle {
		f, ok := glu(act)
		if !ok {
			b.Failf(poot.ErrType, "gated_ffn", "unknown activation %q (want swiglu, geglu or geglu_erf)", act)
			return b.Scalar(0)
		}
		return ops.GatedFFN(b, in[0], in[1], in[2], in[3], f)
	}, x, wGate, wUp, wDown)
}

// FFN returns down(act(up(x) + upBias)) + downBias, the ungated
// feed-forward; the biases may be the zero Value; act is "gelu",
// "gelu_erf" or "silu".
func (g *Graph) FFN(x, wUp, upBias, wDown, downBias Value, act string) Value {
	return g.apply("ffn", mayOmit(2, 4), func(b *builder, in []handle) handle {
		f, ok := activation(act)
		if !ok {
			b.Failf(poot.ErrType, "ffn", "unknown activation %q (want gelu, gelu_erf or silu)", act)
			return b.Scalar(0)
		}
		return ops.FFN(b, in[0], in[1], in[2], in[3], in[4], f)
	}, x, wUp, upBias, wDown, downBias)
}

// SplitHeads views x [..., heads·D] as [..., heads, D].
func (g *Graph) SplitHeads(x Value, heads int) Value {
	return g.unary("split_heads", func(b *builder, x handle) handle { return ops.SplitHeads(b, x, heads) }, x)
}

// MergeHeads views x [..., H, D] as [..., H·D].
func (g *Graph) MergeHeads(x Value) Value { return g.unary("merge_heads", ops.MergeHeads[brand], x) }

// RepeatKV repeats each key/value head of x [..., Hkv, S, D] n times.
func (g *Graph) RepeatKV(x Value, n int) Value {
	return g.unary("repeat_kv", func(b *builder, x handle) handle { return ops.RepeatKV(b, x, n) }, x)
}

// CausalMask returns which of keys cache positions each query may see,
// bool [N, keys], from the queries' i32 positions pos [N]: key j is visible
// at position p iff j ≤ p and, when window > 0, p - j < window.
func (g *Graph) CausalMask(pos Value, keys, window int) Value {
	return g.unary("causal_mask", func(b *builder, p handle) handle { return ops.CausalMask(b, p, keys, window, 0) }, pos)
}

// RoPEConfig describes a rotary embedding for RoPE. The zero value rotates
// every channel of each head in the NeoX layout with base 10000.
type RoPEConfig struct {
	Dims        int     // rotated channels per head; 0 means all of them
	Theta       float64 // base; 0 means 10000
	Interleaved bool    // rotate pairs (2i, 2i+1) (GPT-J, llama.cpp's llama) instead of (i, i+n/2)
	// Scaling is "" (none), "linear", "ntk", "yarn" or "llama3"; Factor,
	// OrigContext, LowFreqFactor and HighFreqFactor configure it as
	// ops.RopeConfig documents.
	Scaling                       string
	Factor                        float64
	OrigContext                   int
	LowFreqFactor, HighFreqFactor float64
}

var ropeScalings = map[string]ops.RopeScaling{
	"": ops.ScaleNone, "linear": ops.ScaleLinear, "ntk": ops.ScaleNTK, "yarn": ops.ScaleYaRN, "llama3": ops.ScaleLlama3,
}

// opsConfig returns the ops configuration for heads of width d.
func (c RoPEConfig) opsConfig(d int) (ops.RopeConfig, ops.RopeLayout, bool) {
	scaling, ok := ropeScalings[c.Scaling]
	rc := ops.RopeConfig{Dims: c.Dims, Theta: c.Theta, Scaling: scaling, Factor: c.Factor,
		OrigContext: c.OrigContext, LowFreqFactor: c.LowFreqFactor, HighFreqFactor: c.HighFreqFactor}
	if rc.Dims == 0 {
		rc.Dims = d
	}
	if rc.Theta == 0 {
		rc.Theta = 10000
	}
	layout := ops.RopeNeoX
	if c.Interleaved {
		layout = ops.RopeInterleaved
	}
	return rc, layout, ok
}

// RoPE rotates each of the heads of x [T, heads·D] by its row's position:
// pos holds the i32 positions [T], or is the zero Value for 0, 1, …, T-1.
// The frequencies are computed in the graph from cfg.
func (g *Graph) RoPE(x, pos Value, heads int, cfg RoPEConfig) Value {
	return g.apply("rope", mayOmit(1), func(b *builder, in []handle) handle {
		x, p := in[0], in[1]
		t, c := b.Dim(x, 0), b.Dim(x, -1)
		if heads < 1 {
			b.Failf(poot.ErrType, "rope", "%d heads", heads)
			return b.Scalar(0)
		}
		rc, layout, ok := cfg.opsConfig(c / heads)
		if !ok {
			b.Failf(poot.ErrType, "rope", "unknown scaling %q (want linear, ntk, yarn or llama3)", cfg.Scaling)
			return b.Scalar(0)
		}
		if p == (handle{}) {
			p = b.Iota(poot.T(poot.I32, t), 0)
		}
		tables := ops.RopeTables(b, p, ops.RopeInvFreq(b, rc), rc.AttentionFactor(), layout)
		return ops.RoPE(b, x, heads, tables)
	}, x, pos)
}

// AttentionConfig describes the heads of Attention.
type AttentionConfig struct {
	Heads   int // query heads H
	KVHeads int // key and value heads, dividing H; 0 means H
	HeadDim int // width of a query and key head; 0 means q's width / H
	// ValueDim is the width of a value head; 0 means v's width / KVHeads.
	ValueDim int
	Scale    float64 // multiplies q·k; 0 means 1/sqrt(HeadDim)
	SoftCap  float64 // attention logit soft cap; 0 means none
	Window   int     // sliding window of the built causal mask; 0 means none
}

// Attention returns softmax(scale·q·kᵀ, masked)·v for every head: q
// [T, H·D], k [S, Hkv·D], v [S, Hkv·Dv]; the result is [T, H·Dv]. mask is
// bool [T, S], or the zero Value for the causal mask of queries at the
// last T of the S positions (self-attention when T = S).
func (g *Graph) Attention(q, k, v, mask Value, cfg AttentionConfig) Value {
	return g.apply("attention", mayOmit(3), func(b *builder, in []handle) handle {
		q, k, v, m := in[0], in[1], in[2], in[3]
		c := ops.AttentionConfig[brand]{Heads: cfg.Heads, KVHeads: cfg.KVHeads, HeadDim: cfg.HeadDim, ValueDim: cfg.ValueDim, Scale: cfg.Scale, SoftCap: cfg.SoftCap}
		if c.KVHeads == 0 {
			c.KVHeads = c.Heads
		}
		if c.Heads < 1 || c.KVHeads < 1 {
			b.Failf(poot.ErrType, "attention", "%d heads, %d key/value heads", c.Heads, c.KVHeads)
			return b.Scalar(0)
		}
		if c.HeadDim == 0 {
			c.HeadDim = b.Dim(q, -1) / c.Heads
		}
		if c.ValueDim == 0 {
			c.ValueDim = b.Dim(v, -1) / c.KVHeads
		}
		if c.Scale == 0 && c.HeadDim > 0 {
			c.Scale = 1 / math.Sqrt(float64(c.HeadDim))
		}
		if m == (handle{}) {
			t, s := b.Dim(q, 0), b.Dim(k, 0)
			if s < t {
				b.Failf(poot.ErrType, "attention", "%d queries over %d keys cannot be causal", t, s)
				return b.Scalar(0)
			}
			pos := b.Iota(poot.T(poot.I32, t), 0)
			if s > t {
				pos = b.Add(pos, b.Full(poot.T(poot.I32, t), float64(s-t)))
			}
			m = ops.CausalMask(b, pos, s, cfg.Window, 0)
		}
		return ops.Attention(b, q, k, v, m, c)
	}, q, k, v, mask)
}

// Scope runs fn with the equations it records grouped under a scope named
// name (no '/'), as a family groups a layer; String prints them together.
func (g *Graph) Scope(name string, fn func()) {
	if g == nil || g.b == nil {
		return
	}
	g.push(step{fn: func(b *builder, _ []handle) handle { b.Push(name); return handle{} }}, nil)
	defer g.push(step{fn: func(b *builder, _ []handle) handle { b.Pop(); return handle{} }}, nil)
	if fn != nil {
		fn()
	}
}
