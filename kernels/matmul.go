package kernels

import (
	"math"
	"unsafe"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/quant"
)

// MatMulRows computes, for every activation row t of a and every weight row n
// in [n0,n1),
//
//	y[t*ldy+n] = sum_k x[t][k] * W[n][k]
//
// where W holds rows of a.K elements of dtype wt, stored back to back as
// GGUF stores them (each row a whole number of blocks), and a was prepared
// for wt. ldy is the output row stride: usually N, the number of weight
// rows, or more when several products write side by side into one buffer
// (it must be at least n1). Workers may call it concurrently on disjoint row
// ranges with the same a, y and w. w must hold at least n1 rows and y at
// least (a.T-1)*ldy+n1 elements. F32 weights are read in place and should be
// 4-byte aligned (as GGUF tensor data is). It allocates nothing.
//
// NaN and infinity propagate exactly as in the float64 product of the
// decoded weights with x (the oracle's): an output that comes out NaN or
// infinite, every output of an activation row holding a NaN or an
// infinity (which int8 blocks would hide), and every output of an MXFP4
// row with a block scaled by 2^125 or more (whose values may decode to
// infinities), is computed again that way.
// Finite inputs give such outputs only when a sum overflows, so the fast
// path is untouched.
func MatMulRows(wt poot.DType, y []float32, ldy int, w []byte, a *Acts, n0, n1 int) error {
	if err := checkMatMul(wt, y, w, a, ldy, n1); err != nil {
		return err
	}
	if n0 < 0 || n0 > n1 {
		return sizeError("MatMulRows", "row range [%d,%d) is reversed or negative", n0, n1)
	}
	matmulRows(wt, y, w, a, ldy, n0, n1)
	return nil
}

// MatVecRows is [MatMulRows] for one activation row: y[n] = sum_k x[k]*W[n][k]
// for n in [n0,n1). a must have been prepared with T = 1.
func MatVecRows(wt poot.DType, y []float32, w []byte, a *Acts, n0, n1 int) error {
	if a.T != 1 {
		return sizeError("MatVecRows", "needs one activation row, have %d", a.T)
	}
	return MatMulRows(wt, y, n1, w, a, n0, n1)
}

// MatMul computes the whole product of [MatMulRows] for all N weight rows,
// with y[t*N+n], splitting the rows across p's workers; a nil p runs on the
// calling goroutine. It allocates nothing, but uses a for its bookkeeping, so one a
// serves one product at a time.
func MatMul(p *Pool, wt poot.DType, y []float32, w []byte, a *Acts, N int) error {
	if err := checkMatMul(wt, y, w, a, N, N); err != nil {
		return err
	}
	if p == nil || p.Workers() == 1 || N < 8 {
		matmulRows(wt, y, w, a, N, 0, N)
		return nil
	}
	if a.runFor != a {
		a.run, a.runFor = a.job.do, a
	}
	a.job = matJob{wt: wt, y: y, w: w, a: a, N: N}
	if a.T < 4 {
		rb := int(wt.RowBytes(int64(a.K)))
		p.RunGuided(N, 1, (decodeChunk+rb-1)/rb, a.run)
	} else {
		// Chunk boundaries at multiples of the rows of a tile or panel
		// keep those whole. Grains of 48 rows for every path split a
		// 512-row product into chunks of one and two grains and a
		// 2048-row one into 43 grains: on the Zen 4, F16, Q8_0 and Q4_K
		// products of 64 rows ran 5-8% slower at two threads than with
		// their own tiles' grains. Guided chunks, in place of four a
		// worker even to a grain, give the scheduler room when one vCPU
		// is slower than the other: prompts of a 1B Llama alternated
		// between the two in one process on the Zen 5 took the same time
		// while the host was quiet and 2-10% less while it was not (64
		// and 512 tokens, F16, Q8_0, Q4_K).
		p.RunGuided(N, promptGrain(wt, a), 1, a.run)
	}
	a.job = matJob{}
	return nil
}

