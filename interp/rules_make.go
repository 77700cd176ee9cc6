package interp

import (
	"fmt"
	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/semantics"
	"github.com/pootlabs/poot/quant"
)

func init() {
	rules[poot.Iota] = ruleIota
	rules[poot.Literal] = ruleLiteral
	rules[poot.Cast] = ruleCast
}

// ruleIota fills the value once at compile time; it never changes.
func ruleIota(c *compiler, e *poot.Eqn) (func() error, error) {
	out := c.out(e)
	if out.f != nil {
		semantics.Iota(out.f, out.t.Shape, e.Params.Axis)
	} else {
		semantics.Iota(out.i, out.t.Shape, e.Params.Axis)
	}
	return nil, nil
}

// ruleLiteral fills the value once at compile time.
func ruleLiteral(c *compiler, e *poot.Eqn) (func() error, error) {
	out := c.out(e)
	v := e.Params.Value
	switch out.t.DType {
	case poot.F32:
		semantics.Fill(out.f, float32(v))
	case poot.I32:
		semantics.Fill(out.i, int32(v))
	case poot.Bool:
		semantics.Fill(out.b, b2u(v != 0))
	default:
		return nil, fmt.Errorf("%w: literal of %v", ErrUnsupported, out.t.DType)
	}
	return nil, nil
}

func ruleCast(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	from, to := x.t.DType, out.t.DType
	n := int(x.t.Shape.Size())
	if from == to {
		return func() error { copy(out.bytes(), x.bytes()); return nil }, nil
	}
	if from.Packed() {
		if to != poot.F32 {
			return nil, fmt.Errorf("%w: cast %v to %v", ErrUnsupported, from, to)
		}
		s := x.t.Shape
		k := s[len(s)-1]
		return func() error { return semantics.DequantizeRows(from, out.f[:n], x.b, k) }, nil
	}
	// Normalise the source to exact float32 values or int32 values, then
	// convert once to the target.
	var floats []float32
	var ints []int32
	var load func()
	switch from {
	case poot.F32:
		load = func() { floats = x.f }
	case poot.F16, poot.BF16:
		floats = make([]float32, n)
		load = func() {
			if from == poot.F16 {
				quant.F16RowToF32(floats, x.b)
			} else {
				quant.BF16RowToF32(floats, x.b)
			}
		}
	case poot.I32:
		load = func() { ints = x.i }
	case poot.Bool:
		ints = make([]int32, n)
		load = func() {
			for i, b := range x.b {
				ints[i] = int32(b2u(b != 0))
			}
		}
	default:
		return nil, fmt.Errorf("%w: cast from %v", ErrUnsupported, from)
	}
	return func() error {
		load()
		if floats != nil {
			semantics.CastF32(to, floats, out.f, out.i, out.b)
		} else {
			semantics.CastI32(to, ints, out.f, out.i, out.b)
		}
		return nil
	}, nil
}
