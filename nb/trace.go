package nb

import (
	"errors"
	"fmt"
	"strings"

	"github.com/pootlabs/poot"
)

// Model is what Trace records: Forward maps the input x to the output,
// declaring its weights with g.Input or g.Weight and computing with g's
// methods. An interpreted type (a gomacro cell's struct) can implement it.
type Model interface {
	Forward(g *Graph, x Value) (Value, error)
}

// InputShaper is implemented by a Model that knows the dims of its input;
// Trace uses them when it is given none. Only compiled Go can rely on it:
// an interpreter hands Trace its own wrapper of an interpreted model, which
// has Forward alone, so from a notebook give Trace the dims instead.
type InputShaper interface {
	InputDims() []int
}

// InputName is the name of the input that Trace passes to Forward, which
// Run binds like any other input.
const InputName = "x"

// Trace records m.Forward over an F32 input named "x" with the given dims
// and returns the graph and Forward's result. Passing the dims is the way
// that always works, in compiled Go and in a notebook alike:
//
//	g, y, err := nb.Trace(model, 2, 4) // x is f32[2,4]
//
// Without dims, Trace takes them from m.InputDims() when m is an
// InputShaper. When neither says, or when Forward declares an Input or
// Weight without dims, the shapes come from the data of each Run, each such
// value a vector as long as its data, and Run traces m again (see the
// package documentation); the returned Value stays valid across those
// retraces. A shape error in such a trace says which shapes came from the
// data.
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

// TraceFunc is Trace for a function in place of a Model: forward is
// recorded over an F32 input "x" with the given dims. An interpreter passes
// a function to compiled code as it is, so nothing is lost on the way.
func TraceFunc(forward func(g *Graph, x Value) (Value, error), dims ...int) (*Graph, Value, error) {
	if forward == nil {
		return Trace(nil, dims...)
	}
	return Trace(funcModel(forward), dims...)
}

type funcModel func(g *Graph, x Value) (Value, error)

func (f funcModel) Forward(g *Graph, x Value) (Value, error) { return f(g, x) }

// modelName names the model in errors: its type, except for a function
// given to TraceFunc and an interpreter's wrapper (gomacro's proxy type,
// whose name says nothing about the model inside).
func modelName(m Model) string {
	name := fmt.Sprintf("%T", m)
	switch {
	case strings.Contains(name, ".P_"):
		return "the notebook's model"
	case name == "nb.funcModel":
		return "the traced function"
	}
	return name
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
			detail := fmt.Sprintf("%s panicked in Forward: %v", modelName(g.model), r)
			if g.deferred && len(g.pending) > 0 {
				detail += fmt.Sprintf(" (while the shapes of %s wait for the data of Run: give Trace the input's dims)", quoteList(g.pending))
			}
			g.modelErr = &poot.Error{Kind: ErrModel, Op: "trace", Detail: detail}
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
		g.modelErr = fmt.Errorf("nb: trace: %w: %s: Forward: %w", ErrModel, modelName(g.model), ferr)
		return g.modelErr
	}
	var e *poot.Error
	if len(g.fromData) > 0 && errors.As(g.b.Err(), &e) && errors.Is(e.Kind, poot.ErrType) && !strings.Contains(e.Detail, "from the data") {
		e.Detail += fmt.Sprintf(" (the shapes of %s came from the data, as vectors as long as it; give Trace the input's dims, or Input and Weight theirs)", quoteList(g.fromData))
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
