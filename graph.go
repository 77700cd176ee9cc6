package poot

import "strconv"

// ValueID numbers the values of one graph densely from zero.
type ValueID int32

// Kind says where a value comes from and how an interpreter stores it.
type Kind uint8

// The four kinds of values.
const (
	// Device values are produced by equations: every intermediate. Planners
	// give them stable addresses so that a step can be captured and replayed.
	Device Kind = iota
	// Const values are weights and tables, declared by name and bound when a
	// checkpoint is loaded. They never move.
	Const
	// Slot values are per-step inputs (token ids, positions, paged-cache
	// maps) whose buffers the host rewrites in place before every step.
	Slot
	// State values are carried from step to step (KV caches, recurrent
	// states). Each state input is paired with a state output of the same
	// type that overwrites it after the step.
	State
)

var kindNames = [...]string{Device: "device", Const: "const", Slot: "slot", State: "state"}

// String returns the kind's lower-case name.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// SlotKind says what a slot holds. The driver fills slots by kind; a graph
// has at most one slot of each kind other than SlotNamed.
type SlotKind uint8

// The slot kinds.
const (
	// SlotNamed is a per-step input known only by its name (for example a
	// hidden-state carry between steps).
	SlotNamed SlotKind = iota
	// SlotToken holds token ids, one per new token, in [0, vocab).
	SlotToken
	// SlotPos holds the absolute position of each new token, in
	// [0, capacity).
	SlotPos
	// SlotMap maps logical cache positions to physical cache rows in a
	// paged KV layout.
	SlotMap
	// SlotWriteMap gives the physical cache row each new token's keys and
	// values are written to in a paged KV layout.
	SlotWriteMap
)

var slotKindNames = [...]string{SlotNamed: "named", SlotToken: "token", SlotPos: "pos", SlotMap: "slot_map", SlotWriteMap: "write_map"}

// String returns the kind's name, which is also the default name of a slot
// of that kind.
func (s SlotKind) String() string {
	if int(s) < len(slotKindNames) {
		return slotKindNames[s]
	}
	return "slot(" + strconv.Itoa(int(s)) + ")"
}

// Value describes one value of a graph.
type Value struct {
	Type TensorType
	Kind Kind
	// Name is the binding name of a constant, slot or state input; empty for
	// device values.
	Name string
	// Slot is the slot's kind (slots only).
	Slot SlotKind
	// Min and Max bound the integer contents of a slot, inclusive, when
	// HasRange is set. Every interpreter rejects a step whose slot data
	// leave the range.
	Min, Max int64
	// HasRange says that Min and Max were declared (slots made by
	// Builder.Slot).
	HasRange bool
}

// Ranged reports whether the value is a slot with a declared integer range.
func (v Value) Ranged() bool { return v.Kind == Slot && v.HasRange }

// ScopeID numbers the distinct scope paths of a graph; 0 is the root scope "".
type ScopeID int32

// Eqn is one primitive equation: Out = Op[Params](Inputs...).
type Eqn struct {
	Op     Op
	Params Params
	Inputs []ValueID
	Out    ValueID
	Scope  ScopeID
	// Composite is the innermost composite whose body holds the equation,
	// or 0 (see Builder.Composite).
	Composite CompositeID
}

// clone returns a deep copy of e.
func (e Eqn) clone() Eqn {
	e.Inputs = append([]ValueID(nil), e.Inputs...)
	e.Params = e.Params.clone()
	return e
}

// StatePair says that after a step, the state input In is overwritten by
// the value Out.
type StatePair struct{ In, Out ValueID }

// Witness is a named value that a step exposes for validation and debugging
// (an intermediate that tests compare between interpreters).
type Witness struct {
	Name  string
	Value ValueID
}

// Graph is a finished, well-formed program: a typed list of values and the
// primitive equations that compute the device values, in topological order,
// with the step's outputs, state pairs and witnesses. A Graph is immutable:
// its accessors return copies, and passes change it only through edits
// (Replace, RemoveDead, RenameConstants) that return a new, validated graph.
type Graph struct {
	values     []Value
	eqns       []Eqn
	scopes     []string
	composites []Composite
	outputs    []ValueID
	states     []StatePair
	witnesses  []Witness
}

// NumValues is the number of values; ids run from 0 to NumValues()-1.
func (g *Graph) NumValues() int { return len(g.values) }

