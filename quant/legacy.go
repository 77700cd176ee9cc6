package quant

import (
	"encoding/binary"
	"math"
)

// The legacy formats store 32 elements per block with one scale (and, for
// the "_1" types, one offset) in binary16 at the front of the block:
//
//	Q8_0, 34 bytes: d f16 | 32 × int8 q.              x = q·d
//	Q4_0, 18 bytes: d f16 | 16 bytes of nibbles.       x = (q−8)·d
//	Q4_1, 20 bytes: d f16 | m f16 | 16 bytes.          x = q·d + m
//	Q5_0, 22 bytes: d f16 | qh uint32 | 16 bytes.      x = (q−16)·d
//	Q5_1, 24 bytes: d f16 | m f16 | qh uint32 | 16 b.  x = q·d + m
//
// The nibble order is not interleaved element by element: byte j holds
// element j in its low nibble and element j+16 in its high nibble, so a
// block splits into two halves that unpack with the same index. The 5-bit
// types keep the fifth bit of element j in bit j of the little-endian qh.
//
// The quantizers keep ggml's quirks on purpose, because files written by
// llama-quantize are defined by them: the symmetric types take their scale
// from the signed value of largest magnitude (so that value lands exactly
// on −8 or −16, using the asymmetric end of the range), round by adding a
// half and truncating, and clamp only the top; Q8_0 rounds half away from
// zero. The scale used while quantizing is the float32 one; only the
// stored copy is rounded to binary16.

const (
	legacyElems = 32
	legacyHalf  = legacyElems / 2
)

// inverse is ggml's "d ? 1/d : 0": a zero scale quantizes everything to the
// zero point instead of dividing by zero. NaN is not zero, as in C.
func inverse(d float32) float32 {
	if d != 0 {
		return 1 / d
	}
	return 0
}

func dequantizeQ8_0(dst []float32, src []byte) {
	for len(dst) >= legacyElems && len(src) >= 34 {
		d := f16At(src)
		qs := src[2:34]
		y := dst[:legacyElems]
		for j, q := range qs {
			y[j] = float32(int8(q)) * d
		}
		dst, src = dst[legacyElems:], src[34:]
	}
}

func quantizeQ8_0(dst []byte, src []float32) {
	for len(src) >= legacyElems && len(dst) >= 34 {
		x := src[:legacyElems]
		var amax float32
		for _, v := range x {
			// MAX(amax, |v|) as C spells it: a NaN replaces amax.
			if a := abs32(v); !(amax > a) {
				amax = a
			}
		}
		d := amax / 127
		id := inverse(d)
		putF16(dst, d)
		qs := dst[2:34]
		for j, v := range x {
			// roundf: half away from zero, exact in float64.
			qs[j] = byte(int8(math.Round(float64(float32(v * id)))))
		}
		src, dst = src[legacyElems:], dst[34:]
	}
}

func dequantizeQ4_0(dst []float32, src []byte) {
	for len(dst) >= legacyElems && len(src) >= 18 {
		d := f16At(src)
		qs := src[2:18]
		y := dst[:legacyElems]
		for j, q := range qs {
			y[j] = float32(int(q&0xf)-8) * d
			y[j+legacyHalf] = float32(int(q>>4)-8) * d
		}
		dst, src = dst[legacyElems:], src[18:]
	}
}

// signedMax returns the value of largest magnitude, the first on ties, and
// 0 when there is none (all zeros or NaNs).
func signedMax(x []float32) float32 {
	var amax, max float32
	for _, v := range x {
		if a := abs32(v); amax < a {
			amax, max = a, v
		}
	}
	return max
}

// truncInt8 is C's (int8_t)f for f in range; out-of-range inputs (only from
// non-finite data) give an unspecified value instead of undefined behaviour.
func truncInt8(f float32) int { return int(int8(int32(f))) }

func quantizeQ4_0(dst []byte, src []float32) {
	for len(src) >= legacyElems && len(dst) >= 18 {
		x := src[:legacyElems]
		d := signedMax(x) / -8
		id := inverse(d)
		putF16(dst, d)
		qs := dst[2:18]
		for j := range qs {
			x0 := float32(x[j] * id)
			x1 := float32(x[j+legacyHalf] * id)
			q0 := min(15, truncInt8(x0+8.5))
			q1 := min(15, truncInt8(x1+8.5))
			qs[j] = byte(q0) | byte(q1<<4)
		}
		src, dst = src[legacyElems:], dst[18:]
	}
}

