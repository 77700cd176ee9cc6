package cpu

import (
	"fmt"
	"sort"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/semantics"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/quant"
)

// rule compiles one equation into the function that runs it each step.
// The rules run the scalar semantics the oracle runs (package
// internal/semantics) over the plan's storage: F32 arithmetic, float64
// sums and transcendentals.
type rule func(c *compiler, e *poot.Eqn) (func() error, error)

// rules is the generic kernel table, one rule per primitive.
var rules [poot.NumOps]rule

func init() {
	for _, op := range []poot.Op{poot.Neg, poot.Exp, poot.Log, poot.Sqrt, poot.Rsqrt, poot.Tanh, poot.Erf, poot.Sin, poot.Cos, poot.Abs, poot.Not} {
		rules[op] = ruleUnary
	}
	for _, op := range []poot.Op{poot.Add, poot.Sub, poot.Mul, poot.Div, poot.Max, poot.Min, poot.Pow} {
		rules[op] = ruleBinary
	}
	for _, op := range []poot.Op{poot.Eq, poot.Ne, poot.Lt, poot.Le, poot.Gt, poot.Ge} {
		rules[op] = ruleCompare
	}
	rules[poot.And] = ruleLogic
	rules[poot.Or] = ruleLogic
	rules[poot.Select] = ruleSelect
	rules[poot.ReduceSum] = ruleReduce
	rules[poot.ReduceMax] = ruleReduce
	rules[poot.ArgMax] = ruleReduce
	rules[poot.ArgTopK] = ruleArgTopK
	rules[poot.MatMul] = ruleMatMul
	rules[poot.IndexedMatMul] = ruleIndexedMatMul
	rules[poot.Broadcast] = ruleBroadcast
	rules[poot.Transpose] = ruleTranspose
	rules[poot.Slice] = ruleSlice
	rules[poot.Concat] = ruleConcat
	rules[poot.Gather] = ruleGather
	rules[poot.WriteRows] = ruleWriteRows
	rules[poot.Cast] = ruleCast
}

func b2u(b bool) byte { return semantics.Bool(b) }

func ruleUnary(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	op := e.Op
	switch c.dtype(e.Inputs[0]) {
	case poot.F32:
		return func() error {
			o := out.f[:len(x.f)]
			for i, v := range x.f {
				o[i] = semantics.UnaryF32(op, v)
			}
			return nil
		}, nil
	case poot.I32:
		return func() error {
			for i, v := range x.i {
				out.i[i] = semantics.UnaryI32(op, v)
			}
			return nil
		}, nil
	}
	return func() error {
		for i, v := range x.b {
			out.b[i] = b2u(v == 0)
		}
		return nil
	}, nil
}

func ruleBinary(c *compiler, e *poot.Eqn) (func() error, error) {
	x, y, out := c.in(e, 0), c.in(e, 1), c.out(e)
	op := e.Op
	if c.dtype(e.Inputs[0]) == poot.F32 {
		return func() error {
			yy, o := y.f[:len(x.f)], out.f[:len(x.f)]
			for i, v := range x.f {
				o[i] = semantics.BinaryF32(op, v, yy[i])
			}
			return nil
		}, nil
	}
	return func() error {
		for i, v := range x.i {
			r, ok := semantics.BinaryI32(op, v, y.i[i])
			if !ok {
				return fmt.Errorf("%w: element %d is %d / 0", interp.ErrDivideByZero, i, v)
			}
			out.i[i] = r
		}
		return nil
	}, nil
}

func ruleCompare(c *compiler, e *poot.Eqn) (func() error, error) {
	x, y, out := c.in(e, 0), c.in(e, 1), c.out(e)
	op := e.Op
	switch c.dtype(e.Inputs[0]) {
	case poot.F32:
		return func() error {
			for i, v := range x.f {
				out.b[i] = b2u(semantics.Compare(op, v, y.f[i]))
			}
			return nil
		}, nil
	case poot.I32:
		return func() error {
			for i, v := range x.i {
				out.b[i] = b2u(semantics.Compare(op, v, y.i[i]))
			}
			return nil
		}, nil
	}
	ne := op == poot.Ne
	return func() error {
		for i, v := range x.b {
			out.b[i] = b2u(((v != 0) == (y.b[i] != 0)) != ne)
		}
		return nil
	}, nil
}

func ruleLogic(c *compiler, e *poot.Eqn) (func() error, error) {
	x, y, out := c.in(e, 0), c.in(e, 1), c.out(e)
	op := e.Op
	return func() error { semantics.Logic(op, out.b, x.b, y.b); return nil }, nil
}

