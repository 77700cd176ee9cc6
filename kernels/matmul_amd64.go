//go:build amd64

package kernels

import (
	"unsafe"

	"github.com/pootlabs/poot"
)

// floatKernels names the assembly tiles of one float dtype; calls go through
// a switch, not func values, so //go:noescape keeps their outputs on the stack.
type floatKernels struct {
	size int // bytes an element
	dt   poot.DType
}

var (
	f32Kernels  = floatKernels{4, poot.F32}
	f16Kernels  = floatKernels{2, poot.F16}
	bf16Kernels = floatKernels{2, poot.BF16}
)

func (f *floatKernels) dot43(x *float32, ldx int, w unsafe.Pointer, ldw int, k int, y *float32, ldy int, add int) {
	switch f.dt {
	case poot.F32:
		dotF32x4x3(x, ldx, w, ldw, k, y, ldy, add)
	case poot.F16:
		dotF16x4x3(x, ldx, w, ldw, k, y, ldy, add)
	default:
		dotBF16x4x3(x, ldx, w, ldw, k, y, ldy, add)
	}
}

func (f *floatKernels) dot14(x *float32, w unsafe.Pointer, ldw int, k int, out *[4]float32) {
	switch f.dt {
	case poot.F32:
		dotF32x1x4(x, w, ldw, k, out)
	case poot.F16:
		dotF16x1x4(x, w, ldw, k, out)
	default:
		dotBF16x1x4(x, w, ldw, k, out)
	}
}

func (f *floatKernels) dot11(x *float32, w unsafe.Pointer, k int) float32 {
	switch f.dt {
	case poot.F32:
		return dotF32x1x1(x, w, k)
	case poot.F16:
		return dotF16x1x1(x, w, k)
	}
	return dotBF16x1x1(x, w, k)
}

// avx2FourRowsK is the shortest row, in elements, that the avx2 level's
// float products for one activation row (decode) read four rows at a time
// (dot14, which reads the activation once for four rows) rather than one
// (dot11). Four on every row length but on AMD, where the Zen 4 with the
// avx2 level forced read F16 products from DRAM through two threads (256
// MB of copies cycled, alternating the two) at 30 and 29 GB/s through
// four rows and 39 and 33 through one for 8192x2048, 32 and 27 against 35
// and 31 for 2048x2048, but 34 and 28 against 21 and 20 for 2048x8192,
// whose activation (32 KB of f32) one row at a time reads again from L2
// for every row, and 31-35 against 30-32 for 4096x4096. In a Llama-3.2-1B
// the gate and up projections took 1.27 ms a token each through four rows
// and 0.68 through one.
var avx2FourRowsK = 0

func f32RowsAsm(y []float32, N int, w []byte, a *Acts, n0, n1 int) {
	floatRowsAsm(poot.F32, &f32Kernels, y, N, w, a, n0, n1)
}

func half16RowsAsm(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int) {
	if wt == poot.BF16 {
		floatRowsAsm(wt, &bf16Kernels, y, N, w, a, n0, n1)
	} else {
		floatRowsAsm(wt, &f16Kernels, y, N, w, a, n0, n1)
	}
}

// floatTail returns the dot of x[from:K] with elements [from,K) of weight
// row wr: the few elements the assembly step left over.
func floatTail(wt poot.DType, x []float32, wr []byte, from, K int) float32 {
	var s float32
	for k := from; k < K; k++ {
		var v float32
		switch wt {
		case poot.F32:
			v = *(*float32)(unsafe.Pointer(&wr[4*k]))
		case poot.F16:
			v = f16Table[uint16(wr[2*k])|uint16(wr[2*k+1])<<8]
		default:
			v = BF16ToF32(uint16(wr[2*k]) | uint16(wr[2*k+1])<<8)
		}
		s += x[k] * v
	}
	return s
}

