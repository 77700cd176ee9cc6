package nb_test

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/nb"
)

// This file tests what a notebook needs: tracing that survives an
// interpreter's wrapper, error positions from interpreted code, results
// with shapes, pictures, and the LLM's streaming and all-position logits.

// wrapped is what gomacro hands compiled code for an interpreted model: a
// type with Forward alone, whatever else the model has.
type wrapped struct{ m nb.Model }

func (w wrapped) Forward(g *nb.Graph, x nb.Value) (nb.Value, error) { return w.m.Forward(g, x) }

var shapedData = map[string][]float64{
	"x": {1, 0, 0, 0, 0, 1, 0, 0},
	"w": {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0},
	"b": {0, 0, 0},
}

func TestWrappedModel(t *testing.T) {
	g, y, err := nb.Trace(shapedModel{})
	if err != nil {
		t.Fatal(err)
	}
	want, err := g.Run(y, shapedData)
	if err != nil {
		t.Fatal(err)
	}
	// The wrapper hides InputDims: the trace waits for data, and the
	// data, a flat vector of 8, do not fit the [3,4] weight. The error
	// says why.
	g, y, err = nb.Trace(wrapped{shapedModel{}})
	if err != nil || y.String() != "(waits for data)" {
		t.Fatalf("Trace = %v, %v", y, err)
	}
	_, err = g.Run(y, shapedData)
	if !errors.Is(err, poot.ErrType) || !strings.Contains(err.Error(), `the shapes of "x" came from the data`) || !strings.Contains(err.Error(), "give Trace the input's dims") {
		t.Fatalf("Run of a wrapped model: %v", err)
	}
	// Dims given to Trace, or TraceFunc, cannot be lost.
	for name, trace := range map[string]func() (*nb.Graph, nb.Value, error){
		"Trace":     func() (*nb.Graph, nb.Value, error) { return nb.Trace(wrapped{shapedModel{}}, 2, 4) },
		"TraceFunc": func() (*nb.Graph, nb.Value, error) { return nb.TraceFunc(shapedModel{}.Forward, 2, 4) },
	} {
		g, y, err := trace()
		if err != nil || fmt.Sprint(y.Shape()) != "[2 3]" {
			t.Fatalf("%s: %v, %v", name, y, err)
		}
		got, err := g.Run(y, shapedData)
		if err != nil || got.String() != want.String() || fmt.Sprint(got.Shape) != "[2 3]" {
			t.Errorf("%s: Run = %v, %v; want %v", name, got, err, want)
		}
	}
	if _, _, err := nb.TraceFunc(nil); !errors.Is(err, nb.ErrModel) {
		t.Errorf("TraceFunc(nil): %v", err)
	}
}

// P_github_com_pootlabs_poot_nb_Model is named as gomacro names its proxy
// for nb.Model.
type P_github_com_pootlabs_poot_nb_Model struct {
	Object   interface{}
	Forward_ func(interface{}, *nb.Graph, nb.Value) (nb.Value, error)
}

func (p *P_github_com_pootlabs_poot_nb_Model) Forward(g *nb.Graph, x nb.Value) (nb.Value, error) {
	return p.Forward_(p.Object, g, x)
}

func TestPanicsAndErrorsNameTheModel(t *testing.T) {
	proxy := &P_github_com_pootlabs_poot_nb_Model{Forward_: func(_ interface{}, g *nb.Graph, x nb.Value) (nb.Value, error) {
		return g.Add(x, g.Scalar(float64(x.Shape()[1]))), nil // no shape yet: index out of range
	}}
	_, _, err := nb.Trace(proxy)
	for _, w := range []string{"the notebook's model panicked in Forward", `the shapes of "x" wait for the data of Run`} {
		if !errors.Is(err, nb.ErrModel) || !strings.Contains(err.Error(), w) {
			t.Errorf("a panic in a proxied model: %v, want %q", err, w)
		}
	}
	errNoWeights := errors.New("no weights")
	_, _, err = nb.TraceFunc(func(g *nb.Graph, x nb.Value) (nb.Value, error) { return x, errNoWeights }, 2)
	if !errors.Is(err, errNoWeights) || !strings.Contains(err.Error(), "the traced function: Forward") {
		t.Errorf("TraceFunc error: %v", err)
	}
}

