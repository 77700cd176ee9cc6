package kernels

import (
	"unsafe"

	"github.com/pootlabs/poot"
)

//go:noescape
func gemmBcastF32Y(xt *float32, w unsafe.Pointer, ldw int, kc int, tile *float32, y *float32, ldy int, nw int, add int)

//go:noescape
func gemmBcastBF16Y(xt *float32, w unsafe.Pointer, ldw int, kc int, tile *float32, y *float32, ldy int, nw int, add int)

//go:noescape
func transposeY(dst *float32, ldd int, src *float32, lds int, k8 int)

// yBcastKB bounds the elements of K a call of floatRowsTY's tile covers:
// each call ends by scattering its 96 sums into y, and on the Zen 4
// (two threads, the 1B model's shapes) blocks of 1024 or 512 elements
// ran 1-18% slower than 2048.
const yBcastKB = 2048

// yBcastMinT returns the fewest activation rows for which Prepare
// transposes the rows for floatRowsTY, by the weights' dtype. F16's tile
// converts each six weight rows' block of K to f32 first, which the
// panels of few activation rows do not amortize: on the Zen 4, two
// threads, the 1B model's shapes alternated with the dot tiles in one
// process, F16 ran 0-7% slower at 64 rows and 1-6% faster at 512, BF16
// 10-24% faster at both, and F32 (its weights broadcast as they are,
// 105-111 GFLOP/s a core, 94% of the FMA peak) 25-50% faster at 16, 64
// and 512 rows.
func yBcastMinT(wt poot.DType) int {
	if wt == poot.F16 {
		return 256
	}
	return 16
}

// floatRowsTY is the avx2 level's F32, F16 or BF16 product over transposed
// activations (Acts.xt in panels of sixteen rows, see bcast_amd64.s) for
// the rows it holds, whose count it returns: six weight rows a tile by a
// panel of sixteen activation rows, a block of K of at most yBcastKB
// elements at a time, each block meeting every weight row before the
// next. The start of the next six rows' block is asked into L2 before a
// tile runs.
func floatRowsTY(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int) int {
	if wt == poot.F16 {
		var wf [6 * yBcastKB]float32
		return floatRowsTYIn(wt, y, N, w, a, n0, n1, wf[:])
	}
	return floatRowsTYIn(wt, y, N, w, a, n0, n1, nil)
}

// floatRowsTYIn is floatRowsTY with wf, for F16, the room for six rows'
// block of K converted to f32 (only F16 needs it, and a frame's array is
// cleared on every call).
func floatRowsTYIn(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int, wf []float32) int {
	var tile [6 * 16]float32
	T, K := len(a.xt)/a.K, a.K
	size := 2
	if wt == poot.F32 {
		size = 4
	}
	ldw := K * size
	_, _ = y[(T-1)*N+n1-1], w[n1*ldw-1]
	kb := min(K, yBcastKB)
	for kb0 := 0; kb0 < K; kb0 += kb {
		kc := min(kb, K-kb0)
		add := 0
		if kb0 > 0 {
			add = 1
		}
		for n := n0; n < n1; n += 6 {
			nw := min(6, n1-n)
			for j := n + nw; j < min(n1, n+nw+6); j++ {
				prefetchL2(unsafe.Pointer(&w[j*ldw+kb0*size]), min(kc*size, zBcastAhead))
			}
			wp, ldp := unsafe.Pointer(&w[n*ldw+kb0*size]), ldw
			if wt == poot.F16 {
				for j := range nw {
					f16ToF32Row(&wf[j*kb], (*uint16)(unsafe.Pointer(&w[(n+j)*ldw+kb0*size])), kc)
				}
				wp, ldp = unsafe.Pointer(&wf[0]), kb*4
			}
			for t0 := 0; t0 < T; t0 += 16 {
				xp, yp := &a.xt[t0*K+kb0*16], &y[t0*N+n]
				if wt != poot.BF16 {
					gemmBcastF32Y(xp, wp, ldp, kc, &tile[0], yp, N*4, nw, add)
				} else {
					gemmBcastBF16Y(xp, wp, ldp, kc, &tile[0], yp, N*4, nw, add)
				}
			}
		}
	}
	return T
}
