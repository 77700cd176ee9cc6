package lower

import (
	"math"
	"slices"

	"github.com/pootlabs/poot"
)

// Program is a fused chain of elementwise equations over Size elements,
// as a register machine: registers 0…len(Loads)-1 hold the loads, and
// instruction i writes register len(Loads)+i. A backend runs it over
// chunks of the Size elements (row-major flat indices), so every register
// is a chunk of values. F32 values are held as float32 and Bool values as
// 0 or 1.
type Program struct {
	Size   int
	Loads  []Load
	Code   []Instr
	Stores []Store
	// Reduced is, in a Reduce kernel, the index of the store whose register
	// the reduction consumes; that store writes nothing. It is -1
	// elsewhere.
	Reduced int
}

// Load fills a register from a value or an immediate.
type Load struct {
	// Value is the value read (unless Imm).
	Value poot.ValueID
	// DType is the value's dtype (F32 or Bool).
	DType poot.DType
	// Imm marks a literal, every element Const.
	Imm   bool
	Const float32
	// Shape, Strides and Offset, when Strides is not nil, read element i
	// of the iteration as Value[Offset + Σ_a idx_a·Strides[a]] with idx the
	// multi-index of i in Shape: a view of Value as a Broadcast (stride 0
	// on repeated axes), Slice or Transpose makes it.
	Shape   poot.Shape
	Strides []int
	Offset  int
}

// Instr applies Op (an elementwise primitive) to registers Args[:arity].
type Instr struct {
	Op   poot.Op
	Args [3]int
	// DType is the dtype of the operands (F32 or Bool).
	DType poot.DType
}

// Store writes register Reg to value Value (F32 or Bool): element i to
// element i, or, when Strides is not nil, to Value[Offset + Σ_a
// idx_a·Strides[a]] with idx the multi-index of i in Shape (a part of a
// concatenation written in place).
type Store struct {
	Value   poot.ValueID
	DType   poot.DType
	Reg     int
	Shape   poot.Shape
	Strides []int
	Offset  int
}

// fusable reports whether equation e can be an instruction of a program:
// an elementwise primitive over F32 and Bool values only.
func (p *planner) fusable(e poot.Eqn) bool {
	if !e.Op.Elementwise() {
		return false
	}
	ok := func(id poot.ValueID) bool {
		d := p.g.Type(id).DType
		return d == poot.F32 || d == poot.Bool
	}
	for _, in := range e.Inputs {
		if !ok(in) {
			return false
		}
	}
	return ok(e.Out)
}

// group is a program being built.
type group struct {
	size    int
	members map[int]bool // equations
	reg     map[poot.ValueID]int
	prog    *Program
	kernel  *Kernel
	inputs  []poot.ValueID
}

func (p *planner) literal(id poot.ValueID) (float32, bool) {
	i := p.prod[id]
	if i < 0 || p.eqns[i].Op != poot.Literal || p.eqns[i].Params.DType != poot.F32 && p.eqns[i].Params.DType != poot.Bool {
		return 0, false
	}
	return float32(p.eqns[i].Params.Value), true
}

// load returns the register holding value id inside the group, adding a
// load when it comes from outside.
func (p *planner) load(gr *group, id poot.ValueID) int {
	if r, ok := gr.reg[id]; ok {
		return r
	}
	l := Load{Value: id, DType: p.g.Type(id).DType}
	if c, ok := p.literal(id); ok {
		l.Imm, l.Const = true, c
	} else {
		gr.inputs = append(gr.inputs, id)
	}
	return p.addLoad(gr, id, l)
}

func (p *planner) addLoad(gr *group, id poot.ValueID, l Load) int {
	pr := gr.prog
	// Loads come first: shift every instruction's registers up by one.
	at := len(pr.Loads)
	pr.Loads = append(pr.Loads, l)
	for i := range pr.Code {
		for a := range pr.Code[i].Args {
			if pr.Code[i].Args[a] >= at {
				pr.Code[i].Args[a]++
			}
		}
	}
	for v, r := range gr.reg {
		if r >= at {
			gr.reg[v] = r + 1
		}
	}
	gr.reg[id] = at
	return at
}

