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
	seg    segParts         // Attend's segments of positions (see segments)
}

// segParts holds what Attend's workers compute for the segments of
// positions before it folds them: segment i's unnormalized outputs of
// every head from out[i*Heads*HeadDim], its maxima, sums and non-finite
// flags from m, l and bad[i*Heads].
type segParts struct {
	out           []float32
	m, l          []float32
	bad           []bool
	length, parts int              // the segments' length, the runs of kv heads each is cut into
	run           func(lo, hi int) // segmentUnits bound to runFor
	runFor        *Attention
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
// cache row is read by one worker, or, where the block kernels cut the
// positions into segments (see segments), a run of segments of every
// head; a nil p runs on the calling goroutine. The outputs are the same
// bits however many workers p has. It allocates nothing after the first
// call with a given at.
func Attend(p *Pool, at *Attention) error {
	if err := at.Check(); err != nil {
		return err
	}
	if p == nil || p.Workers() == 1 {
		attendHeads(at, 0, at.Heads)
		return nil
	}
	if n, length := at.segments(); n > 1 {
		at.attendSegments(p, n, length)
		return nil
	}
	if at.runFor != at {
		at.run, at.runFor = at.attendGroups, at
	}
	// One run of kv heads a worker: the block kernels read a
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
		prefetchBytes(unsafe.Pointer(&cache(v, at.K, at.V)[off]), 4*n)
	case at.K16 != nil:
		prefetchBytes(unsafe.Pointer(&cache(v, at.K16, at.V16)[off]), 2*n)
	default:
		prefetchBytes(unsafe.Pointer(&cache(v, at.K8, at.V8)[off/32*34]), n/32*34)
	}
}

// cache returns v's cache: vc where v is set, else kc.
func cache[E any](v bool, kc, vc []E) []E {
	if v {
		return vc
	}
	return kc
}

// attnBlock is how many positions are scored before their softmax weights
// are taken together: one exp pass and at most one rescale a block.
const attnBlock = 64

func attendHeads(at *Attention, h0, h1 int) {
	if at.blocked() {
		attendBlocks(at, h0, h1)
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
		return cache(v, at.K, at.V)[off : off+d]
	case at.K16 != nil:
		if !widen {
			return nil
		}
		row = row[:d]
		F16RowToF32(row, cache(v, at.K16, at.V16)[off:off+d])
	default:
		row = row[:d]
		Q8_0RowToF32(row, cache(v, at.K8, at.V8)[off/32*34:(off+d)/32*34])
	}
	return row
}

// maxBatch bounds how many query heads attendBlocks takes through a block
// of positions together.
const maxBatch = 32

// attnSegMin is the fewest positions the block path puts in a segment,
// and maxSegments the most segments it cuts a cache into. A
// position-major cache of at least 2·attnSegMin positions is cut into 2, 4
// or 8 segments of whole blocks (as many as keep a segment at least
// attnSegMin long): each gets its own online softmax, and the segments are
// folded in order (foldSegment), on one goroutine or after Attend's
// workers have each taken a run of them. Splitting the kv heads instead
// left each worker half of every position's row to read, and the two
// workers together read the caches barely faster than one: on the Zen 5,
// a 1B model's f16 caches at 4096 positions from DRAM took 0.57-0.65 ms a
// layer on two threads by kv heads, 0.55-0.63 on one. The segments
// depend on the cache only, never on the workers, so the outputs do not
// either. A variable so that tests can cut short caches.
var attnSegMin = 512

const maxSegments = 8

// segBuf is how many floats of a later segment's outputs attendBlocks
// holds at once (on its stack): it takes fewer heads a batch where their
// rows would not fit, and a head dimension above it is never segmented.
const segBuf = 8192

// segments returns how many segments of positions the block path cuts
// at's caches into and their length (the last may be shorter); 1 and S
// where it does not cut them (head-major caches, whose kv heads' rows are
// apart, short caches, other kernels).
func (at *Attention) segments() (n, length int) {
	if !at.blocked() || at.headStride() != at.HeadDim || at.HeadDim > segBuf {
		return 1, at.S
	}
	n = 1
	for n < maxSegments && 2*n*attnSegMin <= at.S {
		n *= 2
	}
	if n == 1 {
		return 1, at.S
	}
	length = ((at.S+n-1)/n + attnBlock - 1) / attnBlock * attnBlock
	return (at.S + length - 1) / length, length
}

