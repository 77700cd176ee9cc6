package interp

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/pootlabs/poot"
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
	outer, n, inner := split(out.t.Shape, e.Params.Axis)
	for o := 0; o < outer; o++ {
		for k := 0; k < n; k++ {
			for i := 0; i < inner; i++ {
				at := (o*n+k)*inner + i
				if out.f != nil {
					out.f[at] = float32(k)
				} else {
					out.i[at] = int32(k)
				}
			}
		}
	}
	return nil, nil
}

// ruleLiteral fills the value once at compile time.
func ruleLiteral(c *compiler, e *poot.Eqn) (func() error, error) {
	out := c.out(e)
	v := e.Params.Value
	switch out.t.DType {
	case poot.F32:
		for i := range out.f {
			out.f[i] = float32(v)
		}
	case poot.I32:
		for i := range out.i {
			out.i[i] = int32(v)
		}
	case poot.Bool:
		for i := range out.b {
			out.b[i] = b2u(v != 0)
		}
	default:
		return nil, fmt.Errorf("%w: literal of %v", ErrUnsupported, out.t.DType)
	}
	return nil, nil
}

// f32ToI32 truncates toward zero and saturates; NaN gives 0.
func f32ToI32(f float32) int32 {
	switch {
	case f != f:
		return 0
	case f >= math.MaxInt32:
		return math.MaxInt32
	case f <= math.MinInt32:
		return math.MinInt32
	}
	return int32(f)
}

// i32ToBF16 rounds an int32 to bfloat16 once, to nearest even. Going
// through float32 would round twice for magnitudes beyond 2^24.
func i32ToBF16(v int32) uint16 {
	if f := float32(v); int64(f) == int64(v) {
		return quant.F32ToBF16(f)
	}
	u := uint64(v)
	if v < 0 {
		u = uint64(-int64(v))
	}
	shift := bits.Len64(u) - 8
	q, rem, half := u>>shift, u&(1<<shift-1), uint64(1)<<(shift-1)
	if rem > half || rem == half && q&1 == 1 {
		q++
	}
	r := float32(q << shift) // at most 9 significant bits: exact
	if v < 0 {
		r = -r
	}
	return quant.F32ToBF16(r)
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
		rb := int(from.RowBytes(int64(k)))
		rows := n / k
		return func() error {
			for r := 0; r < rows; r++ {
				if err := quant.DequantizeRow(from, out.f[r*k:(r+1)*k], x.b[r*rb:(r+1)*rb]); err != nil {
					return err
				}
			}
			return nil
		}, nil
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
			switch to {
			case poot.F32:
				copy(out.f, floats)
			case poot.F16:
				quant.F32RowToF16(out.b, floats)
			case poot.BF16:
				quant.F32RowToBF16(out.b, floats)
			case poot.I32:
				for i, f := range floats {
					out.i[i] = f32ToI32(f)
				}
			case poot.Bool:
				for i, f := range floats {
					out.b[i] = b2u(f != 0) // NaN != 0
				}
			}
			return nil
		}
		for i, v := range ints {
			switch to {
			case poot.F32:
				out.f[i] = float32(v)
			case poot.F16:
				// Exact below 2^24; above, both routes give infinity.
				h := quant.F32ToF16(float32(v))
				out.b[2*i], out.b[2*i+1] = byte(h), byte(h>>8)
			case poot.BF16:
				h := i32ToBF16(v)
				out.b[2*i], out.b[2*i+1] = byte(h), byte(h>>8)
			case poot.I32:
				out.i[i] = v
			case poot.Bool:
				out.b[i] = b2u(v != 0)
			}
		}
		return nil
	}, nil
}
