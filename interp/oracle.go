package interp

import (
	"fmt"
	"unsafe"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/tensor"
)

// Interpreter is what every way of running a graph provides: the oracle,
// the planner with a backend, the streamed-lowering simulator. pootest
// holds any two of them to agreement.
type Interpreter interface {
	// Name identifies the interpreter in reports ("oracle", "cpu").
	Name() string
	// Compile prepares g to run with the given constants, which it
	// validates: every constant bound, with its declared type.
	Compile(g *poot.Graph, consts Consts) (Executable, error)
}

// Executable is a graph compiled by an Interpreter, ready to run steps.
type Executable interface {
	// Run executes one step: it validates the slots and state, evaluates
	// the graph, overwrites state in place with the carried values and
	// returns the outputs (tensors the caller owns) in the graph's order.
	// Slots, state and bindings are validated before anything is written.
	// After a fault inside the graph (an index computed out of range) the
	// oracle leaves state untouched, but an interpreter that writes caches
	// in place may have written some rows: callers treat state as
	// undefined after a failed Run (the driver empties its cache).
	Run(slots Slots, state *State) ([]tensor.Tensor, error)
	// Witness returns a copy of the named witness of the last successful
	// Run.
	Witness(name string) (tensor.Tensor, bool)
}

// Oracle is the reference interpreter. Its zero value is ready to use.
type Oracle struct{}

// Name returns "oracle".
func (Oracle) Name() string { return "oracle" }

// Compile validates the constants and allocates one buffer per value.
func (Oracle) Compile(g *poot.Graph, consts Consts) (Executable, error) {
	return Compile(g, consts)
}

// Eval compiles g with the oracle and runs one step. state may be nil for a
// graph without state; otherwise it is updated in place.
func Eval(g *poot.Graph, consts Consts, slots Slots, state *State) ([]tensor.Tensor, error) {
	p, err := Compile(g, consts)
	if err != nil {
		return nil, err
	}
	return p.Run(slots, state)
}

// storage classes of a buffer.
const (
	sF32   = iota // f holds float32 elements
	sI32          // i holds int32 elements
	sBytes        // b holds the stored bytes (Bool, F16, BF16, packed)
)

func storageOf(d poot.DType) int {
	switch d {
	case poot.F32:
		return sF32
	case poot.I32:
		return sI32
	}
	return sBytes
}

// buffer is the storage of one value. Exactly one of f, i, b is in use.
type buffer struct {
	t poot.TensorType
	f []float32
	i []int32
	b []byte
}

func newBuffer(t poot.TensorType) *buffer {
	bf := &buffer{t: t}
	n := int(t.Shape.Size())
	switch storageOf(t.DType) {
	case sF32:
		bf.f = make([]float32, n)
	case sI32:
		bf.i = make([]int32, n)
	default:
		bf.b = make([]byte, t.Bytes())
	}
	return bf
}

// bytes returns the buffer's storage as little-endian bytes (aliasing it).
func (bf *buffer) bytes() []byte {
	switch {
	case bf.f != nil:
		if len(bf.f) == 0 {
			return nil
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&bf.f[0])), 4*len(bf.f))
	case bf.i != nil:
		if len(bf.i) == 0 {
			return nil
		}
		return unsafe.Slice((*byte)(unsafe.Pointer(&bf.i[0])), 4*len(bf.i))
	}
	return bf.b
}

// tensor returns a copy of the buffer as a tensor the caller owns.
func (bf *buffer) tensor() tensor.Tensor {
	t, _ := tensor.New(bf.t)
	copy(t.Data, bf.bytes())
	return t
}

// load copies the bound tensor's bytes into the buffer.
func (bf *buffer) load(t tensor.Tensor) { copy(bf.bytes(), t.Data) }

// Program is a graph compiled by the oracle. It is not safe for concurrent
// use: Run reuses its buffers.
type Program struct {
	g         *poot.Graph
	vals      []*buffer
	steps     []step
	ran       bool
	binds     stepBindings
	outputs   []poot.ValueID
	states    []poot.StatePair
	witnesses []poot.Witness
}

// step is the compiled rule of one equation; run is nil for equations
// whose value is fixed at compile time (Iota, Literal) or aliases its
// operand (Reshape).
type step struct {
	eqn int
	op  poot.Op
	run func() error
}

// rule compiles one equation: it may precompute anything from the types and
// params, and returns the function that evaluates the equation each step.
type rule func(c *compiler, e *poot.Eqn) (func() error, error)

// rules is the oracle's table: one rule per primitive.
var rules [poot.NumOps]rule

type compiler struct {
	vals []*buffer
}

