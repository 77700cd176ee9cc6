package kernels

import (
	"math"
	"unsafe"
)

// The avx512 level's decode attention (see attention512_amd64.s): a
// block's scores through the dot-product tile of gemmdot512_amd64.s, four
// query heads by six positions a call, and its weighted values through
// attnAcc, four heads' 64 output columns held in registers over a run of
// positions. Per position and kv head, the one-row-at-a-time loop of
// attendHeads spends most of its time in calls and lane sums; these read
// each cache row once for every head that shares it.

//go:noescape
func gemmDotF32Z(x *float32, ldx int, rows int, w unsafe.Pointer, ldw int, nw int, k16 int, y *float32, ldy int, add int)

//go:noescape
func attnAccF32Z(out *float32, ldo int, p *float32, ldp int, rows int, v unsafe.Pointer, ldv int, n int, mask uint64)

//go:noescape
func attnAccF16Z(out *float32, ldo int, p *float32, ldp int, rows int, v unsafe.Pointer, ldv int, n int, mask uint64)

// scaleScoresZ multiplies the n scores at x by s and reports whether one
// became NaN or +Inf.
//
//go:noescape
func scaleScoresZ(x *float32, n int, s float32) (bad bool)

// blocksZ reports whether the avx512 block kernels take at's caches:
// f32 or binary16, with a head dimension of whole vectors.
func (at *Attention) blocksZ() bool {
	return useAVX512 && at.HeadDim%16 == 0 && (at.K != nil || at.K16 != nil)
}

// blockScoresZ writes the raw scores Q[h]·K[s] of b's heads h (head h's
// at scores[(h-b.h0)*attnBlock+s-s0]) for the visible positions s of
// [s0, s0+nb). It walks the positions once for all of b's groups, six at
// a time, so that a position-major cache is read in order, which the
// hardware prefetchers follow (software prefetches only cost here).
func (at *Attention) blockScoresZ(b headBatch, s0, nb int, scores []float32) {
	d, rep, hs := at.HeadDim, at.Heads/at.KVHeads, at.headStride()
	for j := 0; j < nb; {
		var e int
		j, e = at.visibleRun(s0, j, nb)
		for ; j < e; j += 6 {
			nw := min(6, e-j)
			s := s0 + j
			u0 := b.h0
			for _, u1 := range b.ends {
				g := u0 / rep
				off := s*at.KVStride + g*hs
				for h := u0; h < u1; h += 4 {
					sc := &scores[(h-b.h0)*attnBlock+j]
					if at.K != nil {
						gemmDotF32Z(&at.Q[h*d], 4*d, min(4, u1-h), unsafe.Pointer(&at.K[off]), 4*at.KVStride, nw, d/16, sc, 4*attnBlock, 0)
					} else {
						gemmDotF16Z(&at.Q[h*d], 4*d, min(4, u1-h), unsafe.Pointer(&at.K16[off]), 2*at.KVStride, nw, d/16, sc, 4*attnBlock, 0)
					}
				}
				u0 = u1
			}
		}
		j = e
	}
}

// valueRun is how many positions blockValuesZ adds for one group before
// it turns to the next.
const valueRun = 16

// blockValuesZ adds scores[(h-b.h0)*attnBlock+s-s0] times V[s] into the
// output of b's heads h for the visible positions s of [s0, s0+nb),
// valueRun positions for every group in turn.
func (at *Attention) blockValuesZ(b headBatch, s0, nb int, scores []float32) {
	d, rep, hs := at.HeadDim, at.Heads/at.KVHeads, at.headStride()
	for j := 0; j < nb; {
		var e int
		j, e = at.visibleRun(s0, j, nb)
		if j == e {
			break
		}
		for ; j < e; j += valueRun {
			n := min(valueRun, e-j)
			u0 := b.h0
			for _, u1 := range b.ends {
				off := (s0+j)*at.KVStride + u0/rep*hs
				for h := u0; h < u1; h += 4 {
					for c := 0; c < d; c += 64 {
						mask := uint64(math.MaxUint64)
						if w := d - c; w < 64 {
							mask = 1<<w - 1
						}
						p := &scores[(h-b.h0)*attnBlock+j]
						if at.V != nil {
							attnAccF32Z(&at.Out[h*d+c], 4*d, p, 4*attnBlock, min(4, u1-h), unsafe.Pointer(&at.V[off+c]), 4*at.KVStride, n, mask)
						} else {
							attnAccF16Z(&at.Out[h*d+c], 4*d, p, 4*attnBlock, min(4, u1-h), unsafe.Pointer(&at.V16[off+c]), 2*at.KVStride, n, mask)
						}
					}
				}
				u0 = u1
			}
		}
		j = e
	}
}
