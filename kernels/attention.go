package kernels

import (
	"math"
	"unsafe"
)

// Attention describes one decode step of multi-head attention for a single
// query position over S cached positions, with grouped-query sharing: query
// head h reads key/value head h / (Heads/KVHeads).
//
// Position s of key head g starts at K[s*KVStride + g*HeadStride] (likewise
// V). A position-major cache [S][KVHeads][HeadDim] has KVStride =
// KVHeads*HeadDim and HeadStride = HeadDim (0 means HeadDim); a head-major
// cache [KVHeads][capacity][HeadDim] has KVStride = HeadDim and HeadStride =
// capacity*HeadDim. Head-major is faster: each head's rows are contiguous,
// while position-major rows sit KVHeads*HeadDim*4 bytes apart, a power of
// two that defeats the caches and prefetchers (about 3x slower measured).
// The caches are f32 (K and V), binary16 (K16 and V16, when K is nil),
// which halves the bytes a decode step reads, or Q8_0 (K8 and V8, when K
// and K16 are nil: blocks of 32 elements in 34 bytes, the element offsets
// above counted in elements, so HeadDim, KVStride and HeadStride are
// multiples of 32).
type Attention struct {
	Q          []float32 // Heads*HeadDim query values
	K, V       []float32 // the caches, see above
	K16, V16   []uint16  // binary16 caches, used instead of K and V when K is nil
	K8, V8     []byte    // Q8_0 caches, used when K and K16 are nil
	Out        []float32 // Heads*HeadDim results
	Mask       []float32 // nil, or S values added to the scores (-inf excludes a position)
	S          int       // cached positions to attend to
	Heads      int       // query heads
	KVHeads    int       // key/value heads; divides Heads
	HeadDim    int       // elements per head
	KVStride   int       // elements from one position to the next in K and V
	HeadStride int       // elements from one kv head to the next; 0 means HeadDim
	Scale      float32   // score multiplier, usually 1/sqrt(HeadDim)

	run    func(lo, hi int) // attendGroups bound to runFor, for Attend
	runFor *Attention       // the value run is bound to (a copy must rebind)
}

// Check reports whether the fields are consistent and the slices long enough.
func (at *Attention) Check() error {
	if at.Heads <= 0 || at.KVHeads <= 0 || at.HeadDim <= 0 || at.S < 0 || at.Heads%at.KVHeads != 0 {
		return sizeError("AttendHeads", "%d heads, %d kv heads, head dim %d, %d positions", at.Heads, at.KVHeads, at.HeadDim, at.S)
	}
	hs := at.headStride()
	if at.KVStride < 0 || hs < 0 {
		return sizeError("AttendHeads", "strides %d and %d are negative", at.KVStride, hs)
	}
	qn := at.Heads * at.HeadDim
	if len(at.Q) < qn || len(at.Out) < qn {
		return errShort("AttendHeads", "Q or Out", min(len(at.Q), len(at.Out)), qn)
	}
	if at.S > 0 {
		kn := (at.S-1)*at.KVStride + (at.KVHeads-1)*hs + at.HeadDim
		if at.K == nil && at.K16 == nil {
			if at.HeadDim%32 != 0 || at.KVStride%32 != 0 || hs%32 != 0 || at.HeadDim > maxQ8Dim {
				return sizeError("AttendHeads", "Q8_0 caches with head dim %d and strides %d and %d: want multiples of 32, head dim at most %d", at.HeadDim, at.KVStride, hs, maxQ8Dim)
			}
			if kb := kn / 32 * 34; len(at.K8) < kb || len(at.V8) < kb {
				return errShort("AttendHeads", "K8 or V8 cache", min(len(at.K8), len(at.V8)), kb)
			}
		} else if at.K == nil {
			if len(at.K16) < kn || len(at.V16) < kn {
				return errShort("AttendHeads", "K16 or V16 cache", min(len(at.K16), len(at.V16)), kn)
			}
		} else if len(at.K) < kn || len(at.V) < kn {
			return errShort("AttendHeads", "K or V cache", min(len(at.K), len(at.V)), kn)
		}
	}
	if at.Mask != nil && len(at.Mask) < at.S {
		return errShort("AttendHeads", "mask", len(at.Mask), at.S)
	}
	return nil
}

