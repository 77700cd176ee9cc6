package kernels_test

import (
	"encoding/binary"
	"math"
	"math/rand/v2"

	"github.com/pootlabs/poot"
)

// This file holds the test's own reference code: a float64 dequantizer
// written from the block layouts in refmodels/quant/README.md, random weight
// generators and a naive product.

func h2f(b []byte) float64 { return float64(halfToFloat(binary.LittleEndian.Uint16(b))) }

// halfToFloat is an independent binary16 decoder (exact via float64).
func halfToFloat(h uint16) float32 {
	s := 1.0
	if h&0x8000 != 0 {
		s = -1
	}
	e := int(h>>10) & 31
	m := float64(h & 0x3ff)
	switch e {
	case 31:
		if m != 0 {
			return float32(math.NaN())
		}
		return float32(s * math.Inf(1))
	case 0:
		return float32(s * m * math.Pow(2, -24))
	}
	return float32(s * (1 + m/1024) * math.Pow(2, float64(e-15)))
}

// refDequant returns the n values of row bytes b of dtype dt in float64.
func refDequant(dt poot.DType, b []byte, n int) []float64 {
	out := make([]float64, n)
	switch dt {
	case poot.F32:
		for i := range out {
			out[i] = float64(math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:])))
		}
	case poot.F16:
		for i := range out {
			out[i] = h2f(b[2*i:])
		}
	case poot.BF16:
		for i := range out {
			out[i] = float64(math.Float32frombits(uint32(binary.LittleEndian.Uint16(b[2*i:])) << 16))
		}
	case poot.Q8_0:
		for k := 0; k < n/32; k++ {
			blk := b[34*k:]
			for j := range 32 {
				out[32*k+j] = float64(int8(blk[2+j])) * h2f(blk)
			}
		}
	case poot.Q4_0, poot.Q4_1:
		bb := 18
		if dt == poot.Q4_1 {
			bb = 20
		}
		for k := 0; k < n/32; k++ {
			blk := b[bb*k:]
			qs := blk[bb-16:]
			for j := range 16 {
				lo, hi := float64(qs[j]&15), float64(qs[j]>>4)
				if dt == poot.Q4_0 {
					out[32*k+j], out[32*k+j+16] = (lo-8)*h2f(blk), (hi-8)*h2f(blk)
				} else {
					out[32*k+j], out[32*k+j+16] = lo*h2f(blk)+h2f(blk[2:]), hi*h2f(blk)+h2f(blk[2:])
				}
			}
		}
	case poot.Q5_0, poot.Q5_1:
		bb, off := 22, 2
		if dt == poot.Q5_1 {
			bb, off = 24, 4
		}
		for k := 0; k < n/32; k++ {
			blk := b[bb*k:]
			qh := binary.LittleEndian.Uint32(blk[off:])
			qs := blk[off+4:]
			for j := range 32 {
				var q int
				if j < 16 {
					q = int(qs[j] & 15)
				} else {
					q = int(qs[j-16] >> 4)
				}
				q |= int(qh>>j&1) << 4
				if dt == poot.Q5_0 {
					out[32*k+j] = float64(q-16) * h2f(blk)
				} else {
					out[32*k+j] = float64(q)*h2f(blk) + h2f(blk[2:])
				}
			}
		}
	case poot.MXFP4:
		// E2M1 codes: sign, 2 exponent bits (bias 1), 1 mantissa bit;
		// the block scale is 2^(e-127).
		e2m1 := func(c byte) float64 {
			mag := float64(c&1) / 2
			if ex := int(c >> 1 & 3); ex > 0 {
				mag = math.Ldexp(1+float64(c&1)/2, ex-1)
			}
			if c&8 != 0 {
				return -mag
			}
			return mag
		}
		for k := 0; k < n/32; k++ {
			blk := b[17*k:]
			for j := range 16 {
				out[32*k+j] = math.Ldexp(e2m1(blk[1+j]&15), int(blk[0])-127)
				out[32*k+j+16] = math.Ldexp(e2m1(blk[1+j]>>4), int(blk[0])-127)
			}
		}
	case poot.Q4_K, poot.Q5_K:
		bb := 144
		if dt == poot.Q5_K {
			bb = 176
		}
		for k := 0; k < n/256; k++ {
			blk := b[bb*k:]
			d, dmin := h2f(blk), h2f(blk[2:])
			sc := blk[4:16]
			qs := blk[16:]
			var qh []byte
			if dt == poot.Q5_K {
				qh = blk[16:48]
				qs = blk[48:]
			}
			for j := range 8 {
				var s, m int
				if j < 4 {
					s, m = int(sc[j]&63), int(sc[j+4]&63)
				} else {
					s = int(sc[j+4]&0xF) | int(sc[j-4]>>6)<<4
					m = int(sc[j+4]>>4) | int(sc[j]>>6)<<4
				}
				c := j / 2
				for l := range 32 {
					var q int
					if j%2 == 0 {
						q = int(qs[32*c+l] & 15)
					} else {
						q = int(qs[32*c+l] >> 4)
					}
					if qh != nil && qh[l]>>j&1 != 0 {
						q += 16
					}
					out[256*k+32*j+l] = d*float64(s)*float64(q) - dmin*float64(m)
				}
			}
		}
	case poot.Q6_K:
		for k := 0; k < n/256; k++ {
			blk := b[210*k:]
			d := h2f(blk[208:])
			for h := range 2 {
				ql, qh, sc := blk[64*h:], blk[128+32*h:], blk[192+8*h:]
				for l := range 32 {
					is := l / 16
					base := 256*k + 128*h
					q1 := int(ql[l]&0xF|(qh[l]&3)<<4) - 32
					q2 := int(ql[l+32]&0xF|(qh[l]>>2&3)<<4) - 32
					q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
					q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
					out[base+l] = d * float64(int8(sc[is])) * float64(q1)
					out[base+l+32] = d * float64(int8(sc[is+2])) * float64(q2)
					out[base+l+64] = d * float64(int8(sc[is+4])) * float64(q3)
					out[base+l+96] = d * float64(int8(sc[is+6])) * float64(q4)
				}
			}
		}
	}
	return out
}

