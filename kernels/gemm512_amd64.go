package kernels

import (
	"unsafe"

	"github.com/pootlabs/poot"
)

// The AVX-512 prompt-processing products (the avx512 level, T >= 4). They
// replace the one-weight-row-at-a-time kernels of matmul_amd64.go with
// register tiles that reuse each loaded weight for several activation rows
// and each activation for many weight rows: see gemmdot512_amd64.s (F16 and
// BF16 weights, up to 127 rows: dot products over weights read in place),
// gemmbcast512_amd64.s (F16 and BF16 weights, 48 to 127 rows: the weights
// read in place, the activations transposed once), gemm512_amd64.s (F32
// weights, and F16 and BF16 with more rows: panels packed and transposed
// once per product and met by every row) and gemmq512_amd64.s (quantized
// weights).

// The packed float tile's shape: 48 weight rows (three vectors) by at
// most zFloatKB elements of K a packed panel, eight (or four) activation
// rows a tile.
const (
	zFloatNR = 48
	// zFloatKB bounds a packed panel's elements of K: 48 rows of 2048
	// f32, 384 KB, stay in L2 while every activation row meets them.
	zFloatKB = 2048
	// zFloatMinT is the fewest activation rows for which packing a panel
	// pays: below it the AVX2 4x3 tile, which reads the weights in place,
	// is as fast.
	zFloatMinT = 8
	// zPanelMinT is the fewest activation rows for which the F16 and BF16
	// products pack their weights into panels; fewer meet them in place
	// (floatRowsT and floatRowsDot), as packing a panel costs about what
	// 17 rows' tiles do. On the Zen 5, one thread, F16 weights of the 1B
	// model's shapes: 128 rows 184-199 GFLOP/s packed against 160-189 by
	// the dot tiles, 256 190-205 against 155-185, 512 184-212 against
	// 151-178; floatRowsT ran 181-184 at 128-512 rows against the
	// panels' 190-196.
	zPanelMinT = 128
	// zDotActBytes bounds the activations (a chunk of rows by a block of
	// K) that floatRowsDot's tiles meet before the next block; half of
	// Zen 4/5's L2.
	zDotActBytes = 512 << 10
	// zDotMinKB is the fewest elements of K a block of floatRowsDot may
	// have: shorter ones spend too much on summing the lanes.
	zDotMinKB = 2048
)

// The assembly in gemm512_amd64.s.

//go:noescape
func packF32Z(dst *float32, src unsafe.Pointer, lds int, k8 int)

//go:noescape
func packF16Z(dst *float32, src unsafe.Pointer, lds int, k8 int)

//go:noescape
func packBF16Z(dst *float32, src unsafe.Pointer, lds int, k8 int)

//go:noescape
func prefetchRowsZ(src unsafe.Pointer, lds int, rows int, n int)

//go:noescape
func gemmFloatZ(x *float32, ldx int, p *float32, kc int, y *float32, ldy int, rows int, nv int, mask uint64, add int)

//go:noescape
func gemmFloatZ8(x *float32, ldx int, p *float32, kc int, y *float32, ldy int, mask uint64, add int)

//go:noescape
func gemmDotF16Z(x *float32, ldx int, rows int, w unsafe.Pointer, ldw int, nw int, k16 int, y *float32, ldy int, add int)

//go:noescape
func gemmBcastF16Z(xt *float32, v int, w unsafe.Pointer, ldw int, kc int, tile *float32, y *float32, ldy int, nw int, add int)

//go:noescape
func gemmBcastBF16Z(xt *float32, v int, w unsafe.Pointer, ldw int, kc int, tile *float32, y *float32, ldy int, nw int, add int)

//go:noescape
func gemmDotBF16Z(x *float32, ldx int, rows int, w unsafe.Pointer, ldw int, nw int, k16 int, y *float32, ldy int, add int)

// floatDot reports whether floatRowsDot takes a product of T rows of K
// elements with wt weights (floatRowsZ those of at least zFloatMinT rows
// it does not). Not F32: six rows of a block of 2048 would fill L1, and
// the packed panels measured faster.
func floatDot(wt poot.DType, T, K int) bool {
	return wt != poot.F32 && K%16 == 0 && T < zPanelMinT
}

