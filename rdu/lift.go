package rdu

import (
	"fmt"
	"math"
	"strings"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/lang"
)

// A program is lifted in the per-token form of the decode deployment: every
// activation of the graph, [T, C] for the T new tokens of the step, is a
// one-row tensor of the program, which runs once a token. A graph of one
// new token lifts to exactly what a graph of several does; the head's
// selection of the last token, when the step asks for the last logits
// only, is recorded rather than written.

// bindKind says what a declared name of a program stands for.
type bindKind uint8

const (
	bindWeight  bindKind = iota + 1 // a constant of the graph
	bindState                       // a state of the graph (a cache)
	bindTable                       // a host table, computed at lowering
	bindInput                       // the hidden state another program leaves
	bindRuntime                     // tok or pos, written by the host every step
	bindScratch                     // rows the program fills, one a sequence
)

// declared is what a declared name of a program binds.
type declared struct {
	kind bindKind
	// value is the constant, state or input value, or a table's value.
	value poot.ValueID
	// transposed says the declared matrix is the transpose of the stored
	// one (a weight [out, in] read as in by out).
	transposed bool
	// table names the host table (bindTable).
	table *table
	// slot is the runtime input's slot kind (bindRuntime).
	slot poot.SlotKind
	// row is the first row of the state a sequence's cache is (bindState,
	// batched).
	row int
	// contraction says a product reads the weight (as stored, so a Q8_0
	// weight stays Q8_0).
	contraction bool
	// recurrent marks a recurrent mixer's state (bindState).
	recurrent bool
	// heads cuts the declared weight head by head from the constant.
	heads *bundle.HeadCut
}

// lifted is one program as written for one layer (or the embedding, or
// the head).
type lifted struct {
	prog  *lang.Program
	decls map[string]declared
	// local lists the per-layer names, which rebinding renames.
	local []string
	// input is the hidden state read ("" for the embedding), output the
	// name left for the next program.
	input, output string
	inputValue    poot.ValueID
	outputValue   poot.ValueID
	// lastOnly marks a head that the step runs for its last token only.
	lastOnly bool
	// next names the token the head picks ("" for a head of several rows),
	// nexts those a batched head picks, one a sequence.
	next  string
	nexts []string
}

// lifter writes one program.
type lifter struct {
	low    *lowering
	v      *stepView
	name   string // the program's name in rejections
	layer  int    // -1 outside the layers
	n      *namer
	eqns   []int
	inProg map[int]bool
	out    poot.ValueID // the value the program leaves
	alias  map[poot.ValueID]poot.ValueID
	names  map[poot.ValueID]string
	forms  map[string]string // declared weight -> the form it was declared in
	// view maps a value that is a constant read as Real (a Cast of it) to
	// the constant.
	view     map[poot.ValueID]poot.ValueID
	stateCur map[poot.ValueID]poot.ValueID // state input -> its current value
	stmts    []lang.Stmt
	// split holds the per-sequence names of a value of a batched program:
	// one row of it a sequence, as the statements that read a position
	// (rotations, cache writes, attention) write them.
	split   map[poot.ValueID][]string
	lastRow map[poot.ValueID]bool // the head's selection of the last row (prefill)
	res     *lifted
	binder  string // the binder of the statement being written, for rejections
	// views and viewOut are the strided column views: the inner values,
	// which write no statement, and the outer ones, which write columns.
	views   map[poot.ValueID]bool
	viewOut map[poot.ValueID]strided
	// resets maps a state read as zeros where a sequence starts to the
	// state; resetCone holds the values of the reset, which write no
	// statement.
	resets    map[poot.ValueID]poot.ValueID
	resetCone map[poot.ValueID]bool
	// joinCone and joins are the head-by-head joins: the views inside,
	// which write no statement, and the joins, written where first read.
	joinCone map[poot.ValueID]bool
	joins    map[poot.ValueID]headJoin
	// cuts names the weights cut head by head, by constant and cut.
	cuts map[string]string
}

// insideDelta says a composite is the gated delta rule of a gated delta
// mixer.
func (l *lifter) insideDelta(c poot.CompositeID) bool {
	p := l.v.comp(c).Parent
	return l.v.comp(c).Name == "gated_delta_rule" && p != 0 && l.v.comp(p).Name == "gated_delta"
}

type rejection struct {
	r  *Reject
	tp *TPError
}

func (l *lifter) reject(cause error, format string, args ...any) {
	panic(rejection{r: &Reject{Program: l.name, Statement: len(l.stmts), Binder: l.binder, Detail: fmt.Sprintf(format, args...), Err: cause}})
}

// lift writes the program of equations eqns (of layer layer, or -1).
func (low *lowering) lift(name string, eqns []int, layer int, out poot.ValueID) (res *lifted, err error) {
	l := &lifter{low: low, v: low.v, name: name, layer: layer, n: newNamer(layer), eqns: eqns, inProg: map[int]bool{},
		out: out, alias: map[poot.ValueID]poot.ValueID{}, names: map[poot.ValueID]string{}, forms: map[string]string{},
		view: map[poot.ValueID]poot.ValueID{}, split: map[poot.ValueID][]string{}, stateCur: map[poot.ValueID]poot.ValueID{}, lastRow: map[poot.ValueID]bool{},
		res: &lifted{decls: map[string]declared{}, inputValue: -1, outputValue: out}}
	defer func() {
		if r := recover(); r != nil {
			rj, ok := r.(rejection)
			if !ok || rj.r == nil {
				panic(r)
			}
			res, err = nil, rj.r
		}
	}()
	for _, i := range eqns {
		l.inProg[i] = true
	}
	l.unsupportedMixers()
	l.findAliases()
	l.views, l.viewOut = l.stridedViews()
	l.resets, l.resetCone = l.stateResets()
	l.joinCone, l.joins = l.headJoins()
	l.cuts = map[string]string{}
	skip := l.maskCone()
	for k := 0; k < len(eqns); {
		i := eqns[k]
		e := l.v.eqns[i]
		if u := l.unit(e.Composite); u != 0 {
			c := l.v.comp(u)
			l.binder = ""
			if !skip[i] {
				l.composite(c)
			}
			for k < len(eqns) && eqns[k] < c.Hi {
				k++
			}
			continue
		}
		l.binder = ""
		if !skip[i] {
			l.primitive(e)
		}
		k++
	}
	l.finish()
	l.res.prog = &lang.Program{Name: name, Stmts: l.stmts}
	l.res.local = l.n.local
	return l.res, nil
}

