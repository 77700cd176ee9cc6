package rdu

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/lang"
)

// This file finds how a kind's program splits over the chips. Every
// column of every split value is a node; the product of a replicated
// activation by a weight makes fresh nodes (its columns, each a chip's to
// compute), and the statements that follow either carry the nodes along
// (an activation, a row, a column view, a join, a cache write: the same
// columns) or tie them, saying two columns must be on one chip: the
// columns of one head of a norm or a rotation, an attention's key-value
// head with its query heads, a gated delta's key head with its value
// heads, their gates, betas and decays. The components of the ties are
// dealt to the chips, and a chip holds each split value's columns in
// their order in the value: a chip's part of a fused projection is the
// runs of its heads' columns, and a column view of it is again a column
// view of the chip's part, with the chip's counts.

// tpUse is how a declared tensor (a weight, a recurrent state) is cut: its
// rows or columns, one for each column of the split value like.
type tpUse struct {
	axis, like string
}

// tpUnit says what a component of tied columns is, for refusals: rank 2
// for heads, 3 for an attention's key-value heads or a gated delta's key
// heads, and the statement that said so.
type tpUnit struct {
	what   string
	rank   int
	stmt   int
	binder string
}

// tpBlock is the nodes one statement made: the columns of a
// column-parallel product.
type tpBlock struct {
	first  int32
	stmt   int
	binder string
}

// tpRun is a run of a value's columns (or a declared tensor's rows or
// columns) a chip holds.
type tpRun struct{ from, n int }

// tpPlan is the split of one kind's program over tp chips: what classify
// finds of its values, weights and states, then the chip resolve deals
// each column to.
type tpPlan struct {
	tp     int
	kind   string
	stmt   int
	binder string
	types  map[string]lang.Type
	bind   map[string]bundle.Binding

	cols    map[string][]int32   // split value -> the node of each of its columns
	partial map[string]string    // row-parallel product -> its split operand
	slices  map[string]tpUse     // sliced declared tensor -> how
	parent  []int32              // union-find over the nodes
	units   map[int32]tpUnit     // a component's root -> what it is
	blocks  []tpBlock            // the products' nodes, in program order
	chipOf  []int32              // after resolve: the chip of each node
	parts   map[string][][]tpRun // split value -> each chip's runs of its columns
	decl    map[string]int       // declared name -> its statement
}

// newTPPlan starts the split of a kind's program, typed types, its first
// layer's bindings bind.
func newTPPlan(tp int, kind string, types map[string]lang.Type, bind map[string]bundle.Binding) *tpPlan {
	return &tpPlan{tp: tp, kind: kind, types: types, bind: bind, cols: map[string][]int32{}, partial: map[string]string{},
		slices: map[string]tpUse{}, units: map[int32]tpUnit{}, parts: map[string][][]tpRun{}, decl: map[string]int{}}
}

func (p *tpPlan) fail(format string, args ...any) {
	panic(rejection{r: nil, tp: &TPError{Chips: p.tp, Kind: p.kind, Statement: p.stmt, Binder: p.binder, Detail: fmt.Sprintf(format, args...)}})
}

// fresh makes the nodes of a value of width columns.
func (p *tpPlan) fresh(width int) []int32 {
	first := int32(len(p.parent))
	out := make([]int32, width)
	for i := range out {
		out[i] = first + int32(i)
		p.parent = append(p.parent, out[i])
	}
	p.blocks = append(p.blocks, tpBlock{first: first, stmt: p.stmt, binder: p.binder})
	return out
}

func (p *tpPlan) find(n int32) int32 {
	for p.parent[n] != n {
		p.parent[n] = p.parent[p.parent[n]]
		n = p.parent[n]
	}
	return n
}

// tie puts two columns on one chip.
func (p *tpPlan) tie(a, b int32) {
	a, b = p.find(a), p.find(b)
	if a == b {
		return
	}
	if a > b {
		a, b = b, a
	}
	p.parent[b] = a
	if ub, ok := p.units[b]; ok {
		if ua, ok := p.units[a]; !ok || ub.rank > ua.rank {
			p.units[a] = ub
		}
		delete(p.units, b)
	}
}

// same ties two values column by column: they are one layout.
func (p *tpPlan) same(a, b string) {
	ca, cb := p.cols[a], p.cols[b]
	if len(ca) != len(cb) {
		p.fail("columns of two splits, %d and %d wide, combined", len(ca), len(cb))
	}
	for i := range ca {
		p.tie(ca[i], cb[i])
	}
}

