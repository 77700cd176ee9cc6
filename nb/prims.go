package nb

import (
	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/ops"
)

// This file holds one method per primitive of the IR (see the constants of
// poot.Op for their semantics). Binary methods broadcast their operands
// numpy-style; the IR itself never broadcasts implicitly, so the broadcast
// is recorded as explicit Reshape and Broadcast equations.

func (g *Graph) unary(op string, f func(b *builder, x handle) handle, x Value) Value {
	return g.apply(op, 0, func(b *builder, in []handle) handle { return f(b, in[0]) }, x)
}

// elementwise records the elementwise primitive op over xs, broadcast
// numpy-style when there are several. Every elementwise method is one call
// of it, so a new elementwise primitive's method is one line.
func (g *Graph) elementwise(op poot.Op, xs ...Value) Value {
	name := op.String()
	return g.apply(name, 0, func(b *builder, in []handle) handle {
		if len(in) > 1 {
			in = broadcastAll(b, name, in...)
		}
		return b.Apply(op, poot.Params{}, in...)
	}, xs...)
}

// broadcastAll broadcasts its operands to their common shape (numpy's rule:
// align the trailing axes; each extent is 1 or the common one).
func broadcastAll(b *builder, op string, xs ...handle) []handle {
	var common []int
	for _, x := range xs {
		s := b.Shape(x)
		if b.Err() != nil {
			return xs
		}
		if len(s) > len(common) {
			common = append(make([]int, len(s)-len(common)), common...)
		}
		off := len(common) - len(s)
		for i, d := range s {
			switch c := common[off+i]; {
			case c == 0 || c == 1:
				common[off+i] = d
			case d != 1 && d != c:
				b.Failf(poot.ErrType, op, "shapes do not broadcast: %v against %v", s, poot.Shape(common))
				return xs
			}
		}
	}
	for i := range common {
		if common[i] == 0 {
			common[i] = 1
		}
	}
	out := make([]handle, len(xs))
	for i, x := range xs {
		out[i] = ops.BroadcastTo(b, x, common...)
	}
	return out
}

// Neg returns -x.
func (g *Graph) Neg(x Value) Value { return g.elementwise(poot.Neg, x) }

// Exp returns e^x.
func (g *Graph) Exp(x Value) Value { return g.elementwise(poot.Exp, x) }

// Log returns the natural logarithm of x.
func (g *Graph) Log(x Value) Value { return g.elementwise(poot.Log, x) }

// Sqrt returns the square root of x.
func (g *Graph) Sqrt(x Value) Value { return g.elementwise(poot.Sqrt, x) }

// Rsqrt returns 1/sqrt(x).
func (g *Graph) Rsqrt(x Value) Value { return g.elementwise(poot.Rsqrt, x) }

// Tanh returns tanh(x).
func (g *Graph) Tanh(x Value) Value { return g.elementwise(poot.Tanh, x) }

// Erf returns erf(x).
func (g *Graph) Erf(x Value) Value { return g.elementwise(poot.Erf, x) }

// Sin returns sin(x).
func (g *Graph) Sin(x Value) Value { return g.elementwise(poot.Sin, x) }

// Cos returns cos(x).
func (g *Graph) Cos(x Value) Value { return g.elementwise(poot.Cos, x) }

// Abs returns |x|.
func (g *Graph) Abs(x Value) Value { return g.elementwise(poot.Abs, x) }

// Not returns the logical negation of a bool x.
func (g *Graph) Not(x Value) Value { return g.elementwise(poot.Not, x) }

// Add returns x+y.
func (g *Graph) Add(x, y Value) Value { return g.elementwise(poot.Add, x, y) }

// Sub returns x-y.
func (g *Graph) Sub(x, y Value) Value { return g.elementwise(poot.Sub, x, y) }

// Mul returns x*y.
func (g *Graph) Mul(x, y Value) Value { return g.elementwise(poot.Mul, x, y) }

// Div returns x/y.
func (g *Graph) Div(x, y Value) Value { return g.elementwise(poot.Div, x, y) }

// Max returns the elementwise maximum of x and y.
func (g *Graph) Max(x, y Value) Value { return g.elementwise(poot.Max, x, y) }

// Min returns the elementwise minimum of x and y.
func (g *Graph) Min(x, y Value) Value { return g.elementwise(poot.Min, x, y) }

// Pow returns x^y.
func (g *Graph) Pow(x, y Value) Value { return g.elementwise(poot.Pow, x, y) }

// Eq returns x == y, as bool.
func (g *Graph) Eq(x, y Value) Value { return g.elementwise(poot.Eq, x, y) }

// Ne returns x != y, as bool.
func (g *Graph) Ne(x, y Value) Value { return g.elementwise(poot.Ne, x, y) }

// Lt returns x < y, as bool.
func (g *Graph) Lt(x, y Value) Value { return g.elementwise(poot.Lt, x, y) }

// Le returns x <= y, as bool.
func (g *Graph) Le(x, y Value) Value { return g.elementwise(poot.Le, x, y) }

// Gt returns x > y, as bool.
func (g *Graph) Gt(x, y Value) Value { return g.elementwise(poot.Gt, x, y) }

// Ge returns x >= y, as bool.
func (g *Graph) Ge(x, y Value) Value { return g.elementwise(poot.Ge, x, y) }

// And returns the logical conjunction of bool x and y.
func (g *Graph) And(x, y Value) Value { return g.elementwise(poot.And, x, y) }

// Or returns the logical disjunction of bool x and y.
func (g *Graph) Or(x, y Value) Value { return g.elementwise(poot.Or, x, y) }