// Value describes value id. It returns the zero Value for an id out of range.
func (g *Graph) Value(id ValueID) Value {
	if id < 0 || int(id) >= len(g.values) {
		return Value{}
	}
	return g.values[id]
}

// Type is shorthand for g.Value(id).Type.
func (g *Graph) Type(id ValueID) TensorType { return g.Value(id).Type }

// NumEqns is the number of equations.
func (g *Graph) NumEqns() int { return len(g.eqns) }

// Eqn returns a copy of equation i, or the zero Eqn (whose Op is not Valid)
// when i is out of range.
func (g *Graph) Eqn(i int) Eqn {
	if i < 0 || i >= len(g.eqns) {
		return Eqn{}
	}
	return g.eqns[i].clone()
}

// Eqns returns a copy of every equation, in evaluation order.
func (g *Graph) Eqns() []Eqn {
	// The copies share two backing arrays, each slice capped at its own
	// end, so a caller appending to one never writes into another; two
	// allocations instead of several an equation keep reading a deep
	// graph cheap.
	nIn, nInt := 0, 0
	for _, e := range g.eqns {
		p := e.Params
		nIn += len(e.Inputs)
		nInt += len(p.Perm) + len(p.Shape) + len(p.Start) + len(p.Limit)
	}
	ins, ints := make([]ValueID, 0, nIn), make([]int, 0, nInt)
	take := func(s []int) []int {
		if s == nil {
			return nil
		}
		n := len(ints)
		ints = append(ints, s...)
		return ints[n:len(ints):len(ints)]
	}
	out := make([]Eqn, len(g.eqns))
	for i, e := range g.eqns {
		if e.Inputs != nil {
			n := len(ins)
			ins = append(ins, e.Inputs...)
			e.Inputs = ins[n:len(ins):len(ins)]
		}
		e.Params.Perm, e.Params.Start, e.Params.Limit = take(e.Params.Perm), take(e.Params.Start), take(e.Params.Limit)
		e.Params.Shape = take(e.Params.Shape)
		out[i] = e
	}
	return out
}

// Scope returns the path of scope id, such as "layer.3/attn/rope".
func (g *Graph) Scope(id ScopeID) string {
	if id < 0 || int(id) >= len(g.scopes) {
		return ""
	}
	return g.scopes[id]
}

// Outputs lists the step's outputs in the order given to Finish.
func (g *Graph) Outputs() []ValueID { return append([]ValueID(nil), g.outputs...) }

// States lists the state pairs.
func (g *Graph) States() []StatePair { return append([]StatePair(nil), g.states...) }

// Witnesses lists the named validation witnesses.
func (g *Graph) Witnesses() []Witness { return append([]Witness(nil), g.witnesses...) }

// Inputs lists the ids of the values of kind k (Const, Slot or State), in id
// order.
func (g *Graph) Inputs(k Kind) []ValueID {
	var ids []ValueID
	for i, v := range g.values {
		if v.Kind == k && k != Device {
			ids = append(ids, ValueID(i))
		}
	}
	return ids
}

// Lookup finds the constant, slot or state input with the given name.
func (g *Graph) Lookup(name string) (ValueID, bool) {
	for i, v := range g.values {
		if v.Kind != Device && v.Name == name {
			return ValueID(i), true
		}
	}
	return -1, false
}

// Producers returns, for every value, the index of the equation that
// computes it, or -1 for inputs.
func (g *Graph) Producers() []int {
	p := make([]int, len(g.values))
	for i := range p {
		p[i] = -1
	}
	for i, e := range g.eqns {
		p[e.Out] = i
	}
	return p
}

// InScope reports whether scope path s is scope prefix or lies inside it.
// The empty prefix contains everything.
func InScope(s, prefix string) bool {
	if prefix == "" || s == prefix {
		return true
	}
	return len(s) > len(prefix) && s[:len(prefix)] == prefix && s[len(prefix)] == '/'
}

// ScopeEqns lists the indices of the equations recorded in scope or any of
// its sub-scopes, in order.
func (g *Graph) ScopeEqns(scope string) []int {
	var idx []int
	for i, e := range g.eqns {
		if InScope(g.scopes[e.Scope], scope) {
			idx = append(idx, i)
		}
	}
	return idx
}