// notLowered are the mixers whose statements the language has not (a
// gated delta rule outside the gated delta mixer, Mamba2's scan), which
// this lowering does not lift yet.
var notLowered = map[string]bool{"gated_delta_rule": true, "mamba2_ssm": true}

// transparent are the composites the language has no one statement for
// but whose bodies lift part by part (a latent attention's compressed
// keys: a projection, its columns, a norm, a rotation, a join).
var transparent = map[string]bool{"latent_kv": true}

// unit is the composite an equation of composite c lifts with: the
// outermost one that is not transparent, or 0 when the equation lifts as
// a primitive.
func (l *lifter) unit(c poot.CompositeID) poot.CompositeID {
	var chain []poot.CompositeID
	for ; c != 0; c = l.v.comp(c).Parent {
		chain = append(chain, c)
	}
	for i := len(chain) - 1; i >= 0; i-- {
		if !transparent[l.v.comp(chain[i]).Name] {
			return chain[i]
		}
	}
	return 0
}

// unsupportedMixers rejects a program that holds a mixer this lowering
// does not lift, naming it, before a primitive around it is refused for a
// less telling reason.
func (l *lifter) unsupportedMixers() {
	for _, i := range l.eqns {
		for c := l.v.eqns[i].Composite; c != 0; c = l.v.comp(c).Parent {
			if cc := l.v.comp(c); notLowered[cc.Name] && !l.insideDelta(c) {
				l.reject(ErrUnliftable, "the %s mixer is not lowered yet", cc.Name)
			}
		}
	}
}

// findAliases records the equations that write no statement because the
// language has no difference to show: casts to Real of rows gathered in
// their stored dtype and of Real values, reshapes to the same shape, and
// the head's selection of each sequence's last token.
func (l *lifter) findAliases() {
	v := l.v
	lastA, lastB := map[poot.ValueID]bool{}, map[poot.ValueID]bool{}
	for _, i := range l.eqns {
		e := v.eqns[i]
		if e.Composite != 0 {
			continue
		}
		in := poot.ValueID(-1)
		if len(e.Inputs) > 0 {
			in = e.Inputs[0]
		}
		switch e.Op {
		case poot.Cast:
			src := v.g.Value(in)
			p := v.prod[in]
			if e.Params.DType == poot.F32 && src.Kind == poot.Device && (src.Type.DType == poot.F32 || p >= 0 && v.eqns[p].Op == poot.Gather) {
				l.alias[e.Out] = l.root(in)
			}
		case poot.Reshape:
			t, o := v.g.Type(in).Shape, v.g.Type(e.Out).Shape
			switch {
			case t.Equal(o):
				l.alias[e.Out] = l.root(in)
			case l.layer < 0 && v.tokens > l.low.seqs() && len(t) == 2 && t[0] == v.tokens && o.Equal(poot.Shape{l.low.seqs(), t[0] / l.low.seqs(), t[1]}):
				// Step.Last: [T, d] -> [1, T, d], the last token sliced,
				// -> [1, d].
				l.alias[e.Out] = l.root(in)
				lastA[e.Out] = true
			case lastB[in] && len(o) == 2 && o[0] == l.low.seqs():
				l.alias[e.Out] = l.root(in)
				l.res.lastOnly = true
			}
		case poot.Slice:
			t := v.g.Type(in).Shape
			if lastA[in] && len(t) == 3 && e.Params.Start[1] == t[1]-1 && e.Params.Limit[1] == t[1] &&
				e.Params.Start[2] == 0 && e.Params.Limit[2] == t[2] {
				lastB[e.Out] = true
				if l.low.stacked {
					l.lastRow[e.Out] = true // written as "row T of" the stacked rows
				} else {
					l.alias[e.Out] = l.root(in)
				}
			}
		}
	}
}

// maskCone lists the equations that compute only attention masks: the
// attention statement writes its mask as clauses, and refuses a mask that
// is not the causal mask of the positions, so these write no statement.
func (l *lifter) maskCone() map[int]bool {
	v := l.v
	uses := map[poot.ValueID][]int{}
	for _, i := range l.eqns {
		for _, in := range v.eqns[i].Inputs {
			uses[in] = append(uses[in], i)
		}
	}
	mask := map[poot.ValueID]bool{}
	var mark func(id poot.ValueID)
	mark = func(id poot.ValueID) {
		p := v.prod[id]
		if mask[id] || v.table[id] || p < 0 || !l.inProg[p] {
			return
		}
		mask[id] = true
		for _, in := range v.eqns[p].Inputs {
			mark(in)
		}
	}
	for _, i := range l.eqns {
		c := v.top(i)
		if m, ok := maskOperand(c); ok && c.Lo == i {
			mark(m)
		}
	}
	skip := map[int]bool{}
	for _, i := range l.eqns {
		out := v.eqns[i].Out
		if !mask[out] {
			continue
		}
		only := true
		for _, u := range uses[out] {
			c := v.top(u)
			m, ok := maskOperand(c)
			only = only && (mask[v.eqns[u].Out] || ok && m == out)
		}
		skip[i] = only
	}
	return skip
}

// maskOperand is the mask an attention (or a latent attention) reads.
func maskOperand(c poot.Composite) (poot.ValueID, bool) {
	switch {
	case c.Name == "attention" && len(c.Operands) > 3:
		return c.Operands[3], true
	case c.Name == "latent_attention" && len(c.Operands) > 2:
		return c.Operands[2], true
	}
	return 0, false
}

func (l *lifter) root(id poot.ValueID) poot.ValueID {
	for {
		r, ok := l.alias[id]
		if !ok || r == id {
			return id
		}
		id = r
	}
}

// bind names the result of the statement being written: the program's
// output name when it is the program's result, else a fresh name from
// base.
func (l *lifter) bind(id poot.ValueID, base string) string {
	if l.root(l.out) == id {
		name := l.outputName()
		if !l.n.fixed(name) {
			l.reject(ErrStructure, "the program's result %s is bound twice", name)
		}
		if l.layer >= 0 {
			l.n.local = append(l.n.local, name)
		}
		l.names[id] = name
		l.res.output = name
		return name
	}
	name := l.fresh(base)
	l.names[id] = name
	return name
}

