package kernels

import (
	"github.com/pootlabs/poot"
)

// The avx2 level's register-tiled prompt products for the 32-element
// dtypes (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, MXFP4), in gemm8_amd64.s: panels
// of 8 weight rows repacked a block of 32 at a time (codes as unsigned
// bytes, Q8_0's as their magnitudes and signs, transposed so that a
// vector holds four codes of each of the 8 rows), met by four activation
// rows a tile.

//go:noescape
func packQ4_0x8(dst *byte, src *byte, lds int, nb int)

//go:noescape
func packQ5_0x8(dst *byte, src *byte, lds int, nb int)

//go:noescape
func packQ4_1x8(dst *byte, src *byte, lds int, nb int)

//go:noescape
func packQ5_1x8(dst *byte, src *byte, lds int, nb int)

//go:noescape
func packMXFP4x8(dst *byte, src *byte, lds int, nb int, table *[16]byte)

//go:noescape
func packQ8_0x8(dst *byte, src *byte, lds int, nb int)

//go:noescape
func gemmQ8_0x8(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, add int, shift int)

//go:noescape
func gemmQ4_0x8(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, add int, shift int)

//go:noescape
func gemmQ4_1x8(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, as *float32, y *float32, ldy int, add int, shift int)

//go:noescape
func gemmQ5_1x8(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, as *float32, y *float32, ldy int, add int, shift int)

//go:noescape
func gemmMXFP4x8(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, add int, shift int)

// mx4Plus16 maps an MXFP4 code to 16 plus its doubled E2M1 value
// (mxfp4Values): the unsigned byte packMXFP4x8 stores.
var mx4Plus16 = func() (t [16]byte) {
	for c := range t {
		t[c] = byte(int(mxfp4Values[c]) + 16)
	}
	return t
}()

const (
	// p8Bytes is a packed block of 8 rows: 8 vectors of codes, 8 f32
	// scales and, for Q4_1 and Q5_1, 8 f32 mins.
	p8Bytes, p8MinBytes = 288, 320
	// p8Q8Bytes is a packed block of 8 Q8_0 rows: 8 vectors of the codes'
	// magnitudes, 8 of their signs, 8 f32 scales.
	p8Q8Bytes = 544
	// p8KB is how many blocks a packed panel holds (1024 elements of K:
	// 9-17 KB, in L1 while the activation rows meet it).
	p8KB = 32
)

// tiles8 reports whether the avx2 level's 8-row tiles take a product of T
// activation rows with wt weights.
func tiles8(wt poot.DType, T int) bool {
	switch wt {
	case poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.MXFP4:
		return T >= 4
	}
	return false
}

// q4x8Rows is the avx2 product of tiles8's dtypes by 8-row panels for the
// activation rows before the last whole group of four and the weight rows
// before the last whole group of 8 in [n0, n1): each panel is repacked
// once per p8KB blocks and then meets every four activation rows. It
// returns where the panels end; the caller takes the rest of the rows.
func q4x8Rows(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int) int {
	var panel [p8KB * p8Q8Bytes]byte
	T4, K := a.T&^3, a.K
	nb := K / 32
	rb := nb * wt.BlockBytes()
	nEnd := n0 + (n1-n0)&^7
	_ = y[(T4-1)*N+nEnd-1]
	for n := n0; n < nEnd; n += 8 {
		for b0 := 0; b0 < nb; b0 += p8KB {
			nbk := min(p8KB, nb-b0)
			src := &w[n*rb+b0*wt.BlockBytes()]
			add := 0
			if b0 > 0 {
				add = 1
			}
			switch wt {
			case poot.Q8_0:
				packQ8_0x8(&panel[0], src, rb, nbk)
			case poot.Q4_0:
				packQ4_0x8(&panel[0], src, rb, nbk)
			case poot.Q4_1:
				packQ4_1x8(&panel[0], src, rb, nbk)
			case poot.Q5_0:
				packQ5_0x8(&panel[0], src, rb, nbk)
			case poot.Q5_1:
				packQ5_1x8(&panel[0], src, rb, nbk)
			default:
				packMXFP4x8(&panel[0], src, rb, nbk, &mx4Plus16)
			}
			for t := 0; t < T4; t += 4 {
				aq, ad, ao, as, yp := &a.q[t*K+b0*32], &a.d[t*nb+b0], &a.o[t*nb+b0], &a.s[t*nb+b0], &y[t*N+n]
				switch wt {
				case poot.Q8_0:
					gemmQ8_0x8(&panel[0], nbk, aq, K, ad, nb*4, nil, yp, N*4, add, 0)
				case poot.Q4_0:
					gemmQ4_0x8(&panel[0], nbk, aq, K, ad, nb*4, ao, yp, N*4, add, 4)
				case poot.Q4_1:
					gemmQ4_1x8(&panel[0], nbk, aq, K, ad, nb*4, as, yp, N*4, add, 0)
				case poot.Q5_1:
					gemmQ5_1x8(&panel[0], nbk, aq, K, ad, nb*4, as, yp, N*4, add, 0)
				default:
					gemmMXFP4x8(&panel[0], nbk, aq, K, ad, nb*4, ao, yp, N*4, add, 3)
				}
			}
		}
	}
	return nEnd
}
