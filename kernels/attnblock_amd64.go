package kernels

import (
	"math"
	"unsafe"
)

// The decode attention's block kernels, at the avx512 and avx2 levels. At
// avx512 a block's scores go through attnScores4 (attnscore512_amd64.s)
// where heads of whole 64s of elements share a kv head in fours, sixteen
// positions a call, else through the dot-product tile of
// gemmdot512_amd64.s, four query heads by six positions a call; and its
// weighted values through attnAccF32Z/F16Z (attnacc_amd64.s), four
// heads' 64 output columns held in registers over a run of positions. At
// avx2 the scores go through the 4x3 tile of the float products
// (float_amd64.s: four heads by three positions), and the values through
// attnAccF32Y/F16Y (attnacc_amd64.s), four heads' sixteen columns at a
// time. Per position and kv head, the one-row-at-a-time loop of
// attendHeads spends most of its time in calls and lane sums; these read
// each cache row once for every head that shares it.

//go:noescape
func gemmDotF32Z(x *float32, ldx int, rows int, w unsafe.Pointer, ldw int, nw int, k16 int, y *float32, ldy int, add int)

//go:noescape
func attnScores4F16Z(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, sc *float32, ldsc int, add int)

//go:noescape
func attnScores4F32Z(q *float32, ldq int, k unsafe.Pointer, ldk int, n int, sc *float32, ldsc int, add int)

// attnScoreLanes turns attnScores4's sixteen scores from position-major
// (lane 4p+h) to head-major (lane 4h+p).
var attnScoreLanes = [16]uint32{0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15}

//go:noescape
func attnAccF32Z(out *float32, ldo int, p *float32, ldp int, rows int, v unsafe.Pointer, ldv int, n int, mask uint64)

//go:noescape
func attnAccF16Z(out *float32, ldo int, p *float32, ldp int, rows int, v unsafe.Pointer, ldv int, n int, mask uint64)

//go:noescape
func attnAccF32Y(out *float32, ldo int, p *float32, ldp int, rows int, v unsafe.Pointer, ldv int, n int, cols int)

//go:noescape
func attnAccF16Y(out *float32, ldo int, p *float32, ldp int, rows int, v unsafe.Pointer, ldv int, n int, cols int)

// scaleScoresZ multiplies the n scores at x by s and reports whether one
// became NaN or +Inf.
//
//go:noescape
func scaleScoresZ(x *float32, n int, s float32) (bad bool)

// blockAhead is how many positions ahead of their use the block kernels
// ask for K and V rows (see fetchAhead): 16 but on AMD before the Zen 5,
// where they ask for the rows they are about to read (0; init in
// cpu_amd64.go), as its decode products do. On the Zen 4, two threads
// over a 1B model's caches at 4096 positions, the two settings alternated
// call by call over 16 layers' caches (1500 calls each): f16 caches 8%
// less time a layer with 0 (0.61-0.64 against 0.66-0.70 ms, four runs),
// q8_0 5%, f32 1.5-2%, at the avx2 level f16 and q8_0 6%; 4 and 8
// ahead 2-4% less than 16, 32 the same.
var blockAhead = fetchAhead

// blocked reports whether the block kernels take at's caches: at the
// avx512 or avx2 level, f32 or binary16 with a head dimension of whole
// 16-float vectors, or Q8_0 (whose rows they widen to f32 a few at a
// time, into qrows).
func (at *Attention) blocked() bool {
	return useAsm && at.HeadDim%16 == 0
}

// qrows is room for the Q8_0 cache rows the block kernels widen at once:
// valueRun rows of at most maxQ8Dim elements.
type qrows [valueRun * maxQ8Dim]float32

// widenQ8 decodes the Q8_0 rows of positions [s, s+n) of the kv heads
// from g of c (K8 or V8), span elements from each position (a head's, or
// adjacent heads' of a position-major cache), into w, span a row.
func (at *Attention) widenQ8(w *qrows, c []byte, s, n, g, hs, span int) {
	for r := range n {
		off := (s+r)*at.KVStride + g*hs
		Q8_0RowToF32(w[r*span:(r+1)*span], c[off/32*34:(off+span)/32*34])
	}
}

// q8Span returns how many elements of each position the block kernels
// widen at once from b's kv heads in a Q8_0 cache: all of their rows
// where they are adjacent (position-major) and n positions of them fit
// in qrows, else 0 (a kv head at a time).
func (at *Attention) q8Span(b headBatch, n int) int {
	rep := at.Heads / at.KVHeads
	span := ((b.ends[len(b.ends)-1]-1)/rep - b.h0/rep + 1) * at.HeadDim
	if at.headStride() != at.HeadDim || n*span > len(qrows{}) {
		return 0
	}
	return span
}

