package lower

import (
	"fmt"
	"slices"

	"github.com/pootlabs/poot"
)

// Target describes what a backend can run.
type Target struct {
	// Name identifies the target in plans and errors ("cpu").
	Name string
	// MatMulWeights lists the weight dtypes a contraction kernel reads as
	// stored. A rank-2 MatMul over any other dtype that Fallback covers
	// runs as a generic kernel; one over a dtype neither covers is a
	// *LegalizeError.
	MatMulWeights []poot.DType
	// Fallback lists the weight dtypes the generic contraction (decode a
	// row, then dot) reads.
	Fallback []poot.DType
	// Exact asks for contractions that agree with the oracle to float32
	// rounding: every MatMul runs as a generic kernel that accumulates in
	// float64 and quantizes no activations.
	Exact bool
	// Kinds lists the kernel kinds the backend runs besides Generic, Init
	// and Alias, which every backend runs. The planner makes no kernel of
	// another kind: a pass whose kernels the target lacks is skipped, and a
	// contraction without Contract runs as a generic kernel.
	Kinds []Kind
	// Composites names the composites the backend runs as fused kernels
	// (FusedAttention); any other composite runs as its body.
	Composites []string
	// NarrowKV lists the cache dtypes (F16, Q8_0) whose keys and values
	// the FlashAttention kernel reads in place (Attention.KV): an attention
	// over caches cast from one of them to F32 reads the caches as stored,
	// and the casts are not run.
	NarrowKV []poot.DType
}

// FusedAttention is the name of the composite the FlashAttention kernel
// runs ("attention", recorded by ops.Attention).
const FusedAttention = "attention"

// Runs reports whether the target runs kernels of kind k.
func (t Target) Runs(k Kind) bool {
	return k == Generic || k == Init || k == Alias || slices.Contains(t.Kinds, k)
}

// Fuses reports whether the target runs the composite called name as one
// fused kernel.
func (t Target) Fuses(name string) bool { return slices.Contains(t.Composites, name) }

// Options switch passes off for tests and debugging.
type Options struct {
	// Disabled names the passes not to run; Passes lists them.
	Disabled []string
}

func (o Options) on(pass string) bool { return !slices.Contains(o.Disabled, pass) }

// Passes lists the optional passes in the order they run:
// flash_attention, rope, swiglu, rmsnorm, elementwise, reduce_fusion,
// row_fusion, concat_stores and inplace.
func Passes() []string {
	names := make([]string, len(passes))
	for i, p := range passes {
		names[i] = p.name
	}
	return names
}

// Kind is what a kernel does.
type Kind uint8

// The kernel kinds.
const (
	// Generic runs one equation by its primitive's rule.
	Generic Kind = iota
	// Init is a Literal or Iota, computed once when the plan is compiled.
	Init
	// Alias is a Reshape: its value shares its operand's storage.
	Alias
	// Contract is a MatMul with a rank-2 weight, or an IndexedMatMul, that
	// reads its weight as stored with the target's product kernels.
	Contract
	// Elementwise runs a Program.
	Elementwise
	// Reduce is a ReduceSum or ReduceMax over the last axis with a Program
	// computing its operand (the Program's single store is not kept).
	Reduce
	// FlashAttention is a fused attention core (see Attention).
	FlashAttention
	// Rows runs its Parts (a Reduce, a program over the reduced rows and a
	// program over the full rows, such as the three of an RMSNorm) one
	// row at a time, so each row is read from memory once.
	Rows
	// RoPE is a fused rotary embedding (see Rotary).
	RoPE
	// SwiGLU is a fused SwiGLU gate (see Gated).
	SwiGLU
	// RMSNorm is a fused RMSNorm (see Norm).
	RMSNorm
)

var kindNames = [...]string{Generic: "generic", Init: "init", Alias: "alias", Contract: "contract",
	Elementwise: "elementwise", Reduce: "reduce", FlashAttention: "flash_attention", Rows: "rows", RoPE: "rope", SwiGLU: "swiglu",
	RMSNorm: "rmsnorm"}

// String names the kind.
func (k Kind) String() string {
	if int(k) < len(kindNames) {
		return kindNames[k]
	}
	return fmt.Sprintf("kind(%d)", k)
}

