package kernels

import (
	"github.com/pootlabs/poot"
)

// The avx512 level's one-activation-row products, in decode512_amd64.s. A
// rows4 routine walks ng groups of four consecutive weight rows (w, rows rb
// bytes apart) against one prepared activation row and writes 4*ng outputs
// to y; the row1 routine with the same name computes one row exactly as
// rows4 computes each of its four, so an output never depends on how the
// rows were split between workers.

//go:noescape
func q8_0Rows4z(w *byte, rb int, nb int, aq *int8, ad *float32, y *float32, ng int)

//go:noescape
func q8_0Row1z(w *byte, nb int, aq *int8, ad *float32) float32

//go:noescape
func q4_0Rows4z(w *byte, rb int, nb int, aq *int8, ad *float32, y *float32, ng int)

//go:noescape
func q4_0Row1z(w *byte, nb int, aq *int8, ad *float32) float32

// The K-quant kernels also read the activation's sums of 16 (bs).

//go:noescape
func q4_KRows4z(w *byte, rb int, nb int, aq *int8, ad *float32, bs *int16, y *float32, ng int)

//go:noescape
func q4_KRow1z(w *byte, nb int, aq *int8, ad *float32, bs *int16) float32

//go:noescape
func q5_KRows4z(w *byte, rb int, nb int, aq *int8, ad *float32, bs *int16, y *float32, ng int)

//go:noescape
func q5_KRow1z(w *byte, nb int, aq *int8, ad *float32, bs *int16) float32

//go:noescape
func q6_KRows4z(w *byte, rb int, nb int, aq *int8, ad *float32, bs *int16, y *float32, ng int)

//go:noescape
func q6_KRow1z(w *byte, nb int, aq *int8, ad *float32, bs *int16) float32

// decodeSlab is about how many weight bytes a call walks before the next
// activation row meets them, when several rows are left: the weights are
// then still in L2 for the second and third rows.
const decodeSlab = 96 << 10

// decodeRows512 computes, at the avx512 level, the outputs of weight rows
// [n0,n1) for the activation rows past the last whole group of four, one
// activation row at a time (for decode that is the only row), and returns
// how many leading rows it left to the prompt-processing kernels (a
// multiple of four). ok is false, and nothing is computed, for the dtypes
// it has no kernels for.
func decodeRows512(wt poot.DType, y []float32, w []byte, a *Acts, N, n0, n1 int) (head int, ok bool) {
	switch wt {
	case poot.Q8_0, poot.Q4_0, poot.Q4_K, poot.Q5_K, poot.Q6_K:
	default:
		return 0, false
	}
	head = a.T &^ 3
	rb := int(wt.RowBytes(int64(a.K)))
	slab := n1 - n0
	if a.T-head > 1 {
		slab = max(4, decodeSlab/rb&^3)
	}
	for s0 := n0; s0 < n1; s0 += slab {
		s1 := min(n1, s0+slab)
		for t := head; t < a.T; t++ {
			decodeRow512(wt, y[t*N:t*N+s1], w, a, t, s0, s1)
		}
	}
	return head, true
}

// decodeRow512 computes y[n] for weight rows n in [n0,n1) against
// activation row t.
func decodeRow512(wt poot.DType, y []float32, w []byte, a *Acts, t, n0, n1 int) {
	K := a.K
	rb := int(wt.RowBytes(int64(K)))
	ng := (n1 - n0) / 4
	n4 := n0 + 4*ng
	switch wt {
	case poot.Q8_0, poot.Q4_0:
		nb := K / 32
		aq, ad := &a.q[t*K], &a.d[t*nb]
		if wt == poot.Q8_0 {
			if ng > 0 {
				q8_0Rows4z(&w[n0*rb], rb, nb, aq, ad, &y[n0], ng)
			}
			for n := n4; n < n1; n++ {
				y[n] = q8_0Row1z(&w[n*rb], nb, aq, ad)
			}
			return
		}
		if ng > 0 {
			q4_0Rows4z(&w[n0*rb], rb, nb, aq, ad, &y[n0], ng)
		}
		for n := n4; n < n1; n++ {
			y[n] = q4_0Row1z(&w[n*rb], nb, aq, ad)
		}
	case poot.Q4_K, poot.Q5_K, poot.Q6_K:
		nb := K / 256
		aq, ad, bs := &a.q[t*K], &a.d[t*nb], &a.bs[t*nb*16]
		switch wt {
		case poot.Q4_K:
			if ng > 0 {
				q4_KRows4z(&w[n0*rb], rb, nb, aq, ad, bs, &y[n0], ng)
			}
			for n := n4; n < n1; n++ {
				y[n] = q4_KRow1z(&w[n*rb], nb, aq, ad, bs)
			}
		case poot.Q5_K:
			if ng > 0 {
				q5_KRows4z(&w[n0*rb], rb, nb, aq, ad, bs, &y[n0], ng)
			}
			for n := n4; n < n1; n++ {
				y[n] = q5_KRow1z(&w[n*rb], nb, aq, ad, bs)
			}
		default:
			if ng > 0 {
				q6_KRows4z(&w[n0*rb], rb, nb, aq, ad, bs, &y[n0], ng)
			}
			for n := n4; n < n1; n++ {
				y[n] = q6_KRow1z(&w[n*rb], nb, aq, ad, bs)
			}
		}
	}
}
