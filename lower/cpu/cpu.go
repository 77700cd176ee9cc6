// Package cpu is poot's CPU backend: it compiles a graph through the
// planner (package lower) and runs the plan on all cores with a persistent
// worker pool (package kernels).
//
// Every kernel of a plan has a home here: contractions with a rank-2
// weight call package kernels' matrix products, which read F32, F16, BF16
// and packed weights as stored (quantizing the activations to 8-bit
// blocks for the packed formats, as llama.cpp does, so the inner loops are
// integer dot products; assembly chosen at run time by CPU features, with
// portable Go fallbacks); fused elementwise and reduction programs run
// over 256-element chunks split across the pool (arithmetic in package
// kernels' vector loops); fused attention without soft cap or sinks runs
// tiled in a prefill of 32 rows or more (blocks of query rows meet each
// key/value head's rows as two matrix products on the kernels' tiles, see
// tiled.go) and per query row on package kernels' vectorized attention
// otherwise, and with them on a portable kernel that reads each K and V
// row once per query row and key/value head for all the query heads that
// share it; a rotary embedding runs as one loop over its rows' pairs and
// SwiGLU as one vector pass over gate and up (each with the roundings of
// its body, so they agree with it bit for bit); every other
// equation runs by the generic host kernel of its primitive, the one the
// oracle runs (package internal/hostexec).
//
// # Storage
//
// Compile allocates one arena for every intermediate at the offsets the
// planner chose, one buffer per slot, and binds constants in place. State
// is not copied: the kernels read and write the tensors of the
// interp.State given to Run, whose addresses the executable remembers; a
// KV-cache append the planner made in place writes the caller's cache
// directly. When a later Run gets a State whose tensors live elsewhere,
// the executable rebinds (cheap, allocation-free). State outputs that are
// not written in place are copied back at the end of the step. Because
// state is updated while the step runs, a runtime fault (an index out of
// range) can leave rows already written; slot ranges and bindings are
// checked before anything is written.
//
// # Agreement with the oracle
//
// Generic rules compute what the oracle computes, with sums in float64
// and transcendentals in float64 rounded once; programs do the same except
// Exp, which is float32 within 2 ulps unless Exact is set; fused attention
// computes scores and the softmax in float32. With Exact set, every contraction is
// generic (float64 sums, no activation quantization) and a plan agrees
// with the oracle within pootest.Default. Without it, contractions over
// F32/F16/BF16 weights sum in float32 (relative error about K·2^-24 of
// Σ|x·w|), and over packed weights quantize each block of 32 (or 256)
// activations to int8 with scale amax/127, so each output differs from
// the oracle by at most Σ_blocks (amax_b/254)·Σ_{k∈b}|w_k| plus float32
// rounding (see TestQuantizedContractionBound).
package cpu

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/hostexec"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/kernels"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/tensor"
)

// Interpreter compiles graphs for the CPU. Its zero value uses every core
// and every pass.
type Interpreter struct {
	// Threads is the number of workers (0: GOMAXPROCS).
	Threads int
	// Options switch planner passes off.
	Options lower.Options
	// Exact makes every contraction generic (float64 sums, activations not
	// quantized), for bit-level comparisons with the oracle.
	Exact bool
}

// Name returns "cpu".
func (Interpreter) Name() string { return "cpu" }

// Target is the CPU's description for the planner: the weight dtypes
// package kernels' products read (TestQuantizedContractionBound holds each
// to its bound), and the generic contraction's.
func Target(exact bool) lower.Target {
	composites := []string{lower.FusedAttention, lower.FusedRope, lower.FusedSwiGLU}
	if !exact {
		composites = append(composites, lower.FusedRMSNorm) // not bit for bit the body's
	}
	return lower.Target{
		Name:          "cpu",
		MatMulWeights: []poot.DType{poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.Q4_K, poot.Q5_K, poot.Q6_K, poot.MXFP4},
		Fallback:      []poot.DType{poot.F32, poot.F16, poot.BF16, poot.Q8_0, poot.Q4_0, poot.Q4_1, poot.Q5_0, poot.Q5_1, poot.Q4_K, poot.Q5_K, poot.Q6_K, poot.Q8_K, poot.MXFP4},
		Exact:         exact,
		Kinds:         []lower.Kind{lower.Contract, lower.Elementwise, lower.Reduce, lower.FlashAttention, lower.Rows, lower.RoPE, lower.SwiGLU, lower.RMSNorm},
		Composites:    composites,
		NarrowKV:      []poot.DType{poot.F16, poot.Q8_0},
	}
}

