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
			ReduceF32(op, x.F32()[:n], shape, axis, of, oi)
			return nil
		}, nil
	}
	return func() error { ReduceI32(op, x.I32()[:n], shape, axis, out.I32()[:m]); return nil }, nil
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

// ReduceF32 computes ReduceSum or ReduceMax into out, or ArgMax into args,
// of the F32 x of shape s over axis. Sums start from +0 and are taken in
// float64 in element order and rounded once; Max propagates NaN; ArgMax
// follows [Greater], the lowest index winning ties.
func ReduceF32(op poot.Op, x []float32, s poot.Shape, axis int, out []float32, args []int32) {
	outer, n, inner := split(s, axis)
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			base, at := o*n*inner+i, o*inner+i
			switch op {
			case poot.ReduceSum:
				var sum float64
				for k := 0; k < n; k++ {
					sum += float64(x[base+k*inner])
				}
				out[at] = float32(sum)
			case poot.ReduceMax:
				m := float32(math.Inf(-1))
				for k := 0; k < n; k++ {
					m = max(m, x[base+k*inner])
				}
				out[at] = m
			default:
				args[at] = argMax(x, base, n, inner)
			}
		}
	}
}

// ReduceI32 computes ReduceSum (wrapping), ReduceMax or ArgMax of the I32 x
// of shape s over axis into out.
func ReduceI32(op poot.Op, x []int32, s poot.Shape, axis int, out []int32) {
	outer, n, inner := split(s, axis)
	for o := 0; o < outer; o++ {
		for i := 0; i < inner; i++ {
			base, at := o*n*inner+i, o*inner+i
			switch op {
			case poot.ReduceSum:
				var sum int32
				for k := 0; k < n; k++ {
					sum += x[base+k*inner]
				}
				out[at] = sum
			case poot.ReduceMax:
				m := int32(math.MinInt32)
				for k := 0; k < n; k++ {
					m = max(m, x[base+k*inner])
				}
				out[at] = m
			default:
				out[at] = argMax(x, base, n, inner)
			}
		}
	}
}

// argMax is the index of the largest of n elements of x from base, stride
// apart, in the order of Greater.
func argMax[T int32 | float32](x []T, base, n, stride int) int32 {
	best := 0
	for k := 1; k < n; k++ {
		if Greater(x[base+k*stride], x[base+best*stride]) {
			best = k
		}
	}
	return int32(best)
}

// Greater is the order of ArgMax and ArgTopK: NaN is larger than any
// number and equal to another NaN; -0 and +0 are equal.
func Greater[T int32 | float32](a, b T) bool {
	an, bn := a != a, b != b
	if an || bn {
		return an && !bn
	}
	return a > b
}

// TopKOrder is ArgTopK's total order of two elements of a row, va at index
// ia and vb at index ib: negative when a comes first, positive when b does.
// Larger values come first (NaN largest), then lower indices, so the
// result does not depend on the sort algorithm.
func TopKOrder[T int32 | float32](va, vb T, ia, ib int32) int {
	switch {
	case Greater(va, vb):
		return -1
	case Greater(vb, va):
		return 1
	}
	return int(ia - ib)
}

// topk sorts the indices of one row in TopKOrder. It is a sort.Interface
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
		return TopKOrder(t.f[ia], t.f[ib], ia, ib) < 0
	}
	return TopKOrder(t.i[ia], t.i[ib], ia, ib) < 0
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