// outputName is the name of the program's result.
func (l *lifter) outputName() string {
	switch {
	case l.layer >= 0:
		return output(l.low.rowsNamed(), l.layer)
	case l.name == "embed":
		return input(l.low.rowsNamed(), 0)
	}
	return "logits"
}

// preview names the binder of the statement about to be written, for its
// rejections.
func (l *lifter) preview(id poot.ValueID, base string) {
	switch {
	case l.root(l.out) == id:
		l.binder = l.outputName()
	case l.low.rowsNamed():
		l.binder = "b" + base + l.n.suffix
	default:
		l.binder = base + l.n.suffix
	}
}

func (l *lifter) emit(s lang.Stmt) { l.stmts = append(l.stmts, s) }

// fresh names an intermediate: the seed's "b" marks the stacked rows of a
// prefill chunk or of a batch.
func (l *lifter) fresh(base string) string {
	if l.low.rowsNamed() {
		base = "b" + base
	}
	return l.n.fresh(base)
}

func (l *lifter) declare(name string, rows, cols int, elem lang.Elem, d declared) {
	l.emit(lang.Declare{Name: name, Rows: rows, Cols: cols, Elem: elem})
	l.res.decls[name] = d
}

// rows is the number of rows an activation has in the program: one in the
// per-token decode form, the chunk's tokens in the stacked prefill form,
// the sequences in the batched form.
func (l *lifter) rows() int {
	if l.low.stacked {
		return l.v.tokens
	}
	return l.low.seqs()
}

// cols returns the width of an activation, which must be a matrix of the
// step's tokens (or one row, after the head's selection of the last).
func (l *lifter) cols(id poot.ValueID) int {
	t := l.v.g.Type(id)
	if len(t.Shape) != 2 || t.DType != poot.F32 || (t.Shape[0] != l.v.tokens && !(t.Shape[0] == l.low.seqs() && l.res.lastOnly)) {
		l.reject(ErrUnliftable, "%v is not a row of Reals per token (the step has %d tokens)", t, l.v.tokens)
	}
	return t.Shape[1]
}

// ref returns the name of an activation the statement reads.
func (l *lifter) ref(id poot.ValueID) string {
	if id < 0 || int(id) >= l.v.g.NumValues() {
		l.reject(ErrUnliftable, "an operand the statement needs is absent")
	}
	id = l.root(id)
	if n, ok := l.names[id]; ok {
		return n
	}
	if _, ok := l.split[id]; ok && l.v.g.Value(id).Kind != poot.State {
		return l.stack(id)
	}
	if j, ok := l.joins[id]; ok {
		return l.join(id, j)
	}
	v := l.v
	val := v.g.Value(id)
	switch {
	case v.table[id]:
		l.reject(ErrUnliftable, "a step table (%v) read where the language reads a tensor of the layer", val.Type)
	case val.Kind == poot.Const:
		l.reject(ErrUnliftable, "the weight %q read as an activation", val.Name)
	case val.Kind == poot.State:
		return l.state(id)
	case val.Kind == poot.Slot:
		l.reject(ErrUnliftable, "the slot %q read as an activation", val.Name)
	}
	if p := v.prod[id]; p >= 0 && l.inProg[p] {
		l.reject(ErrUnliftable, "value %%%d of the program is read before anything writes it", id)
	}
	// A value of another program: the hidden state.
	if l.res.inputValue >= 0 && l.res.inputValue != id {
		l.reject(ErrHyperConnections, "the program reads two hidden streams (%%%d and %%%d)", l.res.inputValue, id)
	}
	if l.layer < 0 && l.name == "embed" {
		l.reject(ErrStructure, "the embedding reads a value of another program")
	}
	c := l.cols(id)
	name := input(l.low.rowsNamed(), max(l.layer, 0))
	if l.layer < 0 {
		name = input(l.low.rowsNamed(), l.low.nLayers())
	}
	l.n.fixed(name)
	l.declare(name, l.rows(), c, lang.Real, declared{kind: bindInput, value: id})
	l.res.input, l.res.inputValue = name, id
	l.names[id] = name
	return name
}

// state declares a state (a cache) at its first read.
func (l *lifter) state(id poot.ValueID) string {
	val := l.v.g.Value(id)
	t := val.Type
	if len(t.Shape) != 2 || t.DType != poot.F32 {
		l.reject(ErrUnliftable, "state %q is %v, not a matrix of Reals", val.Name, t)
	}
	if names, ok := l.split[id]; ok {
		return names[0]
	}
	l.stateCur[id] = id
	if r := l.low.batch; r > 0 {
		// A cache of a sequence a block of rows, each its own tensor.
		if t.Shape[0]%r != 0 {
			l.reject(ErrUnliftable, "state %q of %d rows for %d sequences", val.Name, t.Shape[0], r)
		}
		names := make([]string, r)
		for b := range names {
			names[b] = l.n.freshSeq(stateBase(val.Name, l.layer), b)
			l.declare(names[b], t.Shape[0]/r, t.Shape[1], lang.Real, declared{kind: bindState, value: id, row: b * t.Shape[0] / r})
		}
		l.split[id] = names
		return names[0]
	}
	name := l.n.fresh(stateBase(val.Name, l.layer))
	l.declare(name, t.Shape[0], t.Shape[1], lang.Real, declared{kind: bindState, value: id})
	l.names[id] = name
	return name
}

// seq returns the name of sequence b's row of a value of a batched
// program, writing "row b+1 of" the stacked value at its first read.
func (l *lifter) seq(id poot.ValueID, b int) string {
	id = l.root(id)
	if s, ok := l.split[id]; ok && s[b] != "" {
		return s[b]
	}
	if l.v.g.Value(id).Kind == poot.State {
		l.state(id)
		return l.split[id][b]
	}
	x := l.ref(id)
	if _, ok := l.split[id]; !ok {
		l.split[id] = make([]string, l.low.batch)
	}
	name := l.n.freshSeq(l.baseOf(x), b)
	l.emit(lang.Let{Name: name, Expr: lang.Row{Index: lang.Index{Num: b + 1}, X: x}})
	l.split[id][b] = name
	return name
}

// bindSeqs names sequence b's row of the result of a statement written
// once a sequence.
func (l *lifter) bindSeqs(id poot.ValueID, base string) []string {
	if l.root(l.out) == id {
		l.reject(ErrStructure, "the program's result is computed a sequence at a time")
	}
	names := make([]string, l.low.batch)
	for b := range names {
		names[b] = l.n.freshSeq(base, b)
	}
	l.split[id] = names
	return names
}

