package kernels

import (
	"math"
	"unsafe"

	"github.com/pootlabs/poot"
)

// The avx512 level's one-activation-row products, in decode512_amd64.s.
// Each routine computes y[i] for nr consecutive weight rows (w the first)
// against one prepared activation row, one row after the other, so that an
// output never depends on how the rows were split between workers.

// q8_0Rowsz also reads the activation's block offsets (o).
//
//go:noescape
func q8_0Rowsz(w *byte, nb int, aq *int8, o *int32, ad *float32, y *float32, nr int)

// q8_0Rows2z is q8_0Rowsz for nr rows at wa and nr rows at wb at once,
// into ya and yb.
//
//go:noescape
func q8_0Rows2z(wa, wb *byte, nb int, aq *int8, o *int32, ad *float32, ya, yb *float32, nr int)

// q8_0Rows4z is q8_0Rowsz for four runs of nr rows, s bytes apart, at
// once, into y[i], y[nr+i], y[2nr+i] and y[3nr+i].
//
//go:noescape
func q8_0Rows4z(w *byte, s, nb int, aq *int8, o *int32, ad *float32, y *float32, nr int)

// q4_0Rows2z computes nr rows at wa into ya and nr rows at wb into yb (see
// q8_0Rows2z), reading the activation's whole groups of four blocks as
// Acts.qx and Acts.ox keep them; aq serves the blocks after them. Q4_0 has
// only the two-stream kernel (an odd last row runs as both streams).
//
//go:noescape
func q4_0Rows2z(wa, wb *byte, nb int, aq, qx *int8, ox *int32, ad *float32, ya, yb *float32, nr int)

// mxfp4Rows2z is q4_0Rows2z for MXFP4 weights, whose block scales it reads
// through e8m0Half. It returns the OR of every exponent byte plus 3.
//
//go:noescape
func mxfp4Rows2z(wa, wb *byte, nb int, aq, qx *int8, ox *int32, ad *float32, ya, yb *float32, nr int) (eor int)

// The K-quant kernels also read the activation's sums of 16 (bs; Q4_K
// and Q5_K its sums of 32, s32).

// q4_KRows2z and q5_KRows2z are the two-stream forms (see q8_0Rows2z);
// Q4_K and Q5_K have only those (an odd last row runs as both streams).
// The g forms spread the nibbles by GFNI (useGFNI).

//go:noescape
func q4_KRows2z(wa, wb *byte, nb int, aq *int8, ad *float32, s32 *int16, ya, yb *float32, nr int)

//go:noescape
func q4_KRows2zg(wa, wb *byte, nb int, aq *int8, ad *float32, s32 *int16, ya, yb *float32, nr int)

//go:noescape
func q5_KRows2z(wa, wb *byte, nb int, aq *int8, ad *float32, s32 *int16, ya, yb *float32, nr int)

//go:noescape
func q5_KRows2zg(wa, wb *byte, nb int, aq *int8, ad *float32, s32 *int16, ya, yb *float32, nr int)

// q6_KRows2z computes nr rows at wa into ya and nr rows at wb into yb
// (Q6_K has only the two-stream kernel).
//
//go:noescape
func q6_KRows2z(wa, wb *byte, nb int, aq *int8, ad *float32, bs *int16, ya, yb *float32, nr int)

// The float kernels read k elements of x and of each weight row.

//go:noescape
func f32Rowsz(x *float32, w unsafe.Pointer, k int, y *float32, nr int)

//go:noescape
func f16Rowsz(x *float32, w unsafe.Pointer, k int, y *float32, nr int)

//go:noescape
func bf16Rowsz(x *float32, w unsafe.Pointer, k int, y *float32, nr int)

// The two-stream float kernels: nr rows at wa and nr at wb at once, into
// ya and yb, each row as the one-stream kernel computes it.

//go:noescape
func f32Rows2z(x *float32, wa, wb unsafe.Pointer, k int, ya, yb *float32, nr int)

