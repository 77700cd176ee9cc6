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

// blocksZ reports whether the avx512 block kernels take at's caches:
// f32 or binary16, with a head dimension of whole vectors.
func (at *Attention) blocksZ() bool {
	return useAVX512 && at.HeadDim%16 == 0 && (at.K != nil || at.K16 != nil)
}

// blockScoresZ writes the raw scores Q[i]·K[s] of heads [0,nh) of q (kv
// head g) for the visible positions s of [s0, s0+nb) into scores[i][s-s0],
// prefetching the K rows fetchAhead positions on and the V rows of the
// block.
func (at *Attention) blockScoresZ(q []float32, nh, g, hs, s0, nb int, scores *[maxRep][attnBlock]float32) {
	d := at.HeadDim
	for j := 0; j < nb; {
		var e int
		j, e = at.visibleRun(s0, j, nb)
		for ; j < e; j += 6 {
			nw := min(6, e-j)
			s := s0 + j
			for r := range nw {
				at.fetchRow(false, s+r+fetchAhead, g, hs)
				at.fetchRow(true, s+r, g, hs)
			}
			off := s*at.KVStride + g*hs
			for i := 0; i < nh; i += 4 {
				if at.K != nil {
					gemmDotF32Z(&q[i*d], 4*d, min(4, nh-i), unsafe.Pointer(&at.K[off]), 4*at.KVStride, nw, d/16, &scores[i][j], 4*attnBlock, 0)
				} else {
					gemmDotF16Z(&q[i*d], 4*d, min(4, nh-i), unsafe.Pointer(&at.K16[off]), 2*at.KVStride, nw, d/16, &scores[i][j], 4*attnBlock, 0)
				}
			}
		}
		j = e
	}
}

// blockValuesZ adds scores[i][s-s0] times V[s] into out's head i for the
// visible positions s of [s0, s0+nb).
func (at *Attention) blockValuesZ(out []float32, nh, g, hs, s0, nb int, scores *[maxRep][attnBlock]float32) {
	d := at.HeadDim
	for j := 0; j < nb; {
		var e int
		j, e = at.visibleRun(s0, j, nb)
		if j == e {
			break
		}
		off := (s0+j)*at.KVStride + g*hs
		for i := 0; i < nh; i += 4 {
			for c := 0; c < d; c += 64 {
				mask := uint64(math.MaxUint64)
				if w := d - c; w < 64 {
					mask = 1<<w - 1
				}
				if at.V != nil {
					attnAccF32Z(&out[i*d+c], 4*d, &scores[i][j], 4*attnBlock, min(4, nh-i), unsafe.Pointer(&at.V[off+c]), 4*at.KVStride, e-j, mask)
				} else {
					attnAccF16Z(&out[i*d+c], 4*d, &scores[i][j], 4*attnBlock, min(4, nh-i), unsafe.Pointer(&at.V16[off+c]), 2*at.KVStride, e-j, mask)
				}
			}
		}
		j = e
	}
}