// join adds equation i to the group if it fits and reports whether it did.
func (p *planner) join(gr *group, i int) bool {
	e := p.eqns[i]
	size := int(p.g.Type(e.Out).Shape.Size())
	if size != gr.size {
		return false
	}
	switch {
	case e.Op == poot.Reshape:
		r, ok := gr.reg[e.Inputs[0]]
		if !ok {
			return false
		}
		gr.reg[e.Out] = r
	case e.Op == poot.Broadcast || e.Op == poot.Slice || e.Op == poot.Transpose:
		x := e.Inputs[0]
		d := p.g.Type(x).DType
		if _, inside := gr.reg[x]; inside || d != poot.F32 && d != poot.Bool {
			return false
		}
		l := Load{Value: x, DType: d}
		if c, ok := p.literal(x); ok {
			l.Imm, l.Const = true, c
		} else {
			l.Shape, l.Strides, l.Offset = p.view(e)
			gr.inputs = append(gr.inputs, x)
		}
		p.addLoad(gr, e.Out, l)
	case p.fusable(e):
		var in Instr
		in.Op, in.DType = e.Op, p.g.Type(e.Inputs[0]).DType
		if e.Op == poot.Select {
			in.DType = p.g.Type(e.Inputs[1]).DType
		}
		for _, id := range e.Inputs {
			p.load(gr, id)
		}
		// Loads shift the registers of instructions, so read them after.
		for a, id := range e.Inputs {
			in.Args[a] = gr.reg[id]
		}
		gr.prog.Code = append(gr.prog.Code, in)
		gr.reg[e.Out] = len(gr.prog.Loads) + len(gr.prog.Code) - 1
	default:
		return false
	}
	gr.members[i] = true
	gr.kernel.Eqns = append(gr.kernel.Eqns, i)
	return true
}

// view returns the shape, strides and offset that read the result of a
// Broadcast, Slice or Transpose from its operand.
func (p *planner) view(e poot.Eqn) (poot.Shape, []int, int) {
	xs := p.g.Type(e.Inputs[0]).Shape
	os := p.g.Type(e.Out).Shape
	st := make([]int, len(xs)) // the operand's own strides
	n := 1
	for a := len(xs) - 1; a >= 0; a-- {
		st[a] = n
		n *= xs[a]
	}
	strides := make([]int, len(os))
	off := 0
	switch e.Op {
	case poot.Broadcast:
		for a := range os {
			if xs[a] != 1 {
				strides[a] = st[a]
			}
		}
	case poot.Slice:
		for a := range os {
			strides[a] = st[a]
			off += e.Params.Start[a] * st[a]
		}
	case poot.Transpose:
		for a, q := range e.Params.Perm {
			strides[a] = st[q]
		}
	}
	return os.Clone(), strides, off
}

// startable reports whether equation i can begin a program.
func (p *planner) startable(i int) bool {
	e := p.eqns[i]
	if e.Op == poot.Broadcast || e.Op == poot.Slice || e.Op == poot.Transpose {
		d := p.g.Type(e.Out).DType
		return d == poot.F32 || d == poot.Bool
	}
	return p.fusable(e)
}

// usedOutside reports whether value id (or a reshape of it) is read by an
// equation outside members, or escapes the step.
func (p *planner) usedOutside(id poot.ValueID, members map[int]bool, users [][]int) bool {
	if p.escapes[id] {
		return true
	}
	for _, u := range users[id] {
		if !members[u] {
			return true
		}
		if p.eqns[u].Op == poot.Reshape && p.usedOutside(p.eqns[u].Out, members, users) {
			return true
		}
	}
	return false
}

func (p *planner) users() [][]int {
	users := make([][]int, p.g.NumValues())
	for i, e := range p.eqns {
		for _, in := range e.Inputs {
			users[in] = append(users[in], i)
		}
	}
	return users
}

// elementwise fuses runs of elementwise kernels into programs. A run grows
// while the next scheduled kernel is elementwise over the same number of
// elements; aliases between members join it, and every other kernel ends
// it. Broadcasts of values from outside the run become strided loads.
func (p *planner) elementwise() error {
	users := p.users()
	var out []*Kernel
	var gr *group
	var pendingAliases []*Kernel // aliases seen while a run is open
	closeGroup := func() {
		if gr == nil {
			return
		}
		p.finishGroup(gr, users)
		out = append(out, gr.kernel)
		out = append(out, pendingAliases...)
		gr, pendingAliases = nil, nil
	}
	for _, k := range p.kernels {
		if k.Kind != Generic && k.Kind != Alias {
			closeGroup()
			out = append(out, k)
			continue
		}
		i := k.Eqns[0]
		if gr != nil && p.join(gr, i) {
			continue
		}
		if k.Kind == Alias {
			if gr != nil {
				pendingAliases = append(pendingAliases, k)
			} else {
				out = append(out, k)
			}
			continue
		}
		closeGroup()
		if p.startable(i) {
			gr = &group{size: int(p.g.Type(p.eqns[i].Out).Shape.Size()), members: map[int]bool{},
				reg: map[poot.ValueID]int{}, prog: &Program{Reduced: -1}, kernel: &Kernel{Kind: Elementwise}}
			gr.prog.Size = gr.size
			if p.join(gr, i) {
				continue
			}
			gr = nil
		}
		out = append(out, k)
	}
	closeGroup()
	p.kernels = out
	return nil
}

