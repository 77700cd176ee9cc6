package families

import (
	"fmt"
	"slices"

	"github.com/pootlabs/poot"
)

// FusedTensor is a stored tensor that several canonical tensors are views
// of, built by Fuse for a writer.
type FusedTensor struct {
	Name  string
	Shape poot.Shape // stored shape
	Data  []float32
}

// Fuse builds the stored tensors behind the map's views from canonical
// values: the inverse of what the loader does with each view's source.
// specs are the model's tensors (Tensors), get gives a canonical tensor's
// F32 values. Every row of a fused tensor must be some view's; a row left
// over, or views that disagree on the stored layout, are errors. The
// tensors come back in the order their first view appears in specs.
func (m WeightMap) Fuse(specs []TensorSpec, get func(name string) ([]float32, error)) ([]FusedTensor, error) {
	type part struct {
		spec TensorSpec
		rows []int // the stored rows (axis -2, before any transpose) of the canonical rows
	}
	var order []string
	groups := map[string][]part{}
	transposed, columns, squeeze := map[string]bool{}, map[string]bool{}, map[string]bool{}
	for _, s := range specs {
		src, ok := m.View(s.Name)
		if !ok {
			continue
		}
		if len(s.Shape) == 1 && src.RowOrder != nil {
			src.Columns = true // a reordered vector: rows of one element each
		}
		if src.Columns {
			// A cut along the last axis is a cut of rows of one column
			// each: the same fusing, with a unit axis appended.
			if src.Transposed {
				return nil, fmt.Errorf("families: %s: a view of %s cuts columns of transposed matrices", s.Name, src.Tensor)
			}
			s.Shape = append(s.Shape.Clone(), 1)
		}
		if len(s.Shape) < 2 {
			return nil, fmt.Errorf("families: %s: a view of %s needs a matrix, have %v", s.Name, src.Tensor, s.Shape)
		}
		if _, seen := groups[src.Tensor]; !seen {
			order = append(order, src.Tensor)
			transposed[src.Tensor], columns[src.Tensor], squeeze[src.Tensor] = src.Transposed, src.Columns, src.Squeeze
		} else if transposed[src.Tensor] != src.Transposed || columns[src.Tensor] != src.Columns {
			return nil, fmt.Errorf("families: views of %s disagree on its layout", src.Tensor)
		}
		step := max(src.RowStep, 1)
		var rows []int
		for r := src.RowStart; r < src.RowEnd; r += step {
			rows = append(rows, r)
		}
		if src.RowEnd == 0 {
			rows = nil
			for r := range s.Shape[len(s.Shape)-2] {
				rows = append(rows, r)
			}
		}
		if src.RowOrder != nil {
			// The loader slices, then reorders: constant row i is sliced row
			// RowOrder[i].
			if len(src.RowOrder) != len(rows) {
				return nil, fmt.Errorf("families: %s: a row order of %d for %d rows of %s", s.Name, len(src.RowOrder), len(rows), src.Tensor)
			}
			mapped := make([]int, len(rows))
			for i, r := range src.RowOrder {
				if r < 0 || r >= len(rows) {
					return nil, fmt.Errorf("families: %s: row order names row %d of %d", s.Name, r, len(rows))
				}
				mapped[i] = rows[r]
			}
			rows = mapped
		}
		if len(rows) != s.Shape[len(s.Shape)-2] {
			return nil, fmt.Errorf("families: %s: %d rows of %s for shape %v", s.Name, len(rows), src.Tensor, s.Shape)
		}
		groups[src.Tensor] = append(groups[src.Tensor], part{s, rows})
	}
	var out []FusedTensor
	for _, name := range order {
		parts := groups[name]
		lead := parts[0].spec.Shape[:len(parts[0].spec.Shape)-2]
		in := parts[0].spec.Shape[len(parts[0].spec.Shape)-1]
		total := 0
		for _, p := range parts {
			sh := p.spec.Shape
			if !sh[:len(sh)-2].Equal(lead) || sh[len(sh)-1] != in {
				return nil, fmt.Errorf("families: views of %s have shapes %v and %v", name, parts[0].spec.Shape, sh)
			}
			total = max(total, slices.Max(p.rows)+1)
		}
		mats := int(lead.Size())
		pre := make([]float32, mats*total*in) // [mats, total, in]
		covered := make([]bool, total)
		for _, p := range parts {
			v, err := get(p.spec.Name)
			if err != nil {
				return nil, err
			}
			n := len(p.rows)
			if len(v) != mats*n*in {
				return nil, fmt.Errorf("families: %s: %d values for shape %v", p.spec.Name, len(v), p.spec.Shape)
			}
			for k, r := range p.rows {
				if covered[r] {
					return nil, fmt.Errorf("families: row %d of %s is in two views", r, name)
				}
				covered[r] = true
				for mat := range mats {
					copy(pre[(mat*total+r)*in:(mat*total+r+1)*in], v[(mat*n+k)*in:(mat*n+k+1)*in])
				}
			}
		}
		if i := slices.Index(covered, false); i >= 0 {
			return nil, fmt.Errorf("families: row %d of %s is in no view", i, name)
		}
		shape := append(lead.Clone(), total, in)
		if squeeze[name] {
			shape = append(lead.Clone(), total, 1, in) // PyTorch's Conv1d layout
		}
		if columns[name] {
			shape = append(lead.Clone(), total) // drop the unit axis
		}
		data := pre
		if transposed[name] {
			data = make([]float32, len(pre))
			for mat := range mats {
				for r := range total {
					for c := range in {
						data[(mat*in+c)*total+r] = pre[(mat*total+r)*in+c]
					}
				}
			}
			shape = append(lead.Clone(), in, total)
		}
		out = append(out, FusedTensor{Name: name, Shape: shape, Data: data})
	}
	return out, nil
}