// Select returns onTrue where the bool cond holds and onFalse elsewhere;
// the three operands broadcast.
func (g *Graph) Select(cond, onTrue, onFalse Value) Value {
	return g.elementwise(poot.Select, cond, onTrue, onFalse)
}

// ReduceSum returns the sum of x over axis (negative counts from the end),
// keeping the axis with extent 1.
func (g *Graph) ReduceSum(x Value, axis int) Value {
	return g.unary("reduce_sum", func(b *builder, x handle) handle { return b.ReduceSum(x, axis) }, x)
}

// ReduceMax returns the maximum of x over axis, keeping the axis with
// extent 1.
func (g *Graph) ReduceMax(x Value, axis int) Value {
	return g.unary("reduce_max", func(b *builder, x handle) handle { return b.ReduceMax(x, axis) }, x)
}

// ArgMax returns the index (i32) of the maximum of x over axis, keeping the
// axis with extent 1.
func (g *Graph) ArgMax(x Value, axis int) Value {
	return g.unary("arg_max", func(b *builder, x handle) handle { return b.ArgMax(x, axis) }, x)
}

// ArgTopK returns the indices (i32) of the k largest elements of x's last
// axis, largest first.
func (g *Graph) ArgTopK(x Value, k int) Value {
	return g.unary("arg_top_k", func(b *builder, x handle) handle { return b.ArgTopK(x, k) }, x)
}

// MatMul returns out[..., m, n] = Σ_k a[..., m, k]·w[..., n, k]: it
// contracts the last axis of both operands, so w is laid out as a weight
// [out, in] (or batched like a). a is f32 of rank ≥ 2; w may be any float
// dtype, read as stored.
func (g *Graph) MatMul(a, w Value) Value {
	return g.apply("matmul", 0, func(b *builder, in []handle) handle { return b.MatMul(in[0], in[1]) }, a, w)
}

// Reshape returns x viewed with the given extents; one extent may be -1,
// which takes what the others leave.
func (g *Graph) Reshape(x Value, dims ...int) Value {
	dims = append([]int(nil), dims...)
	return g.unary("reshape", func(b *builder, x handle) handle {
		d := append([]int(nil), dims...)
		size, free := int64(1), -1
		for i, n := range d {
			if n == -1 && free < 0 {
				free = i
				continue
			}
			size *= int64(n)
		}
		if free >= 0 {
			total := b.Aval(x).Shape.Size()
			if size > 0 && total%size == 0 {
				d[free] = int(total / size)
			}
		}
		return b.Reshape(x, d...)
	}, x)
}

// Broadcast returns x repeated to the given extents, numpy-style: x's
// extents align with the trailing ones and each is 1 or equal.
func (g *Graph) Broadcast(x Value, dims ...int) Value {
	dims = append([]int(nil), dims...)
	return g.unary("broadcast", func(b *builder, x handle) handle { return ops.BroadcastTo(b, x, dims...) }, x)
}

// Transpose returns x with its axes permuted (result axis i is axis perm[i]
// of x); without perm it reverses the axes, as numpy does.
func (g *Graph) Transpose(x Value, perm ...int) Value {
	perm = append([]int(nil), perm...)
	return g.unary("transpose", func(b *builder, x handle) handle {
		p := perm
		if len(p) == 0 {
			r := b.Rank(x)
			p = make([]int, r)
			for i := range p {
				p[i] = r - 1 - i
			}
		}
		return b.Transpose(x, p...)
	}, x)
}

// Slice returns x restricted to [start, limit) on axis (negative counts
// from the end).
func (g *Graph) Slice(x Value, axis, start, limit int) Value {
	return g.unary("slice", func(b *builder, x handle) handle { return b.SliceAxis(x, axis, start, limit) }, x)
}

// Concat returns its operands joined along axis.
func (g *Graph) Concat(axis int, xs ...Value) Value {
	return g.apply("concat", 0, func(b *builder, in []handle) handle { return b.Concat(axis, in...) }, xs...)
}

// Gather returns the rows of table at the i32 indices idx: the result's
// shape is idx's followed by table's without its first axis.
func (g *Graph) Gather(table, idx Value) Value {
	return g.apply("gather", 0, func(b *builder, in []handle) handle { return b.Gather(in[0], in[1]) }, table, idx)
}

// Cast returns x converted to dtype ("f32", "i32", "bool", "f16", "bf16").
func (g *Graph) Cast(x Value, dtype string) Value {
	d, err := poot.ParseDType(dtype)
	return g.unary("cast", func(b *builder, x handle) handle {
		if err != nil {
			b.Failf(poot.ErrType, "cast", "%v", err)
		}
		return b.Cast(x, d)
	}, x)
}

// Scalar returns the f32 scalar v (rank 0); binary methods broadcast it.
func (g *Graph) Scalar(v float64) Value {
	return g.apply("scalar", 0, func(b *builder, _ []handle) handle { return b.Scalar(v) })
}

// Full returns an f32 tensor of the given extents filled with v.
func (g *Graph) Full(v float64, dims ...int) Value {
	dims = append([]int(nil), dims...)
	return g.apply("full", 0, func(b *builder, _ []handle) handle { return b.Full(poot.T(poot.F32, dims...), v) })
}

// Iota returns an f32 tensor of the given extents whose elements are their
// index along axis.
func (g *Graph) Iota(axis int, dims ...int) Value {
	dims = append([]int(nil), dims...)
	return g.apply("iota", 0, func(b *builder, _ []handle) handle { return b.Iota(poot.T(poot.F32, dims...), axis) })
}
