package hostexec

import (
	"fmt"

	"github.com/pootlabs/poot"
)

// The layout primitives move storage units: 4-byte words for F32 and I32
// values, bytes for every other dtype. A byte-stored plain value (Bool,
// F16, BF16) is viewed with one extra trailing axis of its element's
// bytes; a packed value is viewed with its last axis replaced by the bytes
// of one stored row, which no layout primitive may split. Either way one
// strided copy serves every dtype.

func words(t poot.TensorType) bool { return t.DType == poot.F32 || t.DType == poot.I32 }

// phys returns the shape in storage units of a value of type t.
func phys(t poot.TensorType) []int {
	s := []int(t.Shape.Clone())
	switch {
	case words(t):
		return s
	case t.DType.Packed():
		s[len(s)-1] = int(t.DType.RowBytes(int64(s[len(s)-1])))
		return s
	}
	return append(s, t.DType.BlockBytes())
}

// trailing reports whether phys(t) has one more axis than t.
func trailing(t poot.TensorType) bool { return !words(t) && !t.DType.Packed() }

func stridesOf(shape []int) []int {
	st := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = n
		n *= shape[i]
	}
	return st
}

// strided is a compiled strided copy of one block between two values.
type strided struct {
	unit       int // bytes per storage unit: 4 or 1
	shape      []int
	dOff, sOff int
	dStr, sStr []int
	idx        []int
}

func newStrided(t poot.TensorType, shape []int, dOff int, dStr []int, sOff int, sStr []int) *strided {
	unit := 1
	if words(t) {
		unit = 4
	}
	return &strided{unit: unit, shape: shape, dOff: dOff, sOff: sOff, dStr: dStr, sStr: sStr, idx: make([]int, len(shape))}
}

// copy moves the block, contiguous runs of the last axis by copy and
// strided ones a unit at a time.
func (s *strided) copy(dst, src Storage) {
	r := len(s.shape)
	u := s.unit
	db, sb := dst.Bytes(), src.Bytes()
	if r == 0 {
		copy(db[s.dOff*u:(s.dOff+1)*u], sb[s.sOff*u:(s.sOff+1)*u])
		return
	}
	var di, si []int32
	if u == 4 {
		di, si = dst.I32(), src.I32()
	}
	idx := s.idx[:r-1]
	clear(idx)
	n, dl, sl := s.shape[r-1], s.dStr[r-1], s.sStr[r-1]
	for {
		d, so := s.dOff, s.sOff
		for a, i := range idx {
			d += i * s.dStr[a]
			so += i * s.sStr[a]
		}
		switch {
		case dl == 1 && sl == 1:
			copy(db[d*u:(d+n)*u], sb[so*u:(so+n)*u])
		case u == 4:
			for j := 0; j < n; j++ {
				di[d+j*dl] = si[so+j*sl]
			}
		default:
			for j := 0; j < n; j++ {
				db[d+j*dl] = sb[so+j*sl]
			}
		}
		a := r - 2
		for ; a >= 0; a-- {
			idx[a]++
			if idx[a] < s.shape[a] {
				break
			}
			idx[a] = 0
		}
		if a < 0 {
			return
		}
	}
}

func ruleBroadcast(e *Eqn) (func() error, error) {
	x, out := e.Args[0], e.Res
	xs, os := phys(e.In[0]), phys(e.Out)
	ss := stridesOf(xs)
	for i := range ss {
		if xs[i] == 1 && os[i] != 1 {
			ss[i] = 0
		}
	}
	s := newStrided(e.Out, os, 0, stridesOf(os), 0, ss)
	return func() error { s.copy(out, x); return nil }, nil
}

func ruleTranspose(e *Eqn) (func() error, error) {
	x, out := e.Args[0], e.Res
	perm := append([]int(nil), e.Params.Perm...)
	if trailing(e.In[0]) {
		perm = append(perm, len(perm))
	}
	xst := stridesOf(phys(e.In[0]))
	os := phys(e.Out)
	ss := make([]int, len(perm))
	for i, p := range perm {
		ss[i] = xst[p]
	}
	s := newStrided(e.Out, os, 0, stridesOf(os), 0, ss)
	return func() error { s.copy(out, x); return nil }, nil
}

func ruleSlice(e *Eqn) (func() error, error) {
	x, out := e.Args[0], e.Res
	xt := e.In[0]
	start := append([]int(nil), e.Params.Start...)
	if trailing(xt) {
		start = append(start, 0)
	}
	if xt.DType.Packed() {
		start[len(start)-1] = 0
	}
	ss := stridesOf(phys(xt))
	so := 0
	for i, s := range start {
		so += s * ss[i]
	}
	os := phys(e.Out)
	s := newStrided(xt, os, 0, stridesOf(os), so, ss)
	return func() error { s.copy(out, x); return nil }, nil
}