func (at *Attention) headStride() int {
	if at.HeadStride == 0 {
		return at.HeadDim
	}
	return at.HeadStride
}

// AttendHeads computes the output of query heads [h0,h1) in one pass over the
// cache with an online softmax: for each head,
//
//	Out[h] = sum_s softmax_s(Scale * Q[h]·K[s] + Mask[s]) * V[s]
//
// Non-finite values propagate as in that definition (and as the oracle
// computes it): a head with a NaN or +Inf score, or with no score above
// -inf (S = 0, every position masked), gets NaN throughout; a NaN or an
// infinity in the V row of a position the mask leaves visible reaches the
// output even where its weight is 0 (0·Inf is NaN). Positions the mask
// excludes (-inf) are never read, so their K and V rows may hold anything.
// Out must not overlap Q, K or V (it is cleared and used as the
// accumulator). Workers
// may split the heads of one step; splitting at multiples of Heads/KVHeads
// lets each read its cache rows once for all the query heads that share them.
// It allocates nothing.
func AttendHeads(at *Attention, h0, h1 int) error {
	if err := at.Check(); err != nil {
		return err
	}
	if h0 < 0 || h1 > at.Heads || h0 > h1 {
		return sizeError("AttendHeads", "head range [%d,%d) outside [0,%d)", h0, h1, at.Heads)
	}
	attendHeads(at, h0, h1)
	return nil
}

// Attend computes all heads of at ([AttendHeads] over [0,Heads)), giving
// each of p's workers one run of kv heads and their query heads, so each
// cache row is read by one worker; a nil p runs on the calling goroutine.
// It allocates nothing after the first call with a given at.
func Attend(p *Pool, at *Attention) error {
	if err := at.Check(); err != nil {
		return err
	}
	if p == nil || p.Workers() == 1 {
		attendHeads(at, 0, at.Heads)
		return nil
	}
	if at.runFor != at {
		at.run, at.runFor = at.attendGroups, at
	}
	// One run of kv heads a worker: the avx512 kernels read a
	// position-major cache's rows of a run's kv heads in one pass. On the
	// Zen 4, two threads over a 1B model's f16 caches at 4096 positions
	// took 0.71 ms a layer so, 1.0 with each kv head a chunk.
	p.RunSplit(at.KVHeads, p.Workers(), at.run)
	return nil
}

// attendGroups computes the query heads of kv heads [lo, hi).
func (at *Attention) attendGroups(lo, hi int) {
	rep := at.Heads / at.KVHeads
	attendHeads(at, lo*rep, hi*rep)
}

// maxRep bounds how many query heads share one pass over a cache block; the
// running maxima and sums live in fixed arrays.
const maxRep = 16

// maxQ8Dim bounds the head dimension of Q8_0 caches, whose rows are
// decoded into a fixed buffer.
const maxQ8Dim = 512

// fetchAhead is how many positions ahead of their use the decode attention
// prefetches K and V rows. The portable path reads one kv head at a time,
// and position-major rows sit KVStride elements apart, a power of two the
// hardware prefetchers do not follow across pages, so each row would
// otherwise wait out the whole memory latency. BenchmarkAttentionDepth
// (a 1B model's caches at 4096 positions, one thread, loaded machine):
// f32 5.3-10 ms a layer without, 1.9 with; f16 6.2-8.9 against 2.0; q8_0
// 2.5-3.2 against 2.1 (4 and 32 ahead measured no better). The avx512
// block path reads the rows in order, all of a batch's kv heads a
// position at once, and still waited on memory: on the Zen 5 the same
// benchmark took 1.28-1.29 ms a layer for f16 caches without prefetching,
// 0.66 asking for the next block's rows at the start of each block, and
// 0.54-0.57 asking 16 to 48 positions ahead as it walks them (0.47 with
// the caches in L3: what is left is compute); f32 1.34 against 0.93, q8_0
// 0.82 against 0.69.
const fetchAhead = 16

// fetchRow prefetches the K (or V) row of position s and kv head g, when
// s is a position.
func (at *Attention) fetchRow(v bool, s, g, hs int) {
	if s < at.S {
		at.fetchElems(v, s*at.KVStride+g*hs, at.HeadDim)
	}
}

