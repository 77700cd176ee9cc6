package cpu

import (
	"math"
	"unsafe"

	"github.com/x448/float16"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
	"github.com/pootlabs/poot/lower"
)

// flash is the fused attention kernel: for every query row and key/value
// head, the scores of the Rep query heads that share the head's cache
// rows, then their softmax-weighted sum of V rows, reading K and V in
// place.
type flash struct {
	x                    *Exec
	a                    lower.Attention
	q, k, v, mask, sinks *buf
	out                  *buf
	acc                  [][]float32 // per part: Rep·Dv accumulators
	m, l                 [][]float32 // per part: Rep maxima and sums
	sc                   [][]float32 // per part: Rep·S scores
	fn                   func(lo, hi int)
	invCap               float32
	seen                 []bool // S: positions some query of a sequence sees
	badV                 []bool // S: positions whose V row holds a NaN or an infinity

	// kr and vr are, per part, a K and a V row widened from F16 or Q8_0
	// caches (Attention.KV) for the portable path.
	kr, vr [][]float32

	// The path through package kernels' decode attention (vectorized), for
	// cores without soft cap or sinks and with D == Dv: one
	// kernels.Attention and additive mask row per part.
	fast   bool
	kat    []kernels.Attention
	kmask  [][]float32
	rowsFn func(lo, hi int)

	// The tiled path (tiled.go), for prefill steps of the fast path.
	tiles   []tile
	last    []int // per query row: its last visible position
	tilesFn func(lo, hi int)
}

func compileFlash(c *compiler, k *lower.Kernel) (func() error, error) {
	a := *k.Attention
	f := &flash{x: c.x, a: a, q: c.bufs[a.Q], k: c.bufs[a.K], v: c.bufs[a.V], mask: c.bufs[a.Mask], out: c.bufs[a.Out]}
	if a.Sinks >= 0 {
		f.sinks = c.bufs[a.Sinks]
	}
	if a.SoftCap != 0 {
		f.invCap = float32(1 / float64(a.SoftCap))
	}
	for range c.x.pool.Workers() {
		f.acc = append(f.acc, make([]float32, a.Rep*a.Dv))
		f.m = append(f.m, make([]float32, a.Rep))
		f.l = append(f.l, make([]float32, a.Rep))
		f.sc = append(f.sc, make([]float32, a.Rep*a.S))
		switch a.KV {
		case poot.F16:
			f.kr, f.vr = append(f.kr, make([]float32, a.D)), append(f.vr, make([]float32, a.Dv))
		case poot.Q8_0:
			// A head's row may start and end inside a block: room for
			// the blocks it touches.
			f.kr, f.vr = append(f.kr, make([]float32, a.D+64)), append(f.vr, make([]float32, a.Dv+64))
		}
	}
	f.fn = f.do
	if a.T > 1 {
		f.seen, f.badV = make([]bool, a.S), make([]bool, a.S)
	}
	f.fast = kernelsAttention && a.SoftCap == 0 && a.Sinks < 0 && a.D == a.Dv && (a.KV != poot.Q8_0 || a.D%32 == 0)
	if f.fast {
		for range c.x.pool.Workers() {
			f.kat = append(f.kat, kernels.Attention{S: a.S, Heads: a.Heads, KVHeads: a.KVHeads, HeadDim: a.D,
				KVStride: a.KVHeads * a.D, HeadStride: a.D, Scale: a.Scale})
			f.kmask = append(f.kmask, make([]float32, a.S))
		}
		f.rowsFn = f.doRows
		if a.T >= tileMinT {
			f.tiles, f.last = make([]tile, c.x.pool.Workers()), make([]int, a.R*a.T)
			f.tilesFn = f.doTiles
		}
	}
	return f.run, nil
}