// decodeChunk is the least weight bytes a chunk of a decode product
// (one activation row) holds: its rows meet no tiles, so the pool's
// guided chunks split it, and each chunk is two weight streams that take
// a little while to ramp up. They replaced equal parts of a megabyte or
// more, one to four a worker, in which one of two threads was left
// reading alone for 6-10% of the products' time on the Zen 5 (3% now):
// a 1B Llama's decode steps, alternated in one process between the two
// splits, took 5% less time for Q8_0 and Q4_0, 7% for F16 and MXFP4, 6%
// for Q5_0, 3% for Q4_K_M, the same for Q4_K and Q6_K (medians of 155
// steps each). Chunks of at least 128 KB, 256 KB or 512 KB ran alike.
// (On the Intel Xeon two threads had read the 1.1 MB K and V projections
// 5-10% faster in two parts than in eight; the guided split cuts a Q8_0
// one in four chunks, an F16 one in six.)
const decodeChunk = 256 << 10

// promptGrain returns how many weight rows the product of wt weights by a's
// rows takes as one tile or panel: the avx512 level's (six float rows,
// 16 quantized or 48 packed float ones), 8 for the avx2 level's panels
// of the 32-element dtypes, or 12 for the others (their float
// tiles take three rows, their quantized ones four).
func promptGrain(wt poot.DType, a *Acts) int {
	if useAVX512 {
		if g := zGrain(wt, a.T, a.K); g > 0 {
			return g
		}
	} else if wt.BlockElems() == 32 {
		return 8
	}
	return 12
}

// checkMatMul checks a product of rows [.., n1) into y with row stride N.
func checkMatMul(wt poot.DType, y []float32, w []byte, a *Acts, N, n1 int) error {
	if a == nil || a.kind == actNone {
		return sizeError("MatMulRows", "activations not prepared")
	}
	if !SamePreparation(a.wt, wt) {
		return sizeError("MatMulRows", "activations prepared for %v weights do not serve %v weights", a.wt, wt)
	}
	if a.K%wt.BlockElems() != 0 {
		return sizeError("MatMulRows", "K=%d is not a multiple of the %v block", a.K, wt)
	}
	if N < 0 || n1 < 0 || n1 > N {
		return sizeError("MatMulRows", "row range end %d outside [0,%d] (the output row stride)", n1, N)
	}
	rb := int(wt.RowBytes(int64(a.K)))
	if len(w)/rb < n1 {
		return sizeError("MatMulRows", "%v weights hold %d bytes, want %d rows of %d", wt, len(w), n1, rb)
	}
	if n1 > 0 && len(y) < (a.T-1)*N+n1 {
		return sizeError("MatMulRows", "output holds %d elements, want %d", len(y), (a.T-1)*N+n1)
	}
	return nil
}

// matJob carries a product's arguments to the pool's workers without a
// closure allocation.
type matJob struct {
	wt poot.DType
	y  []float32
	w  []byte
	a  *Acts
	N  int
}

func (j *matJob) do(lo, hi int) { matmulRows(j.wt, j.y, j.w, j.a, j.N, lo, hi) }

// matmulRows is MatMulRows without the checks.
func matmulRows(wt poot.DType, y []float32, w []byte, a *Acts, N, n0, n1 int) {
	if n0 >= n1 {
		return
	}
	noHuge := fastRows(wt, y, w, a, N, n0, n1)
	exactNonFinite(wt, y, w, a, N, n0, n1, noHuge)
}

// exactNonFinite recomputes with exactDot the outputs of weight rows
// [n0, n1) that are NaN or infinite, and all of those of an activation
// row marked non-finite; and of MXFP4 rows with a huge block scale unless
// the kernel found none (noHuge).
func exactNonFinite(wt poot.DType, y []float32, w []byte, a *Acts, N, n0, n1 int, noHuge bool) {
	rb := int(wt.RowBytes(int64(a.K)))
	if wt == poot.MXFP4 && !noHuge {
		for n := n0; n < n1; n++ {
			if mxfp4Huge(w[n*rb : (n+1)*rb]) {
				for t := range a.T {
					y[t*N+n] = exactDot(wt, w[n*rb:(n+1)*rb], a.x[t*a.K:(t+1)*a.K])
				}
			}
		}
	}
	for t := range a.T {
		all := t < len(a.nonFinite) && a.nonFinite[t]
		yr := y[t*N+n0 : t*N+n1]
		x := a.x[t*a.K : (t+1)*a.K]
		if !all && !nonFiniteVec(yr) {
			continue
		}
		for i, v := range yr {
			if all || v-v != 0 {
				n := n0 + i
				yr[i] = exactDot(wt, w[n*rb:(n+1)*rb], x)
			}
		}
	}
}

