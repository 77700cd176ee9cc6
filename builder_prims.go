package poot

// This file holds one Builder method per primitive; their definitions (type
// rules, scalar meanings, documented semantics) are the records in prims.go.
// Each method is a thin wrapper over Apply. Negative axes count from the end.

func (b *Builder[B]) axis(h Traced[B], axis int) int {
	if axis < 0 {
		return axis + b.Rank(h)
	}
	return axis
}

// Neg records -x.
func (b *Builder[B]) Neg(x Traced[B]) Traced[B] { return b.Apply(Neg, Params{}, x) }

// Exp records e^x.
func (b *Builder[B]) Exp(x Traced[B]) Traced[B] { return b.Apply(Exp, Params{}, x) }

// Log records the natural logarithm of x.
func (b *Builder[B]) Log(x Traced[B]) Traced[B] { return b.Apply(Log, Params{}, x) }

// Sqrt records the square root of x.
func (b *Builder[B]) Sqrt(x Traced[B]) Traced[B] { return b.Apply(Sqrt, Params{}, x) }

// Rsqrt records 1/sqrt(x).
func (b *Builder[B]) Rsqrt(x Traced[B]) Traced[B] { return b.Apply(Rsqrt, Params{}, x) }

// Tanh records tanh(x).
func (b *Builder[B]) Tanh(x Traced[B]) Traced[B] { return b.Apply(Tanh, Params{}, x) }

// Erf records erf(x).
func (b *Builder[B]) Erf(x Traced[B]) Traced[B] { return b.Apply(Erf, Params{}, x) }

// Sin records sin(x).
func (b *Builder[B]) Sin(x Traced[B]) Traced[B] { return b.Apply(Sin, Params{}, x) }

// Cos records cos(x).
func (b *Builder[B]) Cos(x Traced[B]) Traced[B] { return b.Apply(Cos, Params{}, x) }

// Abs records |x|.
func (b *Builder[B]) Abs(x Traced[B]) Traced[B] { return b.Apply(Abs, Params{}, x) }

// Not records the logical negation of a Bool value.
func (b *Builder[B]) Not(x Traced[B]) Traced[B] { return b.Apply(Not, Params{}, x) }

// Add records x+y.
func (b *Builder[B]) Add(x, y Traced[B]) Traced[B] { return b.Apply(Add, Params{}, x, y) }

// Sub records x-y.
func (b *Builder[B]) Sub(x, y Traced[B]) Traced[B] { return b.Apply(Sub, Params{}, x, y) }

// Mul records x*y.
func (b *Builder[B]) Mul(x, y Traced[B]) Traced[B] { return b.Apply(Mul, Params{}, x, y) }

// Div records x/y.
func (b *Builder[B]) Div(x, y Traced[B]) Traced[B] { return b.Apply(Div, Params{}, x, y) }

// Max records the elementwise maximum.
func (b *Builder[B]) Max(x, y Traced[B]) Traced[B] { return b.Apply(Max, Params{}, x, y) }

// Min records the elementwise minimum.
func (b *Builder[B]) Min(x, y Traced[B]) Traced[B] { return b.Apply(Min, Params{}, x, y) }

// Pow records x^y.
func (b *Builder[B]) Pow(x, y Traced[B]) Traced[B] { return b.Apply(Pow, Params{}, x, y) }

// Eq records x == y.
func (b *Builder[B]) Eq(x, y Traced[B]) Traced[B] { return b.Apply(Eq, Params{}, x, y) }

// Ne records x != y.
func (b *Builder[B]) Ne(x, y Traced[B]) Traced[B] { return b.Apply(Ne, Params{}, x, y) }

// Lt records x < y.
func (b *Builder[B]) Lt(x, y Traced[B]) Traced[B] { return b.Apply(Lt, Params{}, x, y) }

// Le records x <= y.
func (b *Builder[B]) Le(x, y Traced[B]) Traced[B] { return b.Apply(Le, Params{}, x, y) }

// Gt records x > y.
func (b *Builder[B]) Gt(x, y Traced[B]) Traced[B] { return b.Apply(Gt, Params{}, x, y) }

// Ge records x >= y.
func (b *Builder[B]) Ge(x, y Traced[B]) Traced[B] { return b.Apply(Ge, Params{}, x, y) }

// And records the logical conjunction of two Bool values.
func (b *Builder[B]) And(x, y Traced[B]) Traced[B] { return b.Apply(And, Params{}, x, y) }

// Or records the logical disjunction of two Bool values.
func (b *Builder[B]) Or(x, y Traced[B]) Traced[B] { return b.Apply(Or, Params{}, x, y) }

// Select records cond ? onTrue : onFalse, elementwise.
func (b *Builder[B]) Select(cond, onTrue, onFalse Traced[B]) Traced[B] {
	return b.Apply(Select, Params{}, cond, onTrue, onFalse)
}

