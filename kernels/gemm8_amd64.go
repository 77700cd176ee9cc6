package kernels

import (
	"github.com/pootlabs/poot"
)

// The avx2 level's register-tiled prompt products for Q4_0, Q5_0 and MXFP4
// weights, in gemm8_amd64.s: panels of 8 weight rows repacked a block of 32
// at a time (codes as unsigned bytes, transposed so that a vector holds
// four codes of each of the 8 rows), met by four activation rows a tile.

//go:noescape
func packQ4_0x8(dst *byte, src *byte, lds int, nb int)

//go:noescape
func packQ5_0x8(dst *byte, src *byte, lds int, nb int)

//go:noescape
func packMXFP4x8(dst *byte, src *byte, lds int, nb int, table *[16]byte)

//go:noescape
func gemmQ4_0x8(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, add int, shift int)

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
	// p8Bytes is a packed block of 8 rows: 8 vectors of codes and 8 f32
	// scales.
	p8Bytes = 288
	// p8KB is how many blocks a packed panel holds (1024 elements of K:
	// 9 KB, in L1 while the activation rows meet it).
	p8KB = 32
)

// tiles8 reports whether the avx2 level's 8-row tiles take a product of T
// activation rows with wt weights.
func tiles8(wt poot.DType, T int) bool {
	return T >= 4 && (wt == poot.Q4_0 || wt == poot.Q5_0 || wt == poot.MXFP4)
}

// q4x8Rows is the avx2 Q4_0, Q5_0 or MXFP4 product by 8-row panels for the
// activation rows before the last whole group of four and the weight rows
// before the last whole group of 8 in [n0, n1): each panel is repacked
// once per p8KB blocks and then meets every four activation rows. It
// returns where the panels end; the caller takes the rest of the rows.
func q4x8Rows(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int) int {
	var panel [p8KB * p8Bytes]byte
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
			case poot.Q4_0:
				packQ4_0x8(&panel[0], src, rb, nbk)
			case poot.Q5_0:
				packQ5_0x8(&panel[0], src, rb, nbk)
			default:
				packMXFP4x8(&panel[0], src, rb, nbk, &mx4Plus16)
			}
			for t := 0; t < T4; t += 4 {
				aq, ad, ao, yp := &a.q[t*K+b0*32], &a.d[t*nb+b0], &a.o[t*nb+b0], &y[t*N+n]
				if wt == poot.Q4_0 {
					gemmQ4_0x8(&panel[0], nbk, aq, K, ad, nb*4, ao, yp, N*4, add, 4)
				} else {
					gemmMXFP4x8(&panel[0], nbk, aq, K, ad, nb*4, ao, yp, N*4, add, 3)
				}
			}
		}
	}
	return nEnd
}