// blockScores writes the raw scores Q[h]·K[s] of b's heads h (head h's
// at scores[(h-b.h0)*attnBlock+s-s0]) for the visible positions s of
// [s0, s0+nb). It walks the positions once for all of b's groups, six
// (sixteen for attnScores4) at a time, so that a position-major cache is
// read in order, asking for the rows blockAhead positions on as it goes.
func (at *Attention) blockScores(b headBatch, s0, nb int, scores []float32, w *qrows) {
	d, rep, hs := at.HeadDim, at.Heads/at.KVHeads, at.headStride()
	q8 := at.K == nil && at.K16 == nil
	// Heads of whole 64s of elements in fours that share a kv head go
	// through attnScores4, sixteen positions a call; the others (and
	// a batch's part of a group) through the general tile.
	four := useAVX512 && d%64 == 0 && rep%4 == 0
	step := 6
	if four {
		step = 16
	}
	for j := 0; j < nb; {
		var e int
		j, e = at.visibleRun(s0, j, nb)
		for ; j < e; j += step {
			nw := min(step, e-j)
			s := s0 + j
			at.fetchRows(false, b.h0, b.ends[len(b.ends)-1], s+blockAhead, nw)
			span := 0
			if q8 {
				if span = at.q8Span(b, nw); span > 0 {
					at.widenQ8(w, at.K8, s, nw, b.h0/rep, hs, span)
				}
			}
			u0 := b.h0
			for _, u1 := range b.ends {
				g := u0 / rep
				off := s*at.KVStride + g*hs
				wk, ldw := (g-b.h0/rep)*d, 4*span // the widened rows
				if q8 && span == 0 {
					at.widenQ8(w, at.K8, s, nw, g, hs, d)
					wk, ldw = 0, 4*d
				}
				for h := u0; h < u1; h += 4 {
					sc := scores[(h-b.h0)*attnBlock+j:]
					var (
						kern = &f32Kernels
						k    unsafe.Pointer
						ldk  int
					)
					switch {
					case at.K != nil:
						k, ldk = unsafe.Pointer(&at.K[off]), 4*at.KVStride
					case q8:
						k, ldk = unsafe.Pointer(&w[wk]), ldw
					default:
						kern, k, ldk = &f16Kernels, unsafe.Pointer(&at.K16[off]), 2*at.KVStride
					}
					if !useAVX512 {
						scoresY(kern, at.Q[h*d:], min(4, u1-h), k, ldk, nw, d, sc)
					} else if four && u1-h >= 4 {
						scores4Z(kern == &f16Kernels, at.Q[h*d:(h+4)*d], k, ldk, nw, sc)
					} else {
						scoresZ(kern == &f16Kernels, at.Q[h*d:], min(4, u1-h), k, ldk, nw, d, sc)
					}
				}
				u0 = u1
			}
		}
		j = e
	}
}

// scores4Z writes the scores of the four query heads at q (whole 64s of
// elements each) against the nw key rows at k (ldk bytes apart; binary16
// where f16 is set, else f32) into sc, attnBlock a head: the whole fours
// of positions through attnScores4, a call for each 64 elements of the
// heads, the rest through the general tile. On the Zen 4, two threads
// over a 1B model's caches at 4096 positions (heads of 64; the two
// kernels alternated call by call), a layer took 10-14% less time for
// f16 caches, 11-13% for f32 (q8_0 the same), with heads of 128 (an 8B
// model's) 14% for f16 and 3% for f32; one thread over f16 caches in L3
// 0.59 ms against 0.68-0.76; the 1B model's decode steps at that depth,
// alternated step by step, 0.4-2.6% less for Q8_0 weights and 1.6-3.6%
// for Q4_K (three runs each), 0.5% for F16 (one).
func scores4Z(f16 bool, q []float32, k unsafe.Pointer, ldk, nw int, sc []float32) {
	d := len(q) / 4
	es := 4
	if f16 {
		es = 2
	}
	n4 := nw &^ 3
	for c := 0; n4 > 0 && c < d; c += 64 {
		kc, add := unsafe.Add(k, c*es), min(c, 1)
		if f16 {
			attnScores4F16Z(&q[c], 4*d, kc, ldk, n4, &sc[0], 4*attnBlock, add)
		} else {
			attnScores4F32Z(&q[c], 4*d, kc, ldk, n4, &sc[0], 4*attnBlock, add)
		}
	}
	if n4 < nw {
		scoresZ(f16, q, 4, unsafe.Add(k, n4*ldk), ldk, nw-n4, d, sc[n4:])
	}
}

// scoresZ writes the scores of the rows query heads at q (d elements
// each, at most four) against the nw key rows at k into sc, attnBlock a
// head, through the general tile, six positions a call.
func scoresZ(f16 bool, q []float32, rows int, k unsafe.Pointer, ldk, nw, d int, sc []float32) {
	for j := 0; j < nw; j += 6 {
		kj, n := unsafe.Add(k, j*ldk), min(6, nw-j)
		if f16 {
			gemmDotF16Z(&q[0], 4*d, rows, kj, ldk, n, d/16, &sc[j], 4*attnBlock, 0)
		} else {
			gemmDotF32Z(&q[0], 4*d, rows, kj, ldk, n, d/16, &sc[j], 4*attnBlock, 0)
		}
	}
}