// stack gathers the rows of a value written a sequence at a time into one
// tensor, a row a sequence: a scratch tensor the program declares and
// fills.
func (l *lifter) stack(id poot.ValueID) string {
	names := l.split[id]
	c := l.cols(id)
	name := l.fresh(l.baseOf(names[0][:strings.LastIndex(names[0], "_s")]))
	l.declare(name, l.low.batch, c, lang.Real, declared{kind: bindScratch, value: id})
	for b, n := range names {
		l.emit(lang.SetRow{Target: name, Row: lang.Index{Num: b + 1}, Value: n})
	}
	l.names[id] = name
	return name
}

// weightForm is how a constant is declared.
type weightForm uint8

const (
	formMatrix weightForm = iota // [out, in] stored, declared in by out
	formRow                      // [C] stored, declared 1 by C
	formTable                    // [R, C] (or [E, R, C], flattened) declared as stored
)

// weight returns the name of a constant (or a constant read as Real),
// declaring it at its first read.
func (l *lifter) weight(id poot.ValueID, form weightForm) string {
	if id < 0 || int(id) >= l.v.g.NumValues() {
		l.reject(ErrUnliftable, "a weight the statement needs is absent")
	}
	c, ok := l.constOf(id)
	if !ok {
		l.reject(ErrUnliftable, "a weight operand computed in the program (%v)", l.v.g.Type(id))
	}
	val := l.v.g.Value(c)
	key := fmt.Sprintf("%d", form)
	if n, ok := l.names[c]; ok {
		if l.forms[n] != key {
			l.reject(ErrUnliftable, "the weight %q is read in two layouts", val.Name)
		}
		return n
	}
	s := val.Type.Shape
	var rows, cols int
	transposed := false
	switch {
	case form == formMatrix && len(s) == 2:
		rows, cols, transposed = s[1], s[0], true
	case form == formRow && len(s) == 1:
		rows, cols = 1, s[0]
	case form == formTable && len(s) == 2:
		rows, cols = s[0], s[1]
	case form == formTable && len(s) == 3:
		rows, cols = s[0]*s[1], s[2]
	default:
		l.reject(ErrUnliftable, "the weight %q is %v", val.Name, val.Type)
	}
	name := l.n.fresh(weightBase(val.Name, l.layer))
	l.forms[name] = key
	l.declare(name, rows, cols, lang.Real, declared{kind: bindWeight, value: c, transposed: transposed, contraction: form == formMatrix})
	l.names[c] = name
	return name
}

// constOf sees through the casts that read a stored constant as Real.
func (l *lifter) constOf(id poot.ValueID) (poot.ValueID, bool) {
	for {
		val := l.v.g.Value(id)
		if val.Kind == poot.Const {
			return id, true
		}
		p := l.v.prod[id]
		if p < 0 || l.v.eqns[p].Op != poot.Cast || l.v.eqns[p].Params.DType != poot.F32 {
			return 0, false
		}
		id = l.v.eqns[p].Inputs[0]
	}
}

// runtime declares tok or pos at its first read and returns its name.
func (l *lifter) runtime(id poot.ValueID) string {
	val := l.v.g.Value(id)
	if val.Kind != poot.Slot || (val.Slot != poot.SlotToken && val.Slot != poot.SlotPos) || !val.Type.Shape.Equal(poot.Shape{l.v.tokens}) {
		l.reject(ErrUnliftable, "an index that is not the step's token or position (%v %q)", val.Type, val.Name)
	}
	if val.Slot == poot.SlotToken && l.layer >= 0 {
		l.reject(ErrPerLayerEmbedding, "layer %d reads the step's tokens", l.layer)
	}
	name, stmt := "tok", lang.Stmt(lang.Scalar{Name: "tok", Value: 1})
	switch {
	case val.Slot == poot.SlotPos && l.low.batch > 0:
		l.reject(ErrUnliftable, "the positions of a batch read together")
	case val.Slot == poot.SlotPos && l.low.stacked:
		name, stmt = "pos_s0", lang.Scalar{Name: "pos_s0", Value: 1}
	case val.Slot == poot.SlotPos:
		name, stmt = "pos", lang.Scalar{Name: "pos", Value: 1}
	case l.low.rowsNamed():
		name, stmt = "toks", lang.Declare{Name: "toks", Rows: 1, Cols: l.rows(), Elem: lang.Int}
	}
	if _, ok := l.res.decls[name]; !ok {
		l.n.fixed(name)
		l.emit(stmt)
		l.res.decls[name] = declared{kind: bindRuntime, value: id, slot: val.Slot}
	}
	return name
}

// pos is the position scalar.
func (l *lifter) pos() string {
	for _, id := range l.v.g.Inputs(poot.Slot) {
		if l.v.g.Value(id).Slot == poot.SlotPos {
			return l.runtime(id)
		}
	}
	l.reject(ErrStructure, "the step has no position slot")
	return ""
}

// seqPos is sequence b's position scalar in a batched program.
func (l *lifter) seqPos(b int) string {
	name := fmt.Sprintf("pos_s%d", b)
	if _, ok := l.res.decls[name]; !ok {
		l.n.fixed(name)
		l.emit(lang.Scalar{Name: name, Value: 1})
		l.res.decls[name] = declared{kind: bindRuntime, slot: poot.SlotPos}
	}
	return name
}

// baseOf strips a per-layer (and per-sequence) name's suffix.
func (l *lifter) baseOf(name string) string {
	if i := strings.LastIndex(name, "_s"); i > 0 && isDigits(name[i+2:]) {
		name = name[:i]
	}
	if l.n.suffix != "" {
		if b, ok := strings.CutSuffix(name, l.n.suffix); ok && b != "" {
			name = b
		}
	}
	if l.low.rowsNamed() && len(name) > 1 && name[0] == 'b' {
		name = name[1:] // the mark of stacked rows
	}
	return name
}