// whole ties each of heads heads of a split value, and says what they are.
func (p *tpPlan) whole(name string, heads int, u tpUnit) {
	c := p.cols[name]
	if heads < 1 || len(c)%heads != 0 {
		p.fail("%d heads over the %d columns of %s", heads, len(c), name)
	}
	w := len(c) / heads
	for h := range heads {
		for i := 1; i < w; i++ {
			p.tie(c[h*w], c[h*w+i])
		}
		r := p.find(c[h*w])
		if old, ok := p.units[r]; !ok || u.rank > old.rank {
			p.units[r] = u
		}
	}
}

// unit is a tpUnit said by the statement being read.
func (p *tpPlan) unit(what string, rank int) tpUnit {
	return tpUnit{what: what, rank: rank, stmt: p.stmt, binder: p.binder}
}

// use records that the declared tensor name is cut along axis as the
// split value like deals its columns.
func (p *tpPlan) use(name, axis, like string) {
	t, n := p.types[name], len(p.cols[like])
	if src := p.bind[name].Source; src != bundle.SourceWeight && src != bundle.SourceState || axis == "rows" && t.Rows != n || axis == "cols" && t.Cols != n {
		p.fail("%s (%v) cut as the %d columns of %s", name, t, n, like)
	}
	if u, ok := p.slices[name]; ok {
		if u.axis != axis {
			p.fail("%s cut by its %s and by its %s", name, u.axis, axis)
		}
		p.same(u.like, like)
		return
	}
	p.slices[name] = tpUse{axis: axis, like: like}
}

// classify reads a kind's program: which values are split, how their
// columns tie, which weights and states are cut, which products are
// partials an all-reduce sums.
func (p *tpPlan) classify(prog *lang.Program) {
	for i, s := range prog.Stmts {
		if d, ok := s.(lang.Declare); ok {
			p.decl[d.Name] = i
		}
		if l, ok := s.(lang.Let); ok {
			p.stmt, p.binder = i, l.Name
			if _, moe := l.Expr.(lang.MoE); moe {
				p.fail("an expert mixture: the tensor-parallel deployment splits heads and dense feed-forward columns, not experts")
			}
			if b, ok := l.Expr.(lang.Binary); ok && b.Op == lang.MatMul && b.Heads > 0 && p.bind[b.B].Source == bundle.SourceWeight {
				p.fail("latent attention (%s, a product head by head with %s): every chip would need the whole latent cache", l.Name, b.B)
			}
		}
	}
	keep := p.sharedKV(prog)
	for i, s := range prog.Stmts {
		names, binder := reads(s)
		p.stmt, p.binder = i, binder
		var split []string
		for _, n := range names {
			if _, ok := p.cols[n]; ok {
				split = append(split, n)
			}
		}
		if p.read(s, split, keep) {
			continue
		}
		if len(split) > 0 {
			p.fail("a statement the tensor-parallel deployment does not split (it reads the split %s)", strings.Join(split, ", "))
		}
	}
}