// nonFiniteGo reports whether x holds an infinity or a NaN.
func nonFiniteGo(x []float32) bool {
	for _, v := range x {
		if v-v != 0 {
			return true
		}
	}
	return false
}

// mxfp4Huge reports whether an MXFP4 row has a block scaled by 2^125 or
// more (exponent byte 253 and up), whose values, up to 6 times the scale,
// may decode past float32's range: the oracle's product then meets
// infinities that the int8 sums, scaled at the end, never see.
func mxfp4Huge(row []byte) bool {
	for b := 0; b < len(row); b += 17 {
		if row[b] >= 253 {
			return true
		}
	}
	return false
}

// exactDot is the oracle's product of x with one stored weight row: the
// row decoded a chunk at a time and the products summed in float64 in
// element order, rounded once.
func exactDot(wt poot.DType, row []byte, x []float32) float32 {
	var buf [256]float32 // a multiple of every block size
	var s float64
	for k0 := 0; k0 < len(x); k0 += len(buf) {
		c := min(len(buf), len(x)-k0)
		lo, hi := wt.RowBytes(int64(k0)), wt.RowBytes(int64(k0+c))
		if quant.DequantizeRow(wt, buf[:c], row[lo:hi]) != nil {
			return float32(math.NaN()) // unreachable: the shapes were checked
		}
		for i, v := range buf[:c] {
			s += float64(x[k0+i]) * float64(v)
		}
	}
	return float32(s)
}

// fastRows runs the product's kernel for the dtype. At the avx512 level
// the one-activation-row kernels take the rows past the last whole group
// of four, and the others see a product of the rows before them. noHuge
// reports that the MXFP4 one-row kernels took every row and found no block
// scale of 2^125 or more (see exactNonFinite).
func fastRows(wt poot.DType, y []float32, w []byte, a *Acts, N, n0, n1 int) (noHuge bool) {
	if useAVX512 {
		if head, ok, clear := decodeRows512(wt, y, w, a, N, n0, n1); ok {
			if head == 0 {
				return clear
			}
			prompt := *a
			prompt.T = head
			a = &prompt
		}
		if gemmRowsZ(wt, y, w, a, N, n0, n1) {
			return
		}
	}
	switch wt {
	case poot.F32:
		if useAsm {
			f32RowsAsm(y, N, w, a, n0, n1)
		} else {
			f32RowsGo(y, N, asF32(w), a, n0, n1)
		}
	case poot.F16, poot.BF16:
		if useAsm {
			half16RowsAsm(wt, y, N, w, a, n0, n1)
		} else {
			half16RowsGo(wt == poot.BF16, y, N, asU16(w), a, n0, n1)
		}
	case poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.MXFP4:
		if useAsm {
			return q8famRowsAsm(wt, y, N, w, a, n0, n1)
		} else {
			q8famRowsGo(wt, y, N, w, a, n0, n1)
		}
	case poot.Q4_K, poot.Q5_K, poot.Q6_K:
		if useAsm {
			kfamRowsAsm(wt, y, N, w, a, n0, n1)
		} else {
			kfamRowsGo(wt, y, N, w, a, n0, n1)
		}
	}
	return false
}

func asF32(w []byte) []float32 {
	if len(w) < 4 {
		return nil
	}
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(w))), len(w)/4)
}

func asU16(w []byte) []uint16 {
	if len(w) < 2 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(w))), len(w)/2)
}