// Kernel is one unit of work of a plan.
type Kernel struct {
	Kind Kind
	// Op is the primitive of a Generic, Init, Alias or Contract kernel and
	// the reduction of a Reduce kernel.
	Op poot.Op
	// Eqns lists the equations the kernel computes, in graph order.
	Eqns []int
	// Inputs are the values the kernel reads that other kernels (or the
	// caller) produce; Outputs the values it writes that need storage.
	Inputs, Outputs []poot.ValueID
	// Program is the expression program of Elementwise and Reduce kernels.
	Program *Program
	// Attention describes a FlashAttention kernel, Rotary a RoPE one,
	// Gated a SwiGLU one and Norm an RMSNorm one.
	Attention *Attention
	Rotary    *Rotary
	Gated     *Gated
	Norm      *Norm
	// Parts are the kernels a Rows kernel runs row by row, and RowLen the
	// length of a row.
	Parts  []*Kernel
	RowLen int
	// Bytes is the memory the kernel reads and writes; Flops its
	// arithmetic, both per step.
	Bytes, Flops int64
}

// Name is a short description: the kind, and the primitive when there is
// one.
func (k *Kernel) Name() string {
	switch k.Kind {
	case Generic, Init, Alias, Contract, Reduce:
		if k.Kind == Generic {
			return k.Op.String()
		}
		return k.Kind.String() + "." + k.Op.String()
	}
	return k.Kind.String()
}

// Attention is the fused attention core of ops.Attention:
//
//	out[r·T+t, h·Dv:(h+1)·Dv] = Σ_s p[s] · V[r·S+s, g·Dv:(g+1)·Dv],
//	p = softmax over s (and the sink) of
//	    mask[r·T+t, s] ? cap·tanh(scale·(Q[r·T+t, h·D:] · K[r·S+s, g·D:])/cap) : -Inf
//
// with g = h / Rep, cap absent when SoftCap is 0, and Sinks[h] joining
// the softmax's denominator when Sinks is not -1. The sum runs over the
// positions s that some query row of sequence r sees (its mask row is true
// for some t), the others contributing nothing whatever V holds there: a
// kernel that skips a query's masked rows must still turn an output column
// NaN where a row hidden from that query, but seen by another of its
// sequence, holds a non-finite value (0·NaN), as the body does.
type Attention struct {
	Q, K, V, Mask, Sinks poot.ValueID
	Out                  poot.ValueID
	R, T, S              int
	Heads, KVHeads       int
	Rep                  int // Heads / KVHeads: query heads sharing one K/V head
	D, Dv                int
	Scale, SoftCap       float32
	// KV is the dtype of K and V: zero when they are the composite's own
	// F32 operands, else F16 or Q8_0, the caches those operands are cast
	// from, read in place (Target.NarrowKV).
	KV poot.DType
}

// Loc says where a value is stored.
type Loc struct {
	// Space is where the storage lives.
	Space Space
	// Root is the constant, slot or state value whose storage this is
	// (for those spaces), or the value that owns the arena region (a
	// reshape shares its operand's root, an in-place write its state's).
	Root poot.ValueID
	// Offset and Bytes place an arena value.
	Offset, Bytes int64
}

// Space is a storage space.
type Space uint8

// The storage spaces.
const (
	// None: the value is never stored (it lives in a kernel's registers).
	None Space = iota
	// Arena: the plan's arena, at Loc.Offset.
	Arena
	// ConstSpace: a constant's bound data.
	ConstSpace
	// SlotSpace: a slot buffer the backend rewrites each step.
	SlotSpace
	// StateSpace: a state tensor the caller passes to each step.
	StateSpace
)

var spaceNames = [...]string{None: "none", Arena: "arena", ConstSpace: "const", SlotSpace: "slot", StateSpace: "state"}

// String names the space.
func (s Space) String() string {
	if int(s) < len(spaceNames) {
		return spaceNames[s]
	}
	return fmt.Sprintf("space(%d)", s)
}

// Writeback copies a state output into its state input's storage at the end
// of a step. A Staged writeback first copies Out to the arena at Stage, so
// that state outputs that read other states' inputs see their old values.
type Writeback struct {
	In, Out poot.ValueID
	Staged  bool
	Stage   int64
}

// Plan is a graph lowered for a target: kernels in schedule order, the
// storage of every value, and the arena size.
type Plan struct {
	Graph   *poot.Graph
	Target  Target
	Options Options
	// Inits are computed once, before the first step; Kernels every step.
	Inits, Kernels []*Kernel
	// Locs gives each value's storage, indexed by value id.
	Locs []Loc
	// ArenaBytes is the size of the arena.
	ArenaBytes int64
	// Writebacks carry state outputs that are not written in place.
	Writebacks []Writeback
	// Live gives, for every arena root, the kernel interval [first, last]
	// (indices into Kernels; -1 means before the first) in which it holds
	// data; persistent regions span the whole step.
	Live map[poot.ValueID][2]int
}

