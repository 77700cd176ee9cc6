package hostexec

import (
	"math"
	"sort"

	"github.com/pootlabs/poot"
)

func ruleReduce(e *Eqn) (func() error, error) {
	x, out := e.Args[0], e.Res
	shape, axis, op := e.In[0].Shape, e.Params.Axis, e.Op
	n, m := size(e.In[0]), size(e.Out)
	if e.In[0].DType == poot.F32 {
		return func() error {
			var of []float32
			var oi []int32
			if op == poot.ArgMax {
				oi = out.I32()[:m]
			} else {
				of = out.F32()[:m]
			}
			reduceF32(op, x.F32()[:n], shape, axis, of, oi)
			return nil
		}, nil
	}
	return func() error { reduceI32(op, x.I32()[:n], shape, axis, out.I32()[:m]); return nil }, nil
}

// split returns the extents of s before, at and after axis.
func split(s poot.Shape, axis int) (outer, n, inner int) {
	outer, inner = 1, 1
	for i, d := range s {
		switch {
		case i < axis:
			outer *= d
		case i > axis:
			inner *= d
		}
	}
	return outer, s[axis], inner
}

// lanes calls f for every lane of shape s along axis: the n elements
// from base, stride apart, that reduce into element at of the result.
func lanes(s poot.Shape, axis int, f func(base, stride, n, at int)) {
	outer, n, inner := split(s, axis)
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			f(o*n*inner+i, inner, n, o*inner+i)
		}
	}
}

// reduceF32 computes ReduceSum or ReduceMax into out, or ArgMax into args,
// of the F32 x of shape s over axis. Sums start from +0 and are taken in
// float64 in element order and rounded once; Max propagates NaN; ArgMax
// follows [greater], the lowest index winning ties.
func reduceF32(op poot.Op, x []float32, s poot.Shape, axis int, out []float32, args []int32) {
	lanes(s, axis, func(base, stride, n, at int) {
		switch op {
		case poot.ReduceSum:
			var sum float64
			for k := range n {
				sum += float64(x[base+k*stride])
			}
			out[at] = float32(sum)
		case poot.ReduceMax:
			out[at] = laneMax(x, base, stride, n, float32(math.Inf(-1)))
		default:
			args[at] = argMax(x, base, n, stride)
		}
	})
}

// reduceI32 computes ReduceSum (wrapping), ReduceMax or ArgMax of the I32 x
// of shape s over axis into out.
func reduceI32(op poot.Op, x []int32, s poot.Shape, axis int, out []int32) {
	lanes(s, axis, func(base, stride, n, at int) {
		switch op {
		case poot.ReduceSum:
			var sum int32
			for k := range n {
				sum += x[base+k*stride]
			}
			out[at] = sum
		case poot.ReduceMax:
			out[at] = laneMax(x, base, stride, n, math.MinInt32)
		default:
			out[at] = argMax(x, base, n, stride)
		}
	})
}

// laneMax folds Max over a lane, from the least value lo.
func laneMax[T int32 | float32](x []T, base, stride, n int, lo T) T {
	m := lo
	for k := range n {
		m = max(m, x[base+k*stride])
	}
	return m
}

// argMax is the index of the largest of n elements of x from base, stride
// apart, in the order of greater.
func argMax[T int32 | float32](x []T, base, n, stride int) int32 {
	best := 0
	for k := 1; k < n; k++ {
		if greater(x[base+k*stride], x[base+best*stride]) {
			best = k
		}
	}
	return int32(best)
}

// greater is the order of ArgMax and ArgTopK: NaN is larger than any
// number and equal to another NaN; -0 and +0 are equal.
func greater[T int32 | float32](a, b T) bool {
	an, bn := a != a, b != b
	if an || bn {
		return an && !bn
	}
	return a > b
}

// topKOrder is ArgTopK's total order of two elements of a row, va at index
// ia and vb at index ib: negative when a comes first, positive when b does.
// Larger values come first (NaN largest), then lower indices, so the
// result does not depend on the sort algorithm.
func topKOrder[T int32 | float32](va, vb T, ia, ib int32) int {
	switch {
	case greater(va, vb):
		return -1
	case greater(vb, va):
		return 1
	}
	return int(ia - ib)
}

// topk sorts the indices of one row in topKOrder. It is a sort.Interface
// kept in the compiled rule, so sorting allocates nothing.
type topk struct {
	order []int32
	f     []float32
	i     []int32
}

func (t *topk) Len() int      { return len(t.order) }
func (t *topk) Swap(a, b int) { t.order[a], t.order[b] = t.order[b], t.order[a] }
func (t *topk) Less(a, b int) bool {
	ia, ib := t.order[a], t.order[b]
	if t.f != nil {
		return topKOrder(t.f[ia], t.f[ib], ia, ib) < 0
	}
	return topKOrder(t.i[ia], t.i[ib], ia, ib) < 0
}

func ruleArgTopK(e *Eqn) (func() error, error) {
	x, out := e.Args[0], e.Res
	s := e.In[0].Shape
	n := s[len(s)-1]
	rows := size(e.In[0]) / n
	k := e.Params.K
	isF32 := e.In[0].DType == poot.F32
	t := &topk{order: make([]int32, n)}
	var si sort.Interface = t
	return func() error {
		o := out.I32()
		for r := 0; r < rows; r++ {
			for j := range t.order {
				t.order[j] = int32(j)
			}
			if isF32 {
				t.f, t.i = x.F32()[r*n:(r+1)*n], nil
			} else {
				t.f, t.i = nil, x.I32()[r*n:(r+1)*n]
			}
			sort.Sort(si)
			copy(o[r*k:(r+1)*k], t.order[:k])
		}
		return nil
	}, nil
}
