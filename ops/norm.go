package ops

import "github.com/pootlabs/poot"

// NormOption adjusts how a normalisation applies its weight.
type NormOption func(*normOptions)

type normOptions struct {
	onePlus bool
}

// OnePlusWeight makes a norm scale by (1 + w) instead of w: Gemma's
// checkpoints store the weight as an offset from one. (GGUF conversions of
// Gemma fold the one in, and use the plain form.)
func OnePlusWeight() NormOption { return func(o *normOptions) { o.onePlus = true } }

// scaleBy multiplies y by the weight w (of y's last extent, any float
// dtype), broadcast over the leading axes.
func scaleBy[B any](b *poot.Builder[B], y, w poot.Traced[B], o normOptions) poot.Traced[B] {
	if !present(w) {
		return y
	}
	w = AsF32(b, w)
	if o.onePlus {
		w = AddScalar(b, w, 1)
	}
	return b.Mul(y, Like(b, w, y))
}

// RMSNorm normalises x over its last axis by its root mean square and scales
// by w: y = x / sqrt(mean(x²) + eps) · w. x is F32 of any rank ≥ 1; w has
// x's last extent and any float dtype (a half-precision weight is cast), or
// is the zero handle for no weight.
func RMSNorm[B any](b *poot.Builder[B], x, w poot.Traced[B], eps float64, opts ...NormOption) poot.Traced[B] {
	var o normOptions
	for _, f := range opts {
		f(&o)
	}
	return composite(b, "rmsnorm", poot.Attrs{attr("epsilon", eps), attr("one_plus", o.onePlus)}, in(x, w), func() poot.Traced[B] {
		return rmsNorm(b, x, w, eps, o)
	})
}

// rmsNorm is RMSNorm's body.
func rmsNorm[B any](b *poot.Builder[B], x, w poot.Traced[B], eps float64, o normOptions) poot.Traced[B] {
	ms := Mean(b, b.Mul(x, x), -1)
	r := b.Rsqrt(AddScalar(b, ms, eps))
	return scaleBy(b, b.Mul(x, Like(b, r, x)), w, o)
}

// LayerNorm normalises x over its last axis to zero mean and unit variance
// (the biased variance, as every framework uses) and applies the affine map:
// y = (x - mean) / sqrt(var + eps) · w + bias. w and bias have x's last
// extent and any float dtype; either may be the zero handle.
func LayerNorm[B any](b *poot.Builder[B], x, w, bias poot.Traced[B], eps float64, opts ...NormOption) poot.Traced[B] {
	var o normOptions
	for _, f := range opts {
		f(&o)
	}
	return composite(b, "layernorm", poot.Attrs{attr("epsilon", eps), attr("one_plus", o.onePlus)}, in(x, w, bias), func() poot.Traced[B] {
		c := b.Sub(x, Like(b, Mean(b, x, -1), x))
		v := Mean(b, b.Mul(c, c), -1)
		y := b.Mul(c, Like(b, b.Rsqrt(AddScalar(b, v, eps)), x))
		y = scaleBy(b, y, w, o)
		if present(bias) {
			y = b.Add(y, Like(b, AsF32(b, bias), y))
		}
		return y
	})
}

// L2Norm scales x over its last axis to unit Euclidean length:
// y = x / sqrt(Σx² + eps), the form of the gated delta rule's query and key
// normalisation.
func L2Norm[B any](b *poot.Builder[B], x poot.Traced[B], eps float64) poot.Traced[B] {
	return composite(b, "l2norm", poot.Attrs{attr("epsilon", eps)}, in(x), func() poot.Traced[B] { return l2Norm(b, x, eps) })
}

// l2Norm is L2Norm's body.
func l2Norm[B any](b *poot.Builder[B], x poot.Traced[B], eps float64) poot.Traced[B] {
	ss := b.ReduceSum(b.Mul(x, x), -1)
	return b.Mul(x, Like(b, b.Rsqrt(AddScalar(b, ss, eps)), x))
}

// RMSNormHeads applies RMSNorm to each head of x [..., H*D] separately, with
// one weight w [D] shared by the heads (Qwen3's and Gemma 3's query and key
// norms). w may be the zero handle: that is Llama 4's unweighted query and
// key norm.
func RMSNormHeads[B any](b *poot.Builder[B], x, w poot.Traced[B], heads int, eps float64, opts ...NormOption) poot.Traced[B] {
	var o normOptions
	for _, f := range opts {
		f(&o)
	}
	return composite(b, "rmsnorm", poot.Attrs{attr("epsilon", eps), attr("one_plus", o.onePlus), attr("heads", heads)}, in(x, w), func() poot.Traced[B] {
		h := SplitHeads(b, x, heads)
		return b.Reshape(rmsNorm(b, h, w, eps, o), dims(b, x)...)
	})
}

// L2NormHeads applies L2Norm to each head of x [..., H*D] separately.
func L2NormHeads[B any](b *poot.Builder[B], x poot.Traced[B], heads int, eps float64) poot.Traced[B] {
	return composite(b, "l2norm", poot.Attrs{attr("epsilon", eps), attr("heads", heads)}, in(x), func() poot.Traced[B] {
		h := SplitHeads(b, x, heads)
		return b.Reshape(l2Norm(b, h, eps), dims(b, x)...)
	})
}