// finishGroup decides the group's stores and its kernel's inputs and
// outputs.
func (p *planner) finishGroup(gr *group, users [][]int) {
	k := gr.kernel
	k.Program = gr.prog
	k.Inputs = gr.inputs
	for _, i := range k.Eqns {
		e := p.eqns[i]
		if e.Op == poot.Reshape {
			continue
		}
		if p.usedOutside(e.Out, gr.members, users) {
			gr.prog.Stores = append(gr.prog.Stores, Store{Value: e.Out, DType: p.g.Type(e.Out).DType, Reg: gr.reg[e.Out]})
			k.Outputs = append(k.Outputs, e.Out)
		}
	}
	// Reshapes inside the run that are read outside it alias a stored
	// value, which usedOutside has kept.
}

// reduceFusion gives a last-axis ReduceSum or ReduceMax over F32 the
// program just before it as a prologue when the program stores the
// reduction's operand and nothing else reads that operand: the operand
// then lives only in registers, and the program's other stores stay.
func (p *planner) reduceFusion() error {
	users := p.users()
	var out []*Kernel
	for _, k := range p.kernels {
		if k.Kind == Generic && (k.Op == poot.ReduceSum || k.Op == poot.ReduceMax) && len(out) > 0 {
			prev := out[len(out)-1]
			e := p.eqns[k.Eqns[0]]
			x := e.Inputs[0]
			xs := p.g.Type(x).Shape
			at := -1
			if prev.Kind == Elementwise {
				for i, st := range prev.Program.Stores {
					if st.Value == x {
						at = i
					}
				}
			}
			if at >= 0 && p.g.Type(x).DType == poot.F32 && e.Params.Axis == len(xs)-1 && !p.escapes[x] && len(users[x]) == 1 {
				prev.Kind, prev.Op = Reduce, e.Op
				prev.Eqns = append(prev.Eqns, k.Eqns[0])
				prev.Program.Reduced = at
				outs := []poot.ValueID{}
				for _, v := range prev.Outputs {
					if v != x {
						outs = append(outs, v)
					}
				}
				prev.Outputs = append(outs, e.Out)
				continue
			}
		}
		out = append(out, k)
	}
	p.kernels = out
	return nil
}

var negInf = float32(math.Inf(-1))

// rowFusion runs sequences of row-wise kernels row by row as one Rows
// kernel: a sequence starts at a last-axis reduction over rows of length
// L and goes on while each next kernel is another such reduction, a
// program over one value per row, or a program over the full rows, and
// reads what the sequence made only from its own row (full-size values
// element for element, one-per-row values element for element or
// broadcast along the row). RMSNorm (a sum of squares; mean, eps and
// rsqrt; scale and weight) and softmax (max; exp of the difference; sum;
// quotient) each become one kernel that reads a row once.
func (p *planner) rowFusion() error {
	var out []*Kernel
	ks := p.kernels
	// A reshape is a view of its operand: a kernel that loads the view
	// reads what the run makes under another name, all of it at once.
	view := map[poot.ValueID]poot.ValueID{}
	for _, e := range p.eqns {
		if e.Op == poot.Reshape {
			view[e.Out] = e.Inputs[0]
		}
	}
	for i := 0; i < len(ks); {
		rows, L, ok := p.rowReduce(ks[i])
		if !ok {
			out = append(out, ks[i])
			i++
			continue
		}
		made := madeSet{view: view, set: map[poot.ValueID]bool{}}
		run := []*Kernel{p.asReduce(ks[i])}
		for _, v := range ks[i].Outputs {
			made.set[v] = true
		}
		j := i + 1
		for ; j < len(ks); j++ {
			k := ks[j]
			if !p.rowLocal(k, rows, L, made) {
				break
			}
			run = append(run, p.asReduce(k))
			for _, v := range k.Outputs {
				made.set[v] = true
			}
		}
		if len(run) < 2 {
			out = append(out, ks[i])
			i++
			continue
		}
		k := &Kernel{Kind: Rows, Parts: run, RowLen: L}
		inner := map[poot.ValueID]bool{}
		for _, q := range run {
			k.Eqns = append(k.Eqns, q.Eqns...)
			for _, v := range q.Inputs {
				if !inner[v] && !slices.Contains(k.Inputs, v) {
					k.Inputs = append(k.Inputs, v)
				}
			}
			for _, v := range q.Outputs {
				inner[v] = true
				k.Outputs = append(k.Outputs, v)
			}
		}
		out = append(out, k)
		i = j
	}
	p.kernels = out
	return nil
}

