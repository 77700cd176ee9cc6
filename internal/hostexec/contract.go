package hostexec

import (
	"fmt"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/quant"
)

// dot64 is the float64 dot product of two float32 rows, summed in element
// order. Products of float32 values are exact in float64, so the only
// roundings are those of the additions, and the result is exactly what
// quant.DotRow gives over the same decoded row: a definition anyone can
// reproduce bit for bit.
func dot64(a, b []float32) float64 {
	b = b[:len(a)]
	var s float64
	for i, v := range a {
		s += float64(v) * float64(b[i])
	}
	return s
}

// dot4 is four dots of a with four rows at once. Each sum is still taken
// in element order, so the results equal dot64's exactly; the four
// independent chains only let the processor overlap them.
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
// rows in place, every other float dtype decoded one row at a time into a
// caller's scratch row.
type weight struct {
	w       Storage
	dt      poot.DType
	k       int // elements per row
	rowSize int // bytes per stored row
}

func newWeight(w Storage, dt poot.DType, k int) (*weight, error) {
	if !quant.Supported(dt) {
		return nil, fmt.Errorf("%w: contraction over %v", ErrUnsupported, dt)
	}
	return &weight{w: w, dt: dt, k: k, rowSize: int(dt.RowBytes(int64(k)))}, nil
}

// row returns row j (counting rows of k elements from the start), decoding
// into scratch (k elements) when the weight is not F32.
func (r *weight) row(j int, scratch []float32) ([]float32, error) {
	b := r.w.Bytes()
	switch r.dt {
	case poot.F32:
		return r.w.F32()[j*r.k : (j+1)*r.k], nil
	case poot.F16:
		quant.F16RowToF32(scratch, b[j*r.rowSize:(j+1)*r.rowSize])
		return scratch, nil
	case poot.BF16:
		quant.BF16RowToF32(scratch, b[j*r.rowSize:(j+1)*r.rowSize])
		return scratch, nil
	}
	if err := quant.DequantizeRow(r.dt, scratch, b[j*r.rowSize:(j+1)*r.rowSize]); err != nil {
		return nil, err
	}
	return scratch, nil
}

// parallelWork is the number of multiply-adds from which a MatMul is split
// by output columns across Eqn.Par.
const parallelWork = 1 << 15

// matmul is a compiled MatMul.
type matmul struct {
	a, out  Storage
	w       *weight
	batch   int
	m, n, k int
	shared  bool
	par     Parallel
	parts   int
	scratch [][]float32 // per part: 4·k floats
	errs    []error
	fn      func(lo, hi int)
}

func ruleMatMul(e *Eqn) (func() error, error) {
	as, bs := e.In[0].Shape, e.In[1].Shape
	ra := len(as)
	m, k := as[ra-2], as[ra-1]
	w, err := newWeight(e.Args[1], e.In[1].DType, k)
	if err != nil {
		return nil, err
	}
	mm := &matmul{a: e.Args[0], out: e.Res, w: w, m: m, n: bs[len(bs)-2], k: k,
		batch: size(e.In[0]) / (m * k), shared: len(bs) == 2, par: e.Par, parts: 1}
	if mm.par != nil && mm.batch*m*mm.n*k >= parallelWork {
		mm.parts = max(1, min(mm.par.Workers(), mm.n/4))
	}
	for range mm.parts {
		mm.scratch = append(mm.scratch, make([]float32, 4*k))
	}
	mm.errs = make([]error, mm.parts)
	mm.fn = mm.do
	return mm.run, nil
}

func (mm *matmul) run() error {
	if mm.parts == 1 {
		mm.do(0, 1)
	} else {
		mm.par.Run(mm.parts, mm.fn)
	}
	for i, err := range mm.errs {
		if err != nil {
			clear(mm.errs[i:])
			return err
		}
	}
	return nil
}

// do computes parts [lo, hi): part p holds a contiguous range of output
// columns of every batch.
func (mm *matmul) do(lo, hi int) {
	for p := lo; p < hi; p++ {
		j0, j1 := mm.n*p/mm.parts, mm.n*(p+1)/mm.parts
		for bi := 0; bi < mm.batch; bi++ {
			if err := mm.cols(bi, j0, j1, mm.scratch[p]); err != nil {
				mm.errs[p] = err
				break
			}
		}
	}
}

// cols computes output columns [lo, hi) of batch bi, four weight rows at a
// time.
func (mm *matmul) cols(bi, lo, hi int, scratch []float32) error {
	m, n, k := mm.m, mm.n, mm.k
	a, out := mm.a.F32(), mm.out.F32()
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
			ar := a[(bi*m+i)*k : (bi*m+i+1)*k]
			s0, s1, s2, s3 := dot4(ar, rows[0], rows[1], rows[2], rows[3])
			o := out[(bi*m+i)*n+j:]
			o[0], o[1], o[2], o[3] = float32(s0), float32(s1), float32(s2), float32(s3)
		}
	}
	for ; j < hi; j++ {
		row, err := mm.w.row(wbase+j, scratch[:k])
		if err != nil {
			return err
		}
		for i := 0; i < m; i++ {
			ar := a[(bi*m+i)*k : (bi*m+i+1)*k]
			out[(bi*m+i)*n+j] = float32(dot64(ar, row))
		}
	}
	return nil
}

func ruleIndexedMatMul(e *Eqn) (func() error, error) {
	x, idx, out := e.Args[0], e.Args[2], e.Res
	r, k := e.In[0].Shape[0], e.In[0].Shape[1]
	experts, n := e.In[1].Shape[0], e.In[1].Shape[1]
	w, err := newWeight(e.Args[1], e.In[1].DType, k)
	if err != nil {
		return nil, err
	}
	scratch := make([]float32, k)
	return func() error {
		ix, xs, o := idx.I32()[:r], x.F32(), out.F32()
		if i := OutOfRange(ix, experts); i >= 0 {
			return fmt.Errorf("%w: row %d selects expert %d of %d", ErrIndexRange, i, ix[i], experts)
		}
		for i, ex := range ix {
			xr := xs[i*k : (i+1)*k]
			for j := 0; j < n; j++ {
				row, err := w.row(int(ex)*n+j, scratch)
				if err != nil {
					return err
				}
				o[i*n+j] = float32(dot64(xr, row))
			}
		}
		return nil
	}, nil
}