// ReduceSum records the sum over axis, keeping it with extent 1.
func (b *Builder[B]) ReduceSum(x Traced[B], axis int) Traced[B] {
	return b.Apply(ReduceSum, Params{Axis: b.axis(x, axis)}, x)
}

// ReduceMax records the maximum over axis, keeping it with extent 1.
func (b *Builder[B]) ReduceMax(x Traced[B], axis int) Traced[B] {
	return b.Apply(ReduceMax, Params{Axis: b.axis(x, axis)}, x)
}

// ArgMax records the index of the maximum over axis, keeping it with
// extent 1.
func (b *Builder[B]) ArgMax(x Traced[B], axis int) Traced[B] {
	return b.Apply(ArgMax, Params{Axis: b.axis(x, axis)}, x)
}

// ArgTopK records the indices of the k largest elements of the last axis, in
// descending order.
func (b *Builder[B]) ArgTopK(x Traced[B], k int) Traced[B] {
	return b.Apply(ArgTopK, Params{K: k}, x)
}

// MatMul records out[..., m, n] = Σ_k a[..., m, k] · w[..., n, k].
func (b *Builder[B]) MatMul(a, w Traced[B]) Traced[B] { return b.Apply(MatMul, Params{}, a, w) }

// IndexedMatMul records out[r, n] = Σ_k x[r, k] · w[idx[r], n, k].
func (b *Builder[B]) IndexedMatMul(x, w, idx Traced[B]) Traced[B] {
	return b.Apply(IndexedMatMul, Params{}, x, w, idx)
}

// Reshape records x viewed with the given extents.
func (b *Builder[B]) Reshape(x Traced[B], dims ...int) Traced[B] {
	return b.Apply(Reshape, Params{Shape: Shape(dims)}, x)
}

// Broadcast records x repeated to the given extents (same rank; each extent
// of x is 1 or equal).
func (b *Builder[B]) Broadcast(x Traced[B], dims ...int) Traced[B] {
	return b.Apply(Broadcast, Params{Shape: Shape(dims)}, x)
}

// Transpose records x with its axes permuted: result axis i is axis perm[i]
// of x.
func (b *Builder[B]) Transpose(x Traced[B], perm ...int) Traced[B] {
	return b.Apply(Transpose, Params{Perm: perm}, x)
}

// Slice records x[start:limit] on every axis.
func (b *Builder[B]) Slice(x Traced[B], start, limit []int) Traced[B] {
	return b.Apply(Slice, Params{Start: start, Limit: limit}, x)
}

// SliceAxis records x restricted to [start, limit) on one axis.
func (b *Builder[B]) SliceAxis(x Traced[B], axis, start, limit int) Traced[B] {
	s := b.Shape(x)
	axis = b.axis(x, axis)
	st := make([]int, len(s))
	lim := append([]int(nil), s...)
	if axis >= 0 && axis < len(s) {
		st[axis], lim[axis] = start, limit
	}
	return b.Apply(Slice, Params{Start: st, Limit: lim}, x)
}

// Concat records its operands joined along axis.
func (b *Builder[B]) Concat(axis int, xs ...Traced[B]) Traced[B] {
	if len(xs) > 0 {
		axis = b.axis(xs[0], axis)
	}
	return b.Apply(Concat, Params{Axis: axis}, xs...)
}

// Gather records table rows read at idx.
func (b *Builder[B]) Gather(table, idx Traced[B]) Traced[B] {
	return b.Apply(Gather, Params{}, table, idx)
}

// WriteRows records dst with rows idx[i] replaced by src[i].
func (b *Builder[B]) WriteRows(dst, idx, src Traced[B]) Traced[B] {
	return b.Apply(WriteRows, Params{}, dst, idx, src)
}

// Iota records a tensor of type t whose elements are their index along axis.
func (b *Builder[B]) Iota(t TensorType, axis int) Traced[B] {
	if axis < 0 {
		axis += len(t.Shape)
	}
	return b.Apply(Iota, Params{Shape: t.Shape, Axis: axis, DType: t.DType}, nil...)
}

// Full records a tensor of type t filled with v.
func (b *Builder[B]) Full(t TensorType, v float64) Traced[B] {
	return b.Apply(Literal, Params{Shape: t.Shape, DType: t.DType, Value: v}, nil...)
}

// Scalar records an F32 scalar (rank 0).
func (b *Builder[B]) Scalar(v float64) Traced[B] { return b.Full(TensorType{DType: F32}, v) }

// FullLike records a tensor with x's type filled with v.
func (b *Builder[B]) FullLike(x Traced[B], v float64) Traced[B] { return b.Full(b.Aval(x), v) }

// Cast records x converted to dtype d.
func (b *Builder[B]) Cast(x Traced[B], d DType) Traced[B] {
	return b.Apply(Cast, Params{DType: d}, x)
}
