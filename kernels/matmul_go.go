package kernels

import (
	"encoding/binary"
	"unsafe"

	"github.com/pootlabs/poot"
)

// The portable kernels. Each walks a weight row once per tile of up to four
// activation rows, so a decoded block is reused while it is in registers.

// dotF32 returns sum a[i]*b[i] over len(a) elements with eight independent
// accumulators; b must be at least as long as a.
func dotF32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3, s4, s5, s6, s7 float32
	i := 0
	for ; i+8 <= len(a); i += 8 {
		aa := (*[8]float32)(a[i : i+8])
		bb := (*[8]float32)(b[i : i+8])
		s0 += aa[0] * bb[0]
		s1 += aa[1] * bb[1]
		s2 += aa[2] * bb[2]
		s3 += aa[3] * bb[3]
		s4 += aa[4] * bb[4]
		s5 += aa[5] * bb[5]
		s6 += aa[6] * bb[6]
		s7 += aa[7] * bb[7]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))
}

// dot4F32 returns the dots of w with four rows at once, loading w once.
func dot4F32(w, x0, x1, x2, x3 []float32) (float32, float32, float32, float32) {
	n := len(w)
	x0, x1, x2, x3 = x0[:n], x1[:n], x2[:n], x3[:n]
	var a0, a1, a2, a3, b0, b1, b2, b3 float32
	i := 0
	for ; i+2 <= n; i += 2 {
		w0, w1 := w[i], w[i+1]
		a0 += w0 * x0[i]
		a1 += w0 * x1[i]
		a2 += w0 * x2[i]
		a3 += w0 * x3[i]
		b0 += w1 * x0[i+1]
		b1 += w1 * x1[i+1]
		b2 += w1 * x2[i+1]
		b3 += w1 * x3[i+1]
	}
	if i < n {
		wi := w[i]
		a0 += wi * x0[i]
		a1 += wi * x1[i]
		a2 += wi * x2[i]
		a3 += wi * x3[i]
	}
	return a0 + b0, a1 + b1, a2 + b2, a3 + b3
}

func f32RowsGo(y []float32, N int, w []float32, a *Acts, n0, n1 int) {
	T, K, x := a.T, a.K, a.x
	for n := n0; n < n1; n++ {
		wr := w[n*K : n*K+K]
		t := 0
		for ; t+4 <= T; t += 4 {
			s0, s1, s2, s3 := dot4F32(wr, x[t*K:], x[(t+1)*K:], x[(t+2)*K:], x[(t+3)*K:])
			y[t*N+n], y[(t+1)*N+n], y[(t+2)*N+n], y[(t+3)*N+n] = s0, s1, s2, s3
		}
		for ; t < T; t++ {
			y[t*N+n] = dotF32(wr, x[t*K:])
		}
	}
}

// half16RowsGo handles F16 and BF16 weights: chunks of a row are widened to
// f32 on the stack and dotted with up to four activation rows.
func half16RowsGo(bf bool, y []float32, N int, w []uint16, a *Acts, n0, n1 int) {
	T, K, x := a.T, a.K, a.x
	const chunk = 256
	var buf [chunk]float32
	for n := n0; n < n1; n++ {
		wr := w[n*K : n*K+K]
		for t0 := 0; t0 < T; t0 += 4 {
			nt := min(4, T-t0)
			var acc [4]float32
			for k0 := 0; k0 < K; k0 += chunk {
				c := min(chunk, K-k0)
				f := buf[:c]
				if bf {
					BF16RowToF32(f, wr[k0:k0+c])
				} else {
					F16RowToF32(f, wr[k0:k0+c])
				}
				if nt == 4 {
					s0, s1, s2, s3 := dot4F32(f, x[t0*K+k0:], x[(t0+1)*K+k0:], x[(t0+2)*K+k0:], x[(t0+3)*K+k0:])
					acc[0] += s0
					acc[1] += s1
					acc[2] += s2
					acc[3] += s3
				} else {
					for i := range nt {
						acc[i] += dotF32(f, x[(t0+i)*K+k0:])
					}
				}
			}
			for i := range nt {
				y[(t0+i)*N+n] = acc[i]
			}
		}
	}
}