func ruleSelect(c *compiler, e *poot.Eqn) (func() error, error) {
	cond, t, f, out := c.in(e, 0), c.in(e, 1), c.in(e, 2), c.out(e)
	w := c.dtype(e.Inputs[1]).BlockBytes()
	return func() error { semantics.SelectBytes(out.b, cond.b, t.b, f.b, w); return nil }, nil
}

func ruleReduce(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	shape, axis := c.shape(e.Inputs[0]), e.Params.Axis
	isF32 := c.dtype(e.Inputs[0]) == poot.F32
	op := e.Op
	return func() error {
		if isF32 {
			semantics.ReduceF32(op, x.f, shape, axis, out.f, out.i)
		} else {
			semantics.ReduceI32(op, x.i, shape, axis, out.i)
		}
		return nil
	}, nil
}

// topk sorts indices of one row: larger first (NaN largest), then lower
// index. It is a sort.Interface kept in the compiled rule, so sorting
// allocates nothing.
type topk struct {
	order []int32
	f     []float32
	i     []int32
}

func (t *topk) Len() int      { return len(t.order) }
func (t *topk) Swap(a, b int) { t.order[a], t.order[b] = t.order[b], t.order[a] }
func (t *topk) Less(a, b int) bool {
	ia, ib := t.order[a], t.order[b]
	if t.f != nil {
		return semantics.TopKOrder(t.f[ia], t.f[ib], ia, ib) < 0
	}
	return semantics.TopKOrder(t.i[ia], t.i[ib], ia, ib) < 0
}

func ruleArgTopK(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	s := c.shape(e.Inputs[0])
	n := s[len(s)-1]
	rows := int(s.Size()) / n
	k := e.Params.K
	isF32 := c.dtype(e.Inputs[0]) == poot.F32
	t := &topk{order: make([]int32, n)}
	var si sort.Interface = t
	return func() error {
		for r := 0; r < rows; r++ {
			for j := range t.order {
				t.order[j] = int32(j)
			}
			if isF32 {
				t.f, t.i = x.f[r*n:(r+1)*n], nil
			} else {
				t.f, t.i = nil, x.i[r*n:(r+1)*n]
			}
			sort.Sort(si)
			copy(out.i[r*k:(r+1)*k], t.order[:k])
		}
		return nil
	}, nil
}

// phys is the shape in storage units (float32, int32 or bytes) of a value:
// a byte-stored plain value gets a trailing axis of its element's bytes, a
// packed value its last axis replaced by a row's bytes.
func phys(t poot.TensorType) []int {
	s := []int(t.Shape.Clone())
	switch {
	case t.DType == poot.F32 || t.DType == poot.I32:
		return s
	case t.DType.Packed():
		s[len(s)-1] = int(t.DType.RowBytes(int64(s[len(s)-1])))
		return s
	}
	return append(s, t.DType.BlockBytes())
}