// LegalizeError says that an equation cannot run on a target, and why.
type LegalizeError struct {
	Target string
	Eqn    int
	Op     poot.Op
	Scope  string
	Reason string
}

// Error formats the error on one line.
func (e *LegalizeError) Error() string {
	return fmt.Sprintf("lower: %s cannot run eqn %d (%v) in %q: %s", e.Target, e.Eqn, e.Op, e.Scope, e.Reason)
}

// planner is the state the passes share.
type planner struct {
	g       *poot.Graph
	eqns    []poot.Eqn
	target  Target
	opts    Options
	prod    []int // producing equation of each value, -1 for inputs
	kernels []*Kernel
	inits   []*Kernel
	// readers counts, for every value, the equations reading it plus one
	// for each use as an output, witness or state output.
	readers []int
	escapes []bool                // output, witness or state output
	inplace map[poot.ValueID]bool // WriteRows outputs written into their state
}

// Build lowers g for target.
func Build(g *poot.Graph, target Target, opts Options) (*Plan, error) {
	if g == nil {
		return nil, fmt.Errorf("lower: nil graph")
	}
	p := &planner{g: g, eqns: g.Eqns(), target: target, opts: opts, prod: g.Producers(),
		inplace: map[poot.ValueID]bool{}}
	p.readers = make([]int, g.NumValues())
	p.escapes = make([]bool, g.NumValues())
	for _, e := range p.eqns {
		for _, in := range e.Inputs {
			p.readers[in]++
		}
	}
	mark := func(id poot.ValueID) { p.readers[id]++; p.escapes[id] = true }
	for _, id := range g.Outputs() {
		mark(id)
	}
	for _, w := range g.Witnesses() {
		mark(w.Value)
	}
	for _, s := range g.States() {
		mark(s.Out)
	}
	if err := p.legalize(); err != nil {
		return nil, err
	}
	for _, pass := range passes {
		runs := true
		for _, k := range pass.needs {
			runs = runs && target.Runs(k)
		}
		if runs && opts.on(pass.name) {
			if err := pass.run(p); err != nil {
				return nil, fmt.Errorf("lower: pass %s: %w", pass.name, err)
			}
		}
	}
	plan := &Plan{Graph: g, Target: target, Options: opts, Inits: p.inits, Kernels: p.kernels}
	p.memory(plan)
	for _, k := range plan.Kernels {
		p.cost(k)
	}
	return plan, nil
}

// passes are the optional rewrites, in order, with the kernel kinds each
// needs the target to run.
var passes = []struct {
	name  string
	run   func(*planner) error
	needs []Kind
}{
	{"flash_attention", (*planner).flashAttention, []Kind{FlashAttention}},
	{"rope", (*planner).rope, []Kind{RoPE}},
	{"swiglu", (*planner).swiglu, []Kind{SwiGLU}},
	{"rmsnorm", (*planner).rmsnorm, []Kind{RMSNorm}},
	{"elementwise", (*planner).elementwise, []Kind{Elementwise}},
	{"reduce_fusion", (*planner).reduceFusion, []Kind{Reduce}},
	{"row_fusion", (*planner).rowFusion, []Kind{Rows}},
	{"concat_stores", (*planner).concatStores, []Kind{Elementwise}},
	{"inplace", (*planner).inPlace, nil},
}

func (p *planner) scope(i int) string { return p.g.Scope(p.eqns[i].Scope) }

// legalize makes one kernel per equation.
func (p *planner) legalize() error {
	for i, e := range p.eqns {
		k := &Kernel{Kind: Generic, Op: e.Op, Eqns: []int{i}, Inputs: slices.Clone(e.Inputs), Outputs: []poot.ValueID{e.Out}}
		switch e.Op {
		case poot.Literal, poot.Iota:
			k.Kind = Init
			k.Inputs = nil
			p.inits = append(p.inits, k)
			continue
		case poot.Reshape:
			k.Kind = Alias
		case poot.MatMul, poot.IndexedMatMul:
			wt := p.g.Type(e.Inputs[1]).DType
			rank := len(p.g.Type(e.Inputs[1]).Shape)
			fast := !p.target.Exact && p.target.Runs(Contract) && slices.Contains(p.target.MatMulWeights, wt) &&
				(e.Op == poot.MatMul && rank == 2 || e.Op == poot.IndexedMatMul)
			if fast {
				k.Kind = Contract
			} else if wt != poot.F32 && !slices.Contains(p.target.Fallback, wt) {
				return &LegalizeError{Target: p.target.Name, Eqn: i, Op: e.Op, Scope: p.scope(i),
					Reason: fmt.Sprintf("no contraction reads %v weights", wt)}
			}
		case poot.Gather, poot.Cast:
			d := p.g.Type(e.Inputs[0]).DType
			if e.Op == poot.Cast && d.Packed() && !slices.Contains(p.target.Fallback, d) {
				return &LegalizeError{Target: p.target.Name, Eqn: i, Op: e.Op, Scope: p.scope(i),
					Reason: fmt.Sprintf("no decoder for %v", d)}
			}
		}
		p.kernels = append(p.kernels, k)
	}
	return nil
}

