package interp

import (
	"math"
	"slices"

	"github.com/pootlabs/poot"
)

func init() {
	rules[poot.ReduceSum] = ruleReduce
	rules[poot.ReduceMax] = ruleReduce
	rules[poot.ArgMax] = ruleReduce
	rules[poot.ArgTopK] = ruleArgTopK
}

// split returns the extents before, at and after axis.
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

// greaterF32 orders float32 values for ArgMax and ArgTopK: NaN counts as
// larger than any number.
func greaterF32(a, b float32) bool {
	an, bn := a != a, b != b
	if an || bn {
		return an && !bn
	}
	return a > b
}

func ruleReduce(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	outer, n, inner := split(x.t.Shape, e.Params.Axis)
	at := func(o, k, i int) int { return (o*n+k)*inner + i }
	isF32 := x.t.DType == poot.F32
	switch e.Op {
	case poot.ReduceSum:
		return func() error {
			for o := 0; o < outer; o++ {
				for i := 0; i < inner; i++ {
					if isF32 {
						var s float64
						for k := 0; k < n; k++ {
							s += float64(x.f[at(o, k, i)])
						}
						out.f[o*inner+i] = float32(s)
					} else {
						var s int32 // wraps
						for k := 0; k < n; k++ {
							s += x.i[at(o, k, i)]
						}
						out.i[o*inner+i] = s
					}
				}
			}
			return nil
		}, nil
	case poot.ReduceMax:
		return func() error {
			for o := 0; o < outer; o++ {
				for i := 0; i < inner; i++ {
					if isF32 {
						m := float32(math.Inf(-1))
						for k := 0; k < n; k++ {
							m = max(m, x.f[at(o, k, i)]) // max propagates NaN
						}
						out.f[o*inner+i] = m
					} else {
						m := int32(math.MinInt32)
						for k := 0; k < n; k++ {
							m = max(m, x.i[at(o, k, i)])
						}
						out.i[o*inner+i] = m
					}
				}
			}
			return nil
		}, nil
	}
	// ArgMax: the lowest index wins ties; the first NaN wins outright.
	return func() error {
		for o := 0; o < outer; o++ {
			for i := 0; i < inner; i++ {
				best := 0
				for k := 1; k < n; k++ {
					if isF32 {
						if greaterF32(x.f[at(o, k, i)], x.f[at(o, best, i)]) {
							best = k
						}
					} else if x.i[at(o, k, i)] > x.i[at(o, best, i)] {
						best = k
					}
				}
				out.i[o*inner+i] = int32(best)
			}
		}
		return nil
	}, nil
}

func ruleArgTopK(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	s := x.t.Shape
	n := s[len(s)-1]
	rows := int(s.Size()) / n
	k := e.Params.K
	order := make([]int32, n)
	isF32 := x.t.DType == poot.F32
	return func() error {
		for r := 0; r < rows; r++ {
			for j := range order {
				order[j] = int32(j)
			}
			base := r * n
			// A total order: larger value first (NaN largest), then lower
			// index, so the result does not depend on the sort algorithm.
			slices.SortFunc(order, func(a, b int32) int {
				var ab, ba bool
				if isF32 {
					va, vb := x.f[base+int(a)], x.f[base+int(b)]
					ab, ba = greaterF32(va, vb), greaterF32(vb, va)
				} else {
					va, vb := x.i[base+int(a)], x.i[base+int(b)]
					ab, ba = va > vb, vb > va
				}
				switch {
				case ab:
					return -1
				case ba:
					return 1
				}
				return int(a - b)
			})
			copy(out.i[r*k:(r+1)*k], order[:k])
		}
		return nil
	}, nil
}