//go:noescape
func f16Rows2z(x *float32, wa, wb unsafe.Pointer, k int, ya, yb *float32, nr int)

//go:noescape
func bf16Rows2z(x *float32, wa, wb unsafe.Pointer, k int, ya, yb *float32, nr int)

// The four-stream float kernels: the quarters of 4·nr rows at w at once,
// into the quarters of y, each row as the one-stream kernel computes it.

//go:noescape
func f32Rows4z(x *float32, w unsafe.Pointer, k int, y *float32, nr int)

//go:noescape
func f16Rows4z(x *float32, w unsafe.Pointer, k int, y *float32, nr int)

//go:noescape
func bf16Rows4z(x *float32, w unsafe.Pointer, k int, y *float32, nr int)

// The six-stream float kernels: the sixths of 6·nr rows at w at once, into
// the sixths of y, each row as the one-stream kernel computes it. They
// prefetch by PREFETCHNTA only (decodeNTAFloat).

//go:noescape
func f32Rows6z(x *float32, w unsafe.Pointer, k int, y *float32, nr int)

//go:noescape
func f16Rows6z(x *float32, w unsafe.Pointer, k int, y *float32, nr int)

//go:noescape
func bf16Rows6z(x *float32, w unsafe.Pointer, k int, y *float32, nr int)

// mx4Lanes is the avx512 kernels' VPSHUFB table for MXFP4 codes (the
// decode kernels' and packMXFP4Z's): 128 plus code c's doubled E2M1 value
// (mxfp4Values) at byte c of each 128-bit lane, unsigned for VPDPBUSD.
var mx4Lanes = func() (t [64]byte) {
	for i := range t {
		t[i] = byte(int(mxfp4Values[i%16]) + 128)
	}
	return t
}()

// decodeAhead and decodeAheadFloat are how many bytes ahead of its loads
// each weight stream of the quantized and of the float decode kernels asks
// for its cache lines. The hardware prefetchers alone kept too few lines
// in flight on the Intel Xeon while the core was also computing: two
// threads streamed Q8_0 weights at 27 GB/s without software prefetch and
// 33-35 GB/s 2048 bytes ahead (512 and 4096 were slower), F32 at 29 GB/s
// without, 32-33 GB/s 512 to 1024 bytes ahead and 24 GB/s 2048 ahead. On
// the AMD EPYC (Zen 4) the same prefetches only cost: in the model's
// shapes (BenchmarkDecodeLayers, two threads, the distances alternated in
// one process) F16 streamed at 27-34 GB/s 1024 bytes ahead and 33-43
// without (with the lines being loaded asked for, or PREFETCHT1 1024
// ahead, the same as without), Q8_0 at 43-44 GB/s 2048 ahead and 48-49
// without when the host's memory was fast, equal when it was slow; Q4_K
// and F32 the same either way. So on AMD the kernels ask for the lines
// they are loading by PREFETCHT0; but from the Zen 5 on the float ones
// ask 1024 bytes ahead, as on the Intel Xeon: a 1B Llama's F16 decode
// steps, alternated in one process between the two distances (the
// NTA prefetch kept), took 2-7% less time 1024 bytes ahead in five runs
// of 62 steps each and 0.3% less in a sixth (medians); 2048 ahead 2%
// less, 512 ahead 1% more. BF16 steps took 1% and 6% less, F32 4% and 5%
// (two runs each).
var decodeAhead, decodeAheadFloat = 2048, 1024

