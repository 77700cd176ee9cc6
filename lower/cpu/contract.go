package cpu

import (
	"fmt"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/semantics"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/kernels"
	"github.com/pootlabs/poot/quant"
)

// weightRows reads rows of k elements of a weight as stored.
type weightRows struct {
	w       *buf
	dt      poot.DType
	k       int
	rowSize int
}

func (r *weightRows) row(j int, scratch []float32) ([]float32, error) {
	switch r.dt {
	case poot.F32:
		return r.w.f[j*r.k : (j+1)*r.k], nil
	case poot.F16:
		quant.F16RowToF32(scratch, r.w.b[j*r.rowSize:(j+1)*r.rowSize])
		return scratch, nil
	case poot.BF16:
		quant.BF16RowToF32(scratch, r.w.b[j*r.rowSize:(j+1)*r.rowSize])
		return scratch, nil
	}
	if err := quant.DequantizeRow(r.dt, scratch, r.w.b[j*r.rowSize:(j+1)*r.rowSize]); err != nil {
		return nil, err
	}
	return scratch, nil
}

func newWeightRows(w *buf, dt poot.DType, k int) (*weightRows, error) {
	if dt != poot.F32 && dt != poot.F16 && dt != poot.BF16 && !quant.Supported(dt) {
		return nil, fmt.Errorf("%w: contraction over %v", interp.ErrUnsupported, dt)
	}
	return &weightRows{w: w, dt: dt, k: k, rowSize: int(dt.RowBytes(int64(k)))}, nil
}

// gmatmul is the generic MatMul: any weight dtype, batched or shared,
// float64 sums, split by output columns across the pool.
type gmatmul struct {
	x       *Exec
	a, out  *buf
	w       *weightRows
	batch   int
	m, n, k int
	shared  bool
	parts   int
	scratch [][]float32
	errs    []error
	fn      func(lo, hi int)
}

func (mm *gmatmul) do(lo, hi int) {
	for p := lo; p < hi; p++ {
		j0, j1 := mm.n*p/mm.parts, mm.n*(p+1)/mm.parts
		for bi := 0; bi < mm.batch; bi++ {
			if err := mm.cols(bi, j0, j1, mm.scratch[p]); err != nil {
				mm.errs[p] = err
				return
			}
		}
	}
}

func (mm *gmatmul) cols(bi, j0, j1 int, scratch []float32) error {
	m, n, k := mm.m, mm.n, mm.k
	wbase := bi * n
	if mm.shared {
		wbase = 0
	}
	for j := j0; j < j1; j++ {
		row, err := mm.w.row(wbase+j, scratch)
		if err != nil {
			return err
		}
		for i := 0; i < m; i++ {
			ar := mm.a.f[(bi*m+i)*k : (bi*m+i+1)*k]
			mm.out.f[(bi*m+i)*n+j] = float32(semantics.Dot64(ar, row))
		}
	}
	return nil
}

func (mm *gmatmul) run() error {
	if mm.batch*mm.m*mm.n*mm.k < 1<<15 {
		return mm.serial()
	}
	clear(mm.errs)
	mm.x.pool.Run(mm.parts, mm.fn)
	for _, err := range mm.errs {
		if err != nil {
			return err
		}
	}
	return nil
}

func (mm *gmatmul) serial() error {
	for bi := 0; bi < mm.batch; bi++ {
		if err := mm.cols(bi, 0, mm.n, mm.scratch[0]); err != nil {
			return err
		}
	}
	return nil
}

func ruleMatMul(c *compiler, e *poot.Eqn) (func() error, error) {
	as, bs := c.shape(e.Inputs[0]), c.shape(e.Inputs[1])
	ra := len(as)
	m, k := as[ra-2], as[ra-1]
	w, err := newWeightRows(c.in(e, 1), c.dtype(e.Inputs[1]), k)
	if err != nil {
		return nil, err
	}
	parts := c.x.pool.Workers()
	mm := &gmatmul{x: c.x, a: c.in(e, 0), out: c.out(e), w: w, m: m, n: bs[len(bs)-2], k: k,
		batch: int(as.Size()) / (m * k), shared: len(bs) == 2, parts: parts, errs: make([]error, parts)}
	for range parts {
		mm.scratch = append(mm.scratch, make([]float32, k))
	}
	mm.fn = mm.do
	return mm.run, nil
}