// rowReduce reports whether k reduces F32 rows over the last axis, and
// the rows and their length.
func (p *planner) rowReduce(k *Kernel) (rows, L int, ok bool) {
	if k.Kind != Reduce && !(k.Kind == Generic && (k.Op == poot.ReduceSum || k.Op == poot.ReduceMax)) {
		return 0, 0, false
	}
	e := p.eqns[k.Eqns[len(k.Eqns)-1]]
	xt := p.g.Type(e.Inputs[0])
	if xt.DType != poot.F32 || e.Params.Axis != len(xt.Shape)-1 {
		return 0, 0, false
	}
	L = xt.Shape[len(xt.Shape)-1]
	rows = int(xt.Shape.Size()) / L
	return rows, L, L > 1
}

// asReduce returns a generic last-axis reduction as a Reduce kernel whose
// program only loads its operand; other kernels are returned as they are.
func (p *planner) asReduce(k *Kernel) *Kernel {
	if k.Kind != Generic {
		return k
	}
	x := p.eqns[k.Eqns[0]].Inputs[0]
	prog := &Program{Size: int(p.g.Type(x).Shape.Size()), Reduced: 0,
		Loads:  []Load{{Value: x, DType: poot.F32}},
		Stores: []Store{{Value: x, DType: poot.F32, Reg: 0}}}
	return &Kernel{Kind: Reduce, Op: k.Op, Eqns: k.Eqns, Inputs: k.Inputs, Outputs: k.Outputs, Program: prog}
}

// rowLocal reports whether k can join a row sequence over rows of length
// L that has made the values in made.
func (p *planner) rowLocal(k *Kernel, rows, L int, made madeSet) bool {
	var full bool
	var loads []Load
	switch {
	case k.Kind == Elementwise && k.Program.Size == rows:
		loads = k.Program.Loads
	case k.Kind == Elementwise && k.Program.Size == rows*L:
		full, loads = true, k.Program.Loads
	default:
		r, l, ok := p.rowReduce(k)
		if !ok || r != rows || l != L {
			return false
		}
		full = true
		if k.Kind == Reduce {
			loads = k.Program.Loads
		} else {
			loads = []Load{{Value: p.eqns[k.Eqns[0]].Inputs[0], DType: poot.F32}}
		}
	}
	for _, l := range loads {
		if l.Imm || !made.has(l.Value) {
			continue
		}
		size := int(p.g.Type(l.Value).Shape.Size())
		switch {
		case l.Strides == nil && (size == rows) != full:
			// element for element within the row
		case full && size == rows && l.Strides != nil && len(l.Shape) > 0 &&
			l.Shape[len(l.Shape)-1] == L && l.Strides[len(l.Strides)-1] == 0 && rowMajorRows(l, rows, L):
			// a per-row value broadcast along the row
		default:
			return false
		}
	}
	return true
}

// madeSet is the set of values a run of row kernels makes, seen through
// reshapes (views of what the run makes are made by it too).
type madeSet struct {
	view map[poot.ValueID]poot.ValueID
	set  map[poot.ValueID]bool
}

func (m madeSet) has(v poot.ValueID) bool {
	for {
		if m.set[v] {
			return true
		}
		u, ok := m.view[v]
		if !ok {
			return false
		}
		v = u
	}
}

// rowMajorRows reports whether a broadcast load reads element r of its
// value for every element of row r of an iteration of rows·L elements.
func rowMajorRows(l Load, rows, L int) bool {
	// The axes before the last must address the value's elements in order:
	// strides equal to the row-major strides of those axes (or 0 on an axis
	// of extent 1).
	st := 1
	n := 1
	for a := len(l.Shape) - 2; a >= 0; a-- {
		if l.Shape[a] != 1 && l.Strides[a] != st {
			return false
		}
		st *= l.Shape[a]
		n *= l.Shape[a]
	}
	return n == rows && l.Offset == 0
}