// floatRowsDot is the F16 or BF16 product without a packed panel, of the
// activation rows from tb on, for K a multiple of 16: four activation rows
// by six weight rows a tile, read in place (see gemmdot512_amd64.s). The
// activation rows are taken in chunks of at most
// zDotActBytes/(4·min(K, zDotMinKB)) (64 for K = 2048), each chunk
// meeting every weight row before the next, and K is cut into blocks
// whose chunk of activations fits in zDotActBytes. On the Zen 4, one
// thread, T = 512, chunks measured faster than the panels of the time
// (which packed 128 elements of K at once): 107-110 GFLOP/s against
// 100-103 for 2048x2048 F16 weights.
func floatRowsDot(wt poot.DType, y []float32, N int, w []byte, a *Acts, tb, n0, n1 int) {
	T, K, x := a.T, a.K, a.x
	const size = 2
	ldw := K * size
	tc := max(4, zDotActBytes/(4*min(K, zDotMinKB))&^3)
	for t0 := tb; t0 < T; t0 += tc {
		t1 := min(T, t0+tc)
		kb := max(16, zDotActBytes/(4*(t1-t0))/16*16)
		for kb0 := 0; kb0 < K; kb0 += kb {
			kc := min(kb, K-kb0)
			add := 0
			if kb0 > 0 {
				add = 1
			}
			for n := n0; n < n1; n += 6 {
				nw := min(6, n1-n)
				wp := unsafe.Pointer(&w[n*ldw+kb0*size])
				// The next six rows' block of K comes into L2 while these
				// meet the chunk's rows (see ahead): on the Zen 4, two
				// threads, F16 prompts of 64 were faster in 8 of 10
				// rounds alternating binaries (97.4 against 92.9 tokens/s
				// over five), prompts of 512 the same.
				pf := newAhead(w, ldw, kb0*size, kc*size, n+nw, min(n1, n+nw+6), (t1-t0+3)/4)
				for t := t0; t < t1; t += 4 {
					pf.next()
					xp, yp, rows := &x[t*K+kb0], &y[t*N+n], min(4, t1-t)
					if wt == poot.F16 {
						gemmDotF16Z(xp, K*4, rows, wp, ldw, nw, kc/16, yp, N*4, add)
					} else {
						gemmDotBF16Z(xp, K*4, rows, wp, ldw, nw, kc/16, yp, N*4, add)
					}
				}
			}
		}
	}
}

// zBcastKB bounds the elements of K a call of floatRowsT's tile covers:
// 64 activation rows of 2048 f32 (512 KB) stay in L2 while every weight
// row meets them.
const zBcastKB = 2048

// zBcastAhead is how many bytes of each of the next six weight rows
// floatRowsT asks for before a tile: the hardware's prefetchers follow the
// rows from there.
const zBcastAhead = 512

//go:noescape
func transposeZ(dst *float32, ldd int, src *float32, lds int, k16 int)

// transposeRows writes element k of the sixteen rows of K elements at src
// to dst[k*w:k*w+16], for K a multiple of 16 (of 8 at the avx2 level).
func transposeRows(dst []float32, w int, src []float32, K int) {
	_, _ = dst[(K-1)*w+15], src[15*K+K-1]
	if !useAVX512 {
		transposeY(&dst[0], w*4, &src[0], K*4, K/8)
		transposeY(&dst[8], w*4, &src[8*K], K*4, K/8)
		return
	}
	transposeZ(&dst[0], w*4, &src[0], K*4, K/16)
}