func dot32i8(a, b *[32]int8) int32 {
	var s0, s1, s2, s3 int32
	for i := 0; i < 32; i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	return (s0 + s1) + (s2 + s3)
}

func dot16i8(a, b *[16]int8) int32 {
	var s0, s1, s2, s3 int32
	for i := 0; i < 16; i += 4 {
		s0 += int32(a[i]) * int32(b[i])
		s1 += int32(a[i+1]) * int32(b[i+1])
		s2 += int32(a[i+2]) * int32(b[i+2])
		s3 += int32(a[i+3]) * int32(b[i+3])
	}
	return (s0 + s1) + (s2 + s3)
}

func f16le(b []byte) float32 { return f16Table[binary.LittleEndian.Uint16(b)] }

// decode32 unpacks one block of a 32-element dtype into q so that the block's
// values are d*q[j] + m; m is 0 for the symmetric types.
func decode32(wt poot.DType, blk []byte, q *[32]int8) (d, m float32) {
	switch wt {
	case poot.Q8_0:
		blk = blk[:34]
		for j := range 32 {
			q[j] = int8(blk[2+j])
		}
		return f16le(blk), 0
	case poot.Q4_0:
		qs := (*[16]byte)(blk[2:18])
		for j, v := range qs {
			q[j] = int8(v&15) - 8
			q[j+16] = int8(v>>4) - 8
		}
		return f16le(blk), 0
	case poot.Q4_1:
		qs := (*[16]byte)(blk[4:20])
		for j, v := range qs {
			q[j] = int8(v & 15)
			q[j+16] = int8(v >> 4)
		}
		return f16le(blk), f16le(blk[2:])
	case poot.Q5_0:
		qh := binary.LittleEndian.Uint32(blk[2:6])
		qs := (*[16]byte)(blk[6:22])
		for j, v := range qs {
			q[j] = int8(v&15|byte(qh>>j&1)<<4) - 16
			q[j+16] = int8(v>>4|byte(qh>>(j+16)&1)<<4) - 16
		}
		return f16le(blk), 0
	case poot.Q5_1:
		qh := binary.LittleEndian.Uint32(blk[4:8])
		qs := (*[16]byte)(blk[8:24])
		for j, v := range qs {
			q[j] = int8(v&15 | byte(qh>>j&1)<<4)
			q[j+16] = int8(v>>4 | byte(qh>>(j+16)&1)<<4)
		}
		return f16le(blk), f16le(blk[2:])
	case poot.MXFP4:
		// The FP4 codes index ggml's doubled E2M1 values, and the E8M0
		// scale is halved to match (see quant.MXFP4Value).
		qs := (*[16]byte)(blk[1:17])
		for j, v := range qs {
			q[j] = mxfp4Values[v&15]
			q[j+16] = mxfp4Values[v>>4]
		}
		return e8m0Half[blk[0]], 0
	}
	return 0, 0
}

func q8famRowsGo(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int) {
	T, K := a.T, a.K
	nb := K / 32
	bb := wt.BlockBytes()
	rb := nb * bb
	var qw [32]int8
	for n := n0; n < n1; n++ {
		row := w[n*rb : n*rb+rb]
		for t0 := 0; t0 < T; t0 += 4 {
			nt := min(4, T-t0)
			var acc [4]float32
			for b := range nb {
				blk := row[b*bb : b*bb+bb]
				var dw, mw float32
				qp := &qw
				if wt == poot.Q8_0 {
					// The quants are already int8: read them in place.
					dw, qp = f16le(blk), (*[32]int8)(unsafe.Pointer(&blk[2]))
				} else {
					dw, mw = decode32(wt, blk, &qw)
				}
				for i := range nt {
					ab := (t0+i)*nb + b
					isum := dot32i8(qp, (*[32]int8)(a.q[ab*32:ab*32+32]))
					acc[i] += dw*a.d[ab]*float32(isum) + mw*a.s[ab]
				}
			}
			for i := range nt {
				y[(t0+i)*N+n] = acc[i]
			}
		}
	}
}