// inPlace lets a WriteRows write into the state it updates when nothing
// else reads that state's old value: the state input is read by that one
// equation only, and the result is the state's own output.
func (p *planner) inPlace() error {
	pairOut := map[poot.ValueID]poot.ValueID{}
	for _, s := range p.g.States() {
		pairOut[s.In] = s.Out
	}
	for _, k := range p.kernels {
		if k.Kind != Generic || k.Op != poot.WriteRows {
			continue
		}
		e := p.eqns[k.Eqns[0]]
		dst := e.Inputs[0]
		if p.g.Value(dst).Kind != poot.State || p.readers[dst] != 1 || pairOut[dst] != e.Out {
			continue
		}
		if e.Inputs[2] == dst || e.Inputs[1] == dst {
			continue
		}
		p.inplace[e.Out] = true
	}
	return nil
}

// cost fills a kernel's bytes and flops.
func (p *planner) cost(k *Kernel) {
	var bytes int64
	for _, id := range k.Inputs {
		bytes += max(p.g.Type(id).Bytes(), 0)
	}
	for _, id := range k.Outputs {
		bytes += max(p.g.Type(id).Bytes(), 0)
	}
	k.Bytes = bytes
	if k.Kind == Generic && k.Op == poot.WriteRows && p.inplace[k.Outputs[0]] {
		// An in-place write moves only its rows.
		e := p.eqns[k.Eqns[0]]
		k.Bytes = 2*max(p.g.Type(e.Inputs[2]).Bytes(), 0) + max(p.g.Type(e.Inputs[1]).Bytes(), 0)
	}
	if k.Kind == Generic && k.Op == poot.Gather {
		// A gather reads only the rows it copies.
		e := p.eqns[k.Eqns[0]]
		k.Bytes = 2*max(p.g.Type(e.Out).Bytes(), 0) + max(p.g.Type(e.Inputs[1]).Bytes(), 0)
	}
	if e := p.eqns[k.Eqns[0]]; (k.Kind == Contract || k.Kind == Generic) && e.Op == poot.IndexedMatMul {
		// An indexed product reads only the matrices its rows select, at
		// most one a row: a decode step of a mixture of experts reads the
		// experts it routes to, not all of them.
		w := p.g.Type(e.Inputs[1])
		experts, rows := int64(w.Shape[0]), int64(p.g.Type(e.Inputs[0]).Shape[0])
		if b := max(w.Bytes(), 0); experts > rows && slices.Contains(k.Inputs, e.Inputs[1]) {
			k.Bytes -= b / experts * (experts - rows)
		}
	}
	switch k.Kind {
	case Contract, Generic:
		e := p.eqns[k.Eqns[0]]
		if e.Op == poot.MatMul || e.Op == poot.IndexedMatMul {
			out := p.g.Type(e.Out).Shape
			kk := p.g.Type(e.Inputs[0]).Shape
			k.Flops = 2 * out.Size() * int64(kk[len(kk)-1])
		} else if k.Kind == Generic {
			k.Flops = p.g.Type(e.Out).Shape.Size()
		}
	case Elementwise, Reduce:
		k.Flops = int64(k.Program.Size) * int64(max(len(k.Program.Code), 1))
	case FlashAttention:
		a := k.Attention
		k.Flops = 2 * int64(a.R*a.T*a.Heads*a.S) * int64(a.D+a.Dv)
	case RoPE:
		r := k.Rotary
		k.Flops = 3 * int64(r.T*r.Heads*r.N)
	case SwiGLU:
		k.Flops = 5 * int64(k.Gated.N)
	case RMSNorm:
		k.Flops = 4 * int64(k.Norm.Rows*k.Norm.D)
	case Rows:
		for _, q := range k.Parts {
			p.cost(q)
			k.Flops += q.Flops
		}
	}
}
