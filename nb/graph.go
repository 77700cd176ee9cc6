package nb

import (
	"errors"
	"fmt"
	"math"
	"runtime"
	"strconv"
	"strings"

	"github.com/pootlabs/poot"
)

// brand is the one brand of every builder of this package. It is hidden, so
// no exported signature mentions a type parameter.
type brand struct{}

type (
	builder = poot.Builder[brand]
	handle  = poot.Traced[brand]
)

// limits bound what a notebook graph may record, so that a typo in a shape
// is an error rather than an exhausted machine.
var limits = poot.Limits{
	MaxEquations:   1 << 20,
	MaxConstBytes:  1 << 32,
	MaxValueBytes:  1 << 30,
	MaxDeviceBytes: 1 << 32,
}

// step is one recorded method call. Graph records each call twice over:
// at once into its live builder, which gives shapes and errors while the
// user types, and as a step that Run, String and DOT replay into a fresh
// builder, so that a graph can be finished as often as it is inspected and
// still grow afterwards.
type step struct {
	in []int32                              // operand ids
	fn func(b *builder, in []handle) handle // records the call; in are the operands' handles
}

// inputKind tells the kinds of named values apart.
type inputKind uint8

const (
	kindInput inputKind = iota
	kindWeight
	kindSlot
)

type declared struct {
	kind inputKind
	v    Value
	dims []int
}

// Graph records a computation. Make one with New, or with Trace from a
// Model. The zero Graph and a nil *Graph are not usable: their methods
// return the zero Value and Err reports ErrNilGraph.
type Graph struct {
	b     *builder
	steps []step
	h     []handle // h[id] is the live handle of value id; h[0] is absent
	gen   int32
	names map[string]declared
	order []string // declared names in order

	// Set by Trace.
	model    Model
	dims     []int                // the traced input's dims; nil: from the data
	data     map[string][]float64 // the data of the Run being traced, if any
	pending  []string             // values whose shapes wait for data
	fromData []string             // values whose shapes this trace took from data
	deferred bool                 // shapes come from the data of each Run
	out      int32                // id of the model's output
	modelErr error                // Forward's error or panic, which outranks the builder's
}

// Value is a handle to a value recorded by a Graph: it has a shape and an
// element type but no data. The zero Value means "absent" where a method
// takes an optional operand (a bias, a norm weight, a mask).
type Value struct {
	g   *Graph
	id  int32 // 1-based; 0 is absent; modelOutput is the traced output
	gen int32
}

const modelOutput = -1

// New returns an empty graph.
func New() *Graph {
	g := &Graph{}
	g.reset()
	return g
}

func (g *Graph) reset() {
	g.b = poot.NewBuilder[brand](limits)
	g.steps = g.steps[:0]
	g.h = []handle{{}}
	g.gen++
	g.names = map[string]declared{}
	g.order = nil
	g.pending, g.fromData = nil, nil
	g.out = 0
	g.modelErr = nil
}

// Err returns the first error recorded, or nil.
func (g *Graph) Err() error {
	if g == nil || g.b == nil {
		return ErrNilGraph
	}
	if g.modelErr != nil {
		return g.modelErr
	}
	if g.deferred && len(g.pending) > 0 {
		return nil // the trace waits for data; Run makes it
	}
	return g.b.Err()
}

// fail records an error of the given kind for the method op, unless one is
// recorded already.
func (g *Graph) fail(kind error, op, format string, args ...any) {
	had := g.b.Err() != nil
	g.b.Failf(kind, op, format, args...)
	if !had {
		g.placeError()
	}
}

// placeError points the error just recorded at the user's code. The
// builder places an error at the first frame outside poot and ops, which
// here would be a line of this package.
func (g *Graph) placeError() {
	var e *poot.Error
	if errors.As(g.b.Err(), &e) {
		e.Pos = userPos()
	}
}

// userPos is the file:line of the first caller outside the packages of
// this module (a test file counts as outside). When that caller is Go's
// reflect package, the runtime or an interpreter (gomacro, and the proxy
// types its bindings generate), the call came from interpreted code whose
// lines Go cannot see: the position is then NotebookPos.
func userPos() string {
	var pcs [48]uintptr
	n := runtime.Callers(3, pcs[:])
	frames := runtime.CallersFrames(pcs[:n])
	for {
		f, more := frames.Next()
		if !strings.HasPrefix(f.Function, modulePath) || strings.HasSuffix(f.File, "_test.go") {
			if interpreted(f.Function) {
				return NotebookPos
			}
			return f.File[strings.LastIndexByte(f.File, '/')+1:] + ":" + strconv.Itoa(f.Line)
		}
		if !more {
			return ""
		}
	}
}

