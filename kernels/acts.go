package kernels

import (
	"fmt"
	"math"
	"unsafe"

	"github.com/pootlabs/poot"
)

// actKind is the form activations take for one family of weight dtypes.
type actKind uint8

const (
	actNone actKind = iota
	actF32          // plain f32 rows, for F32, F16 and BF16 weights
	actQ8           // blocks of 32: int8 quants, f32 scale, scaled sum
	actQ8K          // blocks of 256: int8 quants, f32 scale, int16 sums of 16
	actQ8X          // actQ8, and the quads the Q4_0 and MXFP4 one-row kernels read (qx, ox)
)

// actKindFor returns the activation form that weights of dtype wt consume.
func actKindFor(wt poot.DType) actKind {
	switch wt {
	case poot.F32, poot.F16, poot.BF16:
		return actF32
	case poot.Q8_0, poot.Q4_1, poot.Q5_0, poot.Q5_1:
		return actQ8
	case poot.Q4_0, poot.MXFP4:
		return actQ8X
	case poot.Q4_K, poot.Q5_K, poot.Q6_K:
		return actQ8K
	}
	return actNone
}

// SamePreparation reports whether activations prepared for weights of
// dtype a serve products with weights of dtype b too.
func SamePreparation(a, b poot.DType) bool {
	return actKindFor(a) != actNone && actKindFor(a) == actKindFor(b)
}

// Acts holds T activation rows of K elements prepared for a product with one
// family of weight dtypes (F32/F16/BF16; Q8_0/Q4_1/Q5_0/Q5_1; Q4_0/MXFP4;
// the K-quants). One preparation serves every product of the same x with weights
// of that family, such as the Q, K and V projections. Make one per product
// in flight and reuse it: Prepare allocates only when a product needs more
// room than any before it. An Acts
// may be read by many goroutines at once (the workers of one product) but
// must not be prepared while a product reads it.
type Acts struct {
	T, K int // rows and elements per row of the last Prepare

	kind actKind
	wt   poot.DType // the weights' dtype the last Prepare was for
	x    []float32  // the caller's rows, not copied
	// nonFinite marks the rows (quantized kinds) that hold a NaN or an
	// infinity, which int8 blocks cannot carry: their products are taken
	// exactly instead (see exactNonFinite).
	nonFinite []bool
	q         []int8    // quantized rows, T*K
	d         []float32 // per block scale: T*K/32 (actQ8) or T*K/256 (actQ8K)
	s         []float32 // actQ8: d * sum(q) per block, for the min-offset dtypes
	o         []int32   // actQ8: -128 * sum(q) per block, the offset the VNNI tiles subtract
	bs        []int16   // actQ8K: sum of each 16 consecutive quants, T*K/16
	// s32 is, for the one-row kernels' rows (those past the last group
	// of four, counted from there), actQ8K: the sum of each 32 consecutive
	// quants (at most 32*127, an int16), K/32 a row.
	s32 []int16
	// actQ8X, for the avx512 Q4_0 and MXFP4 one-row kernels, for those
	// same rows: each four whole blocks of a row as the kernels read them
	// (qx: the first halves of the blocks, then the second halves), and
	// -8 times the sums of each four consecutive quants of that order (ox:
	// the offsets of Q4_0's codes; MXFP4's kernel takes 16 times them),
	// K/8 a row.
	qx []int8
	ox []int32
	// xt, for F16 and BF16 weights at the avx512 level and for float
	// weights at avx2 (see transposedRows, floatRowsT and floatRowsTY),
	// holds the first rows transposed in panels of xtw rows (64 at
	// avx512, where the last may be 48; 16 at avx2): element k of row xtw*p+i at xt[xtw*p*K+k*w+i], w
	// the panel's width. Empty otherwise.
	xt  []float32
	xtw int

	job    matJob           // the parallel product's arguments, see MatMul
	run    func(lo, hi int) // job.do bound to runFor.job
	runFor *Acts            // the value run is bound to (a copy must rebind)
}