func ruleConcat(e *Eqn) (func() error, error) {
	out := e.Res
	axis := e.Params.Axis
	ds := stridesOf(phys(e.Out))
	var parts []*strided
	off := 0
	for _, xt := range e.In {
		xs := phys(xt)
		parts = append(parts, newStrided(xt, xs, off*ds[axis], ds, 0, stridesOf(xs)))
		off += xt.Shape[axis]
	}
	srcs := e.Args
	return func() error {
		for j, p := range parts {
			p.copy(out, srcs[j])
		}
		return nil
	}, nil
}

// rowBytes is the bytes of one index of the first axis.
func rowBytes(t poot.TensorType) int { return int(t.Bytes()) / t.Shape[0] }

func ruleGather(e *Eqn) (func() error, error) {
	table, idx, out := e.Args[0], e.Args[1], e.Res
	rows, n := e.In[0].Shape[0], rowBytes(e.In[0])
	m := size(e.In[1])
	return func() error {
		tb, ob := table.Bytes(), out.Bytes()
		for i, r := range idx.I32()[:m] {
			if r < 0 || int(r) >= rows {
				return fmt.Errorf("%w: index %d (element %d) outside [0, %d)", ErrIndexRange, r, i, rows)
			}
			copy(ob[i*n:(i+1)*n], tb[int(r)*n:(int(r)+1)*n])
		}
		return nil
	}, nil
}

// ruleWriteRows checks every index before writing, so a fault leaves no
// partial result behind.
func ruleWriteRows(e *Eqn) (func() error, error) {
	w := &writeRows{dst: e.Args[0], idx: e.Args[1], src: e.Args[2], out: e.Res,
		rows: e.In[0].Shape[0], n: rowBytes(e.In[0]), m: size(e.In[1]), total: int(e.Out.Bytes()), parts: 1}
	if e.Par != nil && w.m*w.n >= parallelCopy {
		w.par, w.parts = e.Par, min(e.Par.Workers(), w.m)
	}
	w.fn = w.do
	return w.run, nil
}

// parallelCopy is the number of bytes from which a WriteRows splits its
// copies across Eqn.Par.
const parallelCopy = 1 << 18

// writeRows is a compiled WriteRows. When its indices increase (a cache
// append), no row is written twice and the copies split across parts by
// index; otherwise one part copies them in order, so a row written twice
// ends with the later source row.
type writeRows struct {
	dst, idx, src, out Storage
	rows, n, m, total  int
	par                Parallel
	parts              int
	fn                 func(lo, hi int)
}

func (w *writeRows) run() error {
	ix := w.idx.I32()[:w.m]
	if i := OutOfRange(ix, w.rows); i >= 0 {
		return fmt.Errorf("%w: index %d (row %d of the source) outside [0, %d)", ErrIndexRange, ix[i], i, w.rows)
	}
	if w.dst != w.out {
		copy(w.out.Bytes()[:w.total], w.dst.Bytes()[:w.total])
	}
	if w.parts == 1 || !increasing(ix) {
		w.copyRows(0, w.m)
	} else {
		w.par.Run(w.parts, w.fn)
	}
	return nil
}

func (w *writeRows) do(lo, hi int) {
	for p := lo; p < hi; p++ {
		w.copyRows(w.m*p/w.parts, w.m*(p+1)/w.parts)
	}
}

// copyRows copies source rows [i0, i1) to their destinations.
func (w *writeRows) copyRows(i0, i1 int) {
	ob, sb, n := w.out.Bytes()[:w.total], w.src.Bytes(), w.n
	for i, r := range w.idx.I32()[i0:i1] {
		i += i0
		copy(ob[int(r)*n:(int(r)+1)*n], sb[i*n:(i+1)*n])
	}
}

// increasing reports whether every index is above the one before it.
func increasing(ix []int32) bool {
	for i := 1; i < len(ix); i++ {
		if ix[i] <= ix[i-1] {
			return false
		}
	}
	return true
}

// OutOfRange returns the position of the first index in idx outside
// [0, n), or -1 when all lie inside. Gather, WriteRows and IndexedMatMul
// fault on such an index; the ones that check before writing use this.
func OutOfRange(idx []int32, n int) int {
	for i, v := range idx {
		if v < 0 || int(v) >= n {
			return i
		}
	}
	return -1
}
