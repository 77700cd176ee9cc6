package sim

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/lang"
)

// Machine is a certified bundle with its weights loaded, its caches and
// its host tables: a simulated accelerator that runs the bundle one token
// at a time. It is not safe for concurrent use.
type Machine struct {
	b      *bundle.Bundle
	embed  instance
	layers []instance
	head   instance
	// states are the caches, by the graph's state names.
	states map[string]*matrix
	tables map[string]*matrix
}

// instance is one program bound for one place of the model.
type instance struct {
	name    string
	prog    *lang.Program
	bind    map[string]bundle.Binding
	weights map[string]*matrix
	input   string
	output  string
}

// Result is what one step of the bundle leaves: the logits and the token
// the head picks (an id from 0).
type Result struct {
	Logits []float32
	Next   int
}

// New certifies the bundle's composition (Check), loads every weight it
// binds through w (decoded to Real once; a tensor bound twice, as a tied
// embedding is, is read once), reads its tables and makes zeroed caches.
func New(b *bundle.Bundle, w Weights) (*Machine, error) {
	if err := Check(b); err != nil {
		return nil, err
	}
	m := &Machine{b: b, states: map[string]*matrix{}, tables: map[string]*matrix{}}
	man := &b.Manifest
	for _, t := range man.Tables {
		mt := &matrix{rows: t.Rows, cols: t.Cols, data: make([]float32, t.Rows*t.Cols)}
		raw := b.Tables[t.Offset:]
		for i := range mt.data {
			mt.data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		m.tables[t.Name] = mt
	}
	cache := map[string][]float32{}
	load := func(name, prog string, bind map[string]bundle.Binding, input, output string) (instance, error) {
		p, _ := b.Program(prog)
		in := instance{name: name, prog: p, bind: bind, weights: map[string]*matrix{}, input: input, output: output}
		typed, err := lang.Check(p)
		if err != nil {
			return in, err
		}
		for decl, bd := range bind {
			ty := typed.Types[decl]
			switch bd.Source {
			case bundle.SourceWeight:
				key := bd.Const + "\x00" + bd.File
				data, ok := cache[key]
				if !ok {
					raw, err := w.Read(bd)
					if err != nil {
						return in, err
					}
					if data, err = decode(bd, raw); err != nil {
						return in, err
					}
					cache[key] = data
				}
				in.weights[decl] = &matrix{rows: ty.Rows, cols: ty.Cols, data: data, transposed: bd.Transposed}
			case bundle.SourceState:
				if _, ok := m.states[bd.State]; !ok {
					m.states[bd.State] = &matrix{rows: ty.Rows, cols: ty.Cols, data: make([]float32, ty.Rows*ty.Cols)}
				}
				if s := m.states[bd.State]; s.rows != ty.Rows || s.cols != ty.Cols {
					return in, fmt.Errorf("rdu/sim: %s: state %q declared %d by %d and %d by %d", name, bd.State, ty.Rows, ty.Cols, s.rows, s.cols)
				}
			}
		}
		return in, nil
	}
	var err error
	if m.embed, err = load("embed", man.Embed.Name, man.Embed.Bindings, "", man.Embed.Output); err != nil {
		return nil, err
	}
	kinds := map[string]bundle.Kind{}
	for _, k := range man.Kinds {
		kinds[k.Name] = k
	}
	for _, l := range man.Layers {
		k := kinds[l.Kind]
		in, err := load(fmt.Sprintf("layer %d (%s)", l.Layer, k.Name), k.Name, l.Bindings, k.Input, k.Output)
		if err != nil {
			return nil, err
		}
		m.layers = append(m.layers, in)
	}
	if m.head, err = load("head", man.Head.Name, man.Head.Bindings, man.Head.Input, man.Head.Output); err != nil {
		return nil, err
	}
	return m, nil
}

// Bundle returns the machine's bundle.
func (m *Machine) Bundle() *bundle.Bundle { return m.b }

// States lists the caches' names.
func (m *Machine) States() []string {
	var out []string
	for n := range m.states {
		out = append(out, n)
	}
	return out
}

// State returns the storage of the cache called name (rows of the
// cache's width, a position a row), which steps write in place.
func (m *Machine) State(name string) ([]float32, bool) {
	s, ok := m.states[name]
	if !ok {
		return nil, false
	}
	return s.data, true
}

// UseState makes the cache called name live in data, which must hold as
// many values as the cache: a host that keeps its caches itself (an
// interpreter's state) lends them to the machine.
func (m *Machine) UseState(name string, data []float32) error {
	s, ok := m.states[name]
	if !ok {
		return fmt.Errorf("rdu/sim: the bundle has no state %q", name)
	}
	if len(data) != len(s.data) {
		return fmt.Errorf("rdu/sim: state %q holds %d values, not %d", name, len(s.data), len(data))
	}
	s.data = data
	return nil
}

// Reset zeroes every cache.
func (m *Machine) Reset() {
	for _, s := range m.states {
		clear(s.data)
	}
}

// StepError is a step that failed: the program instance, the statement and
// what went wrong.
type StepError struct {
	Program string
	Stmt    int
	Detail  string
}

// Error formats the error on one line.
func (e *StepError) Error() string {
	return fmt.Sprintf("rdu/sim: %s, statement %d: %s", e.Program, e.Stmt, e.Detail)
}

// Step runs the bundle for one token (id tok, from 0) at position pos
// (from 0): the embedding, every layer through its kind's program, the
// head. It writes the token's keys and values into the caches.
func (m *Machine) Step(tok, pos int) (Result, error) {
	ctx := m.b.Manifest.Deployment.Ctx
	if pos < 0 || pos >= ctx {
		return Result{}, &StepError{Program: "embed", Detail: fmt.Sprintf("position %d outside the context of %d", pos, ctx)}
	}
	runtime := map[string]int{"tok": tok + 1, "pos": pos + 1}
	var hidden value
	for _, in := range append(append([]*instance{&m.embed}, ptrs(m.layers)...), &m.head) {
		env, err := m.run(in, runtime, hidden)
		if err != nil {
			return Result{}, err
		}
		hidden = env[in.output]
		if in == &m.head {
			lg, ok := hidden.(*matrix)
			next, ok2 := env[m.b.Manifest.Next].(int)
			if !ok || !ok2 {
				return Result{}, &StepError{Program: "head", Detail: "no logits or next token"}
			}
			return Result{Logits: append([]float32(nil), lg.data...), Next: next - 1}, nil
		}
	}
	return Result{}, &StepError{Program: "head", Detail: "the bundle has no head"}
}

func ptrs(s []instance) []*instance {
	out := make([]*instance, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}

// run executes one program instance.
func (m *Machine) run(in *instance, runtime map[string]int, hidden value) (map[string]value, error) {
	env := map[string]value{}
	for i, s := range in.prog.Stmts {
		if err := m.exec(in, env, s, runtime, hidden); err != nil {
			return nil, &StepError{Program: in.name, Stmt: i, Detail: err.Error()}
		}
	}
	return env, nil
}