// transposedRows returns how many of T activation rows of K elements
// Acts.Prepare transposes for wt weights, and in panels of how many rows:
// at the avx2 level every whole 16 rows where there are yBcastMinT(wt)
// or more (floatRowsTY's panels; a product of another float dtype that
// shares the preparation takes them too); at avx512, for F16 and BF16
// only, every whole 64 rows, and 48 of the rest where there are as many
// (floatRowsT's). Fewer
// rows a panel leave the tile waiting on its broadcasts (on the Zen 5,
// 16 rows ran at 105 GFLOP/s a core, 32 at 165, 48 at 195, against
// 141-180 for the dot tiles), so the rows past the panels, and every row
// where there are fewer than 48 or 128 or more, take the other products.
func transposedRows(wt poot.DType, T, K int) (n, width int) {
	if K%16 != 0 {
		return 0, 0
	}
	if !useAVX512 {
		if useAsm && T >= yBcastMinT(wt) {
			return T &^ 15, 16
		}
		return 0, 0
	}
	if wt != poot.F16 && wt != poot.BF16 || T >= zPanelMinT {
		return 0, 0
	}
	n = T &^ 63
	if T-n >= 48 {
		n += 48
	}
	return n, 64
}

// floatRowsT is the F16 or BF16 product over transposed activations
// (Acts.xt, see gemmbcast512_amd64.s) for the rows it holds, whose count
// it returns: six weight rows a tile, read in place, by a panel of 64 or
// 48 activation rows, a block of K of at most zBcastKB elements at a
// time, each block meeting every weight row before the next. The start of
// the next six rows' block is asked into L2 before a tile runs. On the Zen
// 5, one thread, 64 rows by 2048x2048 F16 weights: 187 GFLOP/s, against
// 161 for the dot tiles; two threads 360 against 290.
func floatRowsT(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int) int {
	var tile [6 * 64]float32
	T, K := len(a.xt)/a.K, a.K
	const size = 2
	ldw := K * size
	kb := min(K, zBcastKB)
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
			wp := unsafe.Pointer(&w[n*ldw+kb0*size])
			for t0 := 0; t0 < T; t0 += 64 {
				v := min(64, T-t0) / 16
				xp, yp := &a.xt[t0*K+kb0*16*v], &y[t0*N+n]
				if wt == poot.F16 {
					gemmBcastF16Z(xp, v, wp, ldw, kc, &tile[0], yp, N*4, nw, add)
				} else {
					gemmBcastBF16Z(xp, v, wp, ldw, kc, &tile[0], yp, N*4, nw, add)
				}
			}
		}
	}
	return T
}

// zGrain returns how many weight rows the avx512 level's tiled product of
// wt weights by T activation rows of K elements handles as one tile or
// panel, or 0 where it has no tiled product for them.
func zGrain(wt poot.DType, T, K int) int {
	switch wt {
	case poot.F32, poot.F16, poot.BF16:
		switch {
		case T < zFloatMinT:
			return 0
		case floatDot(wt, T, K):
			return 6
		}
		return zFloatNR
	case poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.MXFP4, poot.Q4_K, poot.Q5_K, poot.Q6_K:
		if T < 4 {
			return 0
		}
		return 16
	}
	return 0
}

// gemmRowsZ runs the avx512 level's tiled product for the rows [n0,n1) of
// weights of dtype wt when it has one for wt and a's shape, and reports
// whether it did.
func gemmRowsZ(wt poot.DType, y []float32, w []byte, a *Acts, N, n0, n1 int) bool {
	switch zGrain(wt, a.T, a.K) {
	case 0:
		return false
	case 6:
		tb := 0
		if len(a.xt) > 0 && a.xtw == 64 {
			tb = floatRowsT(wt, y, N, w, a, n0, n1)
		}
		if tb < a.T {
			floatRowsDot(wt, y, N, w, a, tb, n0, n1)
		}
	case zFloatNR:
		floatRowsZ(wt, y, N, w, a, n0, n1)
	default:
		quantRowsZ(wt, y, N, w, a, n0, n1)
	}
	return true
}

// zLane returns the lane of a packed 16-row group that holds row j: the
// transposes leave 128-bit lanes 1 and 2 swapped (rows 0-3, 8-11, 4-7,
// 12-15), and the tiles swap them back when they store.
func zLane(j int) int { return [4]int{0, 2, 1, 3}[j>>2]<<2 | j&3 }

// floatPanel is the packed panel floatRowsZ works in: 384 KB, too large
// for a goroutine's stack frame.
type floatPanel [zFloatKB * zFloatNR]float32

// floatPanels keeps the panels of the calls of floatRowsZ that have
// returned. Unlike a sync.Pool it never drops one, so once there are as
// many as calls run at once, a product allocates nothing.
var floatPanels = make(chan *floatPanel, 64)