// floatKBlock is how many elements of K the 4x3 tile covers a call, and
// avx2WeightBlock how many bytes of weight rows the avx2 level's prompt
// tiles take as one block: every four activation rows meet each block's
// rows before the next four do, so the weights are read from L2 and the
// four rows from L1 or L2, rather than every activation row streaming
// past each weight tile from L2 or L3. A call sums its accumulators'
// lanes and adds them into y, which costs as much as a few hundred
// elements of K, so a call covers as much of K as it may. On the Zen 4
// with the avx2 level forced, one thread, F16 weights (BenchmarkPrefill,
// T = 64 and 512, GFLOP/s): 2048x2048 80, 8192x2048 39-48 and 2048x8192
// 62-64 with blocks of 512 elements of K and no weight blocks; 81-87,
// 72-83 and 80-87 with blocks of 64-256 KB of weights; with 256 KB and
// the tile adding into y itself, 88-96, 72-94 and 82-94 with 512
// elements of K, 90-101, 80-100 and 76-100 with 1024, 95-105, 93-100
// and 89-97 with 2048, 90-100, 90-96 and 84-94 with 4096. The quantized
// products' four-row kernels (q8famRowsAsm, kfamRowsAsm) take the same
// blocks: two threads, T = 512, Q4_K 183-211 GFLOP/s before and 250-271
// after, Q8_0 137-153 and 150-161 (Q8_0's now take the 8-row panels of
// gemm8_amd64.s). The float products of enough activation rows take the
// tiles over transposed rows first (floatRowsTY).
const (
	floatKBlock     = 2048
	avx2WeightBlock = 256 << 10
)

// floatRowsAsm tiles the product: four activation rows by three weight rows
// while there are four activation rows (prompt processing), blocked along K
// and along the weight rows;
// one activation row by four weight rows for the rest (decode).
func floatRowsAsm(wt poot.DType, kern *floatKernels, y []float32, N int, w []byte, a *Acts, n0, n1 int) {
	if a.xtw == 16 && len(a.xt) > 0 && n0 < n1 {
		tb := floatRowsTY(wt, y, N, w, a, n0, n1)
		if tb == a.T {
			return
		}
		rest := a.rowsFrom(tb)
		floatRowsAsm(wt, kern, y[tb*N:], N, w, &rest, n0, n1)
		return
	}
	T, K, x := a.T, a.K, a.x
	ldw, ldx := K*kern.size, K*4
	k16 := K &^ 15
	row := func(n int) []byte { return w[n*ldw : n*ldw+ldw] }
	one := func(t, n int) float32 {
		wr := row(n)
		xr := x[t*K : t*K+K]
		return kern.dot11(&xr[0], unsafe.Pointer(&wr[0]), k16) + floatTail(wt, xr, wr, k16, K)
	}
	T4 := T &^ 3
	nEnd := n0 + (n1-n0)/3*3
	if T4 > 0 && nEnd > n0 {
		for k0 := 0; k0 < K; k0 += floatKBlock {
			kc := min(floatKBlock, K-k0)
			last := k0+kc == K
			add := 0
			if k0 > 0 {
				add = 1
			}
			kc8 := kc &^ 7
			nb := max(3, avx2WeightBlock/(kc*kern.size)/3*3)
			for b0 := n0; b0 < nEnd; b0 += nb {
				b1 := min(nEnd, b0+nb)
				pf := newAhead(w, ldw, k0*kern.size, kc*kern.size, b1, min(nEnd, b1+nb), T4/4*((b1-b0)/3))
				for t := 0; t < T4; t += 4 {
					for n := b0; n < b1; n += 3 {
						pf.next()
						_ = y[(t+3)*N+n+2] // the tile writes rows t..t+3, columns n..n+2
						kern.dot43(&x[t*K+k0], ldx, unsafe.Pointer(&w[n*ldw+k0*kern.size]), ldw, kc8, &y[t*N+n], N*4, add)
						if last && kc8 < kc {
							for i := range 4 {
								xr := x[(t+i)*K : (t+i)*K+K]
								for j := range 3 {
									y[(t+i)*N+n+j] += floatTail(wt, xr, row(n+j), k0+kc8, K)
								}
							}
						}
					}
				}
			}
		}
		for n := nEnd; n < n1; n++ {
			for t := range T4 {
				y[t*N+n] = one(t, n)
			}
		}
	} else {
		T4 = 0
	}
	var o [4]float32
	four := K >= avx2FourRowsK
	for t := T4; t < T; t++ {
		xr := x[t*K : t*K+K]
		n := n0
		for ; four && n+4 <= n1; n += 4 {
			kern.dot14(&xr[0], unsafe.Pointer(&w[n*ldw]), ldw, k16, &o)
			yr := y[t*N+n : t*N+n+4]
			for j := range 4 {
				yr[j] = o[j] + floatTail(wt, xr, row(n+j), k16, K)
			}
		}
		for ; n < n1; n++ {
			y[t*N+n] = one(t, n)
		}
	}
}