// NotebookPos is the position of an error made by interpreted code (a
// notebook cell), whose lines are not Go's to report.
const NotebookPos = "the notebook cell"

// interpreted reports whether the function (as runtime.Frame names it)
// belongs to the machinery that calls compiled code from interpreted
// code: reflect, the runtime's call trampolines, gomacro, or a gomacro
// proxy type (P_<package path>_<interface>).
func interpreted(function string) bool {
	return strings.HasPrefix(function, "reflect.") || strings.HasPrefix(function, "runtime.") ||
		strings.HasPrefix(function, "github.com/cosmos72/gomacro/") || strings.Contains(function, ".(*P_")
}

const modulePath = "github.com/pootlabs/poot"

// lookup finds the id of v in g, or says why it is not a value of g
// (kind and detail of the error). The zero Value gives id 0 and no error.
func (g *Graph) lookup(v Value) (id int32, detail string, kind error) {
	switch {
	case v.g == nil && v.id == 0:
		return 0, "", nil
	case v.g != g:
		return 0, "belongs to another nb.Graph", poot.ErrForeignHandle
	case v.id == modelOutput:
		if g.out == 0 {
			return 0, "is the output of a trace that waits for data (use it in Forward)", ErrValue
		}
		return g.out, "", nil
	case v.gen != g.gen:
		return 0, "is from an earlier trace of this graph", ErrValue
	case v.id < 0 || int(v.id) >= len(g.h):
		return 0, "is not a value of this graph", ErrValue
	}
	return v.id, "", nil
}

// resolve returns the live handle of v as operand i of op, recording an
// error if v is not a value of g (or is absent and not optional).
func (g *Graph) resolve(op string, i int, v Value, optional bool) (int32, handle) {
	id, detail, kind := g.lookup(v)
	switch {
	case kind != nil:
		g.fail(kind, op, "operand %d %s", i, detail)
		return 0, handle{}
	case id == 0 && !optional:
		g.fail(ErrValue, op, "operand %d is the zero Value", i)
	}
	return id, g.h[id]
}

// omittable says which operands of a call may be the zero Value (absent):
// operand i may when bit i is set.
type omittable uint

// mayOmit marks the operands at the given positions as omittable.
func mayOmit(positions ...int) omittable {
	var m omittable
	for _, i := range positions {
		m |= 1 << i
	}
	return m
}

// apply records fn over the operands vs (those marked in optional may be
// the zero Value) and returns its result.
func (g *Graph) apply(op string, optional omittable, fn func(b *builder, in []handle) handle, vs ...Value) Value {
	if g == nil || g.b == nil {
		return Value{}
	}
	ids := make([]int32, len(vs))
	hs := make([]handle, len(vs))
	for i, v := range vs {
		ids[i], hs[i] = g.resolve(op, i, v, optional&(1<<i) != 0)
	}
	return g.push(step{in: ids, fn: fn}, hs)
}

func (g *Graph) push(s step, hs []handle) Value {
	var h handle
	if g.b.Err() == nil {
		h = s.fn(g.b, hs)
		if g.b.Err() != nil {
			g.placeError()
		}
	} else {
		h = g.b.Scalar(0) // poisoned
	}
	g.steps = append(g.steps, s)
	g.h = append(g.h, h)
	return Value{g: g, id: int32(len(g.h) - 1), gen: g.gen}
}

// replay records every step into a fresh builder and returns it with the
// handles of every value.
func (g *Graph) replay() (*builder, []handle) {
	b := poot.NewBuilder[brand](limits)
	h := make([]handle, 1, len(g.steps)+1)
	in := make([]handle, 0, 4)
	for _, s := range g.steps {
		in = in[:0]
		for _, id := range s.in {
			in = append(in, h[id])
		}
		h = append(h, s.fn(b, in))
	}
	return b, h
}