func dequantizeQ4_1(dst []float32, src []byte) {
	for len(dst) >= legacyElems && len(src) >= 20 {
		d := f16At(src)
		m := f16At(src[2:])
		qs := src[4:20]
		y := dst[:legacyElems]
		for j, q := range qs {
			y[j] = float32(float32(q&0xf)*d) + m
			y[j+legacyHalf] = float32(float32(q>>4)*d) + m
		}
		dst, src = dst[legacyElems:], src[20:]
	}
}

// minMax returns the smallest and largest element, starting from ±FLT_MAX
// as ggml does, so a block of NaNs yields (FLT_MAX, −FLT_MAX).
func minMax(x []float32) (lo, hi float32) {
	lo, hi = math.MaxFloat32, -math.MaxFloat32
	for _, v := range x {
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	return lo, hi
}

func quantizeQ4_1(dst []byte, src []float32) {
	for len(src) >= legacyElems && len(dst) >= 20 {
		x := src[:legacyElems]
		lo, hi := minMax(x)
		d := (hi - lo) / 15
		id := inverse(d)
		putF16(dst, d)
		putF16(dst[2:], lo)
		qs := dst[4:20]
		for j := range qs {
			x0 := float32((x[j] - lo) * id)
			x1 := float32((x[j+legacyHalf] - lo) * id)
			q0 := min(15, truncInt8(x0+0.5))
			q1 := min(15, truncInt8(x1+0.5))
			qs[j] = byte(q0) | byte(q1<<4)
		}
		src, dst = src[legacyElems:], dst[20:]
	}
}

func dequantizeQ5_0(dst []float32, src []byte) {
	for len(dst) >= legacyElems && len(src) >= 22 {
		d := f16At(src)
		qh := binary.LittleEndian.Uint32(src[2:])
		qs := src[6:22]
		y := dst[:legacyElems]
		for j, q := range qs {
			h0 := byte(qh<<4) & 0x10  // bit j, moved to value 16
			h1 := byte(qh>>12) & 0x10 // bit j+16
			qh >>= 1
			y[j] = float32(int(q&0xf|h0)-16) * d
			y[j+legacyHalf] = float32(int(q>>4|h1)-16) * d
		}
		dst, src = dst[legacyElems:], src[22:]
	}
}

func quantizeQ5_0(dst []byte, src []float32) {
	for len(src) >= legacyElems && len(dst) >= 22 {
		x := src[:legacyElems]
		d := signedMax(x) / -16
		id := inverse(d)
		putF16(dst, d)
		qs := dst[6:22]
		var qh uint32
		for j := range qs {
			x0 := float32(x[j] * id)
			x1 := float32(x[j+legacyHalf] * id)
			q0 := byte(min(31, truncInt8(x0+16.5)))
			q1 := byte(min(31, truncInt8(x1+16.5)))
			qs[j] = q0&0xf | (q1&0xf)<<4
			qh |= uint32(q0>>4&1) << j
			qh |= uint32(q1>>4&1) << (j + legacyHalf)
		}
		binary.LittleEndian.PutUint32(dst[2:], qh)
		src, dst = src[legacyElems:], dst[22:]
	}
}

func dequantizeQ5_1(dst []float32, src []byte) {
	for len(dst) >= legacyElems && len(src) >= 24 {
		d := f16At(src)
		m := f16At(src[2:])
		qh := binary.LittleEndian.Uint32(src[4:])
		qs := src[8:24]
		y := dst[:legacyElems]
		for j, q := range qs {
			h0 := byte(qh<<4) & 0x10
			h1 := byte(qh>>12) & 0x10
			qh >>= 1
			y[j] = float32(float32(q&0xf|h0)*d) + m
			y[j+legacyHalf] = float32(float32(q>>4|h1)*d) + m
		}
		dst, src = dst[legacyElems:], src[24:]
	}
}

func quantizeQ5_1(dst []byte, src []float32) {
	for len(src) >= legacyElems && len(dst) >= 24 {
		x := src[:legacyElems]
		lo, hi := minMax(x)
		d := (hi - lo) / 31
		id := inverse(d)
		putF16(dst, d)
		putF16(dst[2:], lo)
		qs := dst[8:24]
		var qh uint32
		for j := range qs {
			x0 := float32((x[j] - lo) * id)
			x1 := float32((x[j+legacyHalf] - lo) * id)
			// Q5_1 has no clamp in ggml: (uint8_t)(x + 0.5f).
			q0 := byte(int32(x0 + 0.5))
			q1 := byte(int32(x1 + 0.5))
			qs[j] = q0&0xf | (q1&0xf)<<4
			qh |= uint32(q0>>4&1) << j
			qh |= uint32(q1>>4&1) << (j + legacyHalf)
		}
		binary.LittleEndian.PutUint32(dst[4:], qh)
		src, dst = src[legacyElems:], dst[24:]
	}
}