// fetchRows prefetches the K (or V) rows of positions [s, s+n) (those
// below S) of the kv heads of heads [h0, h1): one range where the rows of
// successive positions are adjacent (every kv head of a position-major
// cache, or one of a head-major cache), else one a position.
func (at *Attention) fetchRows(v bool, h0, h1, s, n int) {
	n = min(n, at.S-s)
	if n <= 0 {
		return
	}
	rep, hs := at.Heads/at.KVHeads, at.headStride()
	g0, g1 := h0/rep, (h1-1)/rep+1
	span, groups := at.HeadDim, g1-g0
	if hs == at.HeadDim {
		span, groups = (g1-g0)*at.HeadDim, 1 // the kv heads of a position are adjacent
	}
	for g := g0; g < g0+groups; g++ {
		off := s*at.KVStride + g*hs
		if span == at.KVStride {
			at.fetchElems(v, off, n*span)
			continue
		}
		for p := range n {
			at.fetchElems(v, off+p*at.KVStride, span)
		}
	}
}

// fetchElems prefetches n elements of the K (or V) cache from element off.
func (at *Attention) fetchElems(v bool, off, n int) {
	switch {
	case at.K != nil:
		b := at.K
		if v {
			b = at.V
		}
		prefetchBytes(unsafe.Pointer(&b[off]), 4*n)
	case at.K16 != nil:
		b := at.K16
		if v {
			b = at.V16
		}
		prefetchBytes(unsafe.Pointer(&b[off]), 2*n)
	default:
		b := at.K8
		if v {
			b = at.V8
		}
		prefetchBytes(unsafe.Pointer(&b[off/32*34]), n/32*34)
	}
}

// attnBlock is how many positions are scored before their softmax weights
// are taken together: one exp pass and at most one rescale a block.
const attnBlock = 64

func attendHeads(at *Attention, h0, h1 int) {
	if at.blocksZ() {
		attendHeadsZ(at, h0, h1)
		return
	}
	d := at.HeadDim
	rep := at.Heads / at.KVHeads
	negInf, posInf := float32(math.Inf(-1)), float32(math.Inf(1))
	q8 := at.K == nil && at.K16 == nil
	half := at.K == nil && !q8
	hs := at.headStride()
	var (
		m, l   [maxRep]float32
		bad    [maxRep]bool // a score is NaN or +Inf: the head's softmax is NaN
		scores [maxRep][attnBlock]float32
		o      [4]float32
		row    [maxQ8Dim]float32 // a binary16 or Q8_0 cache row widened
	)
	for h := h0; h < h1; {
		g := h / rep
		// Heads [h, hEnd) share kv head g; do them together (at most maxRep)
		// so each cache row is read once for all of them, while it is in L1.
		hEnd := min(h1, (g+1)*rep, h+maxRep)
		nh := hEnd - h
		// Heads [0,n4) go four at a time; binary16 rows are widened into
		// row first, when they fit.
		n4 := nh &^ 3
		if half && d > len(row) {
			n4 = 0
		}
		q := at.Q[h*d : hEnd*d]
		out := at.Out[h*d : hEnd*d]
		for i := range nh {
			m[i], l[i], bad[i] = negInf, 0, false
		}
		clear(out)
		for s0 := 0; s0 < at.S; s0 += attnBlock {
			nb := min(attnBlock, at.S-s0)
			for j := range nb {
				s := s0 + j
				var bias float32
				if at.Mask != nil {
					bias = at.Mask[s]
					if math.IsInf(float64(bias), -1) {
						for i := range nh {
							scores[i][j] = negInf
						}
						continue
					}
				}
				at.fetchRow(false, s+fetchAhead, g, hs)
				off := s*at.KVStride + g*hs
				kr := at.rowAt(false, off, row[:], n4 > 0)
				for i := 0; i < n4; i += 4 {
					dot4Heads(kr, q[i*d:], d, &o)
					for r := range 4 {
						v := o[r]*at.Scale + bias
						scores[i+r][j] = v
						bad[i+r] = bad[i+r] || !(v < posInf)
					}
				}
				for i := n4; i < nh; i++ {
					var v float32
					if half {
						v = dotVecF16(q[i*d:(i+1)*d], at.K16[off:off+d])
					} else {
						v = dotVec(q[i*d:(i+1)*d], kr)
					}
					v = v*at.Scale + bias
					scores[i][j] = v
					bad[i] = bad[i] || !(v < posInf)
				}
			}
			for i := range nh {
				if !bad[i] {
					blockSoftmax(scores[i][:nb], out[i*d:(i+1)*d], &m[i], &l[i])
				}
			}
			for j := range nb {
				if at.Mask != nil && math.IsInf(float64(at.Mask[s0+j]), -1) {
					continue // masked: weight 0, and the row is not read
				}
				// A visible position is added even at weight 0, so that a
				// non-finite V value turns the output NaN as 0·Inf does.
				at.fetchRow(true, s0+j+fetchAhead, g, hs)
				off := (s0+j)*at.KVStride + g*hs
				vr := at.rowAt(true, off, row[:], n4 > 0)
				for i := 0; i < n4; i += 4 {
					o = [4]float32{scores[i][j], scores[i+1][j], scores[i+2][j], scores[i+3][j]}
					axpy4Heads(out[i*d:], vr, d, &o)
				}
				for i := n4; i < nh; i++ {
					p := scores[i][j]
					if half {
						axpyVecF16(out[i*d:(i+1)*d], at.V16[off:off+d], p)
					} else {
						axpyVec(out[i*d:(i+1)*d], vr, p)
					}
				}
			}
		}
		for i := range nh {
			finishHead(out[i*d:(i+1)*d], bad[i], m[i], l[i])
		}
		h = hEnd
	}
}