// read classifies one statement, given the split names it reads; false
// when it is not a form the deployment splits.
func (p *tpPlan) read(s lang.Stmt, split []string, keep map[string]bool) bool {
	isSplit := func(n string) bool { _, ok := p.cols[n]; return ok }
	only := func(n string) bool {
		return len(split) > 0 && !slices.ContainsFunc(split, func(m string) bool { return m != n })
	}
	weight := func(n string) bool { return p.bind[n].Source == bundle.SourceWeight }
	binder := p.binder
	like := func(n string) { p.cols[binder] = p.cols[n] }
	switch s := s.(type) {
	case lang.Declare, lang.Scalar, lang.SetItem:
		return true
	case lang.SetRow, lang.SetRows:
		val := ""
		if w, ok := s.(lang.SetRow); ok {
			val = w.Value
		} else {
			val = s.(lang.SetRows).Value
		}
		switch {
		case isSplit(val) && isSplit(binder):
			p.same(binder, val)
		case isSplit(val):
			like(val)
		case isSplit(binder):
			p.fail("the replicated %s written into the split %s", val, binder)
		}
		return true
	}
	l := s.(lang.Let)
	if len(split) == 0 {
		// A replicated statement, but for the product that starts a split.
		if b, ok := l.Expr.(lang.Binary); ok && b.Op == lang.MatMul && weight(b.B) && b.Heads == 0 && p.types[b.B].Cols > 1 && !keep[binder] {
			p.cols[binder] = p.fresh(p.types[binder].Cols)
			p.use(b.B, "cols", binder)
		}
		return true
	}
	switch e := l.Expr.(type) {
	case lang.Binary:
		switch {
		case e.Op == lang.MatMul && e.Heads == 0 && weight(e.B) && only(e.A):
			p.partial[binder] = e.A
			p.use(e.B, "rows", e.A)
			return true
		case (e.Op == lang.Plus || e.Op == lang.Hadamard) && isSplit(e.A) && isSplit(e.B):
			p.same(e.A, e.B)
			like(e.A)
			return true
		case e.Op == lang.Plus || e.Op == lang.Hadamard:
			in, other := e.A, e.B
			if isSplit(e.B) {
				in, other = e.B, e.A
			}
			t := p.types[other]
			switch {
			case weight(other) && t.Rows == 1:
				p.use(other, "cols", in)
			case e.Op == lang.Hadamard && t.Cols == 1 && t.Rows > 1:
				// A column of one value a row scales every chip's columns.
			default:
				p.fail("a chip's columns of %s combined with the replicated %s", in, other)
			}
			like(in)
			return true
		case e.Op == lang.Joined && isSplit(e.A) && isSplit(e.B):
			p.join(e)
			return true
		}
	case lang.RMSNorm, lang.L2Norm:
		x, w, heads := "", "", 0
		if n, ok := e.(lang.RMSNorm); ok {
			x, w, heads = n.X, n.Weight, n.Heads
		} else {
			n := e.(lang.L2Norm)
			x, heads = n.X, n.Heads
		}
		if !only(x) || heads < 1 {
			p.fail("a norm over the whole row of a split value")
		}
		width := len(p.cols[x])
		if w != "" && p.types[w].Cols != width/heads {
			p.fail("a norm weight %d wide over heads of %d columns", p.types[w].Cols, width/heads)
		}
		p.whole(x, heads, p.unit("heads", 2))
		like(x)
		return true
	case lang.Rope:
		if only(e.X) {
			p.whole(e.X, e.Heads, p.unit("heads", 2))
			like(e.X)
			return true
		}
	case lang.Attention:
		p.attention(e, split)
		return true
	case lang.GatedDelta:
		p.gatedDelta(e)
		return true
	case lang.CausalConv:
		if only(e.X) {
			like(e.X)
			p.use(e.Weight, "cols", e.X)
			p.use(e.State, "cols", e.X)
			return true
		}
	case lang.Decay:
		if only(e.X) {
			like(e.X)
			p.use(e.Bias, "cols", e.X)
			p.use(e.Rate, "cols", e.X)
			return true
		}
	case lang.Unary:
		if e.Op == lang.Argmax {
			p.fail("an argmax of a split value")
		}
		like(e.X)
		return true
	case lang.Scaled:
		like(e.X)
		return true
	case lang.Capped:
		like(e.X)
		return true
	case lang.Row:
		like(e.X)
		return true
	case lang.Rows:
		if only(e.X) {
			like(e.X)
			return true
		}
	case lang.Columns:
		x := p.cols[e.X]
		after := e.After
		if e.Last {
			after = e.Every - e.N
		}
		view := make([]int32, 0, len(x)/e.Every*e.N)
		for at := 0; at+e.Every <= len(x); at += e.Every {
			view = append(view, x[at+after:at+after+e.N]...)
		}
		p.cols[binder] = view
		return true
	case lang.SwiGLU:
		if isSplit(e.Gate) && isSplit(e.Up) {
			p.same(e.Gate, e.Up)
			like(e.Gate)
			return true
		}
	}
	return false
}

// join reads "A joined with B", whose columns are A's then B's, or head by
// head A's and B's of each head, a head on one chip.
func (p *tpPlan) join(e lang.Binary) {
	a, b := p.cols[e.A], p.cols[e.B]
	if e.Heads == 0 {
		p.cols[p.binder] = append(slices.Clip(a), b...)
		return
	}
	u := p.unit("heads", 2)
	p.whole(e.A, e.Heads, u)
	p.whole(e.B, e.Heads, u)
	wa, wb := len(a)/e.Heads, len(b)/e.Heads
	out := make([]int32, 0, len(a)+len(b))
	for h := range e.Heads {
		p.tie(a[h*wa], b[h*wb])
		out = append(append(out, a[h*wa:(h+1)*wa]...), b[h*wb:(h+1)*wb]...)
	}
	p.cols[p.binder] = out
}

