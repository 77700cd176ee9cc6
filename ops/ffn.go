package ops

import (
	"math"

	"github.com/pootlabs/poot"
)

// Activation is an elementwise nonlinearity over traced values (SiLU, GeLU,
// GeLUErf).
type Activation[B any] func(b *poot.Builder[B], x poot.Traced[B]) poot.Traced[B]

// GLU combines the gate and up projections of a gated feed-forward (SwiGLU,
// GeGLU, GeGLUErf, or a closure over SwiGLUClamped).
type GLU[B any] func(b *poot.Builder[B], gate, up poot.Traced[B]) poot.Traced[B]

func gelu[B any](b *poot.Builder[B], x poot.Traced[B]) poot.Traced[B] {
	x3 := b.Mul(b.Mul(x, x), x)
	inner := MulScalar(b, b.Add(x, MulScalar(b, x3, 0.044715)), math.Sqrt(2/math.Pi))
	return b.Mul(MulScalar(b, x, 0.5), AddScalar(b, b.Tanh(inner), 1))
}

func geluErf[B any](b *poot.Builder[B], x poot.Traced[B]) poot.Traced[B] {
	e := b.Erf(MulScalar(b, x, 1/math.Sqrt2))
	return b.Mul(MulScalar(b, x, 0.5), AddScalar(b, e, 1))
}

// GeLU returns the tanh approximation of the Gaussian error linear unit,
// 0.5·x·(1 + tanh(sqrt(2/π)·(x + 0.044715·x³))) (GPT-2, Gemma).
func GeLU[B any](b *poot.Builder[B], x poot.Traced[B]) poot.Traced[B] {
	return composite(b, "gelu", nil, in(x), func() poot.Traced[B] { return gelu(b, x) })
}

// GeLUErf returns the exact Gaussian error linear unit, 0.5·x·(1 + erf(x/√2))
// (BERT and most encoders).
func GeLUErf[B any](b *poot.Builder[B], x poot.Traced[B]) poot.Traced[B] {
	return composite(b, "gelu_erf", nil, in(x), func() poot.Traced[B] { return geluErf(b, x) })
}

// SwiGLU returns SiLU(gate) · up (Llama, Qwen, Mistral).
func SwiGLU[B any](b *poot.Builder[B], gate, up poot.Traced[B]) poot.Traced[B] {
	return composite(b, "swiglu", nil, in(gate, up), func() poot.Traced[B] { return b.Mul(silu(b, gate), up) })
}

// GeGLU returns GeLU(gate) · up with the tanh approximation (Gemma).
func GeGLU[B any](b *poot.Builder[B], gate, up poot.Traced[B]) poot.Traced[B] {
	return composite(b, "geglu", nil, in(gate, up), func() poot.Traced[B] { return b.Mul(gelu(b, gate), up) })
}

// GeGLUErf returns GeLUErf(gate) · up.
func GeGLUErf[B any](b *poot.Builder[B], gate, up poot.Traced[B]) poot.Traced[B] {
	return composite(b, "geglu_erf", nil, in(gate, up), func() poot.Traced[B] { return b.Mul(geluErf(b, gate), up) })
}

// SwiGLUClamped returns gpt-oss's clamped SwiGLU: the gate is clamped to at
// most limit and up to [-limit, limit], and the result is
// (up + 1) · gate · sigmoid(alpha · gate). gpt-oss uses limit 7, alpha 1.702.
func SwiGLUClamped[B any](b *poot.Builder[B], gate, up poot.Traced[B], limit, alpha float64) poot.Traced[B] {
	return composite(b, "swiglu_clamped", poot.Attrs{attr("limit", limit), attr("alpha", alpha)}, in(gate, up), func() poot.Traced[B] {
		g := b.Min(gate, b.FullLike(gate, limit))
		u := b.Max(b.Min(up, b.FullLike(up, limit)), b.FullLike(up, -limit))
		glu := b.Mul(g, sigmoid(b, MulScalar(b, g, alpha)))
		return b.Mul(AddScalar(b, u, 1), glu)
	})
}

// GatedFFN returns down(act(gate(x), up(x))): x [..., C] through the weights
// wGate, wUp [F, C] and wDown [C, F] (any float dtype, read as stored), with
// act one of SwiGLU, GeGLU, GeGLUErf.
func GatedFFN[B any](b *poot.Builder[B], x, wGate, wUp, wDown poot.Traced[B], act GLU[B]) poot.Traced[B] {
	return scoped(b, "ffn", func() poot.Traced[B] {
		var none poot.Traced[B]
		h := act(b, Linear(b, x, wGate, none), Linear(b, x, wUp, none))
		return Linear(b, h, wDown, none)
	})
}

// FFN returns down(act(up(x) + upBias)) + downBias, the ungated
// feed-forward of GPT-2 and BERT; the biases may be the zero handle.
func FFN[B any](b *poot.Builder[B], x, wUp, upBias, wDown, downBias poot.Traced[B], act Activation[B]) poot.Traced[B] {
	return scoped(b, "ffn", func() poot.Traced[B] {
		return Linear(b, act(b, Linear(b, x, wUp, upBias)), wDown, downBias)
	})
}

// SoftCap returns cap · tanh(x/cap): a smooth clamp of x to (-cap, cap),
// used on final logits (Gemma 2's final_logit_softcapping) and, inside
// Attention, on attention logits.
func SoftCap[B any](b *poot.Builder[B], x poot.Traced[B], limit float64) poot.Traced[B] {
	if !(limit > 0) {
		return fail(b, "soft_cap", "cap %v must be positive", limit)
	}
	return composite(b, "soft_cap", poot.Attrs{attr("cap", limit)}, in(x), func() poot.Traced[B] {
		return MulScalar(b, b.Tanh(MulScalar(b, x, 1/limit)), limit)
	})
}
