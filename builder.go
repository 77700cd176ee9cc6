package poot

import (
	"fmt"
	"math"
	"sync/atomic"
)

// Limits bound what a builder may record. A zero field means no limit.
type Limits struct {
	MaxEquations   int   // equations recorded
	MaxConstBytes  int64 // bytes of all constants together, as stored
	MaxValueBytes  int64 // bytes of any one intermediate
	MaxDeviceBytes int64 // bytes of all intermediates together
}

var builderSerial atomic.Uint64

// Builder records primitive equations into a graph. Its type parameter B is
// a brand: any type the caller chooses, usually an empty struct of the model
// family's own, which keeps the handles of different builders apart at
// compile time.
//
// A builder keeps the first error it meets (see Error); every later call
// records nothing and returns a poisoned handle, so model code needs no error
// plumbing. Err and Finish report the error. No input makes a builder panic.
type Builder[B any] struct {
	serial uint64
	values []Value
	eqns   []Eqn

	scopes     []string
	scopeIndex map[string]ScopeID
	stack      []ScopeID
	base       string // scope prefix of every equation (edit builders)

	names map[string]ValueID
	err   error

	composites []Composite   // records, in the order their bodies began
	compStack  []CompositeID // composites whose bodies are being recorded

	limits      Limits
	constBytes  int64
	deviceBytes int64
	finished    bool
	external    int // leading placeholder values of an edit builder

	inputArena  []ValueID // backing store of the equations' Inputs
	idScratch   []ValueID
	typeScratch []TensorType
	params      Params
}

// NewBuilder returns an empty builder that charges the given limits.
func NewBuilder[B any](limits Limits) *Builder[B] {
	return &Builder[B]{
		serial:     builderSerial.Add(1),
		scopes:     []string{""},
		scopeIndex: map[string]ScopeID{"": 0},
		names:      map[string]ValueID{},
		limits:     limits,
	}
}

// Err returns the first error recorded, or nil.
func (b *Builder[B]) Err() error { return b.err }

// Fail records err as the builder's error (if none is recorded yet), so that
// model code can report a problem of its own, such as a missing
// hyperparameter, through the same channel.
func (b *Builder[B]) Fail(err error) {
	if b.err == nil && err != nil {
		b.err = err
	}
}

// Failf records an error of the given kind (one of the sentinels, such as
// ErrType) raised by a composite operation named op, with the current scope
// and the position of the model code that called it, unless an error is
// already recorded. It is how composites report invalid arguments.
func (b *Builder[B]) Failf(kind error, op string, format string, args ...any) {
	b.fail(kind, op, nil, format, args...)
}

// NumEqns is the number of equations recorded so far.
func (b *Builder[B]) NumEqns() int { return len(b.eqns) }

func (b *Builder[B]) poison() Traced[B] { return Traced[B]{id: -1, owner: b.serial} }

func (b *Builder[B]) fail(kind error, op string, in []TensorType, format string, args ...any) Traced[B] {
	if b.err == nil {
		b.err = &Error{Kind: kind, Op: op, Inputs: in, Scope: b.scopes[b.cur()], Pos: callerPos(), Detail: fmt.Sprintf(format, args...)}
	}
	return b.poison()
}

func (b *Builder[B]) cur() ScopeID {
	if len(b.stack) == 0 {
		return 0
	}
	return b.stack[len(b.stack)-1]
}

// resolve checks that h belongs to b and names a value.
func (b *Builder[B]) resolve(h Traced[B]) (ValueID, bool) {
	if h.owner != b.serial || h.id < 0 || int(h.id) >= len(b.values) {
		return -1, false
	}
	return h.id, true
}

// Aval returns the type of h's value. A foreign handle records
// ErrForeignHandle and returns the zero TensorType.
func (b *Builder[B]) Aval(h Traced[B]) TensorType {
	id, ok := b.resolve(h)
	if !ok {
		if b.err == nil {
			b.fail(ErrForeignHandle, "aval", nil, "the handle was made by another builder")
		}
		return TensorType{}
	}
	return b.values[id].Type
}

// Shape returns the shape of h's value (nil after an error).
func (b *Builder[B]) Shape(h Traced[B]) Shape { return b.Aval(h).Shape }

// DType returns the element type of h's value (Invalid after an error).
func (b *Builder[B]) DType(h Traced[B]) DType { return b.Aval(h).DType }

// Rank returns the rank of h's value (0 after an error).
func (b *Builder[B]) Rank(h Traced[B]) int { return len(b.Aval(h).Shape) }

// Dim returns the extent of axis of h's value; a negative axis counts from
// the end. It never panics: after an error, or for an axis out of range
// (which it records as an error), it returns 1, so shape arithmetic in model
// code stays safe.
func (b *Builder[B]) Dim(h Traced[B], axis int) int {
	s := b.Aval(h).Shape
	if b.err != nil {
		return 1
	}
	if axis < 0 {
		axis += len(s)
	}
	if axis < 0 || axis >= len(s) {
		b.fail(ErrType, "dim", []TensorType{b.Aval(h)}, "axis %d out of range", axis)
		return 1
	}
	return s[axis]
}

