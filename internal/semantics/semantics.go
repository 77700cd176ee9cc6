// Package semantics holds the scalar meaning of each primitive as prims.go
// documents it: how an element is computed, rounded, converted, filled and
// ordered. The interpreters (the oracle in package interp and the CPU
// backend's generic kernels in lower/cpu) both call it, so their meanings
// cannot drift apart.
//
// It is not a kernel library: it holds no loops over whole tensors beyond
// one row or one fill, and no layouts or dispatch. The functions are small
// and direct, so a caller's loop stays free of indirect calls.
package semantics

import (
	"math"
	"math/bits"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/quant"
)

// UnaryF32 applies a unary F32 primitive to x. Transcendentals are
// evaluated in float64 and rounded once to float32; Abs only clears the
// sign bit. An op that is not a unary F32 primitive gives NaN.
func UnaryF32(op poot.Op, x float32) float32 {
	switch op {
	case poot.Neg:
		return -x
	case poot.Exp:
		return float32(math.Exp(float64(x)))
	case poot.Log:
		return float32(math.Log(float64(x)))
	case poot.Sqrt:
		return float32(math.Sqrt(float64(x)))
	case poot.Rsqrt:
		return float32(1 / math.Sqrt(float64(x)))
	case poot.Tanh:
		return float32(math.Tanh(float64(x)))
	case poot.Erf:
		return float32(math.Erf(float64(x)))
	case poot.Sin:
		return float32(math.Sin(float64(x)))
	case poot.Cos:
		return float32(math.Cos(float64(x)))
	case poot.Abs:
		return math.Float32frombits(math.Float32bits(x) &^ (1 << 31))
	}
	return float32(math.NaN())
}

// UnaryI32 applies Neg or Abs to an I32; both wrap for math.MinInt32. Any
// other op is taken as Abs.
func UnaryI32(op poot.Op, x int32) int32 {
	if x < 0 || op == poot.Neg {
		return -x
	}
	return x
}

// BinaryF32 applies a binary F32 primitive. Max and Min follow Go's
// built-ins (NaN propagates; Max(-0, +0) is +0); Pow is math.Pow in
// float64. An op that is not a binary F32 primitive gives NaN.
func BinaryF32(op poot.Op, x, y float32) float32 {
	switch op {
	case poot.Add:
		return x + y
	case poot.Sub:
		return x - y
	case poot.Mul:
		return x * y
	case poot.Div:
		return x / y
	case poot.Max:
		return max(x, y)
	case poot.Min:
		return min(x, y)
	case poot.Pow:
		return float32(math.Pow(float64(x), float64(y)))
	}
	return float32(math.NaN())
}

// BinaryI32 applies a binary I32 primitive: arithmetic wraps, Div truncates
// toward zero and MinInt32 / -1 wraps to MinInt32. ok is false only for a
// division by zero, which the caller reports as a fault. An op that is not
// a binary I32 primitive gives 0.
func BinaryI32(op poot.Op, x, y int32) (r int32, ok bool) {
	switch op {
	case poot.Add:
		return x + y, true
	case poot.Sub:
		return x - y, true
	case poot.Mul:
		return x * y, true
	case poot.Max:
		return max(x, y), true
	case poot.Min:
		return min(x, y), true
	case poot.Div:
		if y == 0 {
			return 0, false
		}
		return x / y, true // Go defines MinInt32 / -1 as MinInt32
	}
	return 0, true
}

// HasBinaryI32 reports whether op is a binary primitive defined on I32.
func HasBinaryI32(op poot.Op) bool {
	switch op {
	case poot.Add, poot.Sub, poot.Mul, poot.Div, poot.Max, poot.Min:
		return true
	}
	return false
}