// Compile plans g and prepares it to run.
func (in Interpreter) Compile(g *poot.Graph, consts interp.Consts) (interp.Executable, error) {
	return in.CompileExec(g, consts)
}

// buf is the storage of a value, viewed as bytes and, when it is a whole
// number of aligned words, as float32 and int32 elements. Values sharing
// storage share one buf, and rebinding a state rewrites the buf in place,
// so compiled kernels always see the current storage.
type buf struct {
	b []byte
	f []float32
	i []int32
}

// Bytes, F32 and I32 make a buf the hostexec.Storage of the generic
// kernels, which read it each time they run and so follow a rebinding.
func (x *buf) Bytes() []byte  { return x.b }
func (x *buf) F32() []float32 { return x.f }
func (x *buf) I32() []int32   { return x.i }

func (x *buf) set(b []byte) {
	x.b = b
	x.f, x.i = nil, nil
	if len(b) >= 4 && uintptr(unsafe.Pointer(unsafe.SliceData(b)))%4 == 0 {
		x.f = unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
		x.i = unsafe.Slice((*int32)(unsafe.Pointer(unsafe.SliceData(b))), len(b)/4)
	}
}

// Exec is a compiled plan. It is not safe for concurrent use.
type Exec struct {
	plan    *lower.Plan
	g       *poot.Graph
	pool    *kernels.Pool
	arena   []byte
	bufs    []*buf
	steps   []step
	binds   *interp.Bindings
	slots   []binding
	states  []binding
	stage   []*buf // per writeback: the stage buffer, or nil
	ran     bool
	outputs []poot.ValueID
	witness []poot.Witness
}

type step struct {
	k   *lower.Kernel
	run func() error
}

type binding struct {
	v  poot.Value
	id poot.ValueID
}

type compiler struct {
	x     *Exec
	g     *poot.Graph
	bufs  []*buf
	exact bool
	// last is the contraction compiled last: the next one shares its
	// prepared activations if it reads the same value (see
	// compileContract), which no kernel between them can change.
	last *contract
	// acts is the activations every contraction prepares (see contract).
	acts *kernels.Acts
}

func (c *compiler) typ(id poot.ValueID) poot.TensorType { return c.g.Type(id) }
func (c *compiler) shape(id poot.ValueID) poot.Shape    { return c.g.Type(id).Shape }
func (c *compiler) dtype(id poot.ValueID) poot.DType    { return c.g.Type(id).DType }
func (c *compiler) in(e *poot.Eqn, i int) *buf          { return c.bufs[e.Inputs[i]] }
func (c *compiler) out(e *poot.Eqn) *buf                { return c.bufs[e.Out] }
func (c *compiler) sameStorage(a, b poot.ValueID) bool  { return c.bufs[a] == c.bufs[b] }

// alignedBytes returns n zero bytes aligned to 64.
func alignedBytes(n int64) []byte {
	w := make([]uint64, (n+127)/8)
	b := unsafe.Slice((*byte)(unsafe.Pointer(&w[0])), len(w)*8)
	off := (64 - int(uintptr(unsafe.Pointer(&b[0]))%64)) % 64
	return b[off : off+int(n)]
}