// kScaleMin returns the 6-bit scale and min of sub-block j of a Q4_K or Q5_K
// super-block from its 12 packed bytes.
func kScaleMin(s *[12]byte, j int) (sc, m int32) {
	if j < 4 {
		return int32(s[j] & 63), int32(s[j+4] & 63)
	}
	return int32(s[j+4]&0xf | (s[j-4]>>6)<<4), int32(s[j+4]>>4 | (s[j]>>6)<<4)
}

// decodeK unpacks one super-block of a K-quant. For Q4_K and Q5_K the values
// are d*sc[j]*q - dmin*mn[j] for sub-block j of 32 (q unsigned); for Q6_K
// they are d*sc[g]*q for group g of 16 (q already offset by -32).
func decodeK(wt poot.DType, blk []byte, q *[256]int8, sc *[16]int32, mn *[8]int32) (d, dmin float32) {
	switch wt {
	case poot.Q4_K, poot.Q5_K:
		d, dmin = f16le(blk), f16le(blk[2:])
		scales := (*[12]byte)(blk[4:16])
		for j := range 8 {
			sc[j], mn[j] = kScaleMin(scales, j)
		}
		var qh *[32]byte
		qsOff := 16
		if wt == poot.Q5_K {
			qh = (*[32]byte)(blk[16:48])
			qsOff = 48
		}
		qs := (*[128]byte)(blk[qsOff : qsOff+128])
		for c := range 4 {
			for l := range 32 {
				v := qs[32*c+l]
				lo, hi := v&15, v>>4
				if qh != nil {
					lo |= (qh[l] >> (2 * c) & 1) << 4
					hi |= (qh[l] >> (2*c + 1) & 1) << 4
				}
				q[64*c+l] = int8(lo)
				q[64*c+32+l] = int8(hi)
			}
		}
		return d, dmin
	case poot.Q6_K:
		blk = blk[:210]
		for h := range 2 {
			ql := (*[64]byte)(blk[64*h : 64*h+64])
			qh := (*[32]byte)(blk[128+32*h : 128+32*h+32])
			o := q[128*h : 128*h+128]
			for l := range 32 {
				o[l] = int8(ql[l]&15|(qh[l]&3)<<4) - 32
				o[l+32] = int8(ql[l+32]&15|(qh[l]>>2&3)<<4) - 32
				o[l+64] = int8(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
				o[l+96] = int8(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
			}
		}
		for g := range 16 {
			sc[g] = int32(int8(blk[192+g]))
		}
		return f16le(blk[208:]), 0
	}
	return 0, 0
}

func kfamRowsGo(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int) {
	T, K := a.T, a.K
	nb := K / 256
	bb := wt.BlockBytes()
	rb := nb * bb
	var (
		qw [256]int8
		sc [16]int32
		mn [8]int32
	)
	for n := n0; n < n1; n++ {
		row := w[n*rb : n*rb+rb]
		for t0 := 0; t0 < T; t0 += 4 {
			nt := min(4, T-t0)
			var acc [4]float32
			for b := range nb {
				d, dmin := decodeK(wt, row[b*bb:b*bb+bb], &qw, &sc, &mn)
				for i := range nt {
					ab := (t0+i)*nb + b
					aq := (*[256]int8)(a.q[ab*256 : ab*256+256])
					bs := (*[16]int16)(a.bs[ab*16 : ab*16+16])
					var sumi, summ int32
					if wt == poot.Q6_K {
						for g := range 16 {
							sumi += sc[g] * dot16i8((*[16]int8)(qw[16*g:16*g+16]), (*[16]int8)(aq[16*g:16*g+16]))
						}
						acc[i] += a.d[ab] * d * float32(sumi)
						continue
					}
					for j := range 8 {
						sumi += sc[j] * dot32i8((*[32]int8)(qw[32*j:32*j+32]), (*[32]int8)(aq[32*j:32*j+32]))
						summ += mn[j] * (int32(bs[2*j]) + int32(bs[2*j+1]))
					}
					acc[i] += a.d[ab] * (d*float32(sumi) - dmin*float32(summ))
				}
			}
			for i := range nt {
				y[(t0+i)*N+n] = acc[i]
			}
		}
	}
}