// fastRow computes query row `row` with package kernels' attention using
// part p's scratch. The kernels propagate NaN and infinity as the
// definition does (a row that sees no position is NaN).
func (f *flash) fastRow(p, row int, pool *kernels.Pool) error {
	a := &f.a
	r := row / a.T
	mask := f.mask.b[row*a.S : (row+1)*a.S]
	km := f.kmask[p]
	last := -1 // the last visible position: the kernel reads no further
	visible := 0
	for s, vis := range mask {
		if vis != 0 {
			last = s
			visible++
		}
	}
	at := &f.kat[p]
	at.S = last + 1
	kw := a.KVHeads * a.D
	at.Q = f.q.f[row*a.Heads*a.D : (row+1)*a.Heads*a.D]
	switch a.KV {
	case poot.F16:
		at.K, at.K16, at.V16 = nil, half(f.k)[r*a.S*kw:(r+1)*a.S*kw], half(f.v)[r*a.S*kw:(r+1)*a.S*kw]
	case poot.Q8_0:
		lo, hi := r*a.S*kw/32*34, (r+1)*a.S*kw/32*34
		at.K, at.K16, at.K8, at.V8 = nil, nil, f.k.b[lo:hi], f.v.b[lo:hi]
	default:
		at.K = f.k.f[r*a.S*kw : (r+1)*a.S*kw]
		at.V = f.v.f[r*a.S*kw : (r+1)*a.S*kw]
	}
	at.Out = f.out.f[row*a.Heads*a.D : (row+1)*a.Heads*a.D]
	at.Mask = nil
	if visible < last+1 {
		// Some position before the last visible one is hidden: an
		// additive mask. (A decode step's causal mask hides none, and
		// needs none.)
		for s, vis := range mask[:last+1] {
			km[s] = 0
			if vis == 0 {
				km[s] = float32(math.Inf(-1))
			}
		}
		at.Mask = km[:last+1]
	}
	if pool != nil {
		return kernels.Attend(pool, at)
	}
	return kernels.AttendHeads(at, 0, a.Heads)
}

// doRows runs the fast path over parts [lo, hi) of the query rows.
// Part p takes every parts-th row from row p: a causal prefill's later
// rows see more positions, so contiguous ranges would leave the first
// parts idle (the last of two did three quarters of a chunk's work).
func (f *flash) doRows(lo, hi int) {
	n, parts := f.a.R*f.a.T, len(f.kat)
	for p := lo; p < hi; p++ {
		f.fastRows(p, p, n, parts)
	}
}

// fastRows computes query rows r0, r0+step, ... below r1 with part p's
// scratch. The kernels fail only on shapes compileFlash has made
// consistent, so a row they refuse is computed by the portable path
// instead.
func (f *flash) fastRows(p, r0, r1, step int) {
	for row := r0; row < r1; row += step {
		if err := f.fastRow(p, row, nil); err != nil {
			f.part(p, row*f.a.KVHeads, (row+1)*f.a.KVHeads)
		}
	}
}

// kernelsAttention enables the kernels path, and tiledAttention its tiled
// form for prefill steps; tests and benchmarks turn them off to compare.
var kernelsAttention, tiledAttention = true, true

func (f *flash) units() int { return f.a.R * f.a.T * f.a.KVHeads }

func (f *flash) run() error {
	defer f.hiddenSeen()
	if f.fast {
		return f.runFast()
	}
	parts := len(f.acc)
	if parts == 1 || f.units() < 2 || f.units()*f.a.Rep*f.a.S*(f.a.D+f.a.Dv) < 1<<17 {
		f.part(0, 0, f.units())
		return nil
	}
	f.x.pool.Run(parts, f.fn)
	return nil
}

