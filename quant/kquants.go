package quant

import (
	"encoding/binary"
	"math"
)

// The K-quants store 256 elements per super-block. A super-block has one
// binary16 scale (and, for Q4_K/Q5_K, one binary16 scale for the minimums)
// and a small quantized scale per sub-block, so that most of the bits go to
// the quants themselves:
//
//	Q4_K, 144 bytes: d f16 | dmin f16 | scales [12] | qs [128]
//	Q5_K, 176 bytes: d f16 | dmin f16 | scales [12] | qh [32] | qs [128]
//	Q6_K, 210 bytes: ql [128] | qh [64] | scales int8[16] | d f16   (d last)
//	Q8_K, 292 bytes: d f32 | qs int8[256] | bsums int16[16]
//
// Q4_K and Q5_K have eight sub-blocks of 32, each with a 6-bit scale sc and a
// 6-bit min m packed into 12 bytes (see scaleMinK4). An element is
// (d·sc)·q − (dmin·m). The quants are laid out in four chunks of 64
// elements: byte l of chunk c holds element 64c+l in its low nibble and
// element 64c+32+l in its high nibble. Q5_K adds the fifth bit of element
// 64c+l as bit 2c of qh[l], and of element 64c+32+l as bit 2c+1.
//
// Q6_K has sixteen sub-blocks of 16 with signed 8-bit scales and 6-bit quants
// offset by 32; an element is (d·sc)·(q−32). The block is two halves of 128;
// in each half, ql byte l (l < 64) carries the low nibbles of two elements 64
// apart, and qh byte l (l < 32) carries the top two bits of four elements 32
// apart (see dequantizeQ6_K).
//
// Q8_K is the CPU backend's activation format for K-quant dot products: a
// float32 scale, 256 int8 quants and the sums of each 16 quants, which let a
// kernel fold in Q4_K/Q5_K minimums without touching the quants again.

const (
	kElems    = 256
	q4KBytes  = 144
	q5KBytes  = 176
	q6KBytes  = 210
	q8KBytes  = 292
	kSubElems = 32 // Q4_K/Q5_K sub-block
)

// scaleMinK4 unpacks the 6-bit scale and min of sub-block j (0…7) from
// the 12 packed bytes of Q4_K/Q5_K. Sub-blocks 0–3 keep theirs in the low
// six bits of bytes j and j+4; sub-blocks 4–7 keep their low four bits in
// the nibbles of byte j+4 and borrow the spare top two bits of bytes j−4
// (scale) and j (min).
func scaleMinK4(j int, s []byte) (sc, m uint8) {
	if j < 4 {
		return s[j] & 63, s[j+4] & 63
	}
	return s[j+4]&0xf | (s[j-4]>>6)<<4, s[j+4]>>4 | (s[j]>>6)<<4
}

// packScaleMinK4 is the inverse of scaleMinK4 for all eight sub-blocks;
// ls and lm must be ≤ 63.
func packScaleMinK4(s []byte, ls, lm *[8]uint8) {
	for j := range 4 {
		s[j] = ls[j]
		s[j+4] = lm[j]
	}
	for j := 4; j < 8; j++ {
		s[j+4] = ls[j]&0xf | (lm[j]&0xf)<<4
		s[j-4] |= (ls[j] >> 4) << 6
		s[j] |= (lm[j] >> 4) << 6
	}
}

func dequantizeQ4_K(dst []float32, src []byte) {
	for len(dst) >= kElems && len(src) >= q4KBytes {
		blk := src[:q4KBytes]
		d, dmin := f16At(blk), f16At(blk[2:])
		scales := blk[4:16]
		qs := blk[16:144]
		y := dst[:kElems]
		for c := range 4 {
			sc1, m1 := scaleMinK4(2*c, scales)
			sc2, m2 := scaleMinK4(2*c+1, scales)
			d1, o1 := float32(d*float32(sc1)), float32(dmin*float32(m1))
			d2, o2 := float32(d*float32(sc2)), float32(dmin*float32(m2))
			q := qs[32*c : 32*c+32]
			lo, hi := y[64*c:64*c+32], y[64*c+32:64*c+64]
			for l, b := range q {
				lo[l] = float32(d1*float32(b&0xf)) - o1
				hi[l] = float32(d2*float32(b>>4)) - o2
			}
		}
		dst, src = dst[kElems:], src[q4KBytes:]
	}
}