// attendBlocks is attendHeads through the block kernels (avx512 or avx2,
// see attnblock_amd64.go). It takes the heads in batches of whole groups
// sharing a kv head (a group of more than maxRep heads in parts), at most
// maxBatch heads a batch, and walks the positions once a batch, a few
// positions for every group in turn: a position-major cache's rows of
// those kv heads are then read in order, as the hardware prefetchers
// follow, rather than in one strided pass a kv head
// (BenchmarkAttentionDepth, one thread on the Zen 4, f16: 1.6 to 1.2 ms a
// layer, f32 2.6 to 1.8, with the scores scaled by scaleScoresZ; at the
// avx2 level on the Zen 5, against attendHeads' own loop: f16 2.08 to
// 0.81 ms, f32 1.89 to 1.25, q8_0 2.17 to 1.17). Each group's arithmetic
// is the same as alone, so the outputs do not depend on the batching. Where the caches are cut into
// segments, a batch's first segment accumulates into Out and each later
// one into a buffer that is then folded in.
func attendBlocks(at *Attention, h0, h1 int) {
	d := at.HeadDim
	n, length := at.segments()
	limit := 0
	if n > 1 {
		limit = segBuf / d
	}
	var (
		sc   spanScratch
		m, l [maxBatch]float32
		bad  [maxBatch]bool // a score is NaN or +Inf: the head's softmax is NaN
	)
	for h := h0; h < h1; {
		b := at.nextBatch(h, h1, limit, &sc.ends)
		nh := b.end() - h
		out := at.Out[h*d : b.end()*d]
		at.span(b, 0, min(at.S, length), out, m[:nh], l[:nh], bad[:nh], &sc)
		if n > 1 {
			at.foldLater(b, n, length, out, m[:nh], l[:nh], bad[:nh], &sc)
		}
		for k := range nh {
			finishHead(out[k*d:(k+1)*d], bad[k], m[k], l[k])
		}
		h = b.end()
	}
}

// foldLater computes segments [1, n) of length positions of b's heads and
// folds each in turn into the first's outputs, maxima, sums and flags
// (out, m, l, bad). Its buffer for a segment's outputs is its own, so
// that the calls with one segment do not clear it.
func (at *Attention) foldLater(b headBatch, n, length int, out, m, l []float32, bad []bool, sc *spanScratch) {
	d, nh := at.HeadDim, len(m)
	var (
		sm, sl [maxBatch]float32
		sbad   [maxBatch]bool
		so     [segBuf]float32
	)
	for i := 1; i < n; i++ {
		p0 := i * length
		at.span(b, p0, min(at.S, p0+length), so[:nh*d], sm[:nh], sl[:nh], sbad[:nh], sc)
		for k := range nh {
			foldSegment(out[k*d:(k+1)*d], so[k*d:(k+1)*d], &m[k], &l[k], sm[k], sl[k])
			bad[k] = bad[k] || sbad[k]
		}
	}
}

// spanScratch is what span works in: a block's scores, a batch's group
// ends and Q8_0 rows widened.
type spanScratch struct {
	scores [maxBatch * attnBlock]float32
	ends   [maxBatch]int
	w      qrows
}

// nextBatch returns the batch of heads from h (below h1): whole groups
// sharing a kv head (a group of more than maxRep heads in parts), at most
// maxBatch heads and, where limit > 0, at most limit (but one group's part
// at least), its group ends kept in ends.
func (at *Attention) nextBatch(h, h1, limit int, ends *[maxBatch]int) headBatch {
	rep := at.Heads / at.KVHeads
	most := maxRep
	if limit > 0 {
		most = max(1, min(maxRep, limit))
	}
	hb, nu := h, 0
	for h < h1 {
		hEnd := min(h1, (h/rep+1)*rep, h+most)
		if nu > 0 && (hEnd-hb > maxBatch || limit > 0 && hEnd-hb > limit) {
			break
		}
		ends[nu], nu, h = hEnd, nu+1, hEnd
	}
	return headBatch{h0: hb, ends: ends[:nu]}
}

// span computes b's heads over positions [p0, p1) (p0 a multiple of
// attnBlock) with an online softmax of their own: the unnormalized outputs
// into out (head h's at (h-b.h0)*HeadDim), and each head's maximum, sum and
// non-finite flag into m, l and bad.
func (at *Attention) span(b headBatch, p0, p1 int, out, m, l []float32, bad []bool, sc *spanScratch) {
	d := at.HeadDim
	negInf := float32(math.Inf(-1))
	nh := b.end() - b.h0
	for i := range nh {
		m[i], l[i], bad[i] = negInf, 0, false
	}
	clear(out[:nh*d])
	for s0 := p0; s0 < p1; s0 += attnBlock {
		nb := min(attnBlock, p1-s0)
		at.blockScores(b, s0, nb, sc.scores[:], &sc.w)
		at.finishScores(nh, s0, nb, sc.scores[:], bad)
		for i := range nh {
			if !bad[i] {
				blockSoftmax(sc.scores[i*attnBlock:i*attnBlock+nb], out[i*d:(i+1)*d], &m[i], &l[i])
			}
		}
		at.blockValues(b, s0, nb, sc.scores[:], &sc.w, out)
	}
}

