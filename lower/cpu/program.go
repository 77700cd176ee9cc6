package cpu

import (
	"math"
	"slices"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/hostexec"
	"github.com/pootlabs/poot/kernels"
	"github.com/pootlabs/poot/lower"
)

// chunk is the number of elements a program runs at a time: its registers
// are chunks of this many float32 values, which stay in the L1 cache.
const chunk = 256

// progKernel runs a lower.Program (an Elementwise kernel) or a program
// followed by a last-axis reduction (a Reduce kernel).
type progKernel struct {
	x      *Exec
	prog   *lower.Program
	loads  []*buf
	stores []*buf
	parts  int
	regs   [][]float32 // per part: one chunk per register
	// views, per part, are the load registers of the chunk being run: a
	// window on the loaded buffer itself for a contiguous F32 load that no
	// store of the program writes (direct[i]), the register otherwise.
	views  [][][]float32
	direct []bool
	views1 []lower.Load // the loads without their axes of one element, so runs are long
	idx    [][]int      // per part: the multi-index of a strided load
	fn     func(lo, hi int)

	// Reduce kernels only.
	reduce poot.Op
	rowLen int
	out    *buf

	exact bool // Exp in float64, as the oracle computes it
}

func compileProgram(c *compiler, k *lower.Kernel) (func() error, error) {
	return newProgKernel(c, k).run, nil
}

func newProgKernel(c *compiler, k *lower.Kernel) *progKernel {
	pr := k.Program
	pk := &progKernel{x: c.x, prog: pr, parts: c.x.pool.Workers(), exact: c.exact}
	for _, l := range pr.Loads {
		if l.Imm {
			pk.loads = append(pk.loads, nil)
		} else {
			pk.loads = append(pk.loads, c.bufs[l.Value])
		}
	}
	nreg := len(pr.Loads) + len(pr.Code)
	maxRank := 0
	for _, l := range pr.Loads {
		maxRank = max(maxRank, len(l.Shape))
	}
	for _, st := range pr.Stores {
		maxRank = max(maxRank, len(st.Shape))
	}
	for range pk.parts {
		regs := make([]float32, nreg*chunk)
		for li, l := range pr.Loads {
			if l.Imm { // never written by the code: filled once
				for i := range chunk {
					regs[li*chunk+i] = l.Const
				}
			}
		}
		pk.regs = append(pk.regs, regs)
		pk.views = append(pk.views, make([][]float32, len(pr.Loads)))
		pk.idx = append(pk.idx, make([]int, maxRank))
	}
	if k.Kind == lower.Reduce {
		pk.reduce = k.Op
		last := k.Eqns[len(k.Eqns)-1]
		e := c.g.Eqn(last)
		s := c.shape(e.Inputs[0])
		pk.rowLen = s[len(s)-1]
		pk.out = c.bufs[e.Out]
		pk.fn = pk.doRows
	} else {
		pk.fn = pk.doRange
	}
	for i, s := range pr.Stores {
		if i == pr.Reduced {
			pk.stores = append(pk.stores, nil)
		} else {
			pk.stores = append(pk.stores, c.bufs[s.Value])
		}
	}
	for li, l := range pr.Loads {
		pk.direct = append(pk.direct, !l.Imm && l.Strides == nil && l.DType == poot.F32 && !slices.Contains(pk.stores, pk.loads[li]))
		pk.views1 = append(pk.views1, squeeze(l))
	}
	return pk
}

// rowsKernel runs a lower.Rows kernel: for each row, every part over that
// row: a reduction (with its prologue) and a full-row program over the
// row's elements, a per-row program over the row's one element.
type rowsKernel struct {
	x            *Exec
	parts        []*progKernel
	full         []bool
	rows, rowLen int
	workers      int
	fn           func(lo, hi int)
}

func compileRows(c *compiler, k *lower.Kernel) (func() error, error) {
	rk := &rowsKernel{x: c.x, rowLen: k.RowLen, workers: c.x.pool.Workers()}
	rk.rows = k.Parts[0].Program.Size / k.RowLen // the first part is a reduction
	for _, q := range k.Parts {
		rk.parts = append(rk.parts, newProgKernel(c, q))
		rk.full = append(rk.full, q.Kind == lower.Elementwise && q.Program.Size == rk.rows*k.RowLen)
	}
	rk.fn = rk.do
	return rk.run, nil
}