// Prepare makes x (T rows of K elements, row-major) ready for a product with
// weights of dtype wt. x is kept by reference and must not change until
// the product is done; for quantized weights it is also quantized here (to
// blocks of 32 or, for the K-quants, of 256 elements), and read again only
// for outputs that are not finite (see [MatMulRows]). K must be a whole
// number of wt's blocks.
func (a *Acts) Prepare(wt poot.DType, x []float32, T, K int) error {
	kind := actKindFor(wt)
	if kind == actNone {
		return &Error{Op: "Prepare", Err: ErrUnsupported, Detail: fmt.Sprintf("no matrix product for %v weights", wt)}
	}
	if T <= 0 || K <= 0 {
		return sizeError("Prepare", "activation shape %dx%d is empty", T, K)
	}
	if be := wt.BlockElems(); K%be != 0 {
		return sizeError("Prepare", "K=%d is not a multiple of the %v block (%d)", K, wt, be)
	}
	if T > math.MaxInt/K || len(x) < T*K {
		return sizeError("Prepare", "activations have %d elements, want %dx%d", len(x), T, K)
	}
	a.T, a.K, a.kind, a.wt = T, K, kind, wt
	a.x = x[:T*K]
	a.xt, a.nonFinite = a.xt[:0], a.nonFinite[:0]
	switch kind {
	case actQ8, actQ8X:
		a.grow(T*K, T*K/32, 0)
		quantizeQ8(a.q, a.d, a.s, a.o, x[:T*K])
		if kind == actQ8X {
			a.quads(T &^ 3)
		}
	case actF32:
		if n, w := transposedRows(wt, T, K); n > 0 {
			a.transpose(n, w)
		}
	case actQ8K:
		a.grow(T*K, T*K/256, T*K/16)
		quantizeQ8K(a.q, a.d, a.bs, x[:T*K])
		a.sumsQ8K(T &^ 3)
	}
	if kind != actF32 {
		if cap(a.nonFinite) < T {
			a.nonFinite = make([]bool, T)
		}
		a.nonFinite = a.nonFinite[:T]
		for t := range T {
			a.nonFinite[t] = nonFiniteVec(x[t*K : (t+1)*K])
		}
	}
	return nil
}

// transpose fills xt with the first T rows of x (see Acts.xt) in panels
// of width rows, sixteen rows at a time (transposeRows).
func (a *Acts) transpose(T, width int) {
	K := a.K
	if cap(a.xt) < T*K {
		a.xt = make([]float32, T*K)
	}
	a.xt, a.xtw = a.xt[:T*K], width
	for t0 := 0; t0 < T; t0 += width {
		w := min(width, T-t0)
		for i := 0; i < w; i += 16 {
			transposeRows(a.xt[t0*K+i:], w, a.x[(t0+i)*K:], K)
		}
	}
}

func (a *Acts) grow(nq, nd, nbs int) {
	if cap(a.q) < nq {
		a.q = make([]int8, nq)
	}
	a.q = a.q[:nq]
	if cap(a.d) < nd {
		a.d = make([]float32, nd)
		a.s = make([]float32, nd)
		a.o = make([]int32, nd)
	}
	a.d, a.s, a.o = a.d[:nd], a.s[:nd], a.o[:nd]
	if cap(a.bs) < nbs {
		a.bs = make([]int16, nbs)
	}
	a.bs = a.bs[:nbs]
}

// quantizeBlock quantizes len(x) values (at most 256, a multiple of 16) to
// q with the scale amax/127 and round-half-away-from-zero, returning the
// scale, and sets bs to the sums of each 16 quants. The error of each
// element is at most scale/2.
func quantizeBlock(q []int8, x []float32, bs []int16) (d float32) {
	q = q[:len(x)]
	defer sums16Go(bs, q)
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
	if amax == 0 {
		clear(q)
		return 0
	}
	d = amax / 127
	id := 127 / amax
	for i, v := range x {
		r := float32(v * id) // the conversion forbids fusing with the rounding add below
		var qi int32
		if r >= 0 {
			qi = int32(r + 0.5)
		} else {
			qi = int32(r - 0.5)
		}
		q[i] = int8(max(-127, min(127, qi)))
	}
	return d
}