// CompileExec is Compile returning the concrete executable.
func (in Interpreter) CompileExec(g *poot.Graph, consts interp.Consts) (*Exec, error) {
	if g == nil {
		return nil, &interp.Error{Eqn: -1, Err: fmt.Errorf("%w: nil graph", interp.ErrUnsupported)}
	}
	if err := interp.CheckConsts(g, consts); err != nil {
		return nil, err
	}
	plan, err := lower.Build(g, Target(in.Exact), in.Options)
	if err != nil {
		var le *lower.LegalizeError
		if ok := asLegalize(err, &le); ok {
			return nil, &interp.Error{Eqn: le.Eqn, Op: le.Op, Scope: le.Scope, Err: fmt.Errorf("%w: %v", interp.ErrUnsupported, err)}
		}
		return nil, &interp.Error{Eqn: -1, Err: fmt.Errorf("%w: %v", interp.ErrUnsupported, err)}
	}
	return compilePlan(plan, consts, in.Threads)
}

func asLegalize(err error, le **lower.LegalizeError) bool {
	e, ok := err.(*lower.LegalizeError)
	if ok {
		*le = e
	}
	return ok
}

// compilePlan allocates the plan's storage and compiles its kernels.
func compilePlan(plan *lower.Plan, consts interp.Consts, threads int) (*Exec, error) {
	g := plan.Graph
	x := &Exec{plan: plan, g: g, pool: sharedPool(threads), bufs: make([]*buf, g.NumValues())}
	x.arena = alignedBytes(max(plan.ArenaBytes, 64))
	x.outputs, x.witness = g.Outputs(), g.Witnesses()
	x.binds = interp.NewBindings(g)
	roots := map[poot.ValueID]*buf{}
	for id, l := range plan.Locs {
		v := g.Value(poot.ValueID(id))
		if l.Space == lower.None {
			continue
		}
		if b, ok := roots[l.Root]; ok {
			x.bufs[id] = b
			continue
		}
		b := &buf{}
		roots[l.Root] = b
		x.bufs[id] = b
		rt := g.Type(l.Root)
		switch l.Space {
		case lower.Arena:
			b.set(x.arena[l.Offset : l.Offset+rt.Bytes()])
		case lower.ConstSpace:
			t, _ := consts.Lookup(g.Value(l.Root).Name)
			data := t.Data
			if (rt.DType == poot.F32 || rt.DType == poot.I32) && len(data) > 0 && uintptr(unsafe.Pointer(&data[0]))%4 != 0 {
				data = append(alignedBytes(int64(len(data)))[:0], data...)
			}
			b.set(data)
		case lower.SlotSpace:
			b.set(alignedBytes(rt.Bytes()))
		case lower.StateSpace:
			// bound by Run
		}
		_ = v
	}
	// Reshapes of storage share their root's buf but may differ in length
	// only in the arena (a view of the same bytes), which set already
	// covers: a reshape keeps the element count.
	for _, id := range g.Inputs(poot.Slot) {
		x.slots = append(x.slots, binding{g.Value(id), id})
	}
	for _, id := range g.Inputs(poot.State) {
		x.states = append(x.states, binding{g.Value(id), id})
	}
	c := &compiler{x: x, g: g, bufs: x.bufs, exact: plan.Target.Exact, acts: new(kernels.Acts)}
	for _, k := range plan.Inits {
		if x.bufs[k.Outputs[0]] == nil {
			continue
		}
		e := g.Eqn(k.Eqns[0])
		if _, err := c.generic(&e); err != nil { // fills the value
			return nil, &interp.Error{Eqn: k.Eqns[0], Op: e.Op, Scope: g.Scope(e.Scope), Err: err}
		}
	}
	for _, k := range plan.Kernels {
		run, err := compileKernel(c, k)
		if err != nil {
			e := g.Eqn(k.Eqns[0])
			return nil, &interp.Error{Eqn: k.Eqns[0], Op: e.Op, Scope: g.Scope(e.Scope), Err: err}
		}
		if run != nil {
			x.steps = append(x.steps, step{k: k, run: run})
		}
	}
	for _, wb := range plan.Writebacks {
		if wb.Staged {
			s := &buf{}
			s.set(x.arena[wb.Stage : wb.Stage+g.Type(wb.Out).Bytes()])
			x.stage = append(x.stage, s)
		} else {
			x.stage = append(x.stage, nil)
		}
	}
	return x, nil
}