// headsOut gives an attention's or a delta rule's result heads heads, the
// columns of head h on the chip of column at(h).
func (p *tpPlan) headsOut(heads int, like string, at func(h int) int32) {
	width := p.types[p.binder].Cols
	if width == len(p.cols[like]) {
		p.cols[p.binder] = p.cols[like]
		return
	}
	out := p.fresh(width)
	w := width / heads
	for h := range heads {
		for i := range w {
			p.tie(at(h), out[h*w+i])
		}
	}
	p.cols[p.binder] = out
}

// attention reads an attention: each key-value head on one chip with its
// query heads, or, over a key-value head the spine holds, each chip its
// query heads.
func (p *tpPlan) attention(e lang.Attention, split []string) {
	if e.Sinks != "" || len(p.cols[e.Q]) == 0 {
		p.fail("an attention whose queries, keys and values are not all split by heads, or with sinks")
	}
	q := p.cols[e.Q]
	hd := len(q) / e.Heads
	if _, kSplit := p.cols[e.K]; !kSplit && e.Groups == 1 && len(split) == 1 {
		p.whole(e.Q, e.Heads, p.unit("query heads", 2))
		p.headsOut(e.Heads, e.Q, func(h int) int32 { return q[h*hd] })
		return
	}
	if len(split) != 3 {
		p.fail("an attention whose queries, keys and values are not all split by heads, or with sinks")
	}
	u := p.unit("key-value heads", 3)
	p.whole(e.Q, e.Heads, u)
	p.whole(e.K, e.Groups, u)
	p.whole(e.V, e.Groups, u)
	k, v := p.cols[e.K], p.cols[e.V]
	hk, hv, per := len(k)/e.Groups, len(v)/e.Groups, e.Heads/e.Groups
	for h := range e.Heads {
		p.tie(q[h*hd], k[h/per*hk])
		p.tie(q[h*hd], v[h/per*hv])
	}
	p.headsOut(e.Heads, e.Q, func(h int) int32 { return q[h*hd] })
}

// gatedDelta reads a gated delta rule: each key head on one chip with its
// value heads (h/(H/G), or h mod G tiled), their gates, betas, decays and
// rows of the state.
func (p *tpPlan) gatedDelta(e lang.GatedDelta) {
	for _, n := range []string{e.Q, e.K, e.V, e.Gate, e.Beta, e.Decay} {
		if _, ok := p.cols[n]; !ok {
			p.fail("a gated delta whose queries, keys, values, gate, beta and decay are not all split by heads (%s is replicated)", n)
		}
	}
	u := p.unit("key heads", 3)
	g, h := e.Groups, e.Heads
	p.whole(e.Q, g, u)
	p.whole(e.K, g, u)
	p.whole(e.V, h, u)
	p.whole(e.Gate, h, u)
	p.whole(e.Beta, h, u)
	p.whole(e.Decay, h, u)
	q, k, v, z, b, d := p.cols[e.Q], p.cols[e.K], p.cols[e.V], p.cols[e.Gate], p.cols[e.Beta], p.cols[e.Decay]
	dk, dv := len(q)/g, len(v)/h
	for kh := range g {
		p.tie(q[kh*dk], k[kh*dk])
	}
	for vh := range h {
		kh := vh / (h / g)
		if e.Tiled {
			kh = vh % g
		}
		p.tie(v[vh*dv], q[kh*dk])
		p.tie(v[vh*dv], z[vh*dv])
		p.tie(v[vh*dv], b[vh])
		p.tie(v[vh*dv], d[vh])
	}
	p.use(e.State, "rows", e.V)
	p.cols[p.binder] = p.cols[e.V]
}