// rowAt returns the K (or V) row of HeadDim elements at element offset
// off of the caches as f32: in place for f32 caches, widened into the
// start of row for Q8_0 ones and, when widen is set, binary16 ones (else
// nil: the portable path's lone heads read binary16 rows as they are).
func (at *Attention) rowAt(v bool, off int, row []float32, widen bool) []float32 {
	d := at.HeadDim
	switch {
	case at.K != nil:
		if v {
			return at.V[off : off+d]
		}
		return at.K[off : off+d]
	case at.K16 != nil:
		if !widen {
			return nil
		}
		c := at.K16
		if v {
			c = at.V16
		}
		row = row[:d]
		F16RowToF32(row, c[off:off+d])
	default:
		c := at.K8
		if v {
			c = at.V8
		}
		row = row[:d]
		Q8_0RowToF32(row, c[off/32*34:(off+d)/32*34])
	}
	return row
}

// maxBatch bounds how many query heads attendHeadsZ takes through a block
// of positions together.
const maxBatch = 32

// attendHeadsZ is attendHeads through the avx512 block kernels. It takes
// the heads in batches of whole groups sharing a kv head (a group of more
// than maxRep heads in parts), at most maxBatch heads a batch, and walks
// the positions once a batch, a few positions for every group in turn: a
// position-major cache's rows of those kv heads are then read in order,
// as the hardware prefetchers follow, rather than in one strided pass a
// kv head (BenchmarkAttentionDepth, one thread on the Zen 4, f16: 1.6 to
// 1.2 ms a layer, f32 2.6 to 1.8, with the scores scaled by
// scaleScoresZ). Each group's arithmetic is the same as alone, so the
// outputs do not depend on the batching.
func attendHeadsZ(at *Attention, h0, h1 int) {
	d := at.HeadDim
	rep := at.Heads / at.KVHeads
	negInf := float32(math.Inf(-1))
	var (
		m, l   [maxBatch]float32
		bad    [maxBatch]bool // a score is NaN or +Inf: the head's softmax is NaN
		scores [maxBatch * attnBlock]float32
		ends   [maxBatch]int // the end of each group's heads in the batch
		w      qrows         // Q8_0 cache rows widened
	)
	for h := h0; h < h1; {
		hb, nu := h, 0
		for h < h1 {
			hEnd := min(h1, (h/rep+1)*rep, h+maxRep)
			if nu > 0 && hEnd-hb > maxBatch {
				break
			}
			ends[nu], nu, h = hEnd, nu+1, hEnd
		}
		b, nh := headBatch{h0: hb, ends: ends[:nu]}, h-hb
		for i := range nh {
			m[i], l[i], bad[i] = negInf, 0, false
		}
		clear(at.Out[hb*d : h*d])
		for s0 := 0; s0 < at.S; s0 += attnBlock {
			nb := min(attnBlock, at.S-s0)
			at.blockScoresZ(b, s0, nb, scores[:], &w)
			at.finishScores(nh, s0, nb, scores[:], bad[:nh])
			for i := range nh {
				if !bad[i] {
					blockSoftmax(scores[i*attnBlock:i*attnBlock+nb], at.Out[(hb+i)*d:(hb+i+1)*d], &m[i], &l[i])
				}
			}
			at.blockValuesZ(b, s0, nb, scores[:], &w)
		}
		for i := range nh {
			finishHead(at.Out[(hb+i)*d:(hb+i+1)*d], bad[i], m[i], l[i])
		}
	}
}

