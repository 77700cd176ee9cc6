package ops

import (
	"math"

	"github.com/pootlabs/poot"
)

// The unexported helpers of this file (present, fail, dims, withLast,
// leading, scoped, sigmoid, silu, softmax) are shared by every file of the
// package, the mixture-of-experts, recurrent and latent-attention
// composites included: keep their names and contracts.

// present reports whether an optional operand was given: the zero handle
// means absent.
func present[B any](h poot.Traced[B]) bool { return h != poot.Traced[B]{} }

// fail records a typed error for a composite whose arguments are
// inconsistent, and returns a poisoned handle (the builder is in error, so
// any recording call returns one).
func fail[B any](b *poot.Builder[B], op, format string, args ...any) poot.Traced[B] {
	b.Failf(poot.ErrType, op, format, args...)
	return b.Scalar(0)
}

// dims returns a copy of x's extents, read through Dim (empty after an
// error), so callers can build new shapes without indexing b.Shape.
func dims[B any](b *poot.Builder[B], x poot.Traced[B]) []int {
	r := b.Rank(x)
	out := make([]int, r)
	for i := range r {
		out[i] = b.Dim(x, i)
	}
	return out
}

// withLast returns x's extents with the last one replaced by n (or [n] for
// a scalar).
func withLast[B any](b *poot.Builder[B], x poot.Traced[B], n ...int) []int {
	d := dims(b, x)
	if len(d) > 0 {
		d = d[:len(d)-1]
	}
	return append(d, n...)
}

// leading is the product of every extent of x but the last.
func leading[B any](b *poot.Builder[B], x poot.Traced[B]) int {
	n := 1
	for i := 0; i < b.Rank(x)-1; i++ {
		n *= b.Dim(x, i)
	}
	return n
}

// scoped runs fn in a scope named name and returns its result.
func scoped[B any](b *poot.Builder[B], name string, fn func() poot.Traced[B]) poot.Traced[B] {
	var out poot.Traced[B]
	b.Scope(name, func() { out = fn() })
	return out
}

// composite records fn, which returns one result, as the composite name
// with attrs over operands (see poot.Builder.Composite); the zero handle is
// an absent optional operand.
func composite[B any](b *poot.Builder[B], name string, attrs poot.Attrs, operands []poot.Traced[B], fn func() poot.Traced[B]) poot.Traced[B] {
	return b.Composite(name, attrs, operands, func() []poot.Traced[B] { return []poot.Traced[B]{fn()} })[0]
}

// record records fn, which sets the composite's results through results,
// as the composite name with attrs over operands, and sets them to the
// composite's results.
func record[B any](b *poot.Builder[B], name string, attrs poot.Attrs, operands []poot.Traced[B], fn func(), results ...*poot.Traced[B]) {
	res := b.Composite(name, attrs, operands, func() []poot.Traced[B] {
		fn()
		out := make([]poot.Traced[B], len(results))
		for i, r := range results {
			out[i] = *r
		}
		return out
	})
	for i, r := range results {
		*r = res[i]
	}
}

// in lists a composite's operands.
func in[B any](operands ...poot.Traced[B]) []poot.Traced[B] { return operands }

// attr makes one attribute.
func attr(name string, v any) poot.Attr { return poot.Attr{Name: name, Value: v} }

// BroadcastTo returns x repeated to the extents dims. When x has a lower
// rank it is first reshaped to len(dims) axes by prepending axes of extent 1
// (numpy's rule); x's own extents must each be 1 or equal to the target.
// It records nothing when x already has the target shape.
func BroadcastTo[B any](b *poot.Builder[B], x poot.Traced[B], dims ...int) poot.Traced[B] {
	s := b.Shape(x)
	if b.Err() != nil {
		return x
	}
	if len(s) > len(dims) {
		return fail(b, "broadcast_to", "cannot broadcast %v to lower rank %v", s, poot.Shape(dims))
	}
	if len(s) < len(dims) {
		r := make([]int, len(dims)-len(s), len(dims))
		for i := range r {
			r[i] = 1
		}
		x = b.Reshape(x, append(r, s...)...)
	}
	if poot.Shape(dims).Equal(b.Shape(x)) {
		return x
	}
	return b.Broadcast(x, dims...)
}

// Like returns x broadcast to the shape of like (see BroadcastTo).
func Like[B any](b *poot.Builder[B], x, like poot.Traced[B]) poot.Traced[B] {
	return BroadcastTo(b, x, dims(b, like)...)
}

// AddScalar returns x + v for an F32 x.
func AddScalar[B any](b *poot.Builder[B], x poot.Traced[B], v float64) poot.Traced[B] {
	return b.Add(x, b.FullLike(x, v))
}