// foldSegment folds a later segment's softmax of one head (its maximum m,
// sum l and unnormalized output o) into the head's running one (M, L,
// out), as blockSoftmax folds a block: whichever maximum is lower has its
// side scaled by the exponential of the difference. A segment that saw no
// position (m = -inf) adds nothing; one after segments that saw none is
// taken as it is.
func foldSegment(out, o []float32, M, L *float32, m, l float32) {
	switch {
	case math.IsInf(float64(m), -1):
	case math.IsInf(float64(*M), -1):
		copy(out, o)
		*M, *L = m, l
	case m > *M:
		c := expf(*M - m)
		scaleVec(out, out, c)
		axpyVec(out, o, 1)
		*M, *L = m, *L*c+l
	default:
		c := expf(m - *M)
		axpyVec(out, o, c)
		*L += l * c
	}
}

// attendSegments is Attend where the caches are cut into n segments of
// length positions: the workers take runs of segments (and, where there
// are more workers than segments, runs of kv heads of a segment) into
// at.seg, and the segments are then folded head by head in order, as
// attendBlocks folds them.
func (at *Attention) attendSegments(p *Pool, n, length int) {
	d, hd := at.HeadDim, at.Heads*at.HeadDim
	sg := &at.seg
	if cap(sg.out) < n*hd {
		sg.out = make([]float32, n*hd)
	}
	if cap(sg.m) < n*at.Heads {
		sg.m, sg.l, sg.bad = make([]float32, n*at.Heads), make([]float32, n*at.Heads), make([]bool, n*at.Heads)
	}
	sg.length, sg.parts = length, min(at.KVHeads, max(1, p.Workers()/n))
	if sg.runFor != at {
		sg.run, sg.runFor = at.segmentUnits, at
	}
	p.RunSplit(n*sg.parts, p.Workers(), sg.run)
	for h := range at.Heads {
		out := at.Out[h*d : (h+1)*d]
		copy(out, sg.out[h*d:(h+1)*d])
		M, L, bad := sg.m[h], sg.l[h], sg.bad[h]
		for i := 1; i < n; i++ {
			j := i*at.Heads + h
			foldSegment(out, sg.out[i*hd+h*d:i*hd+(h+1)*d], &M, &L, sg.m[j], sg.l[j])
			bad = bad || sg.bad[j]
		}
		finishHead(out, bad, M, L)
	}
}

// segmentUnits computes Attend's units [lo, hi): unit u is segment
// u/parts for the u%parts-th run of kv heads.
func (at *Attention) segmentUnits(lo, hi int) {
	sg := &at.seg
	d, hd, rep := at.HeadDim, at.Heads*at.HeadDim, at.Heads/at.KVHeads
	var sc spanScratch
	for u := lo; u < hi; u++ {
		i, part := u/sg.parts, u%sg.parts
		p0 := i * sg.length
		out, m, l, bad := sg.out[i*hd:(i+1)*hd], sg.m[i*at.Heads:(i+1)*at.Heads], sg.l[i*at.Heads:(i+1)*at.Heads], sg.bad[i*at.Heads:(i+1)*at.Heads]
		h1 := at.KVHeads * (part + 1) / sg.parts * rep
		for h := at.KVHeads * part / sg.parts * rep; h < h1; {
			b := at.nextBatch(h, h1, 0, &sc.ends)
			at.span(b, p0, min(at.S, p0+sg.length), out[h*d:], m[h:], l[h:], bad[h:], &sc)
			h = b.end()
		}
	}
}

// headBatch is a run of query heads [h0, ends[len(ends)-1]) in groups
// that share a kv head, group i ending at ends[i].
type headBatch struct {
	h0   int
	ends []int
}

// end returns the end of b's heads.
func (b headBatch) end() int { return b.ends[len(b.ends)-1] }

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
			b = scaleScores(row, sc) || b
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

// scaleScores multiplies the scores x by s and reports whether one became
// NaN or +Inf.
func scaleScores(x []float32, s float32) bool {
	if useAVX512 {
		return scaleScoresZ(&x[0], len(x), s)
	}
	scaleVec(x, x, s)
	if !nonFiniteVec(x) {
		return false
	}
	for _, v := range x {
		if !(v < float32(math.Inf(1))) {
			return true
		}
	}
	return false
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
