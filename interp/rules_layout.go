package interp

import (
	"fmt"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/semantics"
)

func init() {
	rules[poot.Reshape] = func(*compiler, *poot.Eqn) (func() error, error) { return nil, nil } // aliases; see Compile
	rules[poot.Broadcast] = ruleBroadcast
	rules[poot.Transpose] = ruleTranspose
	rules[poot.Slice] = ruleSlice
	rules[poot.Concat] = ruleConcat
	rules[poot.Gather] = ruleGather
	rules[poot.WriteRows] = ruleWriteRows
}

// The layout primitives move storage units: float32 or int32 elements, or
// bytes. A byte-stored plain value (Bool, F16, BF16) is viewed with one
// extra trailing axis of its element's bytes; a packed value is viewed with
// its last axis replaced by the bytes of one stored row, which no layout
// primitive may split. Either way one strided copy serves every dtype.

// phys returns the shape in storage units of a value of type t.
func phys(t poot.TensorType) []int {
	s := []int(t.Shape.Clone())
	switch {
	case storageOf(t.DType) != sBytes:
		return s
	case t.DType.Packed():
		r := len(s)
		s[r-1] = int(t.DType.RowBytes(int64(s[r-1])))
		return s
	}
	return append(s, t.DType.BlockBytes())
}

// trailing reports whether phys(t) has one more axis than t.
func trailing(t poot.TensorType) bool {
	return storageOf(t.DType) == sBytes && !t.DType.Packed()
}

func stridesOf(shape []int) []int {
	st := make([]int, len(shape))
	n := 1
	for i := len(shape) - 1; i >= 0; i-- {
		st[i] = n
		n *= shape[i]
	}
	return st
}

// copyND copies a block of the given shape from src (at offset so, with
// strides ss) to dst (at offset do, with strides ds), in storage units.
// idx is scratch of at least len(shape) ints.
func copyND[T any](dst []T, do int, ds []int, src []T, so int, ss []int, shape []int, idx []int) {
	r := len(shape)
	if r == 0 {
		dst[do] = src[so]
		return
	}
	for _, d := range shape {
		if d == 0 {
			return
		}
	}
	idx = idx[:r-1]
	clear(idx)
	n, dl, sl := shape[r-1], ds[r-1], ss[r-1]
	for {
		d, s := do, so
		for a, i := range idx {
			d += i * ds[a]
			s += i * ss[a]
		}
		if dl == 1 && sl == 1 {
			copy(dst[d:d+n], src[s:s+n])
		} else {
			for j := 0; j < n; j++ {
				dst[d+j*dl] = src[s+j*sl]
			}
		}
		a := r - 2
		for ; a >= 0; a-- {
			idx[a]++
			if idx[a] < shape[a] {
				break
			}
			idx[a] = 0
		}
		if a < 0 {
			return
		}
	}
}

// copyBuf is copyND over whichever storage dst and src (of one dtype) use.
func copyBuf(dst *buffer, do int, ds []int, src *buffer, so int, ss []int, shape []int, idx []int) {
	switch storageOf(src.t.DType) {
	case sF32:
		copyND(dst.f, do, ds, src.f, so, ss, shape, idx)
	case sI32:
		copyND(dst.i, do, ds, src.i, so, ss, shape, idx)
	default:
		copyND(dst.b, do, ds, src.b, so, ss, shape, idx)
	}
}

func ruleBroadcast(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	xs, os := phys(x.t), phys(out.t)
	ss := stridesOf(xs)
	for i := range ss {
		if xs[i] == 1 && os[i] != 1 {
			ss[i] = 0
		}
	}
	ds := stridesOf(os)
	idx := make([]int, len(os))
	return func() error { copyBuf(out, 0, ds, x, 0, ss, os, idx); return nil }, nil
}

func ruleTranspose(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	perm := append([]int(nil), e.Params.Perm...)
	if trailing(x.t) {
		perm = append(perm, len(perm))
	}
	xst := stridesOf(phys(x.t))
	os := phys(out.t)
	ss := make([]int, len(perm))
	for i, p := range perm {
		ss[i] = xst[p]
	}
	ds := stridesOf(os)
	idx := make([]int, len(os))
	return func() error { copyBuf(out, 0, ds, x, 0, ss, os, idx); return nil }, nil
}

func ruleSlice(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	xs := phys(x.t)
	start := append([]int(nil), e.Params.Start...)
	if trailing(x.t) {
		start = append(start, 0)
	}
	if x.t.DType.Packed() {
		start[len(start)-1] = 0
	}
	ss := stridesOf(xs)
	so := 0
	for i, s := range start {
		so += s * ss[i]
	}
	os := phys(out.t)
	ds := stridesOf(os)
	idx := make([]int, len(os))
	return func() error { copyBuf(out, 0, ds, x, so, ss, os, idx); return nil }, nil
}

func ruleConcat(c *compiler, e *poot.Eqn) (func() error, error) {
	out := c.out(e)
	axis := e.Params.Axis
	ds := stridesOf(phys(out.t))
	type part struct {
		x     *buffer
		do    int
		ss    []int
		shape []int
	}
	var parts []part
	off := 0
	for j := range e.Inputs {
		x := c.in(e, j)
		xs := phys(x.t)
		parts = append(parts, part{x: x, do: off * ds[axis], ss: stridesOf(xs), shape: xs})
		off += x.t.Shape[axis]
	}
	idx := make([]int, len(ds))
	return func() error {
		for _, p := range parts {
			copyBuf(out, p.do, ds, p.x, 0, p.ss, p.shape, idx)
		}
		return nil
	}, nil
}

// rowUnits is the number of storage units in one row (one index of the
// first axis) of a value.
func rowUnits(bf *buffer) int {
	n := 1
	for _, d := range phys(bf.t)[1:] {
		n *= d
	}
	return n
}

func copyRow(dst *buffer, di int, src *buffer, si int, n int) {
	switch storageOf(src.t.DType) {
	case sF32:
		copy(dst.f[di*n:(di+1)*n], src.f[si*n:(si+1)*n])
	case sI32:
		copy(dst.i[di*n:(di+1)*n], src.i[si*n:(si+1)*n])
	default:
		copy(dst.b[di*n:(di+1)*n], src.b[si*n:(si+1)*n])
	}
}

func ruleGather(c *compiler, e *poot.Eqn) (func() error, error) {
	table, idx, out := c.in(e, 0), c.in(e, 1), c.out(e)
	rows := table.t.Shape[0]
	n := rowUnits(table)
	return func() error {
		for i, r := range idx.i {
			if r < 0 || int(r) >= rows {
				return fmt.Errorf("%w: index %d (element %d) outside [0, %d)", ErrIndexRange, r, i, rows)
			}
			copyRow(out, i, table, int(r), n)
		}
		return nil
	}, nil
}

func ruleWriteRows(c *compiler, e *poot.Eqn) (func() error, error) {
	dst, idx, src, out := c.in(e, 0), c.in(e, 1), c.in(e, 2), c.out(e)
	rows := dst.t.Shape[0]
	n := rowUnits(dst)
	return func() error {
		// Check every index before writing, so a fault leaves no partial
		// result behind.
		if i := semantics.OutOfRange(idx.i, rows); i >= 0 {
			return fmt.Errorf("%w: index %d (row %d of the source) outside [0, %d)", ErrIndexRange, idx.i[i], i, rows)
		}
		copy(out.bytes(), dst.bytes())
		for i, r := range idx.i {
			copyRow(out, int(r), src, i, n)
		}
		return nil
	}, nil
}
