package interp

import (
	"fmt"
	"runtime"
	"unsafe"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/hostexec"
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

// tensor returns a copy of storage bf, of type t, as a tensor the caller
// owns.
func tensorOf(t poot.TensorType, bf *hostexec.Buf) tensor.Tensor {
	ten, _ := tensor.New(t)
	copy(ten.Data, bf.Bytes())
	return ten
}

// Program is a graph compiled by the oracle. It is not safe for concurrent
// use: Run reuses its buffers.
type Program struct {
	g         *poot.Graph
	vals      []*hostexec.Buf
	steps     []step
	ran       bool
	binds     *Bindings
	outputs   []poot.ValueID
	states    []poot.StatePair
	witnesses []poot.Witness
}

// step is the compiled kernel of one equation; equations whose value is
// fixed at compile time (Iota, Literal) or aliases its operand (Reshape)
// have none.
type step struct {
	eqn int
	op  poot.Op
	run func() error
}

var hostLittleEndian = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// Compile prepares g for the oracle: it validates the constants, binds them
// (zero-copy where their alignment allows), allocates a buffer per value and
// compiles each equation into its host kernel.
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
	p := &Program{g: g, vals: make([]*hostexec.Buf, g.NumValues()), binds: NewBindings(g),
		outputs: g.Outputs(), states: g.States(), witnesses: g.Witnesses()}
	for id := range p.vals {
		v := g.Value(poot.ValueID(id))
		switch v.Kind {
		case poot.Const:
			t, _ := consts.Lookup(v.Name)
			bf := &hostexec.Buf{}
			bf.Set(t.Data)
			if (v.Type.DType == poot.F32 || v.Type.DType == poot.I32) && bf.F32() == nil {
				// Unaligned: word views need a copy.
				bf = hostexec.NewBuf(int64(len(t.Data)))
				copy(bf.Bytes(), t.Data)
			}
			p.vals[id] = bf
		case poot.Slot, poot.State:
			p.vals[id] = hostexec.NewBuf(v.Type.Bytes())
		}
	}
	par := hostexec.Spawn(runtime.GOMAXPROCS(0))
	eqns := g.Eqns()
	for i := range eqns {
		e := &eqns[i]
		if e.Op == poot.Reshape {
			// A reshape moves no data: its value aliases its operand.
			p.vals[e.Out] = p.vals[e.Inputs[0]]
			continue
		}
		p.vals[e.Out] = hostexec.NewBuf(g.Type(e.Out).Bytes())
		he := &hostexec.Eqn{Op: e.Op, Params: e.Params, Out: g.Type(e.Out), Res: p.vals[e.Out], Par: par}
		for _, in := range e.Inputs {
			he.In = append(he.In, g.Type(in))
			he.Args = append(he.Args, p.vals[in])
		}
		run, err := hostexec.Compile(he)
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
	if err := p.binds.Check(slots, state); err != nil {
		return nil, err
	}
	if err := state.Sync(); err != nil {
		return nil, &Error{Eqn: -1, Err: err}
	}
	for _, v := range p.binds.slots {
		copy(p.vals[v.id].Bytes(), slots[v.Name].Data)
	}
	for _, v := range p.binds.states {
		copy(p.vals[v.id].Bytes(), state.Tensors[v.Name].Data)
	}
	p.ran = false
	if err := p.runSteps(len(p.steps)); err != nil {
		return nil, err
	}
	p.ran = true
	res := make([]tensor.Tensor, len(p.outputs))
	for i, id := range p.outputs {
		res[i] = tensorOf(p.g.Type(id), p.vals[id])
	}
	if state != nil {
		for _, s := range p.states {
			copy(state.Tensors[p.g.Value(s.In).Name].Data, p.vals[s.Out].Bytes())
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
			return tensorOf(p.g.Type(w.Value), p.vals[w.Value]), true
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
	return tensorOf(p.g.Type(id), p.vals[id]), true
}