// ahead asks, a piece at a time, for the next block of weight rows to
// come into L2 while a float prompt product (the avx2 tiles here, the
// avx512 dot tiles in floatRowsDot) computes the current one: a block's
// first pass over four activation rows would otherwise wait on memory
// for each of its rows, which a prompt of few rows does not amortize.
// On the Zen 4 with the avx2 level forced, two threads, F16
// weights, 64-token prompts: faster in 12 of 15 rounds alternating
// binaries, 84.8 against 80.2 tokens/s over the last six. The quantized
// products' rows (four activation rows a call, many more calls a block)
// showed nothing for Q4_K and lost for Q8_0 over four rounds, so they do
// without.
type ahead struct {
	w             []byte
	ld, off, size int // the rows' stride; each row's bytes [off, off+size) are asked for
	row, end      int // the next row to ask for and the block's end
	at, chunk     int // the offset reached in row; the bytes one call of next asks for
}

// newAhead spreads rows [r0, r1) of w over calls calls of next.
func newAhead(w []byte, ld, off, size, r0, r1, calls int) ahead {
	calls = max(calls, 1)
	return ahead{w: w, ld: ld, off: off, size: size, row: r0, end: r1,
		chunk: ((r1-r0)*size + calls - 1) / calls}
}

// next asks for the next piece.
func (h *ahead) next() {
	for n := h.chunk; n > 0 && h.row < h.end; {
		m := min(n, h.size-h.at)
		prefetchL2(unsafe.Pointer(&h.w[h.row*h.ld+h.off+h.at]), m)
		n -= m
		if h.at += m; h.at == h.size {
			h.row, h.at = h.row+1, 0
		}
	}
}

