package hostexec

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/quant"
)

// ruleFill fills an Iota or Literal once.
func ruleFill(e *Eqn) (func() error, error) {
	out, t := e.Res, e.Out
	n := size(t)
	if e.Op == poot.Iota {
		if t.DType == poot.F32 {
			iota(out.F32()[:n], t.Shape, e.Params.Axis)
		} else {
			iota(out.I32()[:n], t.Shape, e.Params.Axis)
		}
		return nil, nil
	}
	v := e.Params.Value
	switch t.DType {
	case poot.F32:
		fill(out.F32()[:n], float32(v))
	case poot.I32:
		fill(out.I32()[:n], int32(v))
	case poot.Bool:
		fill(out.Bytes()[:n], Bool(v != 0))
	default:
		return nil, fmt.Errorf("%w: literal of %v", ErrUnsupported, t.DType)
	}
	return nil, nil
}

// iota fills dst, of shape s, with each element's index along axis.
func iota[T int32 | float32](dst []T, s poot.Shape, axis int) {
	outer, n, inner := split(s, axis)
	for o := 0; o < outer; o++ {
		for k := 0; k < n; k++ {
			row := dst[(o*n+k)*inner:][:inner]
			for i := range row {
				row[i] = T(k)
			}
		}
	}
}

func fill[T any](dst []T, v T) {
	for i := range dst {
		dst[i] = v
	}
}

// ruleCast converts through exact float32 or int32 values: F32, F16 and
// BF16 sources are widened to float32 (exact), I32 and Bool sources read as
// int32, and each is converted once to the target.
func ruleCast(e *Eqn) (func() error, error) {
	x, out := e.Args[0], e.Res
	from, to := e.In[0].DType, e.Out.DType
	n := size(e.In[0])
	if from == to {
		nb := int(e.In[0].Bytes())
		return func() error { copy(out.Bytes()[:nb], x.Bytes()[:nb]); return nil }, nil
	}
	if to.Packed() {
		if from != poot.F32 {
			return nil, fmt.Errorf("%w: cast %v to %v", ErrUnsupported, from, to)
		}
		k := e.In[0].Shape[len(e.In[0].Shape)-1]
		return func() error { return quantizeRows(to, out.Bytes(), x.F32()[:n], k) }, nil
	}
	if from.Packed() {
		if to != poot.F32 {
			return nil, fmt.Errorf("%w: cast %v to %v", ErrUnsupported, from, to)
		}
		k := e.In[0].Shape[len(e.In[0].Shape)-1]
		return func() error { return dequantizeRows(from, out.F32()[:n], x.Bytes(), k) }, nil
	}
	var floats []float32
	var ints []int32
	switch from {
	case poot.F16, poot.BF16:
		floats = make([]float32, n)
	case poot.Bool:
		ints = make([]int32, n)
	case poot.F32, poot.I32:
	default:
		return nil, fmt.Errorf("%w: cast from %v", ErrUnsupported, from)
	}
	widen := quant.F16RowToF32
	if from == poot.BF16 {
		widen = quant.BF16RowToF32
	}
	return func() error {
		src := x.Bytes()[:e.In[0].Bytes()]
		switch from {
		case poot.F32:
			castF32(to, x.F32()[:n], out)
		case poot.F16, poot.BF16:
			if to == poot.F32 {
				widen(out.F32()[:n], src)
				return nil
			}
			widen(floats, src)
			castF32(to, floats, out)
		case poot.I32:
			castI32(to, x.I32()[:n], out)
		case poot.Bool:
			for i, b := range src {
				ints[i] = int32(Bool(b != 0))
			}
			castI32(to, ints, out)
		}
		return nil
	}, nil
}

// f32ToI32 is Cast from F32 to I32: it truncates toward zero and
// saturates; NaN gives 0.
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

// i32ToBF16 is Cast from I32 to BF16: it rounds once, to nearest even.
// Going through float32 would round twice for magnitudes beyond 2^24.
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

// castF32 is Cast of the float32 values src to the plain dtype to, written
// to out: F32 as is, I32 by [f32ToI32], F16 and BF16 (little-endian, with
// quant's rounding), Bool true for anything but ±0 (NaN included).
func castF32(to poot.DType, src []float32, out Storage) {
	switch to {
	case poot.F32:
		copy(out.F32(), src)
	case poot.F16:
		quant.F32RowToF16(out.Bytes(), src)
	case poot.BF16:
		quant.F32RowToBF16(out.Bytes(), src)
	case poot.I32:
		o := out.I32()
		for j, v := range src {
			o[j] = f32ToI32(v)
		}
	case poot.Bool:
		o := out.Bytes()
		for j, v := range src {
			o[j] = Bool(v != 0)
		}
	}
}

// castI32 is Cast of the int32 values src (a Bool source read as 0 and 1)
// to the plain dtype to, written as castF32 writes. F16 goes through
// float32, which is exact below 2^24 and infinite above either way; BF16
// rounds once ([i32ToBF16]).
func castI32(to poot.DType, src []int32, out Storage) {
	switch to {
	case poot.F32:
		o := out.F32()
		for j, v := range src {
			o[j] = float32(v)
		}
	case poot.F16:
		b := out.Bytes()
		for j, v := range src {
			h := quant.F32ToF16(float32(v))
			b[2*j], b[2*j+1] = byte(h), byte(h>>8)
		}
	case poot.BF16:
		b := out.Bytes()
		for j, v := range src {
			h := i32ToBF16(v)
			b[2*j], b[2*j+1] = byte(h), byte(h>>8)
		}
	case poot.I32:
		copy(out.I32(), src)
	case poot.Bool:
		b := out.Bytes()
		for j, v := range src {
			b[j] = Bool(v != 0)
		}
	}
}

// quantizeRows encodes the rows of k elements of src as dtype to, one
// after another in dst.
func quantizeRows(to poot.DType, dst []byte, src []float32, k int) error {
	rb := int(to.RowBytes(int64(k)))
	for r := range len(src) / k {
		if err := quant.QuantizeRow(to, dst[r*rb:(r+1)*rb], src[r*k:(r+1)*k]); err != nil {
			return err
		}
	}
	return nil
}

// dequantizeRows is Cast of a packed dtype to F32: src holds rows of k
// elements each, decoded one row at a time by quant.DequantizeRow.
func dequantizeRows(from poot.DType, dst []float32, src []byte, k int) error {
	rb := int(from.RowBytes(int64(k)))
	for r := range len(dst) / k {
		if err := quant.DequantizeRow(from, dst[r*k:(r+1)*k], src[r*rb:(r+1)*rb]); err != nil {
			return err
		}
	}
	return nil
}