func dequantizeQ5_K(dst []float32, src []byte) {
	for len(dst) >= kElems && len(src) >= q5KBytes {
		blk := src[:q5KBytes]
		d, dmin := f16At(blk), f16At(blk[2:])
		scales := blk[4:16]
		qh := blk[16:48]
		qs := blk[48:176]
		y := dst[:kElems]
		for c := range 4 {
			sc1, m1 := scaleMinK4(2*c, scales)
			sc2, m2 := scaleMinK4(2*c+1, scales)
			d1, o1 := float32(d*float32(sc1)), float32(dmin*float32(m1))
			d2, o2 := float32(d*float32(sc2)), float32(dmin*float32(m2))
			q := qs[32*c : 32*c+32]
			lo, hi := y[64*c:64*c+32], y[64*c+32:64*c+64]
			for l, b := range q {
				h := qh[l] >> (2 * c)
				lo[l] = float32(d1*float32(b&0xf|(h&1)<<4)) - o1
				hi[l] = float32(d2*float32(b>>4|(h>>1&1)<<4)) - o2
			}
		}
		dst, src = dst[kElems:], src[q5KBytes:]
	}
}

func dequantizeQ6_K(dst []float32, src []byte) {
	for len(dst) >= kElems && len(src) >= q6KBytes {
		blk := src[:q6KBytes]
		d := f16At(blk[208:])
		// d·sc is rounded once per sub-block, exactly as ggml's left-to-right
		// d * sc[is] * q evaluates it, so hoisting it changes no bit.
		var ds [16]float32
		for i, s := range blk[192:208] {
			ds[i] = float32(d * float32(int8(s)))
		}
		for n := range 2 {
			ql := blk[64*n : 64*n+64]
			qh := blk[128+32*n : 128+32*n+32]
			sc := ds[8*n : 8*n+8]
			y := dst[128*n : 128*n+128]
			for l := range 32 {
				is := l / 16
				h := qh[l]
				a, b := ql[l], ql[l+32]
				y[l] = sc[is] * float32(int(a&0xf|(h&3)<<4)-32)
				y[l+32] = sc[is+2] * float32(int(b&0xf|(h>>2&3)<<4)-32)
				y[l+64] = sc[is+4] * float32(int(a>>4|(h>>4&3)<<4)-32)
				y[l+96] = sc[is+6] * float32(int(b>>4|(h>>6)<<4)-32)
			}
		}
		dst, src = dst[kElems:], src[q6KBytes:]
	}
}

func dequantizeQ8_K(dst []float32, src []byte) {
	for len(dst) >= kElems && len(src) >= q8KBytes {
		d := math.Float32frombits(binary.LittleEndian.Uint32(src))
		qs := src[4:260]
		y := dst[:kElems]
		for j, q := range qs {
			y[j] = d * float32(int8(q))
		}
		dst, src = dst[kElems:], src[q8KBytes:]
	}
}