func (c *compiler) in(e *poot.Eqn, i int) *buffer { return c.vals[e.Inputs[i]] }
func (c *compiler) out(e *poot.Eqn) *buffer       { return c.vals[e.Out] }

var hostLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// Compile prepares g for the oracle: it validates the constants, binds them
// (zero-copy where their alignment allows), allocates a buffer per value and
// compiles each equation through its rule.
func Compile(g *poot.Graph, consts Consts) (*Program, error) {
	if !hostLittleEndian {
		return nil, &Error{Eqn: -1, Err: fmt.Errorf("%w: the oracle needs a little-endian host", ErrUnsupported)}
	}
	if g == nil {
		return nil, &Error{Eqn: -1, Err: fmt.Errorf("%w: nil graph", ErrUnsupported)}
	}
	if err := CheckConsts(g, consts); err != nil {
		return nil, err
	}
	p := &Program{g: g, vals: make([]*buffer, g.NumValues()), binds: newStepBindings(g),
		outputs: g.Outputs(), states: g.States(), witnesses: g.Witnesses()}
	for id := range p.vals {
		v := g.Value(poot.ValueID(id))
		switch v.Kind {
		case poot.Const:
			t, _ := consts.Lookup(v.Name)
			bf := &buffer{t: v.Type}
			switch storageOf(v.Type.DType) {
			case sF32:
				bf.f = t.F32()
			case sI32:
				bf.i = t.I32()
			default:
				bf.b = t.Data
			}
			p.vals[id] = bf
		case poot.Slot, poot.State:
			p.vals[id] = newBuffer(v.Type)
		}
	}
	c := &compiler{vals: p.vals}
	eqns := g.Eqns()
	for i := range eqns {
		e := &eqns[i]
		if e.Op != poot.Reshape {
			c.vals[e.Out] = newBuffer(g.Type(e.Out))
		} else {
			// A reshape moves no data: its value aliases its operand.
			src := c.vals[e.Inputs[0]]
			c.vals[e.Out] = &buffer{t: g.Type(e.Out), f: src.f, i: src.i, b: src.b}
		}
		r := rules[e.Op]
		if r == nil {
			return nil, &Error{Eqn: i, Op: e.Op, Scope: g.Scope(e.Scope), Err: fmt.Errorf("%w: no oracle rule for %v", ErrUnsupported, e.Op)}
		}
		run, err := r(c, e)
		if err != nil {
			return nil, &Error{Eqn: i, Op: e.Op, Scope: g.Scope(e.Scope), Err: err}
		}
		if run != nil {
			p.steps = append(p.steps, step{eqn: i, op: e.Op, run: run})
		}
	}
	return p, nil
}

// Graph returns the compiled graph.
func (p *Program) Graph() *poot.Graph { return p.g }

// Run executes one step (see Executable).
func (p *Program) Run(slots Slots, state *State) ([]tensor.Tensor, error) {
	if err := p.binds.check(slots, state); err != nil {
		return nil, err
	}
	for _, v := range p.binds.slots {
		p.vals[v.id].load(slots[v.Name])
	}
	for _, v := range p.binds.states {
		p.vals[v.id].load(state.Tensors[v.Name])
	}
	p.ran = false
	if err := p.runSteps(len(p.steps)); err != nil {
		return nil, err
	}
	p.ran = true
	res := make([]tensor.Tensor, len(p.outputs))
	for i, id := range p.outputs {
		res[i] = p.vals[id].tensor()
	}
	if state != nil {
		for _, s := range p.states {
			copy(state.Tensors[p.g.Value(s.In).Name].Data, p.vals[s.Out].bytes())
		}
	}
	return res, nil
}

func (p *Program) runSteps(n int) error {
	for _, s := range p.steps[:n] {
		if err := s.run(); err != nil {
			e := p.g.Eqn(s.eqn)
			return &Error{Eqn: s.eqn, Op: s.op, Scope: p.g.Scope(e.Scope), Err: err}
		}
	}
	return nil
}

// Witness returns a copy of the named witness of the last successful Run.
func (p *Program) Witness(name string) (tensor.Tensor, bool) {
	if !p.ran {
		return tensor.Tensor{}, false
	}
	for _, w := range p.witnesses {
		if w.Name == name {
			return p.vals[w.Value].tensor(), true
		}
	}
	return tensor.Tensor{}, false
}

// Value returns a copy of any value of the last successful Run, by id: the
// debugging view of every intermediate.
func (p *Program) Value(id poot.ValueID) (tensor.Tensor, bool) {
	if !p.ran || id < 0 || int(id) >= len(p.vals) {
		return tensor.Tensor{}, false
	}
	return p.vals[id].tensor(), true
}
