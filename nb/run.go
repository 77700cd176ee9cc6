package nb

import (
	"fmt"
	"math"
	"os"
	"strings"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/tensor"
)

// Run evaluates out with the oracle and returns it as a Tensor: its
// elements in row-major order with its shape. data holds the elements of
// each input and weight by name; only those out depends on must be given
// (see the package documentation).
func (g *Graph) Run(out Value, data map[string][]float64) (Tensor, error) {
	res, err := g.RunAll([]Value{out}, data)
	if err != nil {
		return Tensor{}, err
	}
	return res[0], nil
}

// RunAll evaluates several values in one step and returns them in the
// order of outs.
func (g *Graph) RunAll(outs []Value, data map[string][]float64) ([]Tensor, error) {
	if g == nil || g.b == nil {
		return nil, ErrNilGraph
	}
	if len(outs) == 0 {
		return nil, &poot.Error{Kind: ErrValue, Op: "run", Detail: "no outputs"}
	}
	if g.deferred {
		for _, v := range outs {
			if v.g == g && v.id != modelOutput {
				return nil, &poot.Error{Kind: ErrValue, Op: "run", Detail: "the shapes of this graph come from the data, so only the Value Trace returned can be run"}
			}
		}
		if data == nil {
			data = map[string][]float64{} // missing names are data errors
		}
		err := g.trace(data)
		g.deferred = true // keep retracing: the next data may have other lengths
		if err != nil {
			return nil, err
		}
	}
	ids, err := g.outputIDs("run", outs)
	if err != nil {
		return nil, err
	}
	pg, err := g.finish(ids)
	if err != nil {
		return nil, err
	}
	if pg, err = pg.RemoveDead(); err != nil {
		return nil, err
	}
	for name := range data {
		if _, ok := g.names[name]; !ok {
			return nil, &DataError{Name: name, Detail: fmt.Sprintf("the graph declares no input or weight of that name (it declares %s)", quoteList(g.order))}
		}
	}
	consts, slots, err := bind(pg, data)
	if err != nil {
		return nil, err
	}
	res, err := interp.Eval(pg, consts, slots, nil)
	if err != nil {
		return nil, err
	}
	out := make([]Tensor, len(res))
	for i, t := range res {
		out[i] = Tensor{Shape: append([]int{}, t.Type.Shape...), DType: t.Type.DType.String()}
		if out[i].Data, err = float64s(t); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// Finish returns the graph closed with outs as its outputs, as a
// *poot.Graph for the rest of poot (the planner, the oracle, printers). The
// Graph itself stays open: it can record more and be finished again. A
// graph whose shapes come from the data has the shapes of the last Run.
func (g *Graph) Finish(outs ...Value) (*poot.Graph, error) {
	if g == nil || g.b == nil {
		return nil, ErrNilGraph
	}
	if g.deferred && len(g.pending) > 0 {
		return g.printable()
	}
	ids, err := g.outputIDs("finish", outs)
	if err != nil {
		return nil, err
	}
	return g.finish(ids)
}

// bind turns the data into the constants and slots of pg. A slot nothing
// reads gets zeros when it has no data.
func bind(pg *poot.Graph, data map[string][]float64) (interp.ConstMap, interp.Slots, error) {
	read := make([]bool, pg.NumValues())
	for _, e := range pg.Eqns() {
		for _, in := range e.Inputs {
			read[in] = true
		}
	}
	for _, id := range pg.Outputs() {
		read[id] = true
	}
	consts, slots := interp.ConstMap{}, interp.Slots{}
	for _, kind := range []poot.Kind{poot.Const, poot.Slot} {
		for _, id := range pg.Inputs(kind) {
			v := pg.Value(id)
			d, ok := data[v.Name]
			var t tensor.Tensor
			var err error
			switch {
			case !ok && kind == poot.Slot && !read[id]:
				t, err = tensor.New(v.Type)
			case !ok:
				return nil, nil, &DataError{Name: v.Name, Detail: fmt.Sprintf("missing (want %d values for %v)", v.Type.Shape.Size(), v.Type)}
			default:
				t, err = toTensor(v, d)
			}
			if err != nil {
				return nil, nil, err
			}
			if kind == poot.Const {
				consts[v.Name] = t
			} else {
				slots[v.Name] = t
			}
		}
	}
	return consts, slots, nil
}

// toTensor converts the data of value v to its stored type.
func toTensor(v poot.Value, d []float64) (tensor.Tensor, error) {
	n := v.Type.Shape.Size()
	if int64(len(d)) != n {
		return tensor.Tensor{}, &DataError{Name: v.Name, Detail: fmt.Sprintf("%d values for %v, which holds %d", len(d), v.Type, n)}
	}
	switch v.Type.DType {
	case poot.I32:
		ints := make([]int32, len(d))
		for i, x := range d {
			if x != math.Trunc(x) || x < math.MinInt32 || x > math.MaxInt32 {
				return tensor.Tensor{}, &DataError{Name: v.Name, Detail: fmt.Sprintf("element %d is %v, not an i32", i, x)}
			}
			ints[i] = int32(x)
		}
		return tensor.FromI32(v.Type.Shape, ints)
	case poot.Bool:
		bs := make([]bool, len(d))
		for i, x := range d {
			bs[i] = x != 0
		}
		return tensor.FromBool(v.Type.Shape, bs)
	}
	fs := make([]float32, len(d))
	for i, x := range d {
		fs[i] = float32(x)
	}
	if v.Type.DType == poot.F32 {
		return tensor.FromF32(v.Type.Shape, fs)
	}
	t, err := tensor.Quantize(v.Type, fs)
	if err != nil {
		return tensor.Tensor{}, &DataError{Name: v.Name, Detail: err.Error()}
	}
	return t, nil
}

func float64s(t tensor.Tensor) ([]float64, error) {
	if t.Type.DType == poot.F32 {
		fs := t.F32()
		out := make([]float64, len(fs))
		for i, x := range fs {
			out[i] = float64(x)
		}
		return out, nil
	}
	fs, err := t.ToF32()
	if err != nil {
		return nil, err
	}
	out := make([]float64, len(fs))
	for i, x := range fs {
		out[i] = float64(x)
	}
	if t.Type.DType == poot.I32 {
		// ToF32 rounds large ids; read them exactly.
		for i, x := range t.I32() {
			out[i] = float64(x)
		}
	}
	return out, nil
}

// printable finishes the graph for printing: with the traced output, or
// else with every value nothing reads.
func (g *Graph) printable() (*poot.Graph, error) {
	if g == nil || g.b == nil {
		return nil, ErrNilGraph
	}
	if g.deferred && len(g.pending) > 0 {
		return nil, &poot.Error{Kind: errPending, Detail: strings.TrimSpace(g.pendingText())}
	}
	if err := g.Err(); err != nil {
		return nil, err
	}
	outs := g.sinks()
	if g.out != 0 {
		outs = []int32{g.out}
	}
	return g.finish(outs)
}

// String returns the graph's text: its inputs, then one equation a line
// grouped by the scope (the composite) that recorded it, then its outputs
// (the traced output, or every value nothing reads). A graph in error
// prints its error.
func (g *Graph) String() string {
	if g != nil && g.deferred && len(g.pending) > 0 {
		return g.pendingText()
	}
	pg, err := g.printable()
	if err != nil {
		return "error: " + err.Error() + "\n"
	}
	return pg.String()
}

// Dump prints the graph's text (String) to standard output.
func (g *Graph) Dump() { fmt.Fprint(os.Stdout, g.String()) }

// DOT returns the graph as a Graphviz digraph, one cluster per scope, or
// a digraph holding one node with the error.
func (g *Graph) DOT() string {
	pg, err := g.printable()
	if err != nil {
		return fmt.Sprintf("digraph poot {\n  error [shape=box, label=%q];\n}\n", err.Error())
	}
	var sb strings.Builder
	_ = pg.DOT(&sb, "", poot.PrintOptions{})
	return sb.String()
}