// resolve deals the components of tied columns to the chips: those whose
// first column a product made are dealt together, in consecutive runs as
// even as they allow, heads whole, and columns without heads in blocks of
// 32 where there are at least as many blocks as chips.
func (p *tpPlan) resolve() {
	type comp struct {
		root  int32
		block int
	}
	var comps []comp
	index := map[int32]int{}
	block := 0
	for n := range int32(len(p.parent)) {
		for block+1 < len(p.blocks) && p.blocks[block+1].first <= n {
			block++
		}
		r := p.find(n)
		if _, ok := index[r]; !ok {
			index[r] = len(comps)
			comps = append(comps, comp{root: r, block: block})
		}
	}
	chipOfComp := make([]int32, len(comps))
	for start := 0; start < len(comps); {
		end := start
		for end < len(comps) && comps[end].block == comps[start].block {
			end++
		}
		class := comps[start:end]
		bl := p.blocks[class[0].block]
		u := tpUnit{what: "columns", stmt: bl.stmt, binder: bl.binder}
		for _, c := range class {
			if cu, ok := p.units[c.root]; ok && cu.rank > u.rank {
				u = cu
			}
		}
		n, per := len(class), 1
		if u.rank < 2 && n%32 == 0 && n/32 >= p.tp {
			n, per, u.what = n/32, 32, "blocks of 32 columns"
		}
		if n < p.tp {
			p.stmt, p.binder = u.stmt, u.binder
			p.fail("%d %s do not split over %d chips: a chip would hold none", n, u.what, p.tp)
		}
		for i := range class {
			unit := i / per
			c := 0
			for (c+1)*n/p.tp <= unit {
				c++
			}
			chipOfComp[start+i] = int32(c)
		}
		start = end
	}
	p.chipOf = make([]int32, len(p.parent))
	for n := range p.chipOf {
		p.chipOf[n] = chipOfComp[index[p.find(int32(n))]]
	}
}

// runs are the runs of a split value's columns each chip holds.
func (p *tpPlan) runs(name string) [][]tpRun {
	if r, ok := p.parts[name]; ok {
		return r
	}
	out := make([][]tpRun, p.tp)
	for j, n := range p.cols[name] {
		c := p.chipOf[n]
		if k := len(out[c]); k > 0 && out[c][k-1].from+out[c][k-1].n == j {
			out[c][k-1].n++
		} else {
			out[c] = append(out[c], tpRun{from: j, n: 1})
		}
	}
	p.parts[name] = out
	return out
}

// held is how many columns of the split value name chip c holds.
func (p *tpPlan) held(name string, c int) int {
	n := 0
	for _, r := range p.runs(name)[c] {
		n += r.n
	}
	return n
}

// local is chip c's form of a statement's expression: its heads, groups
// and column views counted over its own columns.
func (p *tpPlan) local(e lang.Expr, c int) lang.Expr {
	per := func(name string, heads int) int {
		return p.held(name, c) / (len(p.cols[name]) / heads)
	}
	switch x := e.(type) {
	case lang.RMSNorm:
		if x.Heads > 0 {
			x.Heads = per(x.X, x.Heads)
		}
		return x
	case lang.L2Norm:
		if x.Heads > 0 {
			x.Heads = per(x.X, x.Heads)
		}
		return x
	case lang.Rope:
		x.Heads = per(x.X, x.Heads)
		return x
	case lang.Attention:
		heads := per(x.Q, x.Heads)
		if _, split := p.cols[x.K]; split {
			x.Groups = per(x.K, x.Groups)
		}
		x.Heads = heads
		return x
	case lang.GatedDelta:
		x.Groups, x.Heads = per(x.Q, x.Groups), per(x.V, x.Heads)
		x.Tiled = x.Tiled && x.Groups > 1 && x.Groups != x.Heads
		return x
	case lang.Binary:
		if x.Op == lang.Joined && x.Heads > 0 {
			x.Heads = per(x.A, x.Heads)
		}
		return x
	case lang.Columns:
		return p.localView(x, c)
	}
	return e
}

// localView is chip c's form of a column view: the chip's columns of X
// must fall alike in every run of Every it holds any of.
func (p *tpPlan) localView(x lang.Columns, c int) lang.Columns {
	after := x.After
	if x.Last {
		after = x.Every - x.N
	}
	var pattern []int
	seen := false
	var cur []int
	period := -1
	flush := func() {
		if period < 0 {
			return
		}
		if seen && !slices.Equal(pattern, cur) {
			p.fail("chip %d's columns of %s do not repeat alike every %d columns", c, x.X, x.Every)
		}
		pattern, seen, cur = cur, true, nil
	}
	for _, r := range p.runs(x.X)[c] {
		for j := r.from; j < r.from+r.n; j++ {
			if j/x.Every != period {
				flush()
				period = j / x.Every
			}
			cur = append(cur, j%x.Every)
		}
	}
	flush()
	below := sort.SearchInts(pattern, after)
	upto := sort.SearchInts(pattern, after+x.N)
	out := lang.Columns{N: upto - below, After: below, Every: len(pattern), X: x.X}
	if out.N == 0 {
		p.fail("chip %d would hold none of the columns %s", c, p.binder)
	}
	if out.After > 0 && out.After+out.N == out.Every {
		out.Last, out.After = true, 0
	}
	return out
}