func compileKernel(c *compiler, k *lower.Kernel) (func() error, error) {
	switch k.Kind {
	case lower.Contract:
		e := c.g.Eqn(k.Eqns[0])
		if e.Op == poot.IndexedMatMul {
			return compileIndexed(c, &e)
		}
		return compileContract(c, &e)
	case lower.Elementwise, lower.Reduce:
		return compileProgram(c, k)
	case lower.FlashAttention:
		return compileFlash(c, k)
	case lower.Rows:
		return compileRows(c, k)
	case lower.RoPE:
		return compileRope(c, k), nil
	case lower.SwiGLU:
		return compileGLU(c, k), nil
	case lower.RMSNorm:
		return compileNorm(c, k), nil
	}
	e := c.g.Eqn(k.Eqns[0])
	return c.generic(&e)
}

// generic compiles e into the host kernel the oracle runs, over this
// executable's storage and worker pool.
func (c *compiler) generic(e *poot.Eqn) (func() error, error) {
	he := &hostexec.Eqn{Op: e.Op, Params: e.Params, Out: c.typ(e.Out), Res: c.out(e), Par: c.x.pool}
	for i, id := range e.Inputs {
		he.In = append(he.In, c.typ(id))
		he.Args = append(he.Args, c.in(e, i))
	}
	return hostexec.Compile(he)
}

// Plan returns the plan the executable runs.
func (x *Exec) Plan() *lower.Plan { return x.plan }

// Close releases the executable. Its worker pool is shared with every
// executable of the same thread count and stays up.
func (x *Exec) Close() {}

var (
	poolsMu sync.Mutex
	pools   = map[int]*kernels.Pool{}
)

// sharedPool returns the process's pool of n workers (n < 1: GOMAXPROCS).
// Executables share pools: a pool serialises its loops, and a driver keeps
// several compiled steps (prefill, decode) that never run at once.
func sharedPool(n int) *kernels.Pool {
	if n < 1 {
		n = runtime.GOMAXPROCS(0)
	}
	poolsMu.Lock()
	defer poolsMu.Unlock()
	p := pools[n]
	if p == nil {
		p = kernels.NewPool(n)
		pools[n] = p
	}
	return p
}

// Run executes one step (see interp.Executable). It allocates only the
// output tensors it returns; RunInto allocates nothing.
func (x *Exec) Run(slots interp.Slots, state *interp.State) ([]tensor.Tensor, error) {
	res := make([]tensor.Tensor, len(x.outputs))
	for i, id := range x.outputs {
		t, err := tensor.New(x.g.Type(id))
		if err != nil {
			return nil, err
		}
		res[i] = t
	}
	if err := x.RunInto(slots, state, res); err != nil {
		return nil, err
	}
	return res, nil
}

// RunInto executes one step and copies the outputs into outs, tensors of
// the outputs' types that the caller keeps from step to step. It
// allocates nothing while slots and state keep their types and the State's
// tensors keep their addresses.
func (x *Exec) RunInto(slots interp.Slots, state *interp.State, outs []tensor.Tensor) error {
	if err := x.bind(slots, state); err != nil {
		return err
	}
	x.ran = false
	for i := range x.steps {
		s := &x.steps[i]
		if err := s.run(); err != nil {
			e := x.g.Eqn(s.k.Eqns[0])
			return &interp.Error{Eqn: s.k.Eqns[0], Op: e.Op, Scope: x.g.Scope(e.Scope), Err: err}
		}
	}
	x.ran = true
	if err := x.copyOutputs(outs); err != nil {
		return err
	}
	for i, wb := range x.plan.Writebacks {
		if s := x.stage[i]; s != nil {
			copy(s.b, x.bufs[wb.Out].b)
		}
	}
	for i, wb := range x.plan.Writebacks {
		src := x.bufs[wb.Out]
		if s := x.stage[i]; s != nil {
			src = s
		}
		copy(x.bufs[wb.In].b, src.b)
	}
	return nil
}