// takePanel returns a kept panel, or a new one where none is kept.
func takePanel() *floatPanel {
	select {
	case p := <-floatPanels:
		return p
	default:
		return new(floatPanel)
	}
}

// keepPanel keeps p for a later call (or drops it where 64 are kept).
func keepPanel(p *floatPanel) {
	select {
	case floatPanels <- p:
	default:
	}
}

// floatRowsZ is the float product by 48-row panels: each panel of up to
// zFloatKB elements of K is converted and transposed once and then meets
// every activation row over its whole length, eight (then four) rows a
// tile, so that the tiles' outputs are read and written once a panel, and
// the panel (in L2) is read again by every tile. Meanwhile the next
// panel's rows come into L2 a piece a tile (ahead). On the Zen 5, one
// thread, F16 weights, T = 512: 184-212 GFLOP/s, against 138-165 when
// each panel held 128 elements of K and the activations' blocks of K met
// every panel in turn (the outputs then went back to L3 between blocks).
func floatRowsZ(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int) {
	pp := takePanel()
	defer keepPanel(pp)
	panel := pp[:]
	T, K, x := a.T, a.K, a.x
	size := 2
	if wt == poot.F32 {
		size = 4
	}
	ldw := K * size
	for n := n0; n < n1; n += zFloatNR {
		nr := min(zFloatNR, n1-n)
		mask := uint64(1)<<nr - 1
		for kb0 := 0; kb0 < K; kb0 += zFloatKB {
			kc := min(zFloatKB, K-kb0)
			packFloatPanel(wt, panel, w[n*ldw+kb0*size:], ldw, nr, kc)
			var pf ahead // the next panel's rows: the next block of K, or the next rows' first
			if kb0+kc < K {
				pf = newAhead(w, ldw, (kb0+kc)*size, min(zFloatKB, K-kb0-kc)*size, n, n+nr, (T+7)/8)
			} else if n+nr < n1 {
				pf = newAhead(w, ldw, 0, min(zFloatKB, K)*size, n+nr, min(n1, n+nr+zFloatNR), (T+7)/8)
			}
			add := 0
			if kb0 > 0 {
				add = 1
			}
			t := 0
			for ; t+8 <= T; t += 8 {
				pf.next()
				gemmFloatZ8(&x[t*K+kb0], K*4, &panel[0], kc, &y[t*N+n], N*4, mask, add)
			}
			for ; t < T; t += 4 {
				pf.next()
				gemmFloatZ(&x[t*K+kb0], K*4, &panel[0], kc, &y[t*N+n], N*4, min(4, T-t), (nr+15)/16, mask, add)
			}
		}
	}
}

// packFloatPanel converts elements [0,kc) of the nr rows at w (stride ldw
// bytes) into panel, element k of row j at panel[k*48+16*(j/16)+zLane(j%16)].
// Whole groups of 16 rows go through the assembly transpose eight elements
// at a time; the rest is done here.
func packFloatPanel(wt poot.DType, panel []float32, w []byte, ldw, nr, kc int) {
	_ = panel[kc*zFloatNR-1]
	k8 := kc &^ 7
	for g := 0; g*16 < nr; g++ {
		rows := min(16, nr-16*g)
		from := 0
		if rows == 16 && k8 > 0 {
			src := unsafe.Pointer(&w[16*g*ldw])
			switch wt {
			case poot.F32:
				packF32Z(&panel[16*g], src, ldw, k8)
			case poot.F16:
				packF16Z(&panel[16*g], src, ldw, k8)
			default:
				packBF16Z(&panel[16*g], src, ldw, k8)
			}
			from = k8
		}
		for j := range rows {
			row := w[(16*g+j)*ldw:]
			col := panel[16*g+zLane(j):]
			for k := from; k < kc; k++ {
				col[k*zFloatNR] = floatAt(wt, row, k)
			}
		}
	}
}