// concatStores writes the parts of a Concat straight into its result when
// the program just before it computes every part and nothing else reads
// them: each part's store becomes a strided store into the result.
// The reshapes between the parts and the concat (aliases, which the
// program then covers) may sit between the two kernels.
func (p *planner) concatStores() error {
	users := p.users()
	var out []*Kernel
	for _, k := range p.kernels {
		if k.Kind == Generic && k.Op == poot.Concat {
			j := len(out) - 1
			for j >= 0 && out[j].Kind == Alias {
				j--
			}
			if j >= 0 && out[j].Kind == Elementwise {
				if through, ok := p.fuseConcat(out[j], k, users); ok {
					out = slices.DeleteFunc(out, func(a *Kernel) bool {
						return a.Kind == Alias && slices.Contains(through, a.Eqns[0])
					})
					continue
				}
			}
		}
		out = append(out, k)
	}
	p.kernels = out
	return nil
}

// fuseConcat rewrites prev's stores of the concat's operands and reports
// whether it did, with the reshape equations it took in on the way.
func (p *planner) fuseConcat(prev, k *Kernel, users [][]int) ([]int, bool) {
	e := p.eqns[k.Eqns[0]]
	ot := p.g.Type(e.Out)
	if ot.DType != poot.F32 {
		return nil, false
	}
	// Each operand, through reshapes, must be a store of prev read only on
	// the way to this concat.
	stores := make([]int, len(e.Inputs))
	var through []int // reshape equations between stores and the concat
	for j, v := range e.Inputs {
		at := -1
		for {
			for si, st := range prev.Program.Stores {
				if st.Value == v && st.Strides == nil {
					at = si
				}
			}
			if at >= 0 {
				break
			}
			pi := p.prod[v]
			if pi < 0 || p.eqns[pi].Op != poot.Reshape {
				return nil, false
			}
			through = append(through, pi)
			v = p.eqns[pi].Inputs[0]
		}
		stores[j] = at
	}
	inside := map[int]bool{k.Eqns[0]: true}
	for _, i := range through {
		inside[i] = true
	}
	for _, si := range stores {
		v := prev.Program.Stores[si].Value
		if p.escapes[v] {
			return nil, false
		}
		for _, u := range users[v] {
			if !inside[u] {
				return nil, false
			}
		}
	}
	for _, i := range through {
		if p.escapes[p.eqns[i].Out] {
			return nil, false
		}
		for _, u := range users[p.eqns[i].Out] {
			if !inside[u] {
				return nil, false
			}
		}
	}
	// Strides of the result; each part starts at its offset on the axis.
	os := ot.Shape
	st := make([]int, len(os))
	n := 1
	for a := len(os) - 1; a >= 0; a-- {
		st[a] = n
		n *= os[a]
	}
	axis := e.Params.Axis
	var newStores []Store
	off := 0
	for j, v := range e.Inputs {
		old := prev.Program.Stores[stores[j]]
		// Axes of one element index nothing: the store drops them, so a
		// part one wide on the last axis (an interleaving) runs along the
		// axis before it.
		ns := Store{Value: e.Out, DType: poot.F32, Reg: old.Reg, Shape: poot.Shape{}, Strides: []int{}, Offset: off * st[axis]}
		for a, d := range p.g.Type(v).Shape {
			if d != 1 {
				ns.Shape = append(ns.Shape, d)
				ns.Strides = append(ns.Strides, st[a])
			}
		}
		newStores = append(newStores, ns)
		off += p.g.Type(v).Shape[axis]
	}
	dropped := map[int]bool{}
	for _, si := range stores {
		dropped[si] = true
	}
	var keep []Store
	var outs []poot.ValueID
	for si, s := range prev.Program.Stores {
		if !dropped[si] {
			keep = append(keep, s)
			outs = append(outs, s.Value)
		}
	}
	prev.Program.Stores = append(keep, newStores...)
	prev.Outputs = append(outs, e.Out)
	prev.Eqns = append(prev.Eqns, through...)
	prev.Eqns = append(prev.Eqns, k.Eqns[0])
	slices.Sort(prev.Eqns)
	prev.Eqns = slices.Compact(prev.Eqns)
	return through, true
}
