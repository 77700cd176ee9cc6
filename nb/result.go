package nb

import (
	"fmt"
	"html"
	"strconv"
	"strings"
)

// Tensor is a value computed by Run: its elements in row-major order with
// its shape and element type. It prints as a small table (String) and a
// notebook shows it as an HTML table (HTML); large tensors are shown by
// their corners, Data always holds every element.
type Tensor struct {
	Shape []int
	DType string // "f32", "i32", "bool", ...
	Data  []float64
}

// At returns the element at the given index, one coordinate per axis, or
// an error naming the coordinate that is out of range.
func (t Tensor) At(index ...int) (float64, error) {
	if len(index) != len(t.Shape) {
		return 0, &DataError{Name: "index", Detail: fmt.Sprintf("%d coordinates for a tensor of rank %d", len(index), len(t.Shape))}
	}
	off := 0
	for i, x := range index {
		if x < 0 || x >= t.Shape[i] {
			return 0, &DataError{Name: "index", Detail: fmt.Sprintf("coordinate %d is %d, outside [0, %d)", i, x, t.Shape[i])}
		}
		off = off*t.Shape[i] + x
	}
	if off >= len(t.Data) {
		return 0, &DataError{Name: "index", Detail: fmt.Sprintf("the tensor holds %d elements, not %v", len(t.Data), fmtDims(t.Shape))}
	}
	return t.Data[off], nil
}

// The corners a table shows: rows and columns of each matrix, and matrices.
const showRows, showCols, showBlocks = 8, 8, 4

// block is one matrix of a table: a title (the leading coordinates, for a
// tensor of rank 3 or more) and its cells, "…" standing for elided ones.
type block struct {
	title string
	rows  [][]string
}

// corners picks the indices shown of n: all when n <= max, else the first
// max-2 and the last one with -1 (elided) between.
func corners(n, max int) []int {
	var out []int
	for i := 0; i < n; i++ {
		switch {
		case n <= max || i < max-2 || i == n-1:
			out = append(out, i)
		case i == max-2:
			out = append(out, -1)
		}
	}
	return out
}

// blocks lays the tensor out as matrices: the last axis across, the one
// before it down, and one matrix per index of the axes before those.
func (t Tensor) blocks() []block {
	if want := shapeSize(t.Shape); want != len(t.Data) {
		return []block{{title: fmt.Sprintf("%d elements for shape %v", len(t.Data), fmtDims(t.Shape))}}
	}
	rank := len(t.Shape)
	cols, rows := 1, 1
	if rank >= 1 {
		cols = t.Shape[rank-1]
	}
	if rank >= 2 {
		rows = t.Shape[rank-2]
	}
	lead := t.Shape[:max(rank-2, 0)]
	cell := func(x float64) string {
		if t.DType == "f32" || t.DType == "" {
			return strconv.FormatFloat(x, 'g', 5, 64)
		}
		return strconv.FormatFloat(x, 'f', -1, 64) // integers and booleans exactly
	}
	var out []block
	for _, m := range corners(shapeSize(lead), showBlocks) {
		if m < 0 {
			out = append(out, block{title: "…"})
			continue
		}
		b := block{}
		if len(lead) > 0 {
			idx, r := make([]string, len(lead)), m
			for i := len(lead) - 1; i >= 0; i-- {
				idx[i], r = strconv.Itoa(r%lead[i]), r/lead[i]
			}
			b.title = "[" + strings.Join(idx, ",") + ",:,:]"
		}
		for _, i := range corners(rows, showRows) {
			row := []string{}
			for _, j := range corners(cols, showCols) {
				switch {
				case i < 0 && j < 0:
					row = append(row, "⋱")
				case i < 0:
					row = append(row, "⋮")
				case j < 0:
					row = append(row, "…")
				default:
					row = append(row, cell(t.Data[(m*rows+i)*cols+j]))
				}
			}
			b.rows = append(b.rows, row)
		}
		out = append(out, b)
	}
	return out
}

func (t Tensor) typeName() string {
	d := t.DType
	if d == "" {
		d = "f32"
	}
	return d + fmtDims(t.Shape)
}

// String prints the type and then the elements as a table with aligned
// columns.
func (t Tensor) String() string {
	var sb strings.Builder
	sb.WriteString(t.typeName())
	for _, b := range t.blocks() {
		if b.title != "" {
			sb.WriteString("\n" + b.title)
		}
		width := map[int]int{}
		for _, r := range b.rows {
			for j, c := range r {
				width[j] = max(width[j], len([]rune(c)))
			}
		}
		for _, r := range b.rows {
			sb.WriteString("\n ")
			for j, c := range r {
				sb.WriteString(strings.Repeat(" ", width[j]-len([]rune(c))+1) + c)
			}
		}
	}
	return sb.String()
}

// HTML renders the tensor as HTML tables, captioned with its type, for a
// notebook (gophernotes shows a value with an HTML method this way).
func (t Tensor) HTML() string {
	var sb strings.Builder
	fmt.Fprintf(&sb, "<div class=\"poot-tensor\"><code>%s</code>", html.EscapeString(t.typeName()))
	for _, b := range t.blocks() {
		if b.title != "" {
			fmt.Fprintf(&sb, "<div><code>%s</code></div>", html.EscapeString(b.title))
		}
		if len(b.rows) == 0 {
			continue
		}
		sb.WriteString(`<table style="font-family:monospace;text-align:right">`)
		for _, r := range b.rows {
			sb.WriteString("<tr>")
			for _, c := range r {
				sb.WriteString("<td>" + html.EscapeString(c) + "</td>")
			}
			sb.WriteString("</tr>")
		}
		sb.WriteString("</table>")
	}
	sb.WriteString("</div>")
	return sb.String()
}

func shapeSize(dims []int) int {
	n := 1
	for _, d := range dims {
		n *= d
	}
	return n
}
