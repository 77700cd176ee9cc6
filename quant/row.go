package quant

import (
	"encoding/binary"
	"math"
	"strconv"

	"github.com/pootlabs/poot"
)

// Supported reports whether t is a format this package can dequantize,
// quantize and dot: F32, F16, BF16 and the packed types Q8_0 … Q8_K and
// MXFP4.
func Supported(t poot.DType) bool {
	switch t {
	case poot.F32, poot.F16, poot.BF16,
		poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1,
		poot.Q4_K, poot.Q5_K, poot.Q6_K, poot.Q8_K, poot.MXFP4:
		return true
	}
	return false
}

// checkRow validates that n elements of t form whole blocks stored in
// exactly stored bytes. The error path alone allocates.
func checkRow(op string, t poot.DType, n, stored int) error {
	if !Supported(t) {
		return &Error{Op: op, DType: t, Err: ErrUnsupported}
	}
	want := t.RowBytes(int64(n))
	if want < 0 {
		return &Error{Op: op, DType: t, Err: ErrSize, Detail: strconv.Itoa(n) +
			" elements is not a whole number of " + strconv.Itoa(t.BlockElems()) + "-element blocks"}
	}
	if int64(stored) != want {
		return &Error{Op: op, DType: t, Err: ErrSize, Detail: strconv.Itoa(n) + " elements take " +
			strconv.FormatInt(want, 10) + " bytes, got " + strconv.Itoa(stored)}
	}
	return nil
}

// DequantizeRow decodes a row of t into dst. src must hold exactly the
// stored bytes of len(dst) elements (little-endian, whole blocks). The
// result is bit-identical to ggml's to_float for the same bytes.
func DequantizeRow(t poot.DType, dst []float32, src []byte) error {
	if err := checkRow("dequantize", t, len(dst), len(src)); err != nil {
		return err
	}
	dequantizeBlocks(t, dst, src)
	return nil
}

// QuantizeRow encodes src as a row of t into dst, which must be exactly the
// stored size of len(src) elements. The bytes are identical to those of
// ggml's reference quantizer (quantize_row_<type>_ref, or the F16/BF16 row
// converters) with no importance matrix. Every byte of dst is written.
func QuantizeRow(t poot.DType, dst []byte, src []float32) error {
	if err := checkRow("quantize", t, len(src), len(dst)); err != nil {
		return err
	}
	switch t {
	case poot.F32:
		for i, v := range src {
			binary.LittleEndian.PutUint32(dst[4*i:], math.Float32bits(v))
		}
	case poot.F16:
		F32RowToF16(dst, src)
	case poot.BF16:
		F32RowToBF16(dst, src)
	case poot.Q8_0:
		quantizeQ8_0(dst, src)
	case poot.Q4_0:
		quantizeQ4_0(dst, src)
	case poot.Q4_1:
		quantizeQ4_1(dst, src)
	case poot.Q5_0:
		quantizeQ5_0(dst, src)
	case poot.Q5_1:
		quantizeQ5_1(dst, src)
	case poot.Q4_K:
		quantizeQ4_K(dst, src)
	case poot.Q5_K:
		quantizeQ5_K(dst, src)
	case poot.Q6_K:
		quantizeQ6_K(dst, src)
	case poot.Q8_K:
		quantizeQ8_K(dst, src)
	case poot.MXFP4:
		quantizeMXFP4(dst, src)
	}
	return nil
}

// dequantizeBlocks dispatches on t with static calls (not a table of func
// values) so that a caller's stack buffer does not escape to the heap.
// Sizes have been checked.
func dequantizeBlocks(t poot.DType, dst []float32, src []byte) {
	switch t {
	case poot.F32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
	case poot.F16:
		F16RowToF32(dst, src)
	case poot.BF16:
		BF16RowToF32(dst, src)
	case poot.Q8_0:
		dequantizeQ8_0(dst, src)
	case poot.Q4_0:
		dequantizeQ4_0(dst, src)
	case poot.Q4_1:
		dequantizeQ4_1(dst, src)
	case poot.Q5_0:
		dequantizeQ5_0(dst, src)
	case poot.Q5_1:
		dequantizeQ5_1(dst, src)
	case poot.Q4_K:
		dequantizeQ4_K(dst, src)
	case poot.Q5_K:
		dequantizeQ5_K(dst, src)
	case poot.Q6_K:
		dequantizeQ6_K(dst, src)
	case poot.Q8_K:
		dequantizeQ8_K(dst, src)
	case poot.MXFP4:
		dequantizeMXFP4(dst, src)
	}
}

// dotChunk is how many elements DotRow decodes at a time: one K-quant
// super-block, and a whole number of blocks of every supported type.
const dotChunk = 256

// DotRow returns the dot product of a stored row w of t with the float32
// activations x, accumulated in float64 over the dequantized weights in
// element order. It is the slow, obviously correct reference that fast
// kernels are measured against: DotRow(t, w, x) equals the float64 dot of
// DequantizeRow's output with x exactly. It decodes one chunk at a time into
// a stack buffer and does not allocate.
func DotRow(t poot.DType, w []byte, x []float32) (float64, error) {
	if err := checkRow("dot", t, len(x), len(w)); err != nil {
		return 0, err
	}
	var buf [dotChunk]float32
	chunkBytes := int(t.RowBytes(dotChunk))
	var sum float64
	for len(x) > 0 {
		n := min(len(x), dotChunk)
		nb := chunkBytes
		if n < dotChunk {
			nb = int(t.RowBytes(int64(n)))
		}
		dequantizeBlocks(t, buf[:n], w[:nb])
		for i, v := range buf[:n] {
			// The product of two float32 values is exact in float64, so
			// a fused multiply-add could not change this sum.
			sum += float64(v) * float64(x[i])
		}
		x, w = x[n:], w[nb:]
	}
	return sum, nil
}

// f16At reads the little-endian binary16 at b[0:2] as float32.
func f16At(b []byte) float32 { return f16Table[binary.LittleEndian.Uint16(b)] }

// putF16 stores f as little-endian binary16 at b[0:2].
func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, F32ToF16(f)) }

// abs32 is fabsf: it clears the sign bit, so it is exact for every input.
func abs32(f float32) float32 { return math.Float32frombits(math.Float32bits(f) &^ (1 << 31)) }