// compositeOperands are the operand counts of the composites the lifter
// reads (package ops records them so): a record with another count is not
// one of them.
var compositeOperands = map[string]int{
	"rmsnorm": 2, "layernorm": 3, "l2norm": 1, "linear": 3, "rope": 3, "attention": 5, "swiglu": 2, "geglu": 2,
	"gelu": 1, "silu": 1, "sigmoid": 1, "soft_cap": 1, "moe": 14, "causal_mask": 1,
	"causal_conv": 4, "gated_delta": 8, "gated_delta_decay": 3, "latent_attention": 6,
}

// recurrentResults are the results of the recurrent composites: the rows
// and, but for the decay, the new state.
var recurrentResults = map[string]int{"causal_conv": 2, "gated_delta": 2, "gated_delta_decay": 1}

// linearBases names a projection's result by its weight.
var linearBases = map[string]string{
	"Wq": "qr", "Wk": "kr", "Wv": "vr", "Wo": "ao", "Wqkv": "qkv", "Wg": "gt", "Wu": "up", "Wd": "dn",
	"Wsg": "sg", "Wsu": "su", "Wsd": "sd", "Wsgi": "sgi", "Wr": "rl", "Wout": "raw",
	"Wqa": "qx", "Wqb": "qr", "Wkva": "kva", "Wz": "zz", "Wqkvz": "qkvz", "Wb": "br", "Wa": "ar", "Wba": "ba",
}

// normBases names a norm's result by its weight.
var normBases = map[string]string{"an": "xn", "fn": "x2n", "pan": "aon", "pfn": "dnn", "Qn": "qm", "Kn": "km", "on": "xf",
	"Qan": "qxn", "Kan": "kvn"}

func lower1(s string) string {
	if s == "" {
		return "v"
	}
	return strings.ToLower(s[:1]) + s[1:]
}

func (l *lifter) composite(c poot.Composite) {
	g := l.v.g
	op := func(i int) poot.ValueID {
		if i >= len(c.Operands) {
			return -1
		}
		return c.Operands[i]
	}
	if n, ok := recurrentResults[c.Name]; (!ok && len(c.Results) != 1) || (ok && len(c.Results) != n) {
		l.reject(ErrUnliftable, "the %s composite with %d results", c.Name, len(c.Results))
	}
	if want, ok := compositeOperands[c.Name]; ok && len(c.Operands) != want {
		l.preview(c.Results[0], c.Name)
		l.reject(ErrUnliftable, "a %s composite with %d operands (the ops package records %d)", c.Name, len(c.Operands), want)
	}
	res := c.Results[0]
	a := c.Attrs
	switch c.Name {
	case "layernorm":
		eps, _ := a.Float("epsilon")
		onePlus, _ := a.Bool("one_plus")
		x := l.ref(op(0))
		l.cols(op(0))
		base := l.baseOf(x) + "n"
		if k, ok := l.constOf(op(1)); op(1) >= 0 && ok {
			wb := weightBase(g.Value(k).Name, l.layer)
			if b, ok := normBases[wb]; ok {
				base = b
			} else {
				base = lower1(wb) + "x"
			}
		}
		l.preview(res, base)
		if !(eps > 0) || math.IsInf(eps, 0) {
			l.reject(ErrEpsilon, "epsilon %v", eps)
		}
		e := lang.LayerNorm{X: x, Epsilon: eps}
		if op(1) >= 0 {
			e.Weight, e.OnePlus = l.weight(op(1), formRow), onePlus
		}
		if op(2) >= 0 {
			e.Bias = l.weight(op(2), formRow)
		}
		l.emit(lang.Let{Name: l.bind(res, base), Expr: e})
	case "rmsnorm", "l2norm":
		eps, _ := a.Float("epsilon")
		heads, _ := a.Int("heads")
		x := l.ref(op(0))
		cols := l.cols(op(0))
		base := l.baseOf(x) + "n"
		wb := ""
		if c.Name == "rmsnorm" && op(1) >= 0 {
			if k, ok := l.constOf(op(1)); ok {
				wb = weightBase(g.Value(k).Name, l.layer)
				if b, ok := normBases[wb]; ok {
					base = b
				} else {
					base = lower1(wb) + "x"
				}
			}
		}
		if c.Name == "l2norm" {
			base = l.baseOf(x) + "l"
		}
		l.preview(res, base)
		onePlus, _ := a.Bool("one_plus")
		if !(eps > 0) || math.IsInf(eps, 0) {
			l.reject(ErrEpsilon, "epsilon %v", eps)
		}
		if heads != 0 && (heads < 0 || cols%heads != 0) {
			l.reject(ErrUnliftable, "%d heads over %d columns", heads, cols)
		}
		if c.Name == "l2norm" {
			l.emit(lang.Let{Name: l.bind(res, base), Expr: lang.L2Norm{X: x, Heads: heads, Epsilon: eps}})
			return
		}
		w := ""
		if op(1) >= 0 {
			w = l.weight(op(1), formRow)
		}
		l.emit(lang.Let{Name: l.bind(res, base), Expr: lang.RMSNorm{X: x, Weight: w, OnePlus: onePlus && w != "", Heads: heads, Epsilon: eps}})
	case "linear":
		x := l.ref(op(0))
		l.cols(op(0))
		base := "mm"
		if k, ok := l.constOf(op(1)); ok {
			wb := weightBase(g.Value(k).Name, l.layer)
			if b, ok := linearBases[wb]; ok {
				base = b
			} else {
				base = lower1(wb) + "r"
			}
		}
		l.preview(res, base)
		if g.Type(op(0)).Shape.Rank() != 2 {
			l.reject(ErrUnliftable, "a projection of %v", g.Type(op(0)))
		}
		w := l.weight(op(1), formMatrix)
		if op(2) < 0 {
			l.emit(lang.Let{Name: l.bind(res, base), Expr: lang.Binary{Op: lang.MatMul, A: x, B: w}})
			return
		}
		m := l.fresh(base + "m")
		l.emit(lang.Let{Name: m, Expr: lang.Binary{Op: lang.MatMul, A: x, B: w}})
		b := l.weight(op(2), formRow)
		l.emit(lang.Let{Name: l.bind(res, base), Expr: lang.Binary{Op: lang.Plus, A: m, B: b}})
	case "rope":
		x := l.ref(op(0))
		cols := l.cols(op(0))
		base := l.baseOf(x)
		if base != "" && (base[0] == 'q' || base[0] == 'k') {
			base = base[:1] + "p"
		} else {
			base += "p"
		}
		l.preview(res, base)
		heads, _ := a.Int("heads")
		layout, _ := a.Str("layout")
		dims, _ := a.Int("dims")
		if heads < 1 || cols%heads != 0 || (layout != "neox" && layout != "interleaved") {
			l.reject(ErrUnliftable, "a rope of layout %q over %d heads of %d columns", layout, heads, cols)
		}
		if op(1) < 0 || op(2) < 0 || !l.v.table[op(1)] || !l.v.table[op(2)] {
			l.reject(ErrUnliftable, "a rope whose angles are not tables of the step's positions")
		}
		cos, sin := l.rotation(op(1), op(2))
		if 2*cos.cols != dims {
			l.reject(ErrUnliftable, "rotary tables of %d angles for %d dims", cos.cols, dims)
		}
		if l.low.batch > 0 {
			for b, name := range l.bindSeqs(res, l.baseOf(base)) {
				xb := l.seq(op(0), b)
				l.emit(lang.Let{Name: name, Expr: lang.Rope{X: xb, Cos: cos.name, Sin: sin.name, From: &lang.Index{Name: l.seqPos(b)}, Heads: heads, Interleaved: layout == "interleaved"}})
			}
			return
		}
		from := lang.Index{Name: l.pos()}
		l.emit(lang.Let{Name: l.bind(res, base), Expr: lang.Rope{X: x, Cos: cos.name, Sin: sin.name, From: &from, Heads: heads, Interleaved: layout == "interleaved"}})
	case "attention":
		l.attention(c)
	case "latent_attention":
		l.latentAttention(c)
	case "swiglu":
		l.preview(res, "hh")
		gate, up := l.ref(op(0)), l.ref(op(1))
		l.emit(lang.Let{Name: l.bind(res, "hh"), Expr: lang.SwiGLU{Gate: gate, Up: up}})
	case "geglu":
		l.preview(res, "hh")
		gate, up := l.ref(op(0)), l.ref(op(1))
		act := l.fresh("hha")
		l.emit(lang.Let{Name: act, Expr: lang.Unary{Op: lang.Gelu, X: gate}})
		l.emit(lang.Let{Name: l.bind(res, "hh"), Expr: lang.Binary{Op: lang.Hadamard, A: act, B: up}})
	case "gelu", "silu", "sigmoid":
		x := l.ref(op(0))
		op := map[string]lang.UnaryOp{"gelu": lang.Gelu, "silu": lang.Silu, "sigmoid": lang.Sigmoid}[c.Name]
		base := map[string]string{"gelu": "ge", "silu": "sl", "sigmoid": "sg"}[c.Name]
		l.preview(res, base)
		l.emit(lang.Let{Name: l.bind(res, base), Expr: lang.Unary{Op: op, X: x}})
	case "soft_cap":
		x := l.ref(op(0))
		l.preview(res, "cp")
		limit, _ := a.Float("cap")
		if !(limit > 0) || math.IsInf(limit, 0) {
			l.reject(ErrSoftCap, "a soft cap of %v", limit)
		}
		l.emit(lang.Let{Name: l.bind(res, "cp"), Expr: lang.Capped{X: x, At: limit}})
	case "geglu_erf", "gelu_erf", "swiglu_clamped":
		l.preview(res, "hh")
		l.reject(ErrActivation, "the %s composite", c.Name)
	case "moe":
		l.moe(c)
	case "causal_conv", "gated_delta", "gated_delta_decay":
		l.recurrent(c)
	default:
		l.preview(res, c.Name)
		l.reject(ErrUnliftable, "the %s composite (%s)", c.Name, c.Attrs)
	}
}