// MulScalar returns x · v for an F32 x.
func MulScalar[B any](b *poot.Builder[B], x poot.Traced[B], v float64) poot.Traced[B] {
	return b.Mul(x, b.FullLike(x, v))
}

// AsF32 returns x as F32: x itself when it already is, otherwise an explicit
// Cast (how a BF16/F16 norm weight or bias is read as stored).
func AsF32[B any](b *poot.Builder[B], x poot.Traced[B]) poot.Traced[B] {
	if d := b.DType(x); d == poot.F32 || b.Err() != nil {
		return x
	}
	return b.Cast(x, poot.F32)
}

// sigmoid is 1/(1+exp(-x)) without a scope of its own.
func sigmoid[B any](b *poot.Builder[B], x poot.Traced[B]) poot.Traced[B] {
	one := b.FullLike(x, 1)
	return b.Div(one, b.Add(one, b.Exp(b.Neg(x))))
}

// silu is x/(1+exp(-x)) without a scope of its own.
func silu[B any](b *poot.Builder[B], x poot.Traced[B]) poot.Traced[B] {
	return b.Div(x, b.Add(b.FullLike(x, 1), b.Exp(b.Neg(x))))
}

// Sigmoid returns 1/(1+exp(-x)), elementwise.
func Sigmoid[B any](b *poot.Builder[B], x poot.Traced[B]) poot.Traced[B] {
	return composite(b, "sigmoid", nil, in(x), func() poot.Traced[B] { return sigmoid(b, x) })
}

// SiLU returns x·sigmoid(x), written x/(1+exp(-x)) (also called swish).
func SiLU[B any](b *poot.Builder[B], x poot.Traced[B]) poot.Traced[B] {
	return composite(b, "silu", nil, in(x), func() poot.Traced[B] { return silu(b, x) })
}

// softmax is the numerically stable softmax over axis, without a scope:
// ReduceMax, Broadcast, Sub, Exp, ReduceSum, Broadcast, Div.
func softmax[B any](b *poot.Builder[B], x poot.Traced[B], axis int) poot.Traced[B] {
	d := dims(b, x)
	m := b.Broadcast(b.ReduceMax(x, axis), d...)
	e := b.Exp(b.Sub(x, m))
	return b.Div(e, b.Broadcast(b.ReduceSum(e, axis), d...))
}

// Softmax returns exp(x)/Σexp(x) over axis (negative counts from the end),
// computed as exp(x - max) / Σ exp(x - max) so that large logits do not
// overflow. A slice that is entirely -Inf gives NaN, as in exact arithmetic.
func Softmax[B any](b *poot.Builder[B], x poot.Traced[B], axis int) poot.Traced[B] {
	return composite(b, "softmax", poot.Attrs{attr("axis", axis)}, in(x), func() poot.Traced[B] { return softmax(b, x, axis) })
}

// LogSumExp returns log Σ exp(x) over axis, keeping the axis with extent 1,
// computed as max + log Σ exp(x - max). A slice that is entirely -Inf gives
// NaN.
func LogSumExp[B any](b *poot.Builder[B], x poot.Traced[B], axis int) poot.Traced[B] {
	return composite(b, "logsumexp", poot.Attrs{attr("axis", axis)}, in(x), func() poot.Traced[B] {
		m := b.ReduceMax(x, axis)
		e := b.Exp(b.Sub(x, b.Broadcast(m, dims(b, x)...)))
		return b.Add(m, b.Log(b.ReduceSum(e, axis)))
	})
}

// Mean returns the mean of x over axis, keeping the axis with extent 1.
func Mean[B any](b *poot.Builder[B], x poot.Traced[B], axis int) poot.Traced[B] {
	s := b.ReduceSum(x, axis)
	n := 1
	if r := b.Rank(x); r > 0 {
		n = b.Dim(x, axis)
	}
	return MulScalar(b, s, 1/float64(n))
}

// SplitHeads views x [..., H*D] as [..., H, D].
func SplitHeads[B any](b *poot.Builder[B], x poot.Traced[B], heads int) poot.Traced[B] {
	c := b.Dim(x, -1)
	if heads < 1 || c%heads != 0 {
		return fail(b, "split_heads", "%d channels do not split into %d heads", c, heads)
	}
	return b.Reshape(x, withLast(b, x, heads, c/heads)...)
}

// MergeHeads views x [..., H, D] as [..., H*D].
func MergeHeads[B any](b *poot.Builder[B], x poot.Traced[B]) poot.Traced[B] {
	d := dims(b, x)
	if len(d) < 2 {
		return fail(b, "merge_heads", "rank %d, want at least 2", len(d))
	}
	n := len(d)
	return b.Reshape(x, append(d[:n-2:n-2], d[n-2]*d[n-1])...)
}

// negInf is the masked-out logit.
var negInf = math.Inf(-1)