// A method called through reflect, as an interpreter calls it, reports the
// notebook cell, not a line of reflect.
func TestInterpretedPosition(t *testing.T) {
	g := nb.New()
	x, v := g.Input("x", 2), g.Input("v", 3)
	reflect.ValueOf(g).MethodByName("Add").Call([]reflect.Value{reflect.ValueOf(x), reflect.ValueOf(v)})
	var e *poot.Error
	if !errors.As(g.Err(), &e) || e.Pos != nb.NotebookPos || !strings.Contains(g.Err().Error(), "(at the notebook cell)") {
		t.Fatalf("through reflect: %v", g.Err())
	}
	g = nb.New()
	g.Add(g.Input("x", 2), g.Input("v", 3))
	if !errors.As(g.Err(), &e) || !strings.HasPrefix(e.Pos, "notebook_test.go:") {
		t.Fatalf("compiled: %v", g.Err())
	}
}

func TestHugeInputFailsAtDeclaration(t *testing.T) {
	for _, dims := range [][]int{{1 << 16, 1 << 16}, {1 << 40, 1 << 40}} {
		g := nb.New()
		g.Input("x", dims...)
		if err := g.Err(); err == nil || !strings.Contains(err.Error(), `"x"`) {
			t.Errorf("Input(%v): %v", dims, err)
		}
	}
	g := nb.New()
	g.Input("x", 1<<10, 1<<10)
	if err := g.Err(); err != nil {
		t.Errorf("a 4 MiB input: %v", err)
	}
	if g.Tokens(1<<30, 10); !errors.Is(g.Err(), poot.ErrLimit) {
		t.Errorf("a huge token slot: %v", g.Err())
	}
}

func TestTensor(t *testing.T) {
	iota := func(n int) []float64 {
		d := make([]float64, n)
		for i := range d {
			d[i] = float64(i)
		}
		return d
	}
	cases := []struct {
		t    nb.Tensor
		want string
	}{
		{nb.Tensor{DType: "f32", Data: []float64{2.5}}, "f32[]\n  2.5"},
		{nb.Tensor{Shape: []int{3}, DType: "i32", Data: []float64{1, 20, 123456789}}, "i32[3]\n  1 20 123456789"},
		{nb.Tensor{Shape: []int{2, 2}, DType: "f32", Data: []float64{1, -0.5, 1e-7, 3}}, "f32[2,2]\n      1 -0.5\n  1e-07    3"},
		{nb.Tensor{Shape: []int{1, 10}, DType: "i32", Data: iota(10)}, "i32[1,10]\n  0 1 2 3 4 5 … 9"},
		{nb.Tensor{Shape: []int{10, 1}, DType: "i32", Data: iota(10)}, "i32[10,1]\n  0\n  1\n  2\n  3\n  4\n  5\n  ⋮\n  9"},
		{nb.Tensor{Shape: []int{2, 1, 2}, DType: "i32", Data: iota(4)}, "i32[2,1,2]\n[0,:,:]\n  0 1\n[1,:,:]\n  2 3"},
		{nb.Tensor{Shape: []int{6, 1, 1}, DType: "i32", Data: iota(6)}, "i32[6,1,1]\n[0,:,:]\n  0\n[1,:,:]\n  1\n…\n[5,:,:]\n  5"},
		{nb.Tensor{Shape: []int{3}, Data: []float64{1}}, "f32[3]\n1 elements for shape [3]"},
	}
	for _, c := range cases {
		if got := c.t.String(); got != c.want {
			t.Errorf("String =\n%s\nwant\n%s", got, c.want)
		}
		if h := c.t.HTML(); !wellFormed(h) || !strings.Contains(h, "poot-tensor") {
			t.Errorf("HTML of %v is not well formed: %s", c.t.Shape, h)
		}
	}
	x := nb.Tensor{Shape: []int{2, 3}, Data: iota(6)}
	if v, err := x.At(1, 2); v != 5 || err != nil {
		t.Errorf("At(1, 2) = %v, %v", v, err)
	}
	for _, idx := range [][]int{{1}, {2, 0}, {0, -1}} {
		if _, err := x.At(idx...); !errors.Is(err, nb.ErrData) {
			t.Errorf("At(%v): %v", idx, err)
		}
	}
	if h := (nb.Tensor{Shape: []int{1}, Data: []float64{1}, DType: "<b>"}).HTML(); strings.Contains(h, "<b>") {
		t.Errorf("HTML does not escape: %s", h)
	}
}