// hiddenSeen finishes a step of several queries per sequence as the
// definition (package ops, Attention) says: a V row that some query of a
// sequence sees enters the sums of the others at weight exactly 0, so a NaN
// or infinity in it turns their output NaN in that column. The kernels
// never read masked rows; this pass reads only the rows hidden from one
// query and seen by another (at most T-1 per query, none in a decode step)
// and looks for non-finite values. Each seen V row is scanned once a
// step, and only a row that holds a NaN or an infinity is looked at again
// for the queries it is hidden from (a scan per query and hidden row took
// a third of a 512-token prefill).
func (f *flash) hiddenSeen() {
	a := &f.a
	if a.T == 1 {
		return
	}
	S, Dv, rep, vw := a.S, a.Dv, a.Rep, a.KVHeads*a.Dv
	nan := float32(math.NaN())
	for r := range a.R {
		clear(f.seen)
		for row := r * a.T; row < (r+1)*a.T; row++ {
			for s, vis := range f.mask.b[row*S : (row+1)*S] {
				f.seen[s] = f.seen[s] || vis != 0
			}
		}
		any := false
		for s, seen := range f.seen {
			f.badV[s] = seen && f.nonFiniteV(r*S+s, vw)
			any = any || f.badV[s]
		}
		if !any {
			continue
		}
		for row := r * a.T; row < (r+1)*a.T; row++ {
			mask := f.mask.b[row*S : (row+1)*S]
			out := f.out.f[row*a.Heads*Dv : (row+1)*a.Heads*Dv]
			for s, bad := range f.badV {
				if !bad || mask[s] != 0 {
					continue
				}
				for c := range vw {
					if x := f.at(f.v, (r*S+s)*vw+c); x-x != 0 { // NaN or ±Inf: 0·x is NaN
						g, j := c/Dv, c%Dv
						for i := range rep {
							out[(g*rep+i)*Dv+j] = nan
						}
					}
				}
			}
		}
	}
}

// runFast runs the kernels path: a single query row splits its heads
// across the pool, several rows are split across the pool by row.
func (f *flash) runFast() error {
	a := &f.a
	rows := a.R * a.T
	big := rows*a.Heads*a.S*2*a.D >= 1<<17
	if f.tiles != nil && tiledAttention {
		f.lastSeen()
		if len(f.tiles) == 1 {
			f.doTiles(0, 1)
		} else {
			f.x.pool.Run(len(f.tiles), f.tilesFn)
		}
		return nil
	}
	switch {
	case rows == 1:
		var pool *kernels.Pool
		if big {
			pool = f.x.pool
		}
		if err := f.fastRow(0, 0, pool); err != nil {
			f.part(0, 0, a.KVHeads)
		}
	case len(f.kat) == 1 || !big:
		f.fastRows(0, 0, rows, 1)
	default:
		f.x.pool.Run(len(f.kat), f.rowsFn)
	}
	return nil
}

func (f *flash) do(lo, hi int) {
	n, parts := f.units(), len(f.acc)
	for p := lo; p < hi; p++ {
		f.part(p, n*p/parts, n*(p+1)/parts)
	}
}