func (rk *rowsKernel) run() error {
	if rk.workers == 1 || rk.rows < 2 || rk.rows*rk.rowLen < 1<<14 {
		rk.work(0, 0, rk.rows)
		return nil
	}
	rk.x.pool.Run(rk.workers, rk.fn)
	return nil
}

func (rk *rowsKernel) do(lo, hi int) {
	for p := lo; p < hi; p++ {
		rk.work(p, rk.rows*p/rk.workers, rk.rows*(p+1)/rk.workers)
	}
}

func (rk *rowsKernel) work(p, a, b int) {
	L := rk.rowLen
	for r := a; r < b; r++ {
		for i, q := range rk.parts {
			if rk.full[i] {
				q.work(p, r*L, (r+1)*L)
			} else {
				q.work(p, r, r+1) // a reduction's row, or a per-row program's element
			}
		}
	}
}

func (pk *progKernel) run() error {
	n := pk.prog.Size
	if pk.reduce != 0 {
		n = pk.prog.Size / pk.rowLen
	}
	if pk.prog.Size*max(len(pk.prog.Code), 1) < 1<<14 || pk.parts == 1 || n < 2 {
		pk.work(0, 0, n)
		return nil
	}
	pk.x.pool.Run(pk.parts, pk.fn)
	return nil
}

// doRange runs parts [lo, hi) of an elementwise program.
func (pk *progKernel) doRange(lo, hi int) {
	for p := lo; p < hi; p++ {
		a, b := partSpan(pk.prog.Size, pk.parts, p)
		pk.work(p, a, b)
	}
}

// partSpan is part p's elements of n split in parts, cut at multiples of
// chunk (the last part takes the rest).
func partSpan(n, parts, p int) (a, b int) {
	per := (n/parts + chunk - 1) / chunk * chunk
	if p == parts-1 {
		return min(p*per, n), n
	}
	return min(p*per, n), min((p+1)*per, n)
}

// doRows runs parts [lo, hi) of a reduction.
func (pk *progKernel) doRows(lo, hi int) {
	rows := pk.prog.Size / pk.rowLen
	for p := lo; p < hi; p++ {
		pk.work(p, rows*p/pk.parts, rows*(p+1)/pk.parts)
	}
}

// work computes elements [a, b) (rows [a, b) for a reduction) with part
// p's registers.
func (pk *progKernel) work(p, a, b int) {
	if pk.reduce == 0 {
		for c0 := a; c0 < b; c0 += chunk {
			c1 := min(c0+chunk, b)
			pk.eval(p, c0, c1)
			for s, st := range pk.prog.Stores {
				pk.store(p, st, pk.stores[s], pk.reg(p, st.Reg, c1-c0), c0)
			}
		}
		return
	}
	reg := pk.prog.Stores[pk.prog.Reduced].Reg
	L := pk.rowLen
	for r := a; r < b; r++ {
		var sum float64
		m := float32(math.Inf(-1))
		for c0 := r * L; c0 < (r+1)*L; c0 += chunk {
			c1 := min(c0+chunk, (r+1)*L)
			pk.eval(p, c0, c1)
			for s, st := range pk.prog.Stores {
				if s != pk.prog.Reduced {
					pk.store(p, st, pk.stores[s], pk.reg(p, st.Reg, c1-c0), c0)
				}
			}
			v := pk.reg(p, reg, c1-c0)
			if pk.reduce == poot.ReduceSum {
				sum += kernels.Sum(v)
			} else {
				for _, x := range v {
					m = max(m, x)
				}
			}
		}
		if pk.reduce == poot.ReduceSum {
			pk.out.f[r] = float32(sum)
		} else {
			pk.out.f[r] = m
		}
	}
}

func (pk *progKernel) reg(p, r, n int) []float32 {
	if r < len(pk.views[p]) {
		return pk.views[p][r][:n]
	}
	return pk.regs[p][r*chunk : r*chunk+n]
}