func trailing(t poot.TensorType) bool {
	return t.DType != poot.F32 && t.DType != poot.I32 && !t.DType.Packed()
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

// strided is a compiled strided copy of one block between two buffers.
type strided struct {
	unit       int // bytes per storage unit
	shape      []int
	dOff, sOff int
	dStr, sStr []int
	idx        []int
}

func newStrided(unit int, shape []int, dOff int, dStr []int, sOff int, sStr []int) *strided {
	return &strided{unit: unit, shape: shape, dOff: dOff, sOff: sOff, dStr: dStr, sStr: sStr, idx: make([]int, len(shape))}
}

// copy moves the block, in units of unit bytes.
func (s *strided) copy(dst, src *buf) {
	r := len(s.shape)
	u := s.unit
	if r == 0 {
		copy(dst.b[s.dOff*u:(s.dOff+1)*u], src.b[s.sOff*u:(s.sOff+1)*u])
		return
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
			copy(dst.b[d*u:(d+n)*u], src.b[so*u:(so+n)*u])
		case u == 4:
			for j := 0; j < n; j++ {
				dst.i[d+j*dl] = src.i[so+j*sl]
			}
		default:
			for j := 0; j < n; j++ {
				copy(dst.b[(d+j*dl)*u:(d+j*dl+1)*u], src.b[(so+j*sl)*u:(so+j*sl+1)*u])
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

func unitOf(t poot.TensorType) int {
	if t.DType == poot.F32 || t.DType == poot.I32 {
		return 4
	}
	return 1
}

func ruleBroadcast(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	xt, ot := c.typ(e.Inputs[0]), c.typ(e.Out)
	xs, os := phys(xt), phys(ot)
	ss := stridesOf(xs)
	for i := range ss {
		if xs[i] == 1 && os[i] != 1 {
			ss[i] = 0
		}
	}
	s := newStrided(unitOf(xt), os, 0, stridesOf(os), 0, ss)
	return func() error { s.copy(out, x); return nil }, nil
}

func ruleTranspose(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	xt := c.typ(e.Inputs[0])
	perm := append([]int(nil), e.Params.Perm...)
	if trailing(xt) {
		perm = append(perm, len(perm))
	}
	xst := stridesOf(phys(xt))
	os := phys(c.typ(e.Out))
	ss := make([]int, len(perm))
	for i, p := range perm {
		ss[i] = xst[p]
	}
	s := newStrided(unitOf(xt), os, 0, stridesOf(os), 0, ss)
	return func() error { s.copy(out, x); return nil }, nil
}

func ruleSlice(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	xt := c.typ(e.Inputs[0])
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
	os := phys(c.typ(e.Out))
	s := newStrided(unitOf(xt), os, 0, stridesOf(os), so, ss)
	return func() error { s.copy(out, x); return nil }, nil
}

func ruleConcat(c *compiler, e *poot.Eqn) (func() error, error) {
	out := c.out(e)
	axis := e.Params.Axis
	ds := stridesOf(phys(c.typ(e.Out)))
	var parts []*strided
	var srcs []*buf
	off := 0
	for j, id := range e.Inputs {
		xt := c.typ(id)
		xs := phys(xt)
		parts = append(parts, newStrided(unitOf(xt), xs, off*ds[axis], ds, 0, stridesOf(xs)))
		srcs = append(srcs, c.in(e, j))
		off += xt.Shape[axis]
	}
	return func() error {
		for j, p := range parts {
			p.copy(out, srcs[j])
		}
		return nil
	}, nil
}

// rowBytes is the bytes of one index of the first axis.
func rowBytes(t poot.TensorType) int {
	return int(t.Bytes()) / t.Shape[0]
}

func ruleGather(c *compiler, e *poot.Eqn) (func() error, error) {
	table, idx, out := c.in(e, 0), c.in(e, 1), c.out(e)
	tt := c.typ(e.Inputs[0])
	rows, n := tt.Shape[0], rowBytes(tt)
	return func() error {
		for i, r := range idx.i {
			if r < 0 || int(r) >= rows {
				return fmt.Errorf("%w: index %d (element %d) outside [0, %d)", interp.ErrIndexRange, r, i, rows)
			}
			copy(out.b[i*n:(i+1)*n], table.b[int(r)*n:(int(r)+1)*n])
		}
		return nil
	}, nil
}

func ruleWriteRows(c *compiler, e *poot.Eqn) (func() error, error) {
	dst, idx, src, out := c.in(e, 0), c.in(e, 1), c.in(e, 2), c.out(e)
	dt := c.typ(e.Inputs[0])
	rows, n := dt.Shape[0], rowBytes(dt)
	inPlace := c.sameStorage(e.Inputs[0], e.Out)
	return func() error {
		if i := semantics.OutOfRange(idx.i, rows); i >= 0 {
			return fmt.Errorf("%w: index %d (row %d of the source) outside [0, %d)", interp.ErrIndexRange, idx.i[i], i, rows)
		}
		if !inPlace {
			copy(out.b, dst.b)
		}
		for i, r := range idx.i {
			copy(out.b[int(r)*n:(int(r)+1)*n], src.b[i*n:(i+1)*n])
		}
		return nil
	}, nil
}

func ruleCast(c *compiler, e *poot.Eqn) (func() error, error) {
	x, out := c.in(e, 0), c.out(e)
	xt := c.typ(e.Inputs[0])
	from, to := xt.DType, e.Params.DType
	n := int(xt.Shape.Size())
	if from == to {
		return func() error { copy(out.b, x.b); return nil }, nil
	}
	if from.Packed() {
		k := xt.Shape[len(xt.Shape)-1]
		return func() error { return semantics.DequantizeRows(from, out.f[:n], x.b, k) }, nil
	}
	var floats []float32
	var ints []int32
	switch from {
	case poot.F16, poot.BF16, poot.F32:
		floats = make([]float32, n)
	default:
		ints = make([]int32, n)
	}
	return func() error {
		switch from {
		case poot.F32:
			copy(floats, x.f)
		case poot.F16:
			if to == poot.F32 {
				quant.F16RowToF32(out.f, x.b)
				return nil
			}
			quant.F16RowToF32(floats, x.b)
		case poot.BF16:
			if to == poot.F32 {
				quant.BF16RowToF32(out.f, x.b)
				return nil
			}
			quant.BF16RowToF32(floats, x.b)
		case poot.I32:
			copy(ints, x.i)
		case poot.Bool:
			for i, b := range x.b {
				ints[i] = int32(b2u(b != 0))
			}
		}
		if floats != nil {
			semantics.CastF32(to, floats, out.f, out.i, out.b)
		} else {
			semantics.CastI32(to, ints, out.f, out.i, out.b)
		}
		return nil
	}, nil
}