// sums16Go sets s[g] to the sum of q[16g:16g+16].
func sums16Go(s []int16, q []int8) {
	clear(s[:len(q)/16])
	for i, v := range q {
		s[i/16] += int16(v)
	}
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

func quantizeQ8(q []int8, d, s []float32, o []int32, x []float32) {
	var bs [2]int16
	for b := range d {
		db := quantizeBlockVec(q[b*32:b*32+32], x[b*32:b*32+32], bs[:])
		sum := int32(bs[0]) + int32(bs[1])
		d[b] = db
		s[b] = db * float32(sum)
		o[b] = -128 * sum
	}
}

// rowsFrom returns a's rows from t on as Acts of their own: x alone for
// the float kinds, and for the one-row kernels of the 32-element dtypes q,
// d, s and o too (the rest stays empty).
func (a *Acts) rowsFrom(t int) Acts {
	if a.kind == actF32 {
		return Acts{T: a.T - t, K: a.K, kind: a.kind, wt: a.wt, x: a.x[t*a.K:]}
	}
	nb := a.K / 32
	return Acts{T: a.T - t, K: a.K, kind: a.kind, wt: a.wt, x: a.x[t*a.K:],
		q: a.q[t*a.K:], d: a.d[t*nb:], s: a.s[t*nb:], o: a.o[t*nb:]}
}

// quads fills qx and ox for the rows from head on.
func (a *Acts) quads(head int) {
	n := (a.T - head) * a.K
	if cap(a.qx) < n {
		// Each quad's 128 quants and 64 offset bytes on whole cache
		// lines: the kernels read them by 64-byte loads.
		a.qx = aligned64(make([]int8, n+64), n)
		a.ox = aligned64(make([]int32, n/8+16), n/8)
	}
	a.qx, a.ox = a.qx[:n], a.ox[:n/8]
	K := a.K
	for t := head; t < a.T; t++ {
		q := a.q[t*K : (t+1)*K]
		qx, ox := a.qx[(t-head)*K:], a.ox[(t-head)*K/8:]
		for c := 0; c+128 <= K; c += 128 {
			for b := range 4 {
				copy(qx[c+16*b:c+16*b+16], q[c+32*b:c+32*b+16])
				copy(qx[c+64+16*b:c+64+16*b+16], q[c+32*b+16:c+32*b+32])
			}
			for i := range 16 {
				var s int32
				for k := range 4 {
					s += int32(qx[c+4*i+k]) + int32(qx[c+64+4*i+k])
				}
				ox[c/8+i] = -8 * s
			}
		}
	}
}

// aligned64 returns the n elements of b from its first 64-byte boundary
// (b must hold 64 bytes more than n elements).
func aligned64[E int8 | int32](b []E, n int) []E {
	var e E
	size := int(unsafe.Sizeof(e))
	off := (64 - int(uintptr(unsafe.Pointer(unsafe.SliceData(b))))%64) % 64 / size
	return b[off : off+n : off+n]
}

// sumsQ8K fills s32 for the rows from head on.
func (a *Acts) sumsQ8K(head int) {
	bs := a.bs[head*a.K/16 : a.T*a.K/16]
	n := len(bs) / 2
	if cap(a.s32) < n {
		a.s32 = make([]int16, n)
	}
	a.s32 = a.s32[:n]
	for i := range a.s32 {
		a.s32[i] = bs[2*i] + bs[2*i+1]
	}
}

func quantizeQ8K(q []int8, d []float32, bs []int16, x []float32) {
	for b := range d {
		d[b] = quantizeBlockVec(q[b*256:b*256+256], x[b*256:b*256+256], bs[b*16:b*16+16])
	}
}
