package rdu

import (
	"errors"
	"fmt"
	"unsafe"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/sim"
	"github.com/pootlabs/poot/tensor"
)

// Interpreter is the streamed lowering as an interpreter of poot's graphs
// (registered with the driver as "rdu" by package rdu/register). Compile
// lowers the step to a bundle (the decode deployment for one new token, the
// prefill deployment for a chunk of a prompt), certifies the bundle against
// the oracle on the step itself, and loads it on the simulator; Run runs
// the step's tokens through the bundle, reading and writing the caches of
// the caller's state. A chunk whose prefill programs the language cannot
// write (a table of positions read row by row, as Llama 4's temperature
// is) runs through the decode bundle one token at a time.
type Interpreter struct {
	// CertifySteps is how many runs of the step Compile certifies the
	// bundle over, from empty caches; 0 means 2.
	CertifySteps int
	// Tolerance bounds the certified difference; 0 means DefaultTolerance.
	Tolerance float64
}

// Name returns "rdu".
func (Interpreter) Name() string { return "rdu" }

// lower writes a step of one token as the decode deployment, and a step
// of several (a prompt's chunk) as the prefill deployment, or, when the
// prefill programs cannot be written (a table of positions read row by
// row), as the decode deployment run token by token.
func (in Interpreter) lower(g *poot.Graph, consts interp.Consts) (*bundle.Bundle, error) {
	tokens := 0
	for _, id := range g.Inputs(poot.Slot) {
		if v := g.Value(id); v.Slot == poot.SlotToken {
			tokens = int(v.Type.Shape.Size())
		}
	}
	if StepRows(g) > 1 {
		return Lower(g, Options{Consts: consts, Deployment: Batched})
	}
	if tokens > 1 {
		b, err := Lower(g, Options{Consts: consts, Deployment: Prefill})
		if !errors.Is(err, ErrUnliftable) {
			return b, err
		}
	}
	return Lower(g, Options{Consts: consts})
}

// Compile lowers, certifies and loads g (see Interpreter).
func (in Interpreter) Compile(g *poot.Graph, consts interp.Consts) (interp.Executable, error) {
	if err := interp.CheckConsts(g, consts); err != nil {
		return nil, err
	}
	b, err := in.lower(g, consts)
	if err != nil {
		return nil, err
	}
	m, err := sim.New(b, sim.InMemory{Consts: consts})
	if err != nil {
		return nil, err
	}
	steps, tol := in.CertifySteps, in.Tolerance
	if steps == 0 {
		steps = 2
	}
	if tol == 0 {
		tol = DefaultTolerance
	}
	cert, err := CertifyMachine(m, g, consts, steps, tol)
	if err != nil {
		return nil, err
	}
	m.Reset()
	outs := g.Outputs()
	return &Executable{g: g, b: b, m: m, binds: interp.NewBindings(g), out: g.Type(outs[0]), cert: cert}, nil
}

// Executable is a step compiled by Interpreter: a certified bundle loaded
// on the simulator.
type Executable struct {
	g     *poot.Graph
	b     *bundle.Bundle
	m     *sim.Machine
	binds *interp.Bindings
	out   poot.TensorType
	cert  Certificate
}

// Bundle returns the step's bundle.
func (e *Executable) Bundle() *bundle.Bundle { return e.b }

// Certificate returns how the bundle was certified.
func (e *Executable) Certificate() Certificate { return e.cert }

// Run runs the step's tokens through the bundle, one at a time, with the
// caches of state, and returns the step's logits. After a failed run the
// state is undefined, as interp.Executable allows.
func (e *Executable) Run(slots interp.Slots, state *interp.State) ([]tensor.Tensor, error) {
	if err := e.binds.Check(slots, state); err != nil {
		return nil, err
	}
	if err := state.Sync(); err != nil {
		return nil, &interp.Error{Eqn: -1, Err: err}
	}
	var writeBack []func()
	for _, name := range e.m.States() {
		t := state.Tensors[name]
		f := t.F32()
		if err := e.m.UseState(name, f); err != nil {
			return nil, err
		}
		if len(f) > 0 && unsafe.Pointer(unsafe.SliceData(f)) != unsafe.Pointer(unsafe.SliceData(t.Data)) {
			// An unaligned tensor gave a copy: write it back after the step.
			writeBack = append(writeBack, func() {
				c, _ := tensor.FromF32(t.Type.Shape, f)
				copy(t.Data, c.Data)
			})
		}
	}
	toks, pos := slots["token"].I32(), slots["pos"].I32()
	if len(toks) != len(pos) || len(toks) == 0 {
		return nil, fmt.Errorf("rdu: %d tokens at %d positions", len(toks), len(pos))
	}
	logits, err := runStep(e.m, toks, pos)
	if err != nil {
		return nil, err
	}
	for _, w := range writeBack {
		w()
	}
	out, err := tensor.FromF32(e.out.Shape, logits)
	if err != nil {
		return nil, fmt.Errorf("rdu: the step's logits %v from %d values: %w", e.out, len(logits), err)
	}
	return []tensor.Tensor{out}, nil
}

// Witness reports false: a bundle exposes no witnesses.
func (e *Executable) Witness(string) (tensor.Tensor, bool) { return tensor.Tensor{}, false }