// outputIDs resolves the values to be finished as outputs. A value that is
// not one of g's is an error of this call, not of the graph.
func (g *Graph) outputIDs(op string, vs []Value) ([]int32, error) {
	if err := g.Err(); err != nil {
		return nil, err
	}
	ids := make([]int32, len(vs))
	for i, v := range vs {
		id, detail, kind := g.lookup(v)
		if kind == nil && id == 0 {
			kind, detail = ErrValue, "is the zero Value"
		}
		if kind != nil {
			return nil, &poot.Error{Kind: kind, Op: op, Pos: userPos(), Detail: fmt.Sprintf("output %d %s", i, detail)}
		}
		ids[i] = id
	}
	return ids, nil
}

// finish replays the graph and finishes it with the given outputs.
func (g *Graph) finish(outs []int32) (*poot.Graph, error) {
	b, h := g.replay()
	if err := b.Err(); err != nil {
		return nil, err
	}
	hs := make([]handle, len(outs))
	for i, id := range outs {
		hs[i] = h[id]
	}
	return b.Finish(poot.Out(hs...))
}

// sinks lists the values no later step reads, the outputs of a graph that
// was not traced.
func (g *Graph) sinks() []int32 {
	read := make([]bool, len(g.h))
	for _, s := range g.steps {
		for _, id := range s.in {
			read[id] = true
		}
	}
	var out []int32
	for id := 1; id < len(g.h); id++ {
		if !read[id] && g.h[id] != (handle{}) {
			out = append(out, int32(id))
		}
	}
	return out
}

// --- declarations ---

// declare records a named value once: declaring the same name again with
// the same kind and dims (or none) returns the first Value.
func (g *Graph) declare(op, name string, kind inputKind, dims []int, fn func(b *builder, dims []int) handle) Value {
	if g == nil || g.b == nil {
		return Value{}
	}
	if d, ok := g.names[name]; ok {
		if d.kind == kind && (len(dims) == 0 || equalInts(dims, d.dims)) {
			return d.v
		}
		g.fail(poot.ErrName, op, "%q is declared twice, as %v and %v", name, fmtDims(d.dims), fmtDims(dims))
		return g.push(step{fn: func(b *builder, _ []handle) handle { return b.Scalar(0) }}, nil)
	}
	if len(dims) == 0 {
		dims = g.dimsFromData(op, name)
	}
	dims = append([]int(nil), dims...)
	if n := poot.Shape(dims).Size(); kind != kindWeight && n > limits.MaxValueBytes/4 && g.b.Err() == nil {
		// The builder charges constants at declaration but inputs only when
		// an operation reads them; a typo should fail here, where it is.
		g.fail(poot.ErrLimit, op, "%q %v would take %d bytes, more than the %d a notebook input may", name, fmtDims(dims), 4*n, limits.MaxValueBytes)
	}
	v := g.push(step{fn: func(b *builder, _ []handle) handle { return fn(b, dims) }}, nil)
	if g.b.Err() == nil {
		g.names[name] = declared{kind: kind, v: v, dims: dims}
		g.order = append(g.order, name)
	}
	return v
}

// dimsFromData gives a value declared without dims the shape of its data:
// a vector as long as the data of the Run being traced.
func (g *Graph) dimsFromData(op, name string) []int {
	switch {
	case g.model == nil:
		g.fail(poot.ErrType, op, "%q needs its dims (only a traced Model may leave them to the data)", name)
	case g.data == nil:
		if !contains(g.pending, name) {
			g.pending = append(g.pending, name)
		}
		if g.b.Err() == nil {
			g.deferred = true
			g.fail(errPending, op, "%q", name)
		}
	default:
		d, ok := g.data[name]
		if !ok {
			g.fail(ErrData, op, "no data for %q to take its shape from", name)
		} else if len(d) == 0 {
			g.fail(ErrData, op, "the data for %q are empty", name)
		} else {
			g.fromData = append(g.fromData, name)
			return []int{len(d)}
		}
	}
	return []int{1}
}

// Input declares an F32 input named name with the given dims, bound at each
// Run from the data of that name. In a traced Model, an Input without dims
// is a vector as long as its data (see the package documentation);
// declaring a name again with the same dims (or none) returns the same
// Value.
func (g *Graph) Input(name string, dims ...int) Value {
	return g.declare("input", name, kindInput, dims, func(b *builder, d []int) handle {
		return b.SlotNamed(name, poot.T(poot.F32, d...))
	})
}