// valueRun is how many positions blockValues adds for one group before
// it turns to the next.
const valueRun = 16

// blockValues adds scores[(h-b.h0)*attnBlock+s-s0] times V[s] into the
// output of b's heads h (out[(h-b.h0)*HeadDim:]) for the visible positions s of [s0, s0+nb),
// valueRun positions for every group in turn, asking for the rows
// blockAhead positions on as it goes.
func (at *Attention) blockValues(b headBatch, s0, nb int, scores []float32, w *qrows, out []float32) {
	d, rep, hs := at.HeadDim, at.Heads/at.KVHeads, at.headStride()
	q8 := at.K == nil && at.K16 == nil
	for j := 0; j < nb; {
		var e int
		j, e = at.visibleRun(s0, j, nb)
		if j == e {
			break
		}
		for ; j < e; j += valueRun {
			n := min(valueRun, e-j)
			at.fetchRows(true, b.h0, b.ends[len(b.ends)-1], s0+j+blockAhead, n)
			span := 0
			if q8 {
				if span = at.q8Span(b, n); span > 0 {
					at.widenQ8(w, at.V8, s0+j, n, b.h0/rep, hs, span)
				}
			}
			u0 := b.h0
			for _, u1 := range b.ends {
				g := u0 / rep
				off := (s0+j)*at.KVStride + g*hs
				wv, ldv := (g-b.h0/rep)*d, 4*span // the widened rows
				if q8 && span == 0 {
					at.widenQ8(w, at.V8, s0+j, n, g, hs, d)
					wv, ldv = 0, 4*d
				}
				for h := u0; h < u1; h += 4 {
					if !useAVX512 {
						p, o, rows := &scores[(h-b.h0)*attnBlock+j], &out[(h-b.h0)*d], min(4, u1-h)
						switch {
						case at.V != nil:
							attnAccF32Y(o, 4*d, p, 4*attnBlock, rows, unsafe.Pointer(&at.V[off]), 4*at.KVStride, n, d)
						case q8:
							attnAccF32Y(o, 4*d, p, 4*attnBlock, rows, unsafe.Pointer(&w[wv]), ldv, n, d)
						default:
							attnAccF16Y(o, 4*d, p, 4*attnBlock, rows, unsafe.Pointer(&at.V16[off]), 2*at.KVStride, n, d)
						}
						continue
					}
					for c := 0; c < d; c += 64 {
						mask := uint64(math.MaxUint64)
						if r := d - c; r < 64 {
							mask = 1<<r - 1
						}
						p := &scores[(h-b.h0)*attnBlock+j]
						switch {
						case at.V != nil:
							attnAccF32Z(&out[(h-b.h0)*d+c], 4*d, p, 4*attnBlock, min(4, u1-h), unsafe.Pointer(&at.V[off+c]), 4*at.KVStride, n, mask)
						case q8:
							attnAccF32Z(&out[(h-b.h0)*d+c], 4*d, p, 4*attnBlock, min(4, u1-h), unsafe.Pointer(&w[wv+c]), ldv, n, mask)
						default:
							attnAccF16Z(&out[(h-b.h0)*d+c], 4*d, p, 4*attnBlock, min(4, u1-h), unsafe.Pointer(&at.V16[off+c]), 2*at.KVStride, n, mask)
						}
					}
				}
				u0 = u1
			}
		}
		j = e
	}
}

// scoresY writes the raw scores of rows query heads (at most four, from
// q, HeadDim d apart) with nw cache rows (ldk bytes apart at k, in kern's
// dtype) into sc (head r's at sc[r*attnBlock:]), through the avx2 tiles:
// four heads by three positions, or one head by four positions where
// fewer heads share the kv head. Where nw is not a multiple of the tile's
// positions, its last call takes the last positions, again some that the
// one before took: a tile sums each of its dots alike, so those scores
// come out the same bits. Runs shorter than a tile go one by one.
func scoresY(kern *floatKernels, q []float32, rows int, k unsafe.Pointer, ldk, nw, d int, sc []float32) {
	switch {
	case rows == 4 && nw >= 3:
		for j := 0; j < nw; j += 3 {
			j = min(j, nw-3)
			kern.dot43(&q[0], 4*d, unsafe.Add(k, j*ldk), ldk, d, &sc[j], 4*attnBlock, 0)
		}
	case rows < 4 && nw >= 4:
		for j := 0; j < nw; j += 4 {
			j = min(j, nw-4)
			for r := range rows {
				kern.dot14(&q[r*d], unsafe.Add(k, j*ldk), ldk, d, (*[4]float32)(sc[r*attnBlock+j:]))
			}
		}
	default:
		for j := range nw {
			for r := range rows {
				sc[r*attnBlock+j] = kern.dot11(&q[r*d], unsafe.Add(k, j*ldk), d)
			}
		}
	}
}