// decodeAheadNib is decodeAhead for the Q4_0, Q4_1, Q5_0, Q5_1 and MXFP4
// kernels (Q4_1's, Q5_0's and Q5_1's measured on the Zen 5 only, where
// asking for the lines being loaded was the same within the noise), which
// spend longer on each byte than the others (nibbles spread, looked up
// and offset): on the Zen 4 too they read more from DRAM asking 2048
// bytes ahead than asking for the lines they load, Q4_0 products of
// 2048x4096 and 2880x2880 at 0.94 of the streaming bandwidth against
// 0.90 and 0.93 against 0.87 when the host's memory was slow, 0.54
// against 0.53 when fast, MXFP4 1-4% faster (medians of 22-40 rounds
// alternating the distances), where the K-quant kernels ran the same
// when slow and 4-10% slower when fast. So 2048 on every CPU.
var decodeAheadNib = 2048

// decodeAheadQ8 is decodeAhead for the Q8_0 kernels. On the Zen 5 they
// read more from DRAM asking 2048 bytes ahead than asking for the lines
// they load, where the K-quant kernels (busier with each byte) read less:
// a 1B Llama's seven layer products, sixteen layers in huge pages, two
// threads, twelve passes alternating the distances in one process, four
// runs: Q8_0 medians 59.8, 55.8, 57.9 and 69.0-69.3 GB/s asking for the
// lines loaded against 63.6, 62.5 and 73.1 asking 2048 ahead (1024: 63.2,
// 61.4 and 71.3; 4096: 55.6), Q4_K 50.4-52.4 against 49.2 and Q6_K
// 57.6-57.8 against 56.8. The Zen 4's measurement (see decodeAhead) was
// of the two-stream kernel, before q8_0Rows4z; it keeps its 0.
var decodeAheadQ8 = 2048

// decodeNTAFloat is the distance of the float kernels' second prefetch of
// each weight stream, by PREFETCHNTA, which on AMD fills L1 with lines
// marked to leave it first, before the activation's (16-32 KB of f32 for
// rows of 4096-8192 elements, beside four streams). On the Zen 4, 256
// bytes ahead: the F16 products of K = 4096 and 8192 read from DRAM
// through two threads at 0.67-0.76 of the memory's streaming bandwidth
// with it and 0.64-0.70 without when the host's memory was fast, 0.93-0.98
// against 0.92-0.98 when slow, K = 2048 the same either way; 512 bytes
// ahead or more was slower than none (medians of 12-40 rounds, each
// alternating the settings). The quantized kernels were 1-4% faster with
// it alone but not in the model (Q4_K 2-3% slower in two runs of eight
// rounds), so they have none. On the Intel Xeon, where PREFETCHT0 is
// tuned and NTA was not measured, it asks for the lines being loaded,
// which PREFETCHT0 brought 1024 bytes earlier.
var decodeNTAFloat = 0

// decodeSlab is about how many weight bytes a call walks before the next
// activation row meets them, when several rows are left: the weights are
// then still in L2 for the second and third rows.
const decodeSlab = 96 << 10

// fourStreamsK is the shortest row, in elements, that the float kernels
// read as four streams of rows rather than two. An activation of more
// than 4096 (16 KB of f32) shares L1 with the weights streaming through
// it and is read again from L2 for every pair of rows: on the Zen 4 two
// threads read the F16 down projection of a Llama-3.2-1B (K = 8192) at
// 30 GB/s through two streams a thread and at 38-40 through four, its
// gate (K = 2048) 5-10% faster through four when the host's memory was
// fast and the same when it was slow. So four from 2048 on AMD, and
// above 4096 elsewhere (the Intel Xeon's two streams were tuned, four
// not measured there).
var fourStreamsK = 4097

// sixStreamsK is the shortest row, in elements, that the float kernels read
// as six streams of rows rather than four: each activation load then
// serves six rows. Only on AMD, since the six-stream kernels prefetch as
// AMD wants (see decodeNTAFloat): on the Zen 4 two threads read F16
// products of K = 4096 and 8192 from DRAM at 0.98-1.00 of the memory's
// streaming bandwidth through six streams a thread and 0.94-0.96 through
// four when the host's memory was slow, 0.79 against 0.70-0.71 when fast;
// K = 2048 the same when slow and slower when fast (medians of 33 and 3
// rounds alternating the two). So from 4096 on AMD; never elsewhere.
var sixStreamsK = math.MaxInt