// headBatch is a run of query heads [h0, ends[len(ends)-1]) in groups
// that share a kv head, group i ending at ends[i].
type headBatch struct {
	h0   int
	ends []int
}

// blockSoftmax folds a block's scores sc into one head's online softmax:
// its running maximum m and sum l, and its output accumulator out, which
// it rescales when the maximum grows. The scores become their weights
// exp(score - m), 0 throughout where every one is -inf.
func blockSoftmax(sc, out []float32, m, l *float32) {
	bm := maxVec(sc)
	if math.IsInf(float64(bm), -1) {
		clear(sc) // the whole block is masked for this head
		return
	}
	if bm > *m {
		// A new maximum: rescale what was accumulated so far.
		if *l > 0 {
			c := expf(*m - bm)
			scaleVec(out, out, c)
			*l *= c
		}
		*m = bm
	}
	*l += expSubSumVec(sc, *m)
}

// finishHead divides a head's accumulated output o by its softmax sum l,
// or fills it with NaN where a score was NaN or +Inf (bad) or none was
// above -inf: exp(x - max) is NaN for every position in the definition.
func finishHead(o []float32, bad bool, m, l float32) {
	switch {
	case bad || math.IsInf(float64(m), -1):
		for k := range o {
			o[k] = float32(math.NaN())
		}
	case l > 0:
		scaleVec(o, o, 1/l)
	}
}

// visibleRun returns the next run [j, e) of positions s0+j.. that the mask
// leaves visible, from j on within a block of nb; j = e = nb when none is.
func (at *Attention) visibleRun(s0, j, nb int) (int, int) {
	if at.Mask == nil {
		return j, nb
	}
	m := at.Mask[s0 : s0+nb]
	for j < nb && math.IsInf(float64(m[j]), -1) {
		j++
	}
	e := j
	for e < nb && !math.IsInf(float64(m[e]), -1) {
		e++
	}
	return j, e
}

// finishScores turns the raw scores of heads [0,nh) for the block of nb
// positions at s0 (head i's at scores[i*attnBlock:]) into Scale*score +
// Mask, -inf where the mask is (the raw value there was never computed),
// and marks the heads with a NaN or +Inf score bad.
func (at *Attention) finishScores(nh, s0, nb int, scores []float32, bad []bool) {
	negInf, posInf := float32(math.Inf(-1)), float32(math.Inf(1))
	sc := at.Scale
	for i := range nh {
		row, b := scores[i*attnBlock:i*attnBlock+nb], bad[i]
		if at.Mask == nil {
			b = scaleScoresZ(&row[0], nb, sc) || b
		} else {
			mk := at.Mask[s0 : s0+nb]
			for j, v := range row {
				if mk[j] == negInf {
					row[j] = negInf
					continue
				}
				v = v*sc + mk[j]
				row[j] = v
				b = b || !(v < posInf)
			}
		}
		bad[i] = b
	}
}

// axpy adds a*x to y (len(y) elements).
func axpy(y, x []float32, a float32) {
	x = x[:len(y)]
	i := 0
	for ; i+4 <= len(y); i += 4 {
		yy, xx := (*[4]float32)(y[i:i+4]), (*[4]float32)(x[i:i+4])
		yy[0] += a * xx[0]
		yy[1] += a * xx[1]
		yy[2] += a * xx[2]
		yy[3] += a * xx[3]
	}
	for ; i < len(y); i++ {
		y[i] += a * x[i]
	}
}
