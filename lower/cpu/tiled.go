package cpu

import (
	"bytes"
	"math"
	"unsafe"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/kernels"
)

// The tiled path of a prefill's attention: for each sequence and key/value
// head, the head's K and V rows are gathered (widened from F16 or Q8_0)
// once, and blocks of tileRows query rows, all the query heads that share
// the head, meet them as two matrix products on package kernels' tiles:
// the scores Q·Kᵀ, a softmax per query row, then P·V. A query row reads
// only the positions up to the last its block sees, so a causal prompt
// does about half the products of a square one. Per query row it
// computes what the row path computes, in float32 with sums in other
// orders; a unit
// whose gathered V rows hold a NaN or an infinity runs the portable path
// instead, which reads only visible rows (a score's NaN or infinity the
// softmax treats as the definition does).

// tileRows is the query rows a block holds; tileMinT the fewest query rows
// a sequence needs before tiling pays.
const (
	tileRows = 16
	tileMinT = 32
)

// tile is one part's scratch for the tiled path, grown on first use.
type tile struct {
	k, v, vt, q, sc, out []float32
	scale                []float32 // the score scale, repeated
	aq, ap               kernels.Acts
}

func grow(b []float32, n int) []float32 {
	if cap(b) < n {
		return make([]float32, n)
	}
	return b[:n]
}

// lastSeen fills f.last with each query row's last visible position (-1:
// none).
func (f *flash) lastSeen() {
	S := f.a.S
	for row := range f.last {
		mask := f.mask.b[row*S : (row+1)*S]
		s := S - 1
		for s >= 0 && mask[s] == 0 {
			s--
		}
		f.last[row] = s
	}
}

// doTiles runs parts [lo, hi) of the tiled path: part p takes every
// parts-th (sequence, kv head) unit from p.
func (f *flash) doTiles(lo, hi int) {
	n, parts := f.a.R*f.a.KVHeads, len(f.tiles)
	for p := lo; p < hi; p++ {
		for u := p; u < n; u += parts {
			f.tileUnit(p, u/f.a.KVHeads, u%f.a.KVHeads)
		}
	}
}

// tileUnit computes kv head g's query heads for every query row of
// sequence r.
func (f *flash) tileUnit(p, r, g int) {
	a := &f.a
	T, S, D, rep := a.T, a.S, a.D, a.Rep
	tl := &f.tiles[p]
	n := 0 // positions some query row of the sequence sees: [0, n)
	for _, s := range f.last[r*T : (r+1)*T] {
		n = max(n, s+1)
	}
	kw := a.KVHeads * D
	tl.k, tl.v = grow(tl.k, n*D), grow(tl.v, n*D)
	for s := range n {
		copy(tl.k[s*D:(s+1)*D], f.row(f.k, f.kr, p, (r*S+s)*kw+g*D, D))
		copy(tl.v[s*D:(s+1)*D], f.row(f.v, f.vr, p, (r*S+s)*kw+g*D, D))
	}
	if kernels.HasNonFinite(tl.v) {
		for row := r * T; row < (r+1)*T; row++ {
			f.part(p, row*a.KVHeads+g, row*a.KVHeads+g+1)
		}
		return
	}
	M := tileRows * rep
	tl.q, tl.out = grow(tl.q, M*D), grow(tl.out, M*D)
	tl.sc, tl.vt = grow(tl.sc, M*n), grow(tl.vt, D*n)
	if len(tl.scale) < n || n > 0 && tl.scale[0] != a.Scale {
		tl.scale = grow(tl.scale, n)
		fill(tl.scale, a.Scale)
	}
	qw := a.Heads * D
	for t0 := 0; t0 < T; t0 += tileRows {
		rows := min(tileRows, T-t0)
		sp := 0
		for _, s := range f.last[r*T+t0 : r*T+t0+rows] {
			sp = max(sp, s+1)
		}
		m := rows * rep
		for t := range rows {
			row := r*T + t0 + t
			copy(tl.q[t*rep*D:(t+1)*rep*D], f.q.f[row*qw+g*rep*D:row*qw+(g+1)*rep*D])
		}
		if sp > 0 {
			f.tileScores(tl, r*T+t0, m, sp)
		} else {
			fill(tl.out[:m*D], float32(math.NaN())) // no row sees a position
		}
		for t := range rows {
			row := r*T + t0 + t
			copy(f.out.f[row*qw+g*rep*D:row*qw+(g+1)*rep*D], tl.out[t*rep*D:(t+1)*rep*D])
		}
	}
}

// tileScores computes, for the m query vectors in tl.q (rep heads of the
// query rows from row0), the softmax weights over
// positions [0, sp) into tl.sc (m rows of sp) and P·V into tl.out.
// Softmax gives the definition's non-finite cases: a row with a NaN or
// +Inf score, or none visible, is NaN throughout.
func (f *flash) tileScores(tl *tile, row0, m, sp int) {
	a := &f.a
	D, S, rep := a.D, a.S, a.Rep
	sc := tl.sc[:m*sp]
	// The products fail only on shapes made consistent here.
	_ = tl.aq.Prepare(poot.F32, tl.q[:m*D], m, D)
	_ = kernels.MatMulRows(poot.F32, sc, sp, f32Bytes(tl.k[:sp*D]), &tl.aq, 0, sp)
	negInf := float32(math.Inf(-1))
	for t := range m / rep {
		mask := f.mask.b[(row0+t)*S : (row0+t)*S+sp]
		// The visible positions, when they are one run [lo, hi).
		lo := bytes.IndexByte(mask, 1)
		hi := f.last[row0+t] + 1
		run := lo >= 0 && bytes.IndexByte(mask[lo:hi], 0) < 0
		for j := t * rep; j < (t+1)*rep; j++ {
			x := sc[j*sp : (j+1)*sp]
			if run {
				_ = kernels.Arith(kernels.ArithMul, x[lo:hi], x[lo:hi], tl.scale)
				fill(x[:lo], negInf)
				fill(x[hi:], negInf)
			} else {
				for s, vis := range mask {
					if vis == 0 {
						x[s] = negInf
					} else {
						x[s] *= a.Scale
					}
				}
			}
			kernels.Softmax(x)
		}
	}
	// V transposed eight positions at a time: the eight rows stay in L1
	// while every column's eight values are written side by side.
	for s0 := 0; s0 < sp; s0 += 8 {
		if sp-s0 < 8 {
			for c := range D {
				for s := s0; s < sp; s++ {
					tl.vt[c*sp+s] = tl.v[s*D+c]
				}
			}
			break
		}
		r := tl.v[s0*D : (s0+8)*D]
		for c := range D {
			o := (*[8]float32)(tl.vt[c*sp+s0 : c*sp+s0+8])
			o[0], o[1], o[2], o[3] = r[c], r[D+c], r[2*D+c], r[3*D+c]
			o[4], o[5], o[6], o[7] = r[4*D+c], r[5*D+c], r[6*D+c], r[7*D+c]
		}
	}
	_ = tl.ap.Prepare(poot.F32, sc, m, sp)
	_ = kernels.MatMulRows(poot.F32, tl.out[:m*D], D, f32Bytes(tl.vt[:D*sp]), &tl.ap, 0, D)
}

func fill(x []float32, v float32) {
	for i := range x {
		x[i] = v
	}
}

// f32Bytes views float32 values as the bytes of F32 weights.
func f32Bytes(x []float32) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(x))), 4*len(x))
}
