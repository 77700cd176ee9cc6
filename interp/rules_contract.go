package interp

import (
	"fmt"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/quant"
)

func init() {
	rules[poot.MatMul] = ruleMatMul
	rules[poot.IndexedMatMul] = ruleIndexedMatMul
}

// dot is the float64 dot product of two float32 rows, summed in element
// order. Products of float32 values are exact in float64, so the only
// roundings are those of the additions, and the result is exactly what
// quant.DotRow gives over the same decoded row: a definition anyone can
// reproduce bit for bit.
func dot(a, b []float32) float64 {
	b = b[:len(a)]
	var s float64
	for i, v := range a {
		s += float64(v) * float64(b[i])
	}
	return s
}

// weightRows reads the rows of a contraction's weight operand as stored: F32
// rows are used in place, every other float dtype is decoded one row at a
// time into a scratch row.
type weightRows struct {
	w       *buffer
	k       int // elements per row
	rowSize int // bytes per stored row
	scratch []float32
}

func newWeightRows(w *buffer, k int) (*weightRows, error) {
	r := &weightRows{w: w, k: k}
	if w.t.DType != poot.F32 {
		if !quant.Supported(w.t.DType) {
			return nil, fmt.Errorf("%w: contraction over %v", ErrUnsupported, w.t.DType)
		}
		r.rowSize = int(w.t.DType.RowBytes(int64(k)))
		r.scratch = make([]float32, k)
	}
	return r, nil
}

// row returns row j (counting rows of k elements from the start) as float32.
func (r *weightRows) row(j int) ([]float32, error) {
	if r.w.t.DType == poot.F32 {
		return r.w.f[j*r.k : (j+1)*r.k], nil
	}
	if err := quant.DequantizeRow(r.w.t.DType, r.scratch, r.w.b[j*r.rowSize:(j+1)*r.rowSize]); err != nil {
		return nil, err
	}
	return r.scratch, nil
}

func ruleMatMul(c *compiler, e *poot.Eqn) (func() error, error) {
	a, b, out := c.in(e, 0), c.in(e, 1), c.out(e)
	as, bs := a.t.Shape, b.t.Shape
	ra := len(as)
	m, k := as[ra-2], as[ra-1]
	n := bs[len(bs)-2]
	batch := int(as.Size()) / (m * k)
	shared := len(bs) == 2
	w, err := newWeightRows(b, k)
	if err != nil {
		return nil, err
	}
	return func() error {
		for bi := 0; bi < batch; bi++ {
			wbase := bi * n
			if shared {
				wbase = 0
			}
			for j := 0; j < n; j++ {
				row, err := w.row(wbase + j)
				if err != nil {
					return err
				}
				for i := 0; i < m; i++ {
					ar := a.f[(bi*m+i)*k : (bi*m+i+1)*k]
					out.f[(bi*m+i)*n+j] = float32(dot(ar, row))
				}
			}
		}
		return nil
	}, nil
}

func ruleIndexedMatMul(c *compiler, e *poot.Eqn) (func() error, error) {
	x, wb, idx, out := c.in(e, 0), c.in(e, 1), c.in(e, 2), c.out(e)
	r, k := x.t.Shape[0], x.t.Shape[1]
	experts, n := wb.t.Shape[0], wb.t.Shape[1]
	w, err := newWeightRows(wb, k)
	if err != nil {
		return nil, err
	}
	return func() error {
		for i := 0; i < r; i++ {
			ex := int(idx.i[i])
			if ex < 0 || ex >= experts {
				return fmt.Errorf("%w: row %d selects expert %d of %d", ErrIndexRange, i, ex, experts)
			}
			xr := x.f[i*k : (i+1)*k]
			for j := 0; j < n; j++ {
				row, err := w.row(ex*n + j)
				if err != nil {
					return err
				}
				out.f[i*n+j] = float32(dot(xr, row))
			}
		}
		return nil
	}, nil
}