// Weight declares an F32 constant (a weight or table) named name with the
// given dims, bound at each Run from the data of that name. Without dims it
// behaves as Input does.
func (g *Graph) Weight(name string, dims ...int) Value {
	return g.WeightAs(name, "f32", dims...)
}

// WeightAs declares a constant stored as dtype ("f32", "f16", "bf16",
// "q8_0", "q4_0", "q4_K", ...). Run quantizes its data to that dtype, so a
// MatMul or Linear reads it exactly as it would read a checkpoint; any
// other use needs Cast(w, "f32") first.
func (g *Graph) WeightAs(name, dtype string, dims ...int) Value {
	d, err := poot.ParseDType(dtype)
	if g != nil && g.b != nil && (err != nil || !d.Float()) {
		g.fail(poot.ErrType, "weight", "%q: dtype %q is not a float type", name, dtype)
	}
	return g.declare("weight", name, kindWeight, dims, func(b *builder, dims []int) handle {
		return b.Constant(name, poot.T(d, dims...))
	})
}

// Positions declares the step's positions: I32 [n], named "pos", holding
// each token's absolute position.
func (g *Graph) Positions(n int) Value {
	return g.declare("positions", poot.SlotPos.String(), kindSlot, []int{n}, func(b *builder, d []int) handle {
		return b.Slot(poot.SlotPos, poot.Shape(d), 0, math.MaxInt32)
	})
}

// Tokens declares the step's token ids: I32 [n], named "token", each in
// [0, vocab).
func (g *Graph) Tokens(n, vocab int) Value {
	return g.declare("tokens", poot.SlotToken.String(), kindSlot, []int{n}, func(b *builder, d []int) handle {
		return b.Slot(poot.SlotToken, poot.Shape(d), 0, int64(vocab)-1)
	})
}

// Names lists the inputs, weights and slots declared so far, in order.
func (g *Graph) Names() []string {
	if g == nil {
		return nil
	}
	return append([]string(nil), g.order...)
}

// Lookup returns the input, weight or slot declared under name.
func (g *Graph) Lookup(name string) (Value, bool) {
	if g == nil {
		return Value{}, false
	}
	d, ok := g.names[name]
	return d.v, ok
}

// --- values ---

func (v Value) aval() (poot.TensorType, bool) {
	g := v.g
	if g == nil || g.b == nil || g.b.Err() != nil {
		return poot.TensorType{}, false
	}
	id := v.id
	if id == modelOutput {
		id = g.out
	} else if v.gen != g.gen {
		return poot.TensorType{}, false
	}
	if id <= 0 || int(id) >= len(g.h) {
		return poot.TensorType{}, false
	}
	return g.b.Aval(g.h[id]), true
}

// Shape returns v's extents, or nil when v is absent or its graph is in
// error.
func (v Value) Shape() []int {
	t, ok := v.aval()
	if !ok {
		return nil
	}
	return append([]int{}, t.Shape...)
}

// Size returns the number of v's elements (0 when v is absent or its
// graph is in error).
func (v Value) Size() int {
	t, ok := v.aval()
	if !ok {
		return 0
	}
	return int(t.Shape.Size())
}

// DType returns v's element type ("f32", "i32", "bool", ...), or "" when v
// is absent or its graph is in error.
func (v Value) DType() string {
	t, ok := v.aval()
	if !ok {
		return ""
	}
	return t.DType.String()
}

// String describes v by its type, as "f32[2,4]".
func (v Value) String() string {
	t, ok := v.aval()
	if !ok {
		if v.g == nil && v.id == 0 {
			return "(absent)"
		}
		if v.g != nil && v.g.deferred && (len(v.g.pending) > 0 || v.id == modelOutput && v.g.out == 0) {
			return "(waits for data)"
		}
		return "(invalid)"
	}
	return t.String()
}

// Graph returns the graph that recorded v (nil for the zero Value).
func (v Value) Graph() *Graph { return v.g }

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func fmtDims(d []int) string {
	s := make([]string, len(d))
	for i, x := range d {
		s[i] = fmt.Sprint(x)
	}
	return "[" + strings.Join(s, ",") + "]"
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
