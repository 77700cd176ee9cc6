package nb

import (
	"errors"
	"fmt"

	"github.com/pootlabs/poot"
)

// Model is what Trace records: Forward maps the input x to the output,
// declaring its weights with g.Input or g.Weight and computing with g's
// methods. An interpreted type (a gomacro cell's struct) can implement it.
type Model interface {
	Forward(g *Graph, x Value) (Value, error)
}

// InputShaper is implemented by a Model that knows the dims of its input;
// Trace uses them when it is given none.
type InputShaper interface {
	InputDims() []int
}

// InputName is the name of the input that Trace passes to Forward, which
// Run binds like any other input.
const InputName = "x"

// Trace records m.Forward over an F32 input named "x" and returns the graph
// and Forward's result. The input's dims are dims when given, else
// m.InputDims() when m is an InputShaper; when neither says, or when
// Forward declares an Input or Weight without dims, the shapes come from
// the data of each Run, which traces m again (see the package
// documentation). The returned Value stays valid across those retraces.
//
// An error from Forward, a panic in it, or an error recorded while tracing
// is returned (and kept by the graph).
func Trace(m Model, dims ...int) (*Graph, Value, error) {
	g := &Graph{model: m}
	if len(dims) == 0 {
		if s, ok := m.(InputShaper); ok {
			dims = s.InputDims()
		}
	}
	g.dims = append([]int(nil), dims...)
	if m == nil {
		g.reset()
		g.fail(ErrModel, "trace", "the model is nil")
		return g, Value{}, g.Err()
	}
	err := g.trace(nil)
	return g, Value{g: g, id: modelOutput}, err
}

// trace records the model afresh, with data giving the shapes left out
// (nil at Trace time).
func (g *Graph) trace(data map[string][]float64) (err error) {
	g.reset()
	g.deferred = false
	g.data = data
	defer func() { g.data = nil }()
	defer func() {
		if r := recover(); r != nil {
			g.modelErr = &poot.Error{Kind: ErrModel, Op: "trace", Detail: fmt.Sprintf("%T.Forward panicked: %v", g.model, r)}
			err = g.modelErr
		}
	}()
	var x Value
	if len(g.dims) > 0 {
		x = g.Input(InputName, g.dims...)
	} else {
		x = g.Input(InputName)
	}
	y, ferr := g.model.Forward(g, x)
	if ferr != nil {
		g.modelErr = fmt.Errorf("nb: trace: %w: %T.Forward: %w", ErrModel, g.model, ferr)
		return g.modelErr
	}
	if g.deferred && errors.Is(g.b.Err(), errPending) {
		return nil
	}
	if g.b.Err() == nil {
		id, _ := g.resolve("trace", 0, y, false)
		g.out = id
	}
	return g.Err()
}

// pendingText says which values of a deferred trace wait for data.
func (g *Graph) pendingText() string {
	return fmt.Sprintf("graph: traced at each Run; the shapes of %s come from its data\n", quoteList(g.pending))
}

func quoteList(names []string) string {
	s := ""
	for i, n := range names {
		if i > 0 {
			s += ", "
		}
		s += fmt.Sprintf("%q", n)
	}
	return s
}