// wellFormed reports whether s parses as XML.
func wellFormed(s string) bool {
	d := xml.NewDecoder(strings.NewReader(s))
	for {
		_, err := d.Token()
		if err == io.EOF {
			return true
		}
		if err != nil {
			return false
		}
	}
}

func TestGraphPicture(t *testing.T) {
	g := nb.New()
	x := g.Input("x", 4, 8)
	g.Scope("block", func() {
		h := g.RMSNorm(x, g.Weight("norm", 8), 1e-5)
		q := g.RoPE(h, nb.Value{}, 2, nb.RoPEConfig{})
		g.Scope("ffn", func() {
			g.Add(x, g.GatedFFN(q, g.Weight("gate", 16, 8), g.Weight("up", 16, 8), g.Weight("down", 8, 16), "swiglu"))
		})
	})
	full, folded := g.Picture(0), g.Picture(1)
	if !wellFormed(full.Source) || !wellFormed(folded.Source) || g.SVG() != full.Source {
		t.Fatal("a picture is not well-formed SVG")
	}
	for _, want := range []string{">block</text>", ">ffn</text>", ">rmsnorm[", ">rope[", ">rope_tables/</text>", "{8 equations}", "← x, norm", `marker-end="url(#arrow)"`, `stroke="#a33"`} {
		if !strings.Contains(full.Source, want) {
			t.Errorf("the full picture lacks %q", want)
		}
	}
	if !strings.Contains(folded.Source, ">block/</text>") || strings.Contains(folded.Source, ">rmsnorm[") || strings.Count(folded.Source, "<rect") != 1 {
		t.Errorf("folded at depth 1, the block is not one box:\n%s", folded.Source)
	}
	if full.String() != strings.SplitN(g.String(), "\n", 2)[0] {
		t.Errorf("title %q", full)
	}
	bad := nb.New()
	bad.Add(bad.Input("x", 2), bad.Input("y", 3))
	if p := bad.Picture(0); !wellFormed(p.Source) || !strings.HasPrefix(p.Title, "error: poot: add") {
		t.Errorf("a graph in error: %q", p)
	}
	wait, _, _ := nb.Trace(myModel{})
	if p := wait.Picture(0); !strings.Contains(p.Title, "traced at each Run") || !wellFormed(p.Source) {
		t.Errorf("a graph waiting for data: %q", p)
	}
}

func TestChart(t *testing.T) {
	c := nb.BarChart("logits", []string{"a", `"<b>"`}, []float64{2, -1, 0.5})
	if !wellFormed(c.SVG()) || !strings.Contains(c.SVG(), "&#34;&lt;b&gt;&#34;") || !strings.Contains(c.SVG(), "<line") {
		t.Errorf("SVG:\n%s", c.SVG())
	}
	want := "logits\n  a     ████████████████████ 2\n  \"<b>\" ██████████ -1\n        █████ 0.5"
	if c.String() != want {
		t.Errorf("String =\n%s\nwant\n%s", c, want)
	}
	if s := nb.BarChart("", nil, nil).SVG(); !wellFormed(s) {
		t.Errorf("an empty chart: %s", s)
	}
}
