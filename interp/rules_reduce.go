package interp

import (
	"slices"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/semantics"
)

func init() {
	rules[poot.ReduceSum] = ruleReduce
	rules[poot.ReduceMax] = ruleReduce
	rules[poot.ArgMax] = ruleReduce
	rules[poot.ArgTopK] = ruleArgTopK
}

func ruleReduce(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	shape, axis := x.t.Shape, e.Params.Axis
	isF32 := x.t.DType == poot.F32
	op := e.Op
	return func() error {
		if isF32 {
			semantics.ReduceF32(op, x.f, shape, axis, out.f, out.i)
		} else {
			semantics.ReduceI32(op, x.i, shape, axis, out.i)
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
			slices.SortFunc(order, func(a, b int32) int {
				if isF32 {
					return semantics.TopKOrder(x.f[base+int(a)], x.f[base+int(b)], a, b)
				}
				return semantics.TopKOrder(x.i[base+int(a)], x.i[base+int(b)], a, b)
			})
			copy(out.i[r*k:(r+1)*k], order[:k])
		}
		return nil
	}, nil
}