// floatAt returns element k of a stored F32, F16 or BF16 row.
func floatAt(wt poot.DType, row []byte, k int) float32 {
	switch wt {
	case poot.F32:
		return *(*float32)(unsafe.Pointer(&row[4*k]))
	case poot.F16:
		return f16Table[uint16(row[2*k])|uint16(row[2*k+1])<<8]
	}
	return BF16ToF32(uint16(row[2*k]) | uint16(row[2*k+1])<<8)
}

// The quantized tiles' shapes: 16 weight rows (one vector) a panel, of
// zQ8KB blocks of 32 or zQ4KB K-quant super-blocks (1024 elements of K),
// by up to six (blocks of 32) or four (K-quants) activation rows a tile.
const (
	zQ8KB    = 32
	zQ8Bytes = 576 // a packed Q8_0 block of 16 rows
	zQ1Bytes = 640 // a packed Q4_1 or Q5_1 block (with the mins)
	zQ8MR    = 6
	zQ4KB    = 4
	zQ4Bytes = 5248 // a packed Q4_K super-block of 16 rows
	zQ6Bytes = 5760 // a packed Q6_K super-block of 16 rows
	zQ4MR    = 4
	zQPanel  = max(zQ8KB*zQ1Bytes, zQ4KB*zQ6Bytes)
)

// The assembly in gemmq512_amd64.s.

//go:noescape
func packQ8_0Z(dst *byte, src *byte, lds int, nb int, idx *[16]int32)

//go:noescape
func packQ4_KZ(dst *byte, src *byte, lds int, nb int, idx *[16]int32)

//go:noescape
func packQ4_0Z(dst *byte, src *byte, lds int, nb int, idx *[16]int32)

//go:noescape
func packQ5_0Z(dst *byte, src *byte, lds int, nb int, idx *[16]int32)

//go:noescape
func packMXFP4Z(dst *byte, src *byte, lds int, nb int, idx *[16]int32)

//go:noescape
func packQ4_1Z(dst *byte, src *byte, lds int, nb int, idx *[16]int32)

//go:noescape
func packQ5_1Z(dst *byte, src *byte, lds int, nb int, idx *[16]int32)

//go:noescape
func packQ5_KZ(dst *byte, src *byte, lds int, nb int, idx *[16]int32)

//go:noescape
func packQ6_KZ(dst *byte, src *byte, lds int, nb int, idx *[16]int32)

//go:noescape
func gemmQ8_0Z1(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, mask uint64, add int)

//go:noescape
func gemmQ8_0Z2(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, mask uint64, add int)

//go:noescape
func gemmQ8_0Z3(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, mask uint64, add int)

//go:noescape
func gemmQ8_0Z4(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, mask uint64, add int)

//go:noescape
func gemmQ8_0Z5(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, mask uint64, add int)

//go:noescape
func gemmQ8_0Z6(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, mask uint64, add int)

//go:noescape
func gemmQ4_1Z1(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, mask uint64, add int, as *float32)

//go:noescape
func gemmQ4_1Z2(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, mask uint64, add int, as *float32)

//go:noescape
func gemmQ4_1Z3(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, mask uint64, add int, as *float32)

//go:noescape
func gemmQ4_1Z4(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, mask uint64, add int, as *float32)

//go:noescape
func gemmQ4_1Z5(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, mask uint64, add int, as *float32)

//go:noescape
func gemmQ4_1Z6(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, mask uint64, add int, as *float32)

//go:noescape
func gemmQ4_KZ1(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, y *float32, ldy int, mask uint64, add int)

//go:noescape
func gemmQ4_KZ2(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, y *float32, ldy int, mask uint64, add int)

//go:noescape
func gemmQ4_KZ3(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, y *float32, ldy int, mask uint64, add int)

//go:noescape
func gemmQ4_KZ4(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, y *float32, ldy int, mask uint64, add int)

//go:noescape
func gemmQ6_KZ1(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, y *float32, ldy int, mask uint64, add int)

//go:noescape
func gemmQ6_KZ2(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, y *float32, ldy int, mask uint64, add int)

//go:noescape
func gemmQ6_KZ3(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, y *float32, ldy int, mask uint64, add int)

//go:noescape
func gemmQ6_KZ4(p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, y *float32, ldy int, mask uint64, add int)