// --- inputs ---

func (b *Builder[B]) declare(op string, v Value) Traced[B] {
	if b.err != nil {
		return b.poison()
	}
	if b.finished {
		return b.fail(ErrFinished, op, nil, "declaring %q", v.Name)
	}
	if v.Name == "" {
		return b.fail(ErrName, op, nil, "empty name")
	}
	if _, dup := b.names[v.Name]; dup {
		return b.fail(ErrName, op, nil, "%q is declared twice", v.Name)
	}
	if err := checkType(v.Type); err != nil {
		return b.fail(ErrType, op, []TensorType{v.Type}, "%q: %v", v.Name, err)
	}
	if v.Kind == Const {
		n := v.Type.Bytes()
		if b.limits.MaxConstBytes > 0 && b.constBytes+n > b.limits.MaxConstBytes {
			return b.fail(ErrLimit, op, nil, "constants would take %d bytes, limit %d", b.constBytes+n, b.limits.MaxConstBytes)
		}
		b.constBytes += n
	}
	id := ValueID(len(b.values))
	b.values = append(b.values, v)
	b.names[v.Name] = id
	return Traced[B]{id: id, owner: b.serial}
}

// Constant declares a weight or table that is bound by name when the graph is
// loaded. Packed dtypes are allowed. Names are unique across constants, slots
// and states.
func (b *Builder[B]) Constant(name string, t TensorType) Traced[B] {
	return b.declare("constant", Value{Type: TensorType{Shape: t.Shape.Clone(), DType: t.DType}, Kind: Const, Name: name})
}

// Slot declares a per-step integer input of the given kind (token ids,
// positions, paged-cache maps), named after its kind, whose every element
// must lie in [min, max]. Interpreters reject a step whose slot data do not.
func (b *Builder[B]) Slot(kind SlotKind, shape Shape, min, max int64) Traced[B] {
	if b.err == nil && (kind == SlotNamed || kind > SlotWriteMap) {
		return b.fail(ErrName, "slot", nil, "slot kind %v needs SlotNamed", kind)
	}
	if b.err == nil && (min > max || min < math.MinInt32 || max > math.MaxInt32) {
		return b.fail(ErrType, "slot", nil, "range [%d, %d] of slot %v is empty or exceeds i32", min, max, kind)
	}
	return b.declare("slot", Value{Type: TensorType{Shape: shape.Clone(), DType: I32}, Kind: Slot, Name: kind.String(), Slot: kind, Min: min, Max: max, HasRange: true})
}

// SlotNamed declares a per-step input of any type known only by its name.
func (b *Builder[B]) SlotNamed(name string, t TensorType) Traced[B] {
	if b.err == nil && t.DType.Packed() {
		return b.fail(ErrType, "slot", []TensorType{t}, "slot %q cannot be packed", name)
	}
	return b.declare("slot", Value{Type: TensorType{Shape: t.Shape.Clone(), DType: t.DType}, Kind: Slot, Name: name, Slot: SlotNamed})
}

// StateInput declares state carried between steps (a KV cache, a recurrent
// state). Finish must pair it with a state output of the same type. Of the
// packed dtypes only Q8_0 may be a state's (a quantized cache).
func (b *Builder[B]) StateInput(name string, t TensorType) Traced[B] {
	if b.err == nil && t.DType.Packed() && t.DType != Q8_0 {
		return b.fail(ErrType, "state", []TensorType{t}, "state %q cannot be %v (the only packed state is q8_0)", name, t.DType)
	}
	return b.declare("state", Value{Type: TensorType{Shape: t.Shape.Clone(), DType: t.DType}, Kind: State, Name: name})
}

// --- scopes ---

// Push opens a scope named name inside the current one. Names must be
// non-empty and contain no '/'.
func (b *Builder[B]) Push(name string) {
	if b.err != nil {
		return
	}
	if name == "" || containsSlash(name) {
		b.fail(ErrScope, "push", nil, "invalid scope name %q", name)
		return
	}
	path := name
	if p := b.scopes[b.cur()]; p != "" {
		path = p + "/" + name
	}
	id, ok := b.scopeIndex[path]
	if !ok {
		id = ScopeID(len(b.scopes))
		b.scopes = append(b.scopes, path)
		b.scopeIndex[path] = id
	}
	b.stack = append(b.stack, id)
}

// Pop closes the scope opened by the matching Push.
func (b *Builder[B]) Pop() {
	if b.err != nil {
		return
	}
	if len(b.stack) == 0 {
		b.fail(ErrScope, "pop", nil, "no open scope")
		return
	}
	b.stack = b.stack[:len(b.stack)-1]
}

// Scope runs fn inside a scope named name.
func (b *Builder[B]) Scope(name string, fn func()) {
	depth := len(b.stack)
	b.Push(name)
	fn()
	if len(b.stack) > depth+1 && b.err == nil {
		b.fail(ErrScope, "scope", nil, "scope %q left %d scopes open", name, len(b.stack)-depth-1)
	}
	if len(b.stack) > depth {
		b.stack = b.stack[:depth]
	}
}