// q8FourStreamsK is the shortest row, in elements, that the Q8_0 decode
// kernel reads as four streams of rows (q8_0Rows4z) rather than two. On
// the Zen 5, two threads over a 1B Llama's seven layer products from DRAM
// (huge pages, twelve passes alternating the settings in one process, five
// runs) read 63-64 GB/s through two streams and 65.8-66.7 through four
// when the host's memory was fast, 55-56 against 56-59 when slow; the
// down projection (K = 8192) gained most, 50-61 to 55-67 GB/s, as the
// float kernels' did through four streams on the Zen 4 (fourStreamsK),
// and no shape lost; the whole model's decode was the same within the
// noise (median 42.4 against 43.0 tokens/s over five rounds alternating
// binaries). So every row on AMD; never elsewhere (the Intel Xeon's two
// streams were tuned, four not measured there).
var q8FourStreamsK = math.MaxInt

// decodeRows512 computes, at the avx512 level, the outputs of weight rows
// [n0,n1) for the activation rows past the last whole group of four, one
// activation row at a time (for decode that is the only row), and returns
// how many leading rows it left to the prompt-processing kernels (a
// multiple of four). ok is false, and nothing is computed, for the dtypes
// it has no kernels for. For MXFP4 weights, noHuge reports that it took
// every row (head is 0) and found no block scaled by 2^125 or more, so
// that exactNonFinite need not look for one again.
func decodeRows512(wt poot.DType, y []float32, w []byte, a *Acts, N, n0, n1 int) (head int, ok, noHuge bool) {
	switch wt {
	case poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.MXFP4, poot.Q4_K, poot.Q5_K, poot.Q6_K:
	default:
		return 0, false, false
	}
	head = a.T &^ 3
	rb := int(wt.RowBytes(int64(a.K)))
	slab := n1 - n0
	if a.T-head > 1 {
		slab = max(1, decodeSlab/rb)
	}
	huge := false
	for s0 := n0; s0 < n1; s0 += slab {
		s1 := min(n1, s0+slab)
		for t := head; t < a.T; t++ {
			huge = decodeRow512(wt, y[t*N+s0:t*N+s1], w[s0*rb:s1*rb], a, t) || huge
		}
	}
	return head, true, wt == poot.MXFP4 && head == 0 && !huge
}