// q8famRowsAsm handles the 32-element dtypes (MXFP4 among them): by the
// 8-row panels of q4x8Rows where there are four activation rows or
// more, and otherwise each weight row meets four activation rows a call
// while there are four left (Q8_0's one at a time: it has no such
// kernel, and only a product's last weight rows past its panels come
// here), then one, a block of avx2WeightBlock bytes of rows at a time. noHuge
// reports that every row went through dotMXFP4x1 (fewer than four
// activation rows) and none has a block scaled by 2^125 or more.
func q8famRowsAsm(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int) (noHuge bool) {
	if tiles8(wt, a.T) {
		// The 8-row panels take the weight rows up to nEnd with every
		// whole four activation rows; the rows past those meet them one
		// at a time, and the weight rows past nEnd every row, below.
		nEnd := q4x8Rows(wt, y, N, w, a, n0, n1)
		if t4 := a.T &^ 3; t4 < a.T {
			tail := a.rowsFrom(t4)
			q8famRowsAsm(wt, y[t4*N:], N, w, &tail, n0, nEnd)
		}
		if n0 = nEnd; n0 == n1 {
			return false
		}
	}
	T, K := a.T, a.K
	eor := 0
	nb := K / 32
	rb := nb * wt.BlockBytes()
	var o [4]float32
	T4 := T &^ 3
	if wt == poot.Q8_0 {
		T4 = 0
	}
	bn := max(1, avx2WeightBlock/rb)
	for b0 := n0; b0 < n1; b0 += bn {
		b1 := min(n1, b0+bn)
		for t := 0; t < T4; t += 4 {
			aq, ad, as := &a.q[t*K], &a.d[t*nb], &a.s[t*nb]
			for n := b0; n < b1; n++ {
				wr := &w[n*rb]
				switch wt {
				case poot.Q4_0:
					dotQ4_0x4(wr, nb, aq, K, ad, nb*4, as, &o)
				case poot.Q4_1:
					dotQ4_1x4(wr, nb, aq, K, ad, nb*4, as, &o)
				case poot.Q5_0:
					dotQ5_0x4(wr, nb, aq, K, ad, nb*4, &o)
				case poot.MXFP4:
					dotMXFP4x4(wr, nb, aq, K, ad, nb*4, &o)
				default:
					dotQ5_1x4(wr, nb, aq, K, ad, nb*4, as, &o)
				}
				for i := range 4 {
					y[(t+i)*N+n] = o[i]
				}
			}
		}
		for n := b0; n < b1; n++ {
			wr := &w[n*rb]
			for t := T4; t < T; t++ {
				aq, ad, as := &a.q[t*K], &a.d[t*nb], &a.s[t*nb]
				var v float32
				switch wt {
				case poot.Q8_0:
					v = dotQ8_0x1(wr, nb, aq, ad)
				case poot.Q4_0:
					v = dotQ4_0x1(wr, nb, aq, ad, as)
				case poot.Q4_1:
					v = dotQ4_1x1(wr, nb, aq, ad, as)
				case poot.Q5_0:
					v = dotQ5_0x1(wr, nb, aq, ad)
				case poot.MXFP4:
					var e int
					v, e = dotMXFP4x1(wr, nb, aq, ad)
					eor |= e
				default:
					v = dotQ5_1x1(wr, nb, aq, ad, as)
				}
				y[t*N+n] = v
			}
		}
	}
	return wt == poot.MXFP4 && T < 4 && eor&0x100 == 0
}

// kfamRowsAsm handles Q4_K, Q5_K and Q6_K weights, four activation rows a
// call while there are four left, then one, a block of avx2WeightBlock
// bytes of rows at a time (each four activation rows stay in L1 while the
// block's rows stream past from L2).
func kfamRowsAsm(wt poot.DType, y []float32, N int, w []byte, a *Acts, n0, n1 int) {
	T, K := a.T, a.K
	nb := K / 256
	rb := nb * wt.BlockBytes()
	var o [4]float32
	T4 := T &^ 3
	if wt == poot.Q8_0 {
		T4 = 0
	}
	bn := max(1, avx2WeightBlock/rb)
	for b0 := n0; b0 < n1; b0 += bn {
		b1 := min(n1, b0+bn)
		for t := 0; t < T4; t += 4 {
			aq, ad, bs := &a.q[t*K], &a.d[t*nb], &a.bs[t*nb*16]
			for n := b0; n < b1; n++ {
				wr := &w[n*rb]
				switch wt {
				case poot.Q4_K:
					dotQ4_Kx4(wr, nb, aq, K, ad, nb*4, bs, nb*32, &o)
				case poot.Q5_K:
					dotQ5_Kx4(wr, nb, aq, K, ad, nb*4, bs, nb*32, &o)
				default:
					dotQ6_Kx4(wr, nb, aq, K, ad, nb*4, bs, nb*32, &o)
				}
				for i := range 4 {
					y[(t+i)*N+n] = o[i]
				}
			}
		}
		for n := b0; n < b1; n++ {
			wr := &w[n*rb]
			for t := T4; t < T; t++ {
				aq, ad, bs := &a.q[t*K], &a.d[t*nb], &a.bs[t*nb*16]
				switch wt {
				case poot.Q4_K:
					y[t*N+n] = dotQ4_Kx1(wr, nb, aq, ad, bs)
				case poot.Q5_K:
					y[t*N+n] = dotQ5_Kx1(wr, nb, aq, ad, bs)
				default:
					y[t*N+n] = dotQ6_Kx1(wr, nb, aq, ad, bs)
				}
			}
		}
	}
}