// zIndex sets idx to the byte offsets of 16 rows lds apart, row j in lane
// zLane(j), for the packing routines' gathers.
func zIndex(idx *[16]int32, lds int) {
	for j := range 16 {
		idx[zLane(j)] = int32(j * lds)
	}
}

// quantRowsZ is the quantized product by 16-row panels: each panel is
// repacked once per zQ8KB blocks (zQ4KB K-quant super-blocks) and then
// meets every activation row, six (four) at a time. Every dtype with a
// prompt product has a tile: Q4_0, Q5_0 and MXFP4 panels are repacked as
// Q8_0's (each code as a signed byte, its block's scale as an f32), Q4_1
// and Q5_1 as Q8_0's with their mins beside the scales (the Q8_0 tile
// with a min term), Q5_K as Q4_K's (five-bit quants) and Q6_K for a Q4_K
// tile of sixteen sub-blocks. On the Zen 5, one thread, 64 rows by the 1B
// model's shapes (BenchmarkPrefill), GFLOP/s: Q4_0, Q5_0 and MXFP4
// 350-420, as Q8_0's, Q4_1 and Q5_1 280-360, Q5_K 290-350, as Q4_K's,
// Q6_K 240-295, against 55-118 for the avx2 level's one-weight-row
// kernels they took before.
func quantRowsZ(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int) {
	var panel [zQPanel]byte
	var stage [16 * zQ8KB * 34]byte // a last panel of fewer than 16 rows (Q8_0's blocks are the longest of 32)
	var idx [16]int32
	T, K := a.T, a.K
	be, bb := wt.BlockElems(), wt.BlockBytes()
	nb := K / be
	rb := nb * bb
	kb, mr := zQ8KB, zQ8MR
	kquant := wt == poot.Q4_K || wt == poot.Q5_K || wt == poot.Q6_K
	mins := wt == poot.Q4_1 || wt == poot.Q5_1
	if kquant {
		kb, mr = zQ4KB, zQ4MR
	}
	zIndex(&idx, rb)
	for n := n0; n < n1; n += 16 {
		nr := min(16, n1-n)
		mask := uint64(1)<<nr - 1
		for b0 := 0; b0 < nb; b0 += kb {
			nbk := min(kb, nb-b0)
			src, lds := w[n*rb+b0*bb:], rb
			if nr < 16 {
				// The packing reads 16 rows: copy the ones there are.
				lds = nbk * bb
				for j := range nr {
					copy(stage[j*lds:(j+1)*lds], w[(n+j)*rb+b0*bb:])
				}
				src = stage[:]
				zIndex(&idx, lds)
			}
			add := 0
			if b0 > 0 {
				add = 1
			}
			switch wt {
			case poot.Q8_0:
				packQ8_0Z(&panel[0], &src[0], lds, nbk, &idx)
			case poot.Q4_0:
				packQ4_0Z(&panel[0], &src[0], lds, nbk, &idx)
			case poot.Q5_0:
				packQ5_0Z(&panel[0], &src[0], lds, nbk, &idx)
			case poot.MXFP4:
				packMXFP4Z(&panel[0], &src[0], lds, nbk, &idx)
			case poot.Q4_1:
				packQ4_1Z(&panel[0], &src[0], lds, nbk, &idx)
			case poot.Q5_1:
				packQ5_1Z(&panel[0], &src[0], lds, nbk, &idx)
			case poot.Q5_K:
				packQ5_KZ(&panel[0], &src[0], lds, nbk, &idx)
			case poot.Q6_K:
				packQ6_KZ(&panel[0], &src[0], lds, nbk, &idx)
			default:
				packQ4_KZ(&panel[0], &src[0], lds, nbk, &idx)
			}
			if b0+nbk < nb {
				prefetchRowsZ(unsafe.Pointer(&w[n*rb+(b0+nbk)*bb]), rb, nr, min(kb, nb-b0-nbk)*bb)
			} else if n+nr < n1 {
				prefetchRowsZ(unsafe.Pointer(&w[(n+nr)*rb]), rb, min(16, n1-n-nr), min(kb, nb)*bb)
			}
			for t := 0; t < T; t += mr {
				m := min(mr, T-t)
				yp := &y[t*N+n]
				if !kquant {
					q8Tile(mins, m, &panel[0], nbk, &a.q[t*K+b0*32], K, &a.d[t*nb+b0], nb*4, &a.o[t*nb+b0], yp, N*4, mask, add, &a.s[t*nb+b0])
				} else {
					kTile(wt == poot.Q6_K, m, &panel[0], nbk, &a.q[t*K+b0*256], K, &a.d[t*nb+b0], nb*4, &a.bs[(t*nb+b0)*16], nb*32, yp, N*4, mask, add)
				}
			}
			if nr < 16 {
				zIndex(&idx, rb)
			}
		}
	}
}