func (pk *progKernel) store(p int, st lower.Store, dst *buf, v []float32, c0 int) {
	if st.Strides != nil {
		pk.scatter(p, st, dst, v, c0)
		return
	}
	if st.DType == poot.F32 {
		copy(dst.f[c0:c0+len(v)], v)
		return
	}
	o := dst.b[c0 : c0+len(v)]
	for i, x := range v {
		o[i] = hostexec.Bool(x != 0)
	}
}

// eval computes every register over elements [c0, c1).
func (pk *progKernel) eval(p, c0, c1 int) {
	n := c1 - c0
	pr := pk.prog
	for li, l := range pr.Loads {
		if pk.direct[li] {
			pk.views[p][li] = pk.loads[li].f[c0:c1]
			continue
		}
		r := pk.regs[p][li*chunk : li*chunk+n]
		pk.views[p][li] = r
		switch {
		case l.Imm:
		case l.Strides == nil:
			for i, b := range pk.loads[li].b[c0:c1] {
				r[i] = b2f(b != 0)
			}
		default:
			pk.strided(p, pk.views1[li], pk.loads[li], r, c0)
		}
	}
	base := len(pr.Loads)
	for ci, in := range pr.Code {
		dst := pk.reg(p, base+ci, n)
		x := pk.reg(p, in.Args[0], n)
		switch in.Op.Arity() {
		case 1:
			unaryChunk(in, dst, x, pk.exact)
		case 2:
			binaryChunk(in, dst, x, pk.reg(p, in.Args[1], n))
		default:
			t, f := pk.reg(p, in.Args[1], n), pk.reg(p, in.Args[2], n)
			for i, c := range x {
				if c != 0 {
					dst[i] = t[i]
				} else {
					dst[i] = f[i]
				}
			}
		}
	}
}

// strided fills r with a view load starting at flat element c0, a run
// along the last axis at a time: a copy when the view is contiguous there,
// a fill when it repeats one element (a broadcast).
func (pk *progKernel) strided(p int, l lower.Load, src *buf, r []float32, c0 int) {
	rank := len(l.Shape)
	idx := pk.idx[p][:rank]
	rest := c0
	off := l.Offset
	for a := rank - 1; a >= 0; a-- {
		idx[a] = rest % l.Shape[a]
		rest /= l.Shape[a]
		off += idx[a] * l.Strides[a]
	}
	last := rank - 1
	ls, ln := 1, 1
	if rank > 0 {
		ls, ln = l.Strides[last], l.Shape[last]
	}
	isF32 := l.DType == poot.F32
	for i := 0; i < len(r); {
		run := len(r) - i
		if rank > 0 {
			run = min(run, ln-idx[last])
		}
		dst := r[i : i+run]
		switch {
		case isF32 && ls == 1:
			copy(dst, src.f[off:off+run])
		case isF32 && ls == 0:
			dst[0] = src.f[off]
			for n := 1; n < len(dst); n *= 2 { // a broadcast: doubling copies
				copy(dst[n:], dst[:n])
			}
		case isF32:
			for j := range dst {
				dst[j] = src.f[off+j*ls]
			}
		default:
			for j := range dst {
				dst[j] = b2f(src.b[off+j*ls] != 0)
			}
		}
		i += run
		if rank == 0 {
			break
		}
		// Advance the multi-index past the run.
		off += run * ls
		idx[last] += run
		for a := last; a > 0 && idx[a] == l.Shape[a]; a-- {
			off -= l.Strides[a] * l.Shape[a]
			idx[a] = 0
			idx[a-1]++
			off += l.Strides[a-1]
		}
	}
}

// squeeze returns view load l without its axes of one element, which
// index nothing: a slice one wide on the last axis then runs along the
// axis before it instead of one element at a time.
func squeeze(l lower.Load) lower.Load {
	if l.Strides == nil {
		return l
	}
	sh, st := poot.Shape{}, []int{}
	for a, d := range l.Shape {
		if d != 1 {
			sh, st = append(sh, d), append(st, l.Strides[a])
		}
	}
	l.Shape, l.Strides = sh, st
	return l
}