func (l *lifter) attention(c poot.Composite) {
	res := c.Results[0]
	a := c.Attrs
	l.preview(res, "ct")
	heads, _ := a.Int("heads")
	groups, _ := a.Int("kv_heads")
	headDim, _ := a.Int("head_dim")
	rows, _ := a.Int("rows")
	scale, _ := a.Float("scale")
	softCap, _ := a.Float("soft_cap")
	if rows != l.low.seqs() {
		l.reject(ErrUnliftable, "an attention over %d sequences in a deployment of %d", rows, l.low.seqs())
	}
	if softCap < 0 || math.IsNaN(softCap) || math.IsInf(softCap, 0) {
		l.reject(ErrSoftCap, "an attention soft cap of %v", softCap)
	}
	window, chunk := l.visible(c.Operands[3], c.Operands[1], rows)
	qc := l.cols(c.Operands[0])
	if heads < 1 || qc != heads*headDim {
		l.reject(ErrUnliftable, "%d heads of %d over queries of %d columns", heads, headDim, qc)
	}
	e := lang.Attention{Heads: heads, Groups: groups, Causal: l.low.stacked, Window: window, Chunk: chunk, Cap: softCap}
	if scale != 1/math.Sqrt(float64(headDim)) {
		if scale == 0 || math.IsNaN(scale) || math.IsInf(scale, 0) {
			l.reject(ErrUnliftable, "an attention scale of %v", scale)
		}
		e.Scale = scale
	}
	if s := c.Operands[4]; s >= 0 {
		e.Sinks = l.weight(s, formRow)
	}
	if l.low.batch > 0 {
		for b, name := range l.bindSeqs(res, "ct") {
			e.Q, e.K, e.V, e.At = l.seq(c.Operands[0], b), l.seq(c.Operands[1], b), l.seq(c.Operands[2], b), &lang.Index{Name: l.seqPos(b)}
			l.emit(lang.Let{Name: name, Expr: e})
		}
		return
	}
	e.Q = l.ref(c.Operands[0])
	e.K, e.V = l.ref(c.Operands[1]), l.ref(c.Operands[2])
	e.At = &lang.Index{Name: l.pos()}
	l.emit(lang.Let{Name: l.bind(res, "ct"), Expr: e})
}