// CurrentScope returns the path of the scope equations are recorded in now.
func (b *Builder[B]) CurrentScope() string { return b.scopes[b.cur()] }

func containsSlash(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			return true
		}
	}
	return false
}

// --- equations ---

// Apply records the equation op[p](in...) and returns its result. Every
// primitive method of Builder is a thin wrapper over Apply; passes and
// random-graph generators call it directly.
func (b *Builder[B]) Apply(op Op, p Params, in ...Traced[B]) Traced[B] {
	if b.err != nil {
		return b.poison()
	}
	if b.finished {
		return b.fail(ErrFinished, op.String(), nil, "recording after Finish")
	}
	ids, types := b.idScratch[:0], b.typeScratch[:0]
	for _, h := range in {
		id, ok := b.resolve(h)
		if !ok {
			return b.fail(ErrForeignHandle, op.String(), nil, "operand %d was made by another builder", len(ids))
		}
		ids = append(ids, id)
		types = append(types, b.values[id].Type)
	}
	b.idScratch, b.typeScratch = ids, types
	if !op.Valid() {
		return b.fail(ErrType, op.String(), append([]TensorType(nil), types...), "unknown primitive")
	}
	// Operand types were checked when their values were recorded; the
	// canonical params are this equation's own copy, which the result type
	// may share. They live in the builder while the rule runs, so that
	// recording allocates nothing for them.
	b.params = canonicalParams(op, p)
	out, err := op.infer(&b.params, types)
	if err != nil {
		return b.fail(ErrType, op.String(), append([]TensorType(nil), types...), "%v", err)
	}
	if b.limits.MaxEquations > 0 && len(b.eqns) >= b.limits.MaxEquations {
		return b.fail(ErrLimit, op.String(), nil, "more than %d equations", b.limits.MaxEquations)
	}
	n := out.Bytes()
	if b.limits.MaxValueBytes > 0 && n > b.limits.MaxValueBytes {
		return b.fail(ErrLimit, op.String(), nil, "result %v takes %d bytes, limit %d", out, n, b.limits.MaxValueBytes)
	}
	if b.limits.MaxDeviceBytes > 0 && b.deviceBytes+n > b.limits.MaxDeviceBytes {
		return b.fail(ErrLimit, op.String(), nil, "intermediates would take %d bytes, limit %d", b.deviceBytes+n, b.limits.MaxDeviceBytes)
	}
	b.deviceBytes += n
	id := ValueID(len(b.values))
	b.values = append(b.values, Value{Type: out})
	b.eqns = append(b.eqns, Eqn{Op: op, Params: b.params, Inputs: b.inputs(ids), Out: id, Scope: b.cur(), Composite: b.curComposite()})
	return Traced[B]{id: id, owner: b.serial}
}

// inputs copies an equation's operand ids into a shared backing array, so
// that recording does not allocate once per equation.
func (b *Builder[B]) inputs(ids []ValueID) []ValueID {
	if len(b.inputArena)+len(ids) > cap(b.inputArena) {
		b.inputArena = make([]ValueID, 0, max(1024, len(ids)))
	}
	n := len(b.inputArena)
	b.inputArena = append(b.inputArena, ids...)
	return b.inputArena[n : n+len(ids) : n+len(ids)]
}

// Finish closes the graph with the given outputs, state carries and
// witnesses, and returns it validated. Every state input must be carried
// exactly once. After Finish the builder records nothing more.
func (b *Builder[B]) Finish(out Outputs[B]) (*Graph, error) {
	if b.err != nil {
		return nil, b.err
	}
	if b.finished {
		b.fail(ErrFinished, "finish", nil, "Finish called twice")
		return nil, b.err
	}
	if len(b.stack) != 0 {
		b.fail(ErrScope, "finish", nil, "scope %q is still open", b.scopes[b.cur()])
		return nil, b.err
	}
	g := &Graph{values: b.values, eqns: b.eqns, scopes: b.scopes, composites: b.composites}
	for i, h := range out.Values {
		id, ok := b.resolve(h)
		if !ok {
			b.fail(ErrForeignHandle, "finish", nil, "output %d", i)
			return nil, b.err
		}
		g.outputs = append(g.outputs, id)
	}
	for i, c := range out.States {
		in, ok1 := b.resolve(c.In)
		o, ok2 := b.resolve(c.Out)
		if !ok1 || !ok2 {
			b.fail(ErrForeignHandle, "finish", nil, "state carry %d", i)
			return nil, b.err
		}
		g.states = append(g.states, StatePair{In: in, Out: o})
	}
	for _, w := range out.Witnesses {
		id, ok := b.resolve(w.Value)
		if !ok {
			b.fail(ErrForeignHandle, "finish", nil, "witness %q", w.Name)
			return nil, b.err
		}
		g.witnesses = append(g.witnesses, Witness{Name: w.Name, Value: id})
	}
	// Every equation was type-checked when it was recorded; check the
	// structure (pairs, names, order) without inferring again.
	if err := g.validate(false); err != nil {
		b.Fail(err)
		return nil, err
	}
	b.finished = true
	return g, nil
}