// randHalf returns a binary16 with magnitude in about [lo, 2^e·lo).
func randScale(r *rand.Rand, scale float64) uint16 {
	v := float32(scale * (0.5 + r.Float64()))
	if r.IntN(4) == 0 {
		v = -v
	}
	return f2h(v)
}

// f2h is a simple (not bit-exact at ties) binary16 encoder for test data:
// the values it encodes are normal and well inside the range.
func f2h(v float32) uint16 {
	u := math.Float32bits(v)
	sign := uint16(u>>16) & 0x8000
	e := int(u>>23&0xff) - 127 + 15
	m := u >> 13 & 0x3ff
	if e <= 0 {
		return sign
	}
	return sign | uint16(e)<<10 | uint16(m)
}

// randWeights returns N rows of K random elements of dt. Quant fields are
// random bytes; block scales are random moderate halves, so every element is
// finite.
func randWeights(r *rand.Rand, dt poot.DType, N, K int) []byte {
	rb := int(dt.RowBytes(int64(K)))
	b := make([]byte, N*rb)
	for i := range b {
		b[i] = byte(r.Uint32())
	}
	put := func(off int, h uint16) { binary.LittleEndian.PutUint16(b[off:], h) }
	bb := dt.BlockBytes()
	for off := 0; off < len(b); off += bb {
		switch dt {
		case poot.F32:
			binary.LittleEndian.PutUint32(b[off:], math.Float32bits(float32(r.NormFloat64())))
		case poot.F16:
			put(off, f2h(float32(r.NormFloat64())))
		case poot.BF16:
			put(off, uint16(math.Float32bits(float32(r.NormFloat64()))>>16))
		case poot.Q8_0, poot.Q4_0, poot.Q5_0:
			put(off, randScale(r, 0.01))
		case poot.Q4_1, poot.Q5_1:
			put(off, randScale(r, 0.01))
			put(off+2, randScale(r, 0.1))
		case poot.Q4_K, poot.Q5_K:
			put(off, randScale(r, 0.001))
			put(off+2, randScale(r, 0.001))
		case poot.Q6_K:
			put(off+208, randScale(r, 0.001))
		case poot.MXFP4:
			b[off] = byte(117 + r.IntN(8)) // element scales 2^-10 … 2^-3
		}
	}
	return b
}

func randActs(r *rand.Rand, n int) []float32 {
	x := make([]float32, n)
	for i := range x {
		x[i] = float32(r.NormFloat64())
		if r.IntN(50) == 0 {
			x[i] *= 20 // outliers, as real activations have
		}
	}
	return x
}

// refProduct returns the exact product and, for every output, the bound on
// the error the kernels may make: float rounding over K terms plus, for
// quantized activations, half a quantization step of every activation block
// times the weights it meets.
func refProduct(dt poot.DType, w []byte, x []float32, T, N, K int) (y, bound []float64) {
	y, bound, _ = refProductBounds(dt, w, x, T, N, K)
	return y, bound
}

// refProductBounds is refProduct also returning the float-rounding part of
// the bound alone, which is all two implementations that compute the same
// integer block sums may differ by.
func refProductBounds(dt poot.DType, w []byte, x []float32, T, N, K int) (y, bound, fbound []float64) {
	rb := int(dt.RowBytes(int64(K)))
	y = make([]float64, T*N)
	bound = make([]float64, T*N)
	fbound = make([]float64, T*N)
	ab := 0 // activation block
	switch dt {
	case poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.MXFP4:
		ab = 32
	case poot.Q4_K, poot.Q5_K, poot.Q6_K:
		ab = 256
	}
	for n := range N {
		wr := refDequant(dt, w[n*rb:(n+1)*rb], K)
		for t := range T {
			xr := x[t*K : (t+1)*K]
			var s, sabs, qerr float64
			for k := range K {
				s += wr[k] * float64(xr[k])
				sabs += math.Abs(wr[k] * float64(xr[k]))
			}
			if ab > 0 {
				for b0 := 0; b0 < K; b0 += ab {
					var amax, wsum float64
					for k := b0; k < b0+ab; k++ {
						amax = max(amax, math.Abs(float64(xr[k])))
						wsum += math.Abs(wr[k])
					}
					qerr += amax / 254 * wsum * 1.001
				}
			}
			y[t*N+n] = s
			terms := K/2 + 16 // float accumulation chains
			if ab > 0 {
				terms = K/ab + 16 // one float term per block
			}
			fbound[t*N+n] = 2 * float64(terms) * 6e-8 * (sabs + qerr)
			bound[t*N+n] = qerr + fbound[t*N+n]
		}
	}
	return y, bound, fbound
}