// visible checks that an attention's mask is the causal mask of the
// step's positions, over the rows of keys of rows sequences, and returns
// its window and chunk.
func (l *lifter) visible(mask, keys poot.ValueID, rows int) (window, chunk int) {
	g, v := l.v.g, l.v
	mp := v.prod[mask]
	var mrec poot.Composite
	if mp >= 0 {
		mrec = v.top(mp)
	}
	if !v.table[mask] || mrec.Name != "causal_mask" || len(mrec.Results) != 1 || mrec.Results[0] != mask {
		l.reject(ErrSparseAttention, "the attention's mask is not the causal mask of the step's positions")
	}
	if pv := g.Value(mrec.Operands[0]); pv.Kind != poot.Slot || pv.Slot != poot.SlotPos {
		l.reject(ErrSparseAttention, "the causal mask is built from %v %q, not the step's positions", pv.Kind, pv.Name)
	}
	n, _ := mrec.Attrs.Int("keys")
	window, _ = mrec.Attrs.Int("window")
	chunk, _ = mrec.Attrs.Int("chunk")
	kt := g.Type(l.root(keys))
	if kt.Shape.Rank() != 2 || kt.Shape[0] != n*rows {
		l.reject(ErrUnliftable, "keys %v under a mask of %d positions for %d sequences", kt, n, rows)
	}
	return window, chunk
}

func (l *lifter) primitive(e poot.Eqn) {
	g, v := l.v.g, l.v
	if _, ok := l.alias[e.Out]; ok {
		return
	}
	in := func(i int) poot.ValueID { return e.Inputs[i] }
	if _, ok := l.joins[e.Out]; ok || l.views[e.Out] || l.resetCone[e.Out] || l.joinCone[e.Out] {
		return // a step of a column view, a head join or a state's reset
	}
	if s, ok := l.viewOut[e.Out]; ok {
		l.columns(e.Out, s)
		return
	}
	switch e.Op {
	case poot.Transpose:
		if _, ok := l.constOf(in(0)); ok && len(e.Params.Perm) == 2 {
			return // a filter read one tap a row: declared where it is read
		}
	case poot.Cast:
		if _, ok := l.constOf(e.Out); ok {
			return // a weight read as Real: declared where it is read
		}
		if d := e.Params.DType; d != poot.F32 {
			l.preview(e.Out, "cast")
			l.reject(ErrUnliftable, "a cast to %v (a KV cache of %v?): the language's tensors hold Reals and Ints; lower a step with F32 caches", d, d)
		}
	case poot.Gather:
		l.preview(e.Out, "xe")
		if _, ok := l.constOf(in(0)); !ok {
			l.reject(ErrUnliftable, "a gather from a computed table")
		}
		idx := l.runtime(in(1))
		w := l.weight(in(0), formTable)
		if l.low.rowsNamed() {
			if idx != "toks" {
				l.reject(ErrUnliftable, "the rows of a table at the chunk's positions")
			}
			l.emit(lang.Let{Name: l.bind(e.Out, "xe"), Expr: lang.Rows{Indices: idx, X: w}})
			return
		}
		l.emit(lang.Let{Name: l.bind(e.Out, "xe"), Expr: lang.Row{Index: lang.Index{Name: idx}, X: w}})
		return
	case poot.Add, poot.Mul:
		a, b := in(0), in(1)
		if v.table[a] {
			a, b = b, a
		}
		base := "xr"
		if e.Op == poot.Mul {
			base = "hd"
		}
		l.preview(e.Out, base)
		if e.Op == poot.Mul {
			l.outputGate(a, b)
		}
		if _, ok := l.uniform(b); v.table[b] && !ok && l.low.batch > 0 {
			op := map[poot.Op]lang.BinaryOp{poot.Add: lang.Plus, poot.Mul: lang.Hadamard}[e.Op]
			l.cols(a)
			for s, name := range l.bindSeqs(e.Out, base) {
				x, y := l.seq(a, s), l.positionRow(b, s)
				l.emit(lang.Let{Name: name, Expr: lang.Binary{Op: op, A: x, B: y}})
			}
			return
		}
		x := l.ref(a)
		l.cols(a)
		var y string
		switch u, ok := l.uniform(b); {
		case v.table[b] && ok && e.Op == poot.Mul:
			l.emit(lang.Let{Name: l.bind(e.Out, l.baseOf(x)+"s"), Expr: lang.Scaled{X: x, By: u}})
			return
		case v.table[b]:
			y = l.positionTable(b)
		default:
			y = l.ref(b)
			if !g.Type(l.root(b)).Shape.Equal(g.Type(l.root(a)).Shape) {
				l.reject(ErrUnliftable, "%v of %v and %v", e.Op, g.Type(a), g.Type(b))
			}
		}
		op := lang.Plus
		if e.Op == poot.Mul {
			op = lang.Hadamard
		}
		l.emit(lang.Let{Name: l.bind(e.Out, base), Expr: lang.Binary{Op: op, A: x, B: y}})
		return
	case poot.WriteRows:
		dst, idx, src := in(0), in(1), in(2)
		if l.low.batch > 0 {
			l.seqWrite(e, dst, idx, src)
			return
		}
		target := l.ref(dst)
		st, ok := l.stateIn(l.root(dst))
		if !ok {
			l.reject(ErrUnliftable, "rows written into a tensor that is not a state")
		}
		if l.stateCur[st] != l.root(dst) {
			l.reject(ErrUnliftable, "rows written into an older version of %s", target)
		}
		if iv := g.Value(idx); iv.Kind != poot.Slot || iv.Slot != poot.SlotPos {
			l.reject(ErrUnliftable, "cache rows chosen by %v %q rather than the step's positions", iv.Kind, iv.Name)
		}
		val := l.ref(src)
		l.cols(src)
		if l.low.stacked {
			l.emit(lang.SetRows{Target: target, From: lang.Index{Name: l.pos()}, Value: val})
		} else {
			l.emit(lang.SetRow{Target: target, Row: lang.Index{Name: l.pos()}, Value: val})
		}
		l.names[e.Out] = target
		l.stateCur[st] = e.Out
		return
	case poot.Slice:
		if l.lastRow[e.Out] {
			l.preview(e.Out, "xl")
			x := l.ref(in(0))
			l.emit(lang.Let{Name: l.bind(e.Out, "xl"), Expr: lang.Row{Index: lang.Index{Num: l.v.tokens}, X: x}})
			return
		}
		x := l.ref(in(0))
		c := l.cols(in(0))
		st, lim := e.Params.Start, e.Params.Limit
		base := l.baseOf(x) + "c"
		switch { // a fused projection's query, key and value; a latent and its rotary key
		case l.baseOf(x) == "qkv" && len(st) == 2:
			base = map[bool]string{true: "qr", false: "kr"}[st[1] == 0]
			if lim[1] == c {
				base = "vr"
			}
		case l.baseOf(x) == "kva" && len(st) == 2:
			base = map[bool]string{true: "kvl", false: "kpe"}[st[1] == 0]
		}
		l.preview(e.Out, base)
		if len(st) == 2 && st[0] == 0 && lim[0] == g.Type(in(0)).Shape[0] && st[1] < lim[1] {
			cs := lang.Columns{N: lim[1] - st[1], After: st[1], Every: c, X: x}
			if lim[1] == c && st[1] > 0 {
				cs.Last, cs.After = true, 0
			}
			l.emit(lang.Let{Name: l.bind(e.Out, base), Expr: cs})
			return
		}
		l.reject(ErrUnliftable, "a slice [%v, %v) of %v that is not a run of columns", st, lim, g.Type(in(0)))
	case poot.Concat:
		if e.Params.Axis == 1 && len(e.Inputs) >= 2 {
			base := "jn"
			if l.baseOf(l.ref(in(0))) == "kvn" {
				base = "kc" // a latent attention's cache row
			}
			l.preview(e.Out, base)
			a := l.ref(in(0))
			l.cols(in(0))
			for k := 1; k < len(e.Inputs); k++ {
				b := l.ref(in(k))
				l.cols(in(k))
				name := ""
				if k == len(e.Inputs)-1 {
					name = l.bind(e.Out, base)
				} else {
					name = l.fresh(base)
				}
				l.emit(lang.Let{Name: name, Expr: lang.Binary{Op: lang.Joined, A: a, B: b}})
				a = name
			}
			return
		}
	case poot.MatMul:
		if _, ok := l.constOf(in(1)); ok && g.Type(in(0)).Shape.Rank() == 2 {
			l.preview(e.Out, "mm")
			x := l.ref(in(0))
			l.cols(in(0))
			w := l.weight(in(1), formMatrix)
			l.emit(lang.Let{Name: l.bind(e.Out, "mm"), Expr: lang.Binary{Op: lang.MatMul, A: x, B: w}})
			return
		}
	}
	l.preview(e.Out, e.Op.String())
	var types []string
	for _, x := range e.Inputs {
		types = append(types, g.Type(x).String())
	}
	l.reject(ErrUnliftable, "the primitive %v over %s", e.Op, strings.Join(types, ", "))
}