// q8Tile runs the Q8_0 tile routine for m activation rows, or the Q4_1
// one (mins: the weights' mins meet the activations' scaled sums, as).
func q8Tile(mins bool, m int, p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, ao *int32, y *float32, ldy int, mask uint64, add int, as *float32) {
	switch {
	case mins && m == 1:
		gemmQ4_1Z1(p, nb, aq, lda, ad, ldd, ao, y, ldy, mask, add, as)
	case mins && m == 2:
		gemmQ4_1Z2(p, nb, aq, lda, ad, ldd, ao, y, ldy, mask, add, as)
	case mins && m == 3:
		gemmQ4_1Z3(p, nb, aq, lda, ad, ldd, ao, y, ldy, mask, add, as)
	case mins && m == 4:
		gemmQ4_1Z4(p, nb, aq, lda, ad, ldd, ao, y, ldy, mask, add, as)
	case mins && m == 5:
		gemmQ4_1Z5(p, nb, aq, lda, ad, ldd, ao, y, ldy, mask, add, as)
	case mins:
		gemmQ4_1Z6(p, nb, aq, lda, ad, ldd, ao, y, ldy, mask, add, as)
	case m == 1:
		gemmQ8_0Z1(p, nb, aq, lda, ad, ldd, ao, y, ldy, mask, add)
	case m == 2:
		gemmQ8_0Z2(p, nb, aq, lda, ad, ldd, ao, y, ldy, mask, add)
	case m == 3:
		gemmQ8_0Z3(p, nb, aq, lda, ad, ldd, ao, y, ldy, mask, add)
	case m == 4:
		gemmQ8_0Z4(p, nb, aq, lda, ad, ldd, ao, y, ldy, mask, add)
	case m == 5:
		gemmQ8_0Z5(p, nb, aq, lda, ad, ldd, ao, y, ldy, mask, add)
	default:
		gemmQ8_0Z6(p, nb, aq, lda, ad, ldd, ao, y, ldy, mask, add)
	}
}

// kTile runs the Q4_K tile routine for m activation rows, or the Q6_K one
// (six).
func kTile(six bool, m int, p *byte, nb int, aq *int8, lda int, ad *float32, ldd int, bs *int16, ldb int, y *float32, ldy int, mask uint64, add int) {
	switch {
	case six && m == 1:
		gemmQ6_KZ1(p, nb, aq, lda, ad, ldd, bs, ldb, y, ldy, mask, add)
	case six && m == 2:
		gemmQ6_KZ2(p, nb, aq, lda, ad, ldd, bs, ldb, y, ldy, mask, add)
	case six && m == 3:
		gemmQ6_KZ3(p, nb, aq, lda, ad, ldd, bs, ldb, y, ldy, mask, add)
	case six:
		gemmQ6_KZ4(p, nb, aq, lda, ad, ldd, bs, ldb, y, ldy, mask, add)
	case m == 1:
		gemmQ4_KZ1(p, nb, aq, lda, ad, ldd, bs, ldb, y, ldy, mask, add)
	case m == 2:
		gemmQ4_KZ2(p, nb, aq, lda, ad, ldd, bs, ldb, y, ldy, mask, add)
	case m == 3:
		gemmQ4_KZ3(p, nb, aq, lda, ad, ldd, bs, ldb, y, ldy, mask, add)
	default:
		gemmQ4_KZ4(p, nb, aq, lda, ad, ldd, bs, ldb, y, ldy, mask, add)
	}
}