// decodeRow512 computes y[i] for the len(y) weight rows in w against
// activation row t, and for MXFP4 weights reports whether a block is
// scaled by 2^125 or more (huge).
func decodeRow512(wt poot.DType, y []float32, w []byte, a *Acts, t int) (huge bool) {
	K, nr := a.K, len(y)
	switch wt {
	case poot.F32, poot.F16, poot.BF16:
		x, rb := &a.x[t*K], len(w)/nr
		// The sixths of the rows as six streams where the rows are long
		// enough, the quarters of the rest as four, then the rest as
		// below.
		for _, runs := range [...]struct{ n, minK int }{{6, sixStreamsK}, {4, fourStreamsK}} {
			if q := nr / runs.n; K >= runs.minK && q > 0 {
				floatRuns(wt, runs.n, x, unsafe.Pointer(&w[0]), K, &y[0], q)
				y, w, nr = y[runs.n*q:], w[runs.n*q*rb:], nr-runs.n*q
				if nr == 0 {
					return
				}
			}
		}
		// The first and second halves of the rows as two streams; an odd
		// last row alone.
		h := nr / 2
		if h > 0 {
			wa, wb := unsafe.Pointer(&w[0]), unsafe.Pointer(&w[h*rb])
			switch wt {
			case poot.F32:
				f32Rows2z(x, wa, wb, K, &y[0], &y[h], h)
			case poot.F16:
				f16Rows2z(x, wa, wb, K, &y[0], &y[h], h)
			default:
				bf16Rows2z(x, wa, wb, K, &y[0], &y[h], h)
			}
		}
		if nr&1 != 0 {
			wp := unsafe.Pointer(&w[(nr-1)*rb])
			switch wt {
			case poot.F32:
				f32Rowsz(x, wp, K, &y[nr-1], 1)
			case poot.F16:
				f16Rowsz(x, wp, K, &y[nr-1], 1)
			default:
				bf16Rowsz(x, wp, K, &y[nr-1], 1)
			}
		}
	case poot.Q8_0, poot.Q4_0, poot.MXFP4:
		nb := K / 32
		aq := &a.q[t*K]
		if wt != poot.Q8_0 {
			// Q4_0 and MXFP4 read the activation's quads (Acts.qx and
			// the offsets of their codes).
			h := t - a.T&^3
			qx, ox, ad := &a.qx[h*K], &a.ox[h*K/8], &a.d[t*nb]
			// The first and second halves of the rows as two runs; an odd
			// last row as both, the second sum dropped. The MXFP4 kernel
			// ORs each exponent byte plus 3 together: bit 8 is set where
			// one is 253 or more.
			half, rb := nr/2, len(w)/nr
			eor := 0
			if half > 0 {
				eor |= nib2(wt, &w[0], &w[half*rb], nb, aq, qx, ox, ad, &y[0], &y[half], half)
			}
			if nr&1 != 0 {
				var spare float32
				wl := &w[(nr-1)*rb]
				eor |= nib2(wt, wl, wl, nb, aq, qx, ox, ad, &y[nr-1], &spare, 1)
			}
			return eor&0x100 != 0
		}
		o, ad := &a.o[t*nb], &a.d[t*nb]
		rb := len(w) / nr
		// The quarters of the rows as four streams where the rows are
		// long enough, then the first and second halves of the rest as
		// two; an odd last row alone.
		if q := nr / 4; K >= q8FourStreamsK && q > 0 {
			q8_0Rows4z(&w[0], q*rb, nb, aq, o, ad, &y[0], q)
			y, w, nr = y[4*q:], w[4*q*rb:], nr-4*q
			if nr == 0 {
				return false
			}
		}
		h := nr / 2
		if h > 0 {
			q8_0Rows2z(&w[0], &w[h*rb], nb, aq, o, ad, &y[0], &y[h], h)
		}
		if nr&1 != 0 {
			q8_0Rowsz(&w[(nr-1)*rb], nb, aq, o, ad, &y[nr-1], 1)
		}
	case poot.Q4_1, poot.Q5_0, poot.Q5_1:
		nb := K / 32
		aq, o, ad, as := &a.q[t*K], &a.o[t*nb], &a.d[t*nb], &a.s[t*nb]
		h, rb := nr/2, len(w)/nr
		if h > 0 {
			rows32(wt, &w[0], &w[h*rb], nb, aq, o, ad, as, &y[0], &y[h], h)
		}
		if nr&1 != 0 {
			// The odd last row as both runs, the second sum dropped.
			var spare float32
			wl := &w[(nr-1)*rb]
			rows32(wt, wl, wl, nb, aq, o, ad, as, &y[nr-1], &spare, 1)
		}
	default:
		nb := K / 256
		aq, ad, bs := &a.q[t*K], &a.d[t*nb], &a.bs[t*nb*16]
		h, rb := nr/2, len(w)/nr
		if wt == poot.Q6_K {
			if h > 0 {
				q6_KRows2z(&w[0], &w[h*rb], nb, aq, ad, bs, &y[0], &y[h], h)
			}
			if nr&1 != 0 {
				// The odd last row as both runs; the second sum is
				// the same and dropped.
				var spare float32
				wl := &w[(nr-1)*rb]
				q6_KRows2z(wl, wl, nb, aq, ad, bs, &y[nr-1], &spare, 1)
			}
			break
		}
		s32 := &a.s32[(t-a.T&^3)*(K/32)]
		if h > 0 {
			kRows2(wt, &w[0], &w[h*rb], nb, aq, ad, s32, &y[0], &y[h], h)
		}
		if nr&1 != 0 {
			// The odd last row as both runs, the second sum dropped.
			var spare float32
			wl := &w[(nr-1)*rb]
			kRows2(wt, wl, wl, nb, aq, ad, s32, &y[nr-1], &spare, 1)
		}
	}
	return false
}