// quantizeKMinScale is the shared body of the Q4_K and Q5_K reference
// quantizers: fit each 32-element sub-block with makeQKX2Quants, quantize
// the eight scales and eight mins to 6 bits against their maxima, store d
// and dmin, and requantize every element against the scale and min it
// will actually be decoded with. It writes d, dmin and the scales into blk
// and the final levels (0…nmax) into L.
func quantizeKMinScale(blk []byte, x []float32, L *[kElems]uint8, nmax int32, rmin, rdelta float32, nstep int) {
	var (
		weights        [kSubElems]float32
		Laux           [kSubElems]uint8
		scales, mins   [8]float32
		maxScale, maxM float32
	)
	for j := range 8 {
		xs := x[kSubElems*j : kSubElems*j+kSubElems]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := sqrt32(sumX2 / kSubElems)
		for l, v := range xs {
			weights[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2Quants(nmax, xs, weights[:], L[kSubElems*j:], Laux[:], rmin, rdelta, nstep, false)
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxM {
			maxM = mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxM > 0 {
		invMin = 63 / maxM
	}
	var ls, lm [8]uint8
	for j := range 8 {
		// ggml stores nearest_int's result in a uint8_t before clamping.
		ls[j] = min(63, uint8(nearestInt(float32(invScale*scales[j]))))
		lm[j] = min(63, uint8(nearestInt(float32(invMin*mins[j]))))
	}
	sbytes := blk[4:16]
	packScaleMinK4(sbytes, &ls, &lm)
	putF16(blk, maxScale/63)
	putF16(blk[2:], maxM/63)
	d, dmin := f16At(blk), f16At(blk[2:])
	for j := range 8 {
		sc, m := scaleMinK4(j, sbytes)
		dj := float32(d * float32(sc))
		if dj == 0 {
			continue // keep the levels of the search, as ggml does
		}
		dm := float32(dmin * float32(m))
		for i := kSubElems * j; i < kSubElems*(j+1); i++ {
			L[i] = uint8(clampInt(nearestInt((x[i]+dm)/dj), 0, nmax))
		}
	}
}

func quantizeQ4_K(dst []byte, src []float32) {
	var L [kElems]uint8
	for len(src) >= kElems && len(dst) >= q4KBytes {
		blk := dst[:q4KBytes]
		quantizeKMinScale(blk, src[:kElems], &L, 15, -1, 0.1, 20)
		qs := blk[16:144]
		for c := range 4 {
			for l := range 32 {
				qs[32*c+l] = L[64*c+l] | L[64*c+32+l]<<4
			}
		}
		src, dst = src[kElems:], dst[q4KBytes:]
	}
}

func quantizeQ5_K(dst []byte, src []float32) {
	var L [kElems]uint8
	for len(src) >= kElems && len(dst) >= q5KBytes {
		blk := dst[:q5KBytes]
		quantizeKMinScale(blk, src[:kElems], &L, 31, -0.5, 0.1, 15)
		qh := blk[16:48]
		qs := blk[48:176]
		clear(qh)
		for c := range 4 {
			for l := range 32 {
				l1, l2 := L[64*c+l], L[64*c+32+l]
				if l1 > 15 {
					l1 -= 16
					qh[l] |= 1 << (2 * c)
				}
				if l2 > 15 {
					l2 -= 16
					qh[l] |= 2 << (2 * c)
				}
				qs[32*c+l] = l1 | l2<<4
			}
		}
		src, dst = src[kElems:], dst[q5KBytes:]
	}
}

func quantizeQ6_K(dst []byte, src []float32) {
	var (
		L      [kElems]int8
		scales [16]float32
	)
	for len(src) >= kElems && len(dst) >= q6KBytes {
		x := src[:kElems]
		blk := dst[:q6KBytes]
		var maxScale, maxAbsScale float32
		for ib := range 16 {
			s := makeQXQuants(32, x[16*ib:16*ib+16], L[16*ib:16*ib+16])
			scales[ib] = s
			if a := abs32(s); a > maxAbsScale {
				maxAbsScale, maxScale = a, s
			}
		}
		if maxAbsScale < groupMaxEps {
			clear(blk)
			src, dst = src[kElems:], dst[q6KBytes:]
			continue
		}
		iscale := -128 / maxScale
		putF16(blk[208:], 1/iscale)
		sc := blk[192:208]
		for ib := range 16 {
			sc[ib] = byte(int8(min(127, nearestInt(float32(iscale*scales[ib])))))
		}
		d := f16At(blk[208:])
		for j := range 16 {
			dj := float32(d * float32(int8(sc[j])))
			if dj == 0 {
				continue
			}
			for i := 16 * j; i < 16*j+16; i++ {
				L[i] = int8(clampInt(nearestInt(x[i]/dj), -32, 31) + 32)
			}
		}
		for n := range 2 {
			ql := blk[64*n : 64*n+64]
			qh := blk[128+32*n : 128+32*n+32]
			Ln := L[128*n : 128*n+128]
			for l := range 32 {
				q1, q2 := uint8(Ln[l]), uint8(Ln[l+32])
				q3, q4 := uint8(Ln[l+64]), uint8(Ln[l+96])
				ql[l] = q1&0xf | (q3&0xf)<<4
				ql[l+32] = q2&0xf | (q4&0xf)<<4
				qh[l] = q1>>4 | (q2>>4)<<2 | (q3>>4)<<4 | (q4>>4)<<6
			}
		}
		src, dst = src[kElems:], dst[q6KBytes:]
	}
}

// quantizeQ8_K follows ggml's quantize_row_q8_K_ref, except that an
// all-zero super-block also gets zero bsums: ggml leaves them as they were,
// which would make the output depend on the buffer's previous contents.
func quantizeQ8_K(dst []byte, src []float32) {
	for len(src) >= kElems && len(dst) >= q8KBytes {
		x := src[:kElems]
		blk := dst[:q8KBytes]
		qs := blk[4:260]
		var amax, max float32
		for _, v := range x {
			if a := abs32(v); a > amax {
				amax, max = a, v
			}
		}
		if amax == 0 {
			clear(blk)
			src, dst = src[kElems:], dst[q8KBytes:]
			continue
		}
		iscale := -127 / max
		for j, v := range x {
			qs[j] = byte(int8(min(127, nearestInt(float32(iscale*v)))))
		}
		for g := range 16 {
			var sum int
			for _, q := range qs[16*g : 16*g+16] {
				sum += int(int8(q))
			}
			binary.LittleEndian.PutUint16(blk[260+2*g:], uint16(int16(sum)))
		}
		binary.LittleEndian.PutUint32(blk, math.Float32bits(1/iscale))
		src, dst = src[kElems:], dst[q8KBytes:]
	}
}