// Compare applies a comparison primitive; every comparison with NaN but Ne
// is false. An op that is not a comparison is taken as Ge.
func Compare[T int32 | float32](op poot.Op, x, y T) bool {
	switch op {
	case poot.Eq:
		return x == y
	case poot.Ne:
		return x != y
	case poot.Lt:
		return x < y
	case poot.Le:
		return x <= y
	case poot.Gt:
		return x > y
	}
	return x >= y
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
// of the F32 x of shape s over axis. Sums are taken in float64 in element
// order and rounded once; Max propagates NaN; ArgMax follows [Greater],
// the lowest index winning ties.
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

// Iota fills dst, of shape s, with each element's index along axis.
func Iota[T int32 | float32](dst []T, s poot.Shape, axis int) {
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

// Fill sets every element of dst to v.
func Fill[T any](dst []T, v T) {
	for i := range dst {
		dst[i] = v
	}
}

// Bool is the stored byte of a Bool: 1 for true, 0 for false.
func Bool(b bool) byte {
	if b {
		return 1
	}
	return 0
}

// Dot64 is the float64 dot product of two float32 rows, summed in element
// order. Products of float32 values are exact in float64, so the only
// roundings are those of the additions, and the result is exactly what
// quant.DotRow gives over the same decoded row: a definition anyone can
// reproduce bit for bit.
func Dot64(a, b []float32) float64 {
	b = b[:len(a)]
	var s float64
	for i, v := range a {
		s += float64(v) * float64(b[i])
	}
	return s
}

// F32ToI32 is Cast from F32 to I32: it truncates toward zero and
// saturates; NaN gives 0.
func F32ToI32(f float32) int32 {
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

// I32ToBF16 is Cast from I32 to BF16: it rounds once, to nearest even.
// Going through float32 would round twice for magnitudes beyond 2^24.
func I32ToBF16(v int32) uint16 {
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

// CastF32 is Cast of the float32 values src to the plain dtype to: F32 is
// written to f, I32 to i ([F32ToI32]), and F16, BF16 (little-endian, with
// quant's rounding) or Bool (true for anything but ±0, NaN included) to b.
// F16 and BF16 sources are first widened to float32, which is exact.
func CastF32(to poot.DType, src []float32, f []float32, i []int32, b []byte) {
	switch to {
	case poot.F32:
		copy(f, src)
	case poot.F16:
		quant.F32RowToF16(b, src)
	case poot.BF16:
		quant.F32RowToBF16(b, src)
	case poot.I32:
		for j, v := range src {
			i[j] = F32ToI32(v)
		}
	case poot.Bool:
		for j, v := range src {
			b[j] = Bool(v != 0)
		}
	}
}

// CastI32 is Cast of the int32 values src (a Bool source read as 0 and 1)
// to the plain dtype to, written as [CastF32] writes. F16 goes through
// float32, which is exact below 2^24 and infinite above either way; BF16
// rounds once ([I32ToBF16]).
func CastI32(to poot.DType, src []int32, f []float32, i []int32, b []byte) {
	switch to {
	case poot.F32:
		for j, v := range src {
			f[j] = float32(v)
		}
	case poot.F16:
		for j, v := range src {
			h := quant.F32ToF16(float32(v))
			b[2*j], b[2*j+1] = byte(h), byte(h>>8)
		}
	case poot.BF16:
		for j, v := range src {
			h := I32ToBF16(v)
			b[2*j], b[2*j+1] = byte(h), byte(h>>8)
		}
	case poot.I32:
		copy(i, src)
	case poot.Bool:
		for j, v := range src {
			b[j] = Bool(v != 0)
		}
	}
}

// Logic is And or Or of the Bool bytes x and y into dst.
func Logic(op poot.Op, dst, x, y []byte) {
	and := op == poot.And
	for j, v := range x {
		a, c := v != 0, y[j] != 0
		if and {
			dst[j] = Bool(a && c)
		} else {
			dst[j] = Bool(a || c)
		}
	}
}

// SelectBytes is Select over elements of w bytes: each element of out is
// t's where cond is nonzero and f's elsewhere.
func SelectBytes(out, cond, t, f []byte, w int) {
	for j, k := range cond {
		src := f
		if k != 0 {
			src = t
		}
		copy(out[j*w:(j+1)*w], src[j*w:(j+1)*w])
	}
}

// DequantizeRows is Cast of a packed dtype to F32: src holds rows of k
// elements each, decoded one row at a time by quant.DequantizeRow. Rows of
// no elements leave nothing to decode.
func DequantizeRows(from poot.DType, dst []float32, src []byte, k int) error {
	if k == 0 {
		return nil
	}
	rb := int(from.RowBytes(int64(k)))
	for r := range len(dst) / k {
		if err := quant.DequantizeRow(from, dst[r*k:(r+1)*k], src[r*rb:(r+1)*rb]); err != nil {
			return err
		}
	}
	return nil
}

// OutOfRange returns the position of the first index in idx outside
// [0, n), or -1 when all lie inside. Gather, WriteRows and IndexedMatMul
// fault on such an index; the ones that check before writing use this.
func OutOfRange(idx []int32, n int) int {
	for i, v := range idx {
		if v < 0 || int(v) >= n {
			return i
		}
	}
	return -1
}