// floatRuns runs the float kernel of n (4 or 6) streams: n runs of q rows.
func floatRuns(wt poot.DType, n int, x *float32, w unsafe.Pointer, K int, y *float32, q int) {
	switch {
	case n == 6 && wt == poot.F32:
		f32Rows6z(x, w, K, y, q)
	case n == 6 && wt == poot.F16:
		f16Rows6z(x, w, K, y, q)
	case n == 6:
		bf16Rows6z(x, w, K, y, q)
	case wt == poot.F32:
		f32Rows4z(x, w, K, y, q)
	case wt == poot.F16:
		f16Rows4z(x, w, K, y, q)
	default:
		bf16Rows4z(x, w, K, y, q)
	}
}

// nib2 runs the Q4_0 (eor 0) or MXFP4 kernel.
func nib2(wt poot.DType, wa, wb *byte, nb int, aq, qx *int8, ox *int32, ad *float32, ya, yb *float32, nr int) (eor int) {
	if wt == poot.MXFP4 {
		return mxfp4Rows2z(wa, wb, nb, aq, qx, ox, ad, ya, yb, nr)
	}
	q4_0Rows2z(wa, wb, nb, aq, qx, ox, ad, ya, yb, nr)
	return 0
}

// rows32 runs the Q4_1, Q5_0 or Q5_1 kernel.
func rows32(wt poot.DType, wa, wb *byte, nb int, aq *int8, o *int32, ad, as *float32, ya, yb *float32, nr int) {
	switch wt {
	case poot.Q4_1:
		q4_1Rows2z(wa, wb, nb, aq, o, ad, as, ya, yb, nr)
	case poot.Q5_0:
		q5_0Rows2z(wa, wb, nb, aq, o, ad, as, ya, yb, nr)
	default:
		q5_1Rows2z(wa, wb, nb, aq, o, ad, as, ya, yb, nr)
	}
}

// kRows2 runs the Q4_K (else Q5_K) two-stream kernel, by GFNI where the
// CPU has it.
func kRows2(wt poot.DType, wa, wb *byte, nb int, aq *int8, ad *float32, s32 *int16, ya, yb *float32, nr int) {
	switch {
	case wt == poot.Q4_K && useGFNI:
		q4_KRows2zg(wa, wb, nb, aq, ad, s32, ya, yb, nr)
	case wt == poot.Q4_K:
		q4_KRows2z(wa, wb, nb, aq, ad, s32, ya, yb, nr)
	case useGFNI:
		q5_KRows2zg(wa, wb, nb, aq, ad, s32, ya, yb, nr)
	default:
		q5_KRows2z(wa, wb, nb, aq, ad, s32, ya, yb, nr)
	}
}

// The Q4_1, Q5_0 and Q5_1 kernels (decode32_amd64.s): nr rows at wa into
// ya and nr rows at wb into yb, against one activation row prepared for
// them (its quants, block offsets, scales and scaled sums). They have only
// the two-stream form (an odd last row runs as both streams).

//go:noescape
func q4_1Rows2z(wa, wb *byte, nb int, aq *int8, o *int32, ad, as *float32, ya, yb *float32, nr int)

//go:noescape
func q5_0Rows2z(wa, wb *byte, nb int, aq *int8, o *int32, ad, as *float32, ya, yb *float32, nr int)

//go:noescape
func q5_1Rows2z(wa, wb *byte, nb int, aq *int8, o *int32, ad, as *float32, ya, yb *float32, nr int)