// part computes units [u0, u1), a unit being one query row and one
// key/value head: a first pass over the visible cache rows computes the
// scores of the unit's Rep query heads and their maxima, a second
// accumulates exp(score - max)·V, each K and V row read once for all Rep
// heads. NaN and infinity propagate as in the definition: the maximum is
// Go's max, which keeps a NaN; a NaN, +Inf or all--inf maximum makes every
// exp(score - max) NaN; a visible V row is added even at weight 0. Like
// package kernels' attention it does not read the K and V rows of masked
// positions, whose weight is 0.
func (f *flash) part(p, u0, u1 int) {
	a := &f.a
	D, Dv, rep, S := a.D, a.Dv, a.Rep, a.S
	acc, m, l, sc := f.acc[p], f.m[p], f.l[p], f.sc[p]
	qw, kw, vw := a.Heads*D, a.KVHeads*D, a.KVHeads*Dv
	negInf := float32(math.Inf(-1))
	for u := u0; u < u1; u++ {
		g := u % a.KVHeads
		row := u / a.KVHeads // r·T + t
		r := row / a.T
		clear(acc)
		for i := range rep {
			m[i], l[i] = negInf, 0
			if f.sinks != nil {
				m[i] = f.sinks.f[g*rep+i]
			}
		}
		mask := f.mask.b[row*S : (row+1)*S]
		for s, vis := range mask {
			if vis == 0 {
				continue
			}
			kr := f.row(f.k, f.kr, p, (r*S+s)*kw+g*D, D)
			for i := range rep {
				h := g*rep + i
				x := dot32(f.q.f[row*qw+h*D:row*qw+(h+1)*D], kr) * a.Scale
				if a.SoftCap != 0 {
					x = float32(math.Tanh(float64(x*f.invCap))) * a.SoftCap
				}
				sc[i*S+s] = x
				m[i] = max(m[i], x)
			}
		}
		if f.sinks != nil {
			for i := range rep {
				l[i] = float32(math.Exp(float64(f.sinks.f[g*rep+i] - m[i])))
			}
		}
		for s, vis := range mask {
			if vis == 0 {
				continue
			}
			vr := f.row(f.v, f.vr, p, (r*S+s)*vw+g*Dv, Dv)
			for i := range rep {
				e := expf(sc[i*S+s] - m[i])
				l[i] += e
				axpy(acc[i*Dv:(i+1)*Dv], vr, e)
			}
		}
		for i := range rep {
			h := g*rep + i
			dst := f.out.f[row*a.Heads*Dv+h*Dv : row*a.Heads*Dv+(h+1)*Dv]
			inv := 1 / l[i]
			if l[i] == 0 {
				inv = float32(math.NaN())
			}
			for j, v := range acc[i*Dv : (i+1)*Dv] {
				dst[j] = v * inv
			}
		}
	}
}

// nonFiniteV reports whether V row i (of vw values) holds a NaN or an
// infinity.
func (f *flash) nonFiniteV(i, vw int) bool {
	if f.a.KV == 0 {
		for _, x := range f.v.f[i*vw : (i+1)*vw] {
			if x-x != 0 {
				return true
			}
		}
		return false
	}
	for c := range vw {
		if x := f.at(f.v, i*vw+c); x-x != 0 {
			return true
		}
	}
	return false
}

// half views an F16 buffer as its binary16 values.
func half(b *buf) []uint16 {
	if len(b.b) < 2 {
		return nil
	}
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b.b))), len(b.b)/2)
}

// row returns n values of a K or V buffer from element off: in place, or
// widened from F16, or from the Q8_0 blocks they lie in, into part p's
// scratch.
func (f *flash) row(b *buf, scratch [][]float32, p, off, n int) []float32 {
	switch f.a.KV {
	case poot.F16:
		kernels.F16RowToF32(scratch[p][:n], half(b)[off:off+n])
		return scratch[p][:n]
	case poot.Q8_0:
		b0, b1 := off/32, (off+n+31)/32
		kernels.Q8_0RowToF32(scratch[p][:32*(b1-b0)], b.b[34*b0:34*b1])
		return scratch[p][off-32*b0 : off-32*b0+n]
	}
	return b.f[off : off+n]
}

// at returns element i of a K or V buffer.
func (f *flash) at(b *buf, i int) float32 {
	switch f.a.KV {
	case poot.F16:
		return float16.Frombits(half(b)[i]).Float32()
	case poot.Q8_0:
		blk := b.b[i/32*34:]
		return float16.Frombits(uint16(blk[0])|uint16(blk[1])<<8).Float32() * float32(int8(blk[2+i%32]))
	}
	return b.f[i]
}

// dot32 is a float32 dot product with four independent sums.
func dot32(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		aa, bb := (*[4]float32)(a[i:i+4]), (*[4]float32)(b[i:i+4])
		s0 += aa[0] * bb[0]
		s1 += aa[1] * bb[1]
		s2 += aa[2] * bb[2]
		s3 += aa[3] * bb[3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// axpy adds a·x to y.
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
