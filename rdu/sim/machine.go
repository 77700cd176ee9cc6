package sim

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

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
	// states are the caches, by the graph's state names, allocated when a
	// program instance that binds them first runs (or a host lends them).
	states map[string]*matrix
	shapes map[string][2]int
	tables map[string]*matrix
	w      Weights
	cache  map[string][]float32 // decoded weights by binding
}

// instance is one program bound for one place of the model.
type instance struct {
	name    string
	prog    *lang.Program
	bind    map[string]bundle.Binding
	types   *lang.Typed
	weights map[string]*matrix // nil until the instance first runs
	input   string
	output  string
}

// Result is what one step of the bundle leaves: the logits and the token
// the head picks (an id from 0), or in a batched bundle the token each
// sequence's row picks.
type Result struct {
	Logits []float32
	Next   int
	Nexts  []int
}

// New certifies the bundle's composition (Check), reads its tables and
// makes zeroed caches. Weights are read through w, decoded to Real once (a
// tensor bound twice, as a tied embedding is, is read once), when the
// program instance that binds them first runs; Load reads them all now.
func New(b *bundle.Bundle, w Weights) (*Machine, error) {
	if err := Check(b); err != nil {
		return nil, err
	}
	m := &Machine{b: b, w: w, states: map[string]*matrix{}, shapes: map[string][2]int{}, tables: map[string]*matrix{}, cache: map[string][]float32{}}
	man := &b.Manifest
	for _, t := range man.Tables {
		mt := &matrix{rows: t.Rows, cols: t.Cols, data: make([]float32, t.Rows*t.Cols)}
		raw := b.Tables[t.Offset:]
		for i := range mt.data {
			mt.data[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		m.tables[t.Name] = mt
	}
	typed := map[string]*lang.Typed{}
	mk := func(name, prog string, bind map[string]bundle.Binding, input, output string) (instance, error) {
		p, _ := b.Program(prog)
		in := instance{name: name, prog: p, bind: bind, input: input, output: output}
		if typed[prog] == nil {
			t, err := lang.Check(p)
			if err != nil {
				return in, err
			}
			typed[prog] = t
		}
		in.types = typed[prog]
		for decl, bd := range bind {
			if bd.Source != bundle.SourceState {
				continue
			}
			ty := in.types.Types[decl]
			s, ok := m.shapes[stateKey(bd)]
			if ok && s[1] != ty.Cols {
				return in, fmt.Errorf("rdu/sim: %s: state %q declared %d and %d wide", name, stateKey(bd), ty.Cols, s[1])
			}
			m.shapes[stateKey(bd)] = [2]int{max(s[0], bd.Row+ty.Rows), ty.Cols}
		}
		return in, nil
	}
	var err error
	if m.embed, err = mk("embed", man.Embed.Name, man.Embed.Bindings, "", man.Embed.Output); err != nil {
		return nil, err
	}
	kinds := map[string]bundle.Kind{}
	for _, k := range man.Kinds {
		kinds[k.Name] = k
	}
	for _, l := range man.Layers {
		k := kinds[l.Kind]
		in, err := mk(fmt.Sprintf("layer %d (%s)", l.Layer, k.Name), k.Name, l.Bindings, k.Input, k.Output)
		if err != nil {
			return nil, err
		}
		m.layers = append(m.layers, in)
	}
	if m.head, err = mk("head", man.Head.Name, man.Head.Bindings, man.Head.Input, man.Head.Output); err != nil {
		return nil, err
	}
	return m, nil
}

// load reads the weights of an instance that has not run yet.
func (m *Machine) load(in *instance) error {
	if in.weights != nil {
		return nil
	}
	weights := map[string]*matrix{}
	for decl, bd := range in.bind {
		if bd.Source == bundle.SourceState {
			m.state(stateKey(bd))
		}
		if bd.Source != bundle.SourceWeight {
			continue
		}
		ty := in.types.Types[decl]
		key := bd.Const + "\x00" + bd.File + "\x00" + fmt.Sprint(bd.Offset)
		for _, sl := range bd.Slices {
			key += fmt.Sprint("\x00", sl.Offset, "+", sl.Bytes, "x", sl.Count)
		}
		if c := bd.Heads; c != nil {
			key += fmt.Sprintf("\x00%+v", *c)
		}
		data, ok := m.cache[key]
		if !ok {
			raw, err := m.w.Read(bd)
			if err != nil {
				return err
			}
			if data, err = decode(bd, raw); err != nil {
				return err
			}
			if bd.Heads != nil {
				if data, err = bd.Heads.Cut(data); err != nil {
					return fmt.Errorf("rdu/sim: %s (%s): %w", bd.Name, bd.Tensor, err)
				}
			}
			m.cache[key] = data
		}
		weights[decl] = &matrix{rows: ty.Rows, cols: ty.Cols, data: data, transposed: bd.Transposed}
	}
	in.weights = weights
	return nil
}

// Load reads every weight of the bundle now, rather than when each
// program instance first runs.
func (m *Machine) Load() error {
	for _, in := range append(append([]*instance{&m.embed}, ptrs(m.layers)...), &m.head) {
		if err := m.load(in); err != nil {
			return err
		}
	}
	return nil
}

// Bundle returns the machine's bundle.
func (m *Machine) Bundle() *bundle.Bundle { return m.b }

// state returns the cache called name, allocating it zeroed at its first
// use.
func (m *Machine) state(name string) *matrix {
	s, ok := m.states[name]
	if !ok {
		sh := m.shapes[name]
		s = &matrix{rows: sh[0], cols: sh[1], data: make([]float32, sh[0]*sh[1])}
		m.states[name] = s
	}
	return s
}

// stateKey names the storage a state binding reads: the state, or in a
// tensor-parallel bundle one chip's part of it ("cache.k.0[cols 16+16]",
// "cache.delta.0[rows 0+16 32+16]").
func stateKey(bd bundle.Binding) string {
	if len(bd.Slices) == 0 {
		return bd.State
	}
	var sb strings.Builder
	sb.WriteString(bd.State + "[" + bd.Slices[0].Axis)
	for _, sl := range bd.Slices {
		fmt.Fprintf(&sb, " %d+%d", sl.From, sl.N)
	}
	return sb.String() + "]"
}

// States lists the caches' names.
func (m *Machine) States() []string {
	var out []string
	for n := range m.shapes {
		out = append(out, n)
	}
	return out
}

// State returns the storage of the cache called name (rows of the
// cache's width, a position a row), which steps write in place.
func (m *Machine) State(name string) ([]float32, bool) {
	if _, ok := m.shapes[name]; !ok {
		return nil, false
	}
	return m.state(name).data, true
}

// UseState makes the cache called name live in data, which must hold as
// many values as the cache: a host that keeps its caches itself (an
// interpreter's state) lends them to the machine.
func (m *Machine) UseState(name string, data []float32) error {
	sh, ok := m.shapes[name]
	if !ok {
		return fmt.Errorf("rdu/sim: the bundle has no state %q", name)
	}
	if len(data) != sh[0]*sh[1] {
		return fmt.Errorf("rdu/sim: state %q holds %d values, not %d", name, sh[0]*sh[1], len(data))
	}
	m.states[name] = &matrix{rows: sh[0], cols: sh[1], data: data}
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

// Step runs a decode bundle for one token (id tok, from 0) at position
// pos (from 0): the embedding, every layer through its kind's program, the
// head. It writes the token's keys and values into the caches.
func (m *Machine) Step(tok, pos int) (Result, error) { return m.Run([]int{tok}, []int{pos}) }

// Run runs the bundle once: a decode bundle for the one token of toks at
// its position, a prefill bundle for its chunk of tokens at consecutive
// positions, a batched bundle for one token of each sequence at that
// sequence's position (ids and positions from 0). It returns the head's
// logits (a row per token or sequence, or the last token's alone) and the
// tokens the head picks, or -1 when it picks none.
func (m *Machine) Run(toks, pos []int) (Result, error) {
	man := &m.b.Manifest
	rows := man.Rows()
	if len(toks) != rows || len(pos) != rows {
		return Result{}, &StepError{Program: "embed", Detail: fmt.Sprintf("%d tokens at %d positions for a bundle of %d a run", len(toks), len(pos), rows)}
	}
	runtime, err := m.runtime(pos)
	if err != nil {
		return Result{}, &StepError{Program: "embed", Detail: err.Error()}
	}
	if man.Deployment.Kind == "decode" {
		runtime["tok"] = toks[0] + 1
	} else {
		ids := &ints{rows: 1, cols: rows, data: make([]int32, rows)}
		for i, t := range toks {
			ids.data[i] = int32(t + 1)
		}
		runtime["toks"] = ids
	}
	var hidden value
	for _, in := range append(append([]*instance{&m.embed}, ptrs(m.layers)...), &m.head) {
		env, err := m.run(in, runtime, hidden)
		if err != nil {
			return Result{}, err
		}
		hidden = env[in.output]
		if in == &m.head {
			lg, ok := hidden.(*matrix)
			if !ok {
				return Result{}, &StepError{Program: "head", Detail: "no logits"}
			}
			res := Result{Logits: append([]float32(nil), lg.plain().data...), Next: -1}
			for _, name := range append([]string{man.Next}, man.Nexts...) {
				if name == "" {
					continue
				}
				next, ok := env[name].(int)
				if !ok {
					return Result{}, &StepError{Program: "head", Detail: "no token " + name}
				}
				if name == man.Next {
					res.Next = next - 1
				} else {
					res.Nexts = append(res.Nexts, next-1)
				}
			}
			return res, nil
		}
	}
	return Result{}, &StepError{Program: "head", Detail: "the bundle has no head"}
}

// runtime holds the position inputs of a run at positions pos (from 0):
// pos for a decode bundle, pos_s0 and poss for a prefill bundle (whose
// positions follow one another), pos_s0, pos_s1, … for a batched bundle
// (counting from 1).
func (m *Machine) runtime(pos []int) (map[string]value, error) {
	d := m.b.Manifest.Deployment
	out := map[string]value{}
	for i, p := range pos {
		if p < 0 || p >= d.Ctx || d.Kind == "prefill" && p != pos[0]+i {
			return nil, fmt.Errorf("positions %v in a context of %d", pos, d.Ctx)
		}
		switch d.Kind {
		case "decode":
			out["pos"] = p + 1
		case "prefill":
			out["pos_s0"] = pos[0] + 1
			if i == 0 {
				out["poss"] = &ints{rows: 1, cols: len(pos), data: make([]int32, len(pos))}
			}
			out["poss"].(*ints).data[i] = int32(p + 1)
		default:
			out[fmt.Sprintf("pos_s%d", i)] = p + 1
		}
	}
	return out, nil
}

func ptrs(s []instance) []*instance {
	out := make([]*instance, len(s))
	for i := range s {
		out[i] = &s[i]
	}
	return out
}

// run executes one program instance.
func (m *Machine) run(in *instance, runtime map[string]value, hidden value) (map[string]value, error) {
	if err := m.load(in); err != nil {
		return nil, err
	}
	env := map[string]value{}
	for i, s := range in.prog.Stmts {
		if err := m.exec(in, env, s, runtime, hidden); err != nil {
			return nil, &StepError{Program: in.name, Stmt: i, Detail: err.Error()}
		}
	}
	return env, nil
}

// RunLayer runs layer l's program alone on a run's hidden state (a row
// for a decode bundle, the chunk's rows for a prefill bundle, a row a
// sequence for a batched bundle) at the run's positions (from 0), with the
// layer's caches, and returns the rows it leaves: how a kind's program is
// certified by itself.
func (m *Machine) RunLayer(l int, hidden []float32, pos []int) ([]float32, error) {
	if l < 0 || l >= len(m.layers) {
		return nil, fmt.Errorf("rdu/sim: no layer %d", l)
	}
	rows := m.b.Manifest.Rows()
	if len(pos) != rows || len(hidden)%rows != 0 {
		return nil, fmt.Errorf("rdu/sim: %d values at %d positions for %d rows", len(hidden), len(pos), rows)
	}
	runtime, err := m.runtime(pos)
	if err != nil {
		return nil, fmt.Errorf("rdu/sim: %w", err)
	}
	in := &m.layers[l]
	env, err := m.run(in, runtime, &matrix{rows: rows, cols: len(hidden) / rows, data: hidden})
	if err != nil {
		return nil, err
	}
	out, ok := env[in.output].(*matrix)
	if !ok {
		return nil, &StepError{Program: in.name, Detail: "no result"}
	}
	return append([]float32(nil), out.plain().data...), nil
}