// scatter writes v, elements c0… of a strided store, to their places in
// dst (F32), a run along the last axis at a time.
func (pk *progKernel) scatter(p int, st lower.Store, dst *buf, v []float32, c0 int) {
	rank := len(st.Shape)
	if rank == 0 {
		dst.f[st.Offset] = v[0]
		return
	}
	idx := pk.idx[p][:rank]
	rest, off := c0, st.Offset
	for a := rank - 1; a >= 0; a-- {
		idx[a] = rest % st.Shape[a]
		rest /= st.Shape[a]
		off += idx[a] * st.Strides[a]
	}
	last := rank - 1
	ls, ln := st.Strides[last], st.Shape[last]
	for i := 0; i < len(v); {
		run := min(len(v)-i, ln-idx[last])
		src := v[i : i+run]
		if ls == 1 {
			copy(dst.f[off:off+run], src)
		} else {
			o := dst.f[off : off+(run-1)*ls+1]
			for j, x := range src {
				o[j*ls] = x
			}
		}
		i += run
		off += run * ls
		idx[last] += run
		for a := last; a > 0 && idx[a] == st.Shape[a]; a-- {
			off -= st.Strides[a] * st.Shape[a]
			idx[a] = 0
			idx[a-1]++
			off += st.Strides[a-1]
		}
	}
}

// b2f is a Bool as a register holds it.
func b2f(b bool) float32 {
	if b {
		return 1
	}
	return 0
}

// minusOnes negates a chunk by one vector product.
var minusOnes = func() (m [chunk]float32) {
	for i := range m {
		m[i] = -1
	}
	return m
}()

// unaryChunk runs a unary instruction over a chunk: a few primitives by
// loops of their own (Exp approximated unless exact), every other by the
// scalar meaning of its record.
func unaryChunk(in lower.Instr, dst, x []float32, exact bool) {
	dst = dst[:len(x)]
	switch in.Op {
	case poot.Neg:
		_ = kernels.Arith(kernels.ArithMul, dst, x, minusOnes[:]) // x·-1 is -x, exactly
	case poot.Not:
		for i, v := range x {
			dst[i] = b2f(v == 0)
		}
	case poot.Rsqrt:
		for i, v := range x {
			dst[i] = float32(1 / math.Sqrt(float64(v)))
		}
	case poot.Exp:
		if exact {
			for i, v := range x {
				dst[i] = float32(math.Exp(float64(v)))
			}
			break
		}
		if kernels.ExpInRange(dst, x) {
			break // the vector kernel, when the chunk needs no special case
		}
		for i, v := range x {
			dst[i] = expf(v)
		}
	default:
		scalarChunk(in, dst, x, x)
	}
}

// binaryChunk runs a binary instruction over a chunk: arithmetic by package
// kernels' vector loops, logic by loops of its own, every other primitive
// by its scalar meaning.
func binaryChunk(in lower.Instr, dst, x, y []float32) {
	dst, y = dst[:len(x)], y[:len(x)]
	switch in.Op {
	case poot.Add:
		_ = kernels.Arith(kernels.ArithAdd, dst, x, y) // lengths match
	case poot.Sub:
		_ = kernels.Arith(kernels.ArithSub, dst, x, y)
	case poot.Mul:
		_ = kernels.Arith(kernels.ArithMul, dst, x, y)
	case poot.Div:
		_ = kernels.Arith(kernels.ArithDiv, dst, x, y)
	case poot.And:
		for i, v := range x {
			dst[i] = b2f(v != 0 && y[i] != 0)
		}
	case poot.Or:
		for i, v := range x {
			dst[i] = b2f(v != 0 || y[i] != 0)
		}
	default:
		scalarChunk(in, dst, x, y)
	}
}

// scalarChunk applies the scalar meaning of the instruction's primitive to
// registers of F32 values or of Bools held as 0 and 1 (y is x for a unary
// primitive). The planner fuses only dtypes the primitive accepts.
func scalarChunk(in lower.Instr, dst, x, y []float32) {
	s, _ := in.Op.Scalar()
	switch {
	case in.DType == poot.F32 && s.F32 != nil:
		f := s.F32
		for i, v := range x {
			dst[i] = f(v, y[i])
		}
	case in.DType == poot.F32 && s.CompareF32 != nil:
		f := s.CompareF32
		for i, v := range x {
			dst[i] = b2f(f(v, y[i]))
		}
	case in.DType == poot.Bool && s.Bool != nil:
		f := s.Bool
		for i, v := range x {
			dst[i] = b2f(f(v != 0, y[i] != 0))
		}
	}
}
