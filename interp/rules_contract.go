package interp

import (
	"fmt"
	"runtime"
	"sync"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/semantics"
	"github.com/pootlabs/poot/quant"
)

func init() {
	rules[poot.MatMul] = ruleMatMul
	rules[poot.IndexedMatMul] = ruleIndexedMatMul
}

// dot4 is four dots of a with four rows at once. Each sum is still taken in
// element order, so the results equal semantics.Dot64's exactly; the four independent
// chains only let the processor overlap them.
func dot4(a, b0, b1, b2, b3 []float32) (s0, s1, s2, s3 float64) {
	n := len(a)
	b0, b1, b2, b3 = b0[:n], b1[:n], b2[:n], b3[:n]
	for i, v := range a {
		x := float64(v)
		s0 += x * float64(b0[i])
		s1 += x * float64(b1[i])
		s2 += x * float64(b2[i])
		s3 += x * float64(b3[i])
	}
	return
}

// weight reads the rows of a contraction's weight operand as stored: F32
// rows are used in place, every other float dtype is decoded one row at a
// time into a caller's scratch row.
type weight struct {
	w       *buffer
	k       int // elements per row
	rowSize int // bytes per stored row
}

func newWeight(w *buffer, k int) (*weight, error) {
	r := &weight{w: w, k: k}
	if w.t.DType != poot.F32 {
		if !quant.Supported(w.t.DType) {
			return nil, fmt.Errorf("%w: contraction over %v", ErrUnsupported, w.t.DType)
		}
		r.rowSize = int(w.t.DType.RowBytes(int64(k)))
	}
	return r, nil
}

// row returns row j (counting rows of k elements from the start), decoding
// into scratch (k elements) when the weight is not F32.
func (r *weight) row(j int, scratch []float32) ([]float32, error) {
	if r.w.t.DType == poot.F32 {
		return r.w.f[j*r.k : (j+1)*r.k], nil
	}
	if err := quant.DequantizeRow(r.w.t.DType, scratch, r.w.b[j*r.rowSize:(j+1)*r.rowSize]); err != nil {
		return nil, err
	}
	return scratch, nil
}

// parallelWork is the number of multiply-adds above which a contraction is
// split across goroutines by output column. Every output is computed by
// one goroutine in the same order as without the split, so the result does
// not depend on it.
const parallelWork = 1 << 20

// matmul is a compiled MatMul.
type matmul struct {
	a, out  *buffer
	w       *weight
	batch   int
	m, n, k int
	shared  bool
	serial  []float32 // scratch of 4·k floats for the serial case
}

// run computes every batch; a large contraction is split across
// goroutines by contiguous ranges of output columns.
func (mm *matmul) run() error {
	parts := 1
	if mm.m*mm.n*mm.k >= parallelWork {
		parts = min(runtime.GOMAXPROCS(0), max(1, mm.n/16))
	}
	for bi := 0; bi < mm.batch; bi++ {
		if parts == 1 {
			if err := mm.cols(bi, 0, mm.n, mm.serial); err != nil {
				return err
			}
			continue
		}
		if err := mm.parallel(bi, parts); err != nil {
			return err
		}
	}
	return nil
}

// parallel computes batch bi in parts goroutines. It is a function of its
// own so that the serial path's variables never escape to the heap.
func (mm *matmul) parallel(bi, parts int) error {
	errs := make([]error, parts)
	var wg sync.WaitGroup
	for p := range parts {
		lo, hi := mm.n*p/parts, mm.n*(p+1)/parts
		wg.Go(func() { errs[p] = mm.cols(bi, lo, hi, make([]float32, 4*mm.k)) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}

// cols computes output columns [lo, hi) of batch bi, four weight rows at a
// time.
func (mm *matmul) cols(bi, lo, hi int, scratch []float32) error {
	m, n, k := mm.m, mm.n, mm.k
	wbase := bi * n
	if mm.shared {
		wbase = 0
	}
	j := lo
	for ; j+4 <= hi; j += 4 {
		var rows [4][]float32
		for q := range rows {
			r, err := mm.w.row(wbase+j+q, scratch[q*k:(q+1)*k])
			if err != nil {
				return err
			}
			rows[q] = r
		}
		for i := 0; i < m; i++ {
			ar := mm.a.f[(bi*m+i)*k : (bi*m+i+1)*k]
			s0, s1, s2, s3 := dot4(ar, rows[0], rows[1], rows[2], rows[3])
			o := mm.out.f[(bi*m+i)*n+j:]
			o[0], o[1], o[2], o[3] = float32(s0), float32(s1), float32(s2), float32(s3)
		}
	}
	for ; j < hi; j++ {
		row, err := mm.w.row(wbase+j, scratch[:k])
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

func ruleMatMul(c *compiler, e *poot.Eqn) (func() error, error) {
	a, b, out := c.in(e, 0), c.in(e, 1), c.out(e)
	as, bs := a.t.Shape, b.t.Shape
	ra := len(as)
	m, k := as[ra-2], as[ra-1]
	w, err := newWeight(b, k)
	if err != nil {
		return nil, err
	}
	mm := &matmul{a: a, out: out, w: w, m: m, n: bs[len(bs)-2], k: k,
		batch: int(as.Size()) / (m * k), shared: len(bs) == 2, serial: make([]float32, 4*k)}
	return mm.run, nil
}

func ruleIndexedMatMul(c *compiler, e *poot.Eqn) (func() error, error) {
	x, wb, idx, out := c.in(e, 0), c.in(e, 1), c.in(e, 2), c.out(e)
	r, k := x.t.Shape[0], x.t.Shape[1]
	experts, n := wb.t.Shape[0], wb.t.Shape[1]
	w, err := newWeight(wb, k)
	if err != nil {
		return nil, err
	}
	scratch := make([]float32, k)
	return func() error {
		if i := semantics.OutOfRange(idx.i[:r], experts); i >= 0 {
			return fmt.Errorf("%w: row %d selects expert %d of %d", ErrIndexRange, i, idx.i[i], experts)
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