// ruleIndexedMatMul is the oracle's loop over this backend's weight-row
// reader; the readers are different types, so the loop is written in each.
func ruleIndexedMatMul(c *compiler, e *poot.Eqn) (func() error, error) {
	xs, ws := c.shape(e.Inputs[0]), c.shape(e.Inputs[1])
	r, k := xs[0], xs[1]
	experts, n := ws[0], ws[1]
	x, idx, out := c.in(e, 0), c.in(e, 2), c.out(e)
	w, err := newWeightRows(c.in(e, 1), c.dtype(e.Inputs[1]), k)
	if err != nil {
		return nil, err
	}
	scratch := make([]float32, k)
	return func() error {
		if i := semantics.OutOfRange(idx.i[:r], experts); i >= 0 {
			return fmt.Errorf("%w: row %d selects expert %d of %d", interp.ErrIndexRange, i, idx.i[i], experts)
		}
		for i := 0; i < r; i++ {
			ex := int(idx.i[i])
			xr := x.f[i*k : (i+1)*k]
			for j := 0; j < n; j++ {
				row, err := w.row(ex*n+j, scratch)
				if err != nil {
					return err
				}
				out.f[i*n+j] = float32(semantics.Dot64(xr, row))
			}
		}
		return nil
	}, nil
}

// contract is the fast MatMul with a rank-2 weight: package kernels'
// products, activations prepared (quantized for packed weights) once per
// step, weight rows split across the pool.
type contract struct {
	x       *Exec
	a, w, o *buf
	wt      poot.DType
	t, k, n int
	acts    kernels.Acts
}

func (ct *contract) run() error {
	if err := ct.acts.Prepare(ct.wt, ct.a.f[:ct.t*ct.k], ct.t, ct.k); err != nil {
		return err
	}
	pool := ct.x.pool
	if ct.t*ct.n*ct.k < 1<<16 {
		pool = nil // waking the workers costs more than the product
	}
	return kernels.MatMul(pool, ct.wt, ct.o.f, ct.w.b, &ct.acts, ct.n)
}

func compileContract(c *compiler, e *poot.Eqn) (func() error, error) {
	as, bs := c.shape(e.Inputs[0]), c.shape(e.Inputs[1])
	k := as[len(as)-1]
	ct := &contract{x: c.x, a: c.in(e, 0), w: c.in(e, 1), o: c.out(e), wt: c.dtype(e.Inputs[1]),
		t: int(as.Size()) / k, k: k, n: bs[0]}
	return ct.run, nil
}

// indexed is the fast IndexedMatMul: each row's product with its own
// expert's matrix through package kernels, the expert's rows split across
// the pool.
type indexed struct {
	x          *Exec
	a, w, idx  *buf
	o          *buf
	wt         poot.DType
	r, k, n, e int
	expert     int // bytes of one expert's matrix
	acts       kernels.Acts
}

func (ix *indexed) run() error {
	if i := semantics.OutOfRange(ix.idx.i[:ix.r], ix.e); i >= 0 {
		return fmt.Errorf("%w: row %d selects expert %d of %d", interp.ErrIndexRange, i, ix.idx.i[i], ix.e)
	}
	pool := ix.x.pool
	if ix.n*ix.k < 1<<16 {
		pool = nil
	}
	for i := 0; i < ix.r; i++ {
		ex := int(ix.idx.i[i])
		if err := ix.acts.Prepare(ix.wt, ix.a.f[i*ix.k:(i+1)*ix.k], 1, ix.k); err != nil {
			return err
		}
		w := ix.w.b[ex*ix.expert : (ex+1)*ix.expert]
		if err := kernels.MatMul(pool, ix.wt, ix.o.f[i*ix.n:(i+1)*ix.n], w, &ix.acts, ix.n); err != nil {
			return err
		}
	}
	return nil
}

func compileIndexed(c *compiler, e *poot.Eqn) (func() error, error) {
	xs, ws := c.shape(e.Inputs[0]), c.shape(e.Inputs[1])
	wt := c.dtype(e.Inputs[1])
	ix := &indexed{x: c.x, a: c.in(e, 0), w: c.in(e, 1), idx: c.in(e, 2), o: c.out(e), wt: wt,
		r: xs[0], k: xs[1], e: ws[0], n: ws[1], expert: ws[1] * int(wt.RowBytes(int64(ws[2])))}
	return ix.run, nil
}