// seqWrite writes a batch's rows into their sequences' caches: row b of
// the value at position pos_s{b} of sequence b's block of the state. The
// rows' index must be the cache rows of the batch: sequence b's block
// start plus its position.
func (l *lifter) seqWrite(e poot.Eqn, dst, idx, src poot.ValueID) {
	st, ok := l.stateIn(l.root(dst))
	if !ok {
		if l.v.g.Value(l.root(dst)).Kind != poot.State {
			l.reject(ErrUnliftable, "rows written into a tensor that is not a state")
		}
		st = l.root(dst)
		l.state(st)
	}
	if l.stateCur[st] != l.root(dst) {
		l.reject(ErrUnliftable, "rows written into an older version of %s", l.split[st][0])
	}
	rows := l.v.g.Type(st).Shape[0] / l.low.batch
	if !l.low.cacheRows(idx, rows) {
		l.reject(ErrUnliftable, "cache rows that are not each sequence's block of %d rows at its position", rows)
	}
	l.cols(src)
	targets := l.split[st]
	for b, t := range targets {
		l.emit(lang.SetRow{Target: t, Row: lang.Index{Name: l.seqPos(b)}, Value: l.seq(src, b)})
	}
	l.split[e.Out] = targets
	l.stateCur[st] = e.Out
}

// outputGate refuses the output gates the language cannot write: an
// attention's result times the sigmoid of a gate that is not a projection
// of its own (a slice of a fused projection), or over values unlike the
// keys in width.
func (l *lifter) outputGate(a, b poot.ValueID) {
	v := l.v
	producer := func(id poot.ValueID) poot.Composite {
		id = l.root(id)
		if p := v.prod[id]; p >= 0 {
			if c := v.top(p); len(c.Results) == 1 && c.Results[0] == id {
				return c
			}
		}
		return poot.Composite{}
	}
	for _, pair := range [][2]poot.ValueID{{a, b}, {b, a}} {
		att, gate := producer(pair[0]), producer(pair[1])
		if att.Name != "attention" || gate.Name != "sigmoid" {
			continue
		}
		hd, _ := att.Attrs.Int("head_dim")
		vd, _ := att.Attrs.Int("value_dim")
		if hd != vd {
			l.reject(ErrOutputGate, "an output gate over values %d wide and keys %d wide", vd, hd)
		}
		if src := producer(gate.Operands[0]); src.Name != "linear" && !l.isView(gate.Operands[0]) {
			l.reject(ErrOutputGate, "the gate is not a projection of its own (it is cut from a fused projection)")
		}
	}
}

// stateIn finds the state input a value is a version of.
func (l *lifter) stateIn(id poot.ValueID) (poot.ValueID, bool) {
	for s, cur := range l.stateCur {
		if cur == id || s == id {
			return s, true
		}
	}
	return 0, false
}

// uniform reports the value of a table that holds one number everywhere
// (a literal, reshaped or broadcast).
func (l *lifter) uniform(id poot.ValueID) (float64, bool) {
	for {
		p := l.v.prod[id]
		if p < 0 {
			return 0, false
		}
		e := l.v.eqns[p]
		switch e.Op {
		case poot.Literal:
			if e.Params.DType != poot.F32 || math.IsInf(e.Params.Value, 0) || math.IsNaN(e.Params.Value) {
				return 0, false
			}
			return float64(float32(e.Params.Value)), true
		case poot.Reshape, poot.Broadcast:
			id = e.Inputs[0]
		default:
			return 0, false
		}
	}
}

// finish checks what the program leaves: its result named, and every state
// it reads carried to the value the step's state pair says.
func (l *lifter) finish() {
	l.binder = ""
	if l.res.output == "" {
		l.reject(ErrStructure, "the program's result %%%d is not written by any statement", l.out)
	}
	pairs := map[poot.ValueID]poot.ValueID{}
	for _, s := range l.v.g.States() {
		pairs[s.In] = s.Out
	}
	for st, cur := range l.stateCur {
		out, ok := pairs[st]
		if !ok {
			continue
		}
		if l.root(out) != cur && out != cur {
			l.reject(ErrUnliftable, "the state %q is carried to a value other than its last write", l.v.g.Value(st).Name)
		}
	}
}
