package rdu

import (
	"math"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/rdu/lang"
)

// This file lifts the recurrent mixer of Qwen3-Next and Qwen3.5: the
// causal convolution, the decay and the gated delta rule, each a statement
// of its own, and the strided column views (a reshape that splits the
// columns, a slice of one axis, a reshape back) with which their fused
// projections are cut into heads.

// strided is a run of columns a reshape, slice, reshape chain selects.
type strided struct {
	x           poot.ValueID // the matrix the columns are cut from
	n, after, e int          // N columns after After of every E
}

// stridedViews finds the strided column views of the program: the inner
// reshape and slice of each write no statement, the outer reshape writes
// the columns.
func (l *lifter) stridedViews() (inner map[poot.ValueID]bool, outer map[poot.ValueID]strided) {
	v := l.v
	inner, outer = map[poot.ValueID]bool{}, map[poot.ValueID]strided{}
	for _, i := range l.eqns {
		e := v.eqns[i]
		if e.Composite != 0 || e.Op != poot.Reshape {
			continue
		}
		o := v.g.Type(e.Out).Shape
		sp := v.prod[e.Inputs[0]]
		if len(o) != 2 || sp < 0 || !l.inProg[sp] || v.eqns[sp].Op != poot.Slice || v.eqns[sp].Composite != 0 {
			continue
		}
		se := v.eqns[sp]
		rp := v.prod[se.Inputs[0]]
		if rp < 0 || !l.inProg[rp] || v.eqns[rp].Op != poot.Reshape || v.eqns[rp].Composite != 0 {
			continue
		}
		re := v.eqns[rp]
		src, mid := v.g.Type(re.Inputs[0]).Shape, v.g.Type(re.Out).Shape
		if len(src) != 2 || len(mid) < 3 || mid[0] != src[0] || o[0] != src[0] {
			continue
		}
		axis := -1
		ok := true
		for a := range mid {
			if se.Params.Start[a] == 0 && se.Params.Limit[a] == mid[a] {
				continue
			}
			if axis >= 0 || a == 0 {
				ok = false
			}
			axis = a
		}
		if !ok || axis < 0 {
			continue
		}
		inner1 := 1
		for _, d := range mid[axis+1:] {
			inner1 *= d
		}
		s := strided{x: re.Inputs[0], n: (se.Params.Limit[axis] - se.Params.Start[axis]) * inner1,
			after: se.Params.Start[axis] * inner1, e: mid[axis] * inner1}
		if o[1]*s.e != s.n*src[1] {
			continue
		}
		inner[re.Out], inner[se.Out] = true, true
		outer[e.Out] = s
	}
	return inner, outer
}

// columns writes a strided column view.
func (l *lifter) columns(out poot.ValueID, s strided) {
	x := l.ref(s.x)
	c := l.cols(s.x)
	base := l.baseOf(x) + "c"
	l.preview(out, base)
	if s.e == c && s.after == 0 && s.n == c {
		l.alias[out] = l.root(s.x)
		return
	}
	l.emit(lang.Let{Name: l.bind(out, base), Expr: s.expr(x)})
}

// expr is the statement's form of the view, over x: "the first N", "the
// last N", or "the N after the first A" of every E.
func (s strided) expr(x string) lang.Columns {
	cs := lang.Columns{N: s.n, After: s.after, Every: s.e, X: x}
	if s.after > 0 && s.after+s.n == s.e {
		cs.Last, cs.After = true, 0
	}
	return cs
}

// recurrentState declares the state a recurrent statement reads and
// writes, flattened to a matrix of its last axis, and carries it to the
// statement's new state.
func (l *lifter) recurrentState(id, next poot.ValueID) (string, *lang.Index) {
	st := l.root(id)
	var from *lang.Index
	if s, ok := l.resets[st]; ok {
		st, from = s, &lang.Index{Name: l.pos()}
	}
	val := l.v.g.Value(st)
	if val.Kind != poot.State {
		l.reject(ErrUnliftable, "a recurrent state that is not a state of the step")
	}
	if _, seen := l.stateCur[st]; seen || l.names[st] != "" {
		l.reject(ErrUnliftable, "the state %q is read twice", val.Name)
	}
	t := val.Type
	if len(t.Shape) < 2 || t.DType != poot.F32 {
		l.reject(ErrUnliftable, "state %q is %v, not a tensor of Reals", val.Name, t)
	}
	rows := 1
	for _, d := range t.Shape[:len(t.Shape)-1] {
		rows *= d
	}
	name := l.n.fresh(stateBase(val.Name, l.layer))
	l.declare(name, rows, t.Shape[len(t.Shape)-1], lang.Real, declared{kind: bindState, value: st, recurrent: true})
	l.names[st] = name
	l.names[next] = name
	l.stateCur[st] = next
	return name, from
}

// stateResets finds the states read as zeros where a sequence starts: a
// select of zeros or the state by whether the step's first position is 0.
// The select and its mask write no statement; the recurrent statement's
// "from position" clause says it.
func (l *lifter) stateResets() (resets map[poot.ValueID]poot.ValueID, skip map[poot.ValueID]bool) {
	v := l.v
	resets, skip = map[poot.ValueID]poot.ValueID{}, map[poot.ValueID]bool{}
	for _, i := range l.eqns {
		e := v.eqns[i]
		if e.Composite != 0 || e.Op != poot.Select || len(e.Inputs) != 3 || v.g.Value(e.Inputs[2]).Kind != poot.State {
			continue
		}
		if z, ok := l.uniform(e.Inputs[1]); !ok || z != 0 {
			continue
		}
		cone := map[poot.ValueID]bool{}
		eqs, pos, ok := 0, false, true
		var walk func(id poot.ValueID)
		walk = func(id poot.ValueID) {
			if cone[id] || !ok {
				return
			}
			cone[id] = true
			if val := v.g.Value(id); val.Kind == poot.Slot {
				pos = pos || val.Slot == poot.SlotPos
				ok = ok && val.Slot == poot.SlotPos
				return
			}
			p := v.prod[id]
			if p < 0 || !(l.inProg[p] || v.table[id]) || v.eqns[p].Composite != 0 {
				ok = false
				return
			}
			pe := v.eqns[p]
			switch pe.Op {
			case poot.Eq:
				if lp := v.prod[pe.Inputs[1]]; lp < 0 || v.eqns[lp].Op != poot.Literal || v.eqns[lp].Params.Value != 0 {
					ok = false
				}
				eqs++
			case poot.Reshape, poot.Slice, poot.Broadcast, poot.Literal:
			default:
				ok = false
			}
			for _, in := range pe.Inputs {
				walk(in)
			}
		}
		walk(e.Inputs[0])
		walk(e.Inputs[1])
		if !ok || !pos || eqs != 1 {
			continue
		}
		for id := range cone {
			if v.g.Value(id).Kind != poot.Slot {
				skip[id] = true
			}
		}
		skip[e.Out] = true
		resets[e.Out] = e.Inputs[2]
	}
	return resets, skip
}

// recurrent lifts the recurrent composites.
func (l *lifter) recurrent(c poot.Composite) {
	op := func(i int) poot.ValueID { return c.Operands[i] }
	res := c.Results[0]
	if c.Name == "gated_delta_decay" {
		l.preview(res, "dc")
		x := l.ref(op(0))
		l.cols(op(0))
		logRate, _ := c.Attrs.Bool("log_rate")
		bias, rate := l.weight(op(1), formRow), l.weight(op(2), formRow)
		l.emit(lang.Let{Name: l.bind(res, "dc"), Expr: lang.Decay{X: x, Bias: bias, Rate: rate, LogRate: logRate}})
		return
	}
	if l.low.batch > 0 {
		l.recurrentSeqs(c)
		return
	}
	switch c.Name {
	case "causal_conv":
		l.preview(res, "cv")
		x := l.ref(op(0))
		if op(3) >= 0 {
			l.reject(ErrUnliftable, "a causal conv with a bias")
		}
		w, taps := l.convFilter(op(2), l.cols(op(0)))
		s, from := l.recurrentState(op(1), c.Results[1])
		l.emit(lang.Let{Name: l.bind(res, "cv"), Expr: lang.CausalConv{X: x, Weight: w, State: s, From: from, Taps: taps}})
	case "gated_delta":
		l.preview(res, "gd")
		e := l.deltaForm(c)
		e.Q, e.K, e.V = l.ref(op(0)), l.ref(op(1)), l.ref(op(2))
		e.Decay, e.Beta, e.Gate = l.ref(op(3)), l.ref(op(4)), l.ref(op(5))
		e.Norm = l.weight(op(6), formRow)
		e.State, e.From = l.recurrentState(op(7), c.Results[1])
		l.emit(lang.Let{Name: l.bind(res, "gd"), Expr: e})
	}
}

// convFilter declares a causal conv's filter, stored one channel a row
// and read one tap a row, and returns its name and its taps.
func (l *lifter) convFilter(wv poot.ValueID, cols int) (string, int) {
	v, g := l.v, l.v.g
	if p := v.prod[wv]; p >= 0 && v.eqns[p].Op == poot.Transpose && len(v.eqns[p].Params.Perm) == 2 && v.eqns[p].Params.Perm[0] == 1 {
		wv = v.eqns[p].Inputs[0]
	} else {
		l.reject(ErrUnliftable, "a causal conv whose filter is not stored one channel a row")
	}
	k, ok := l.constOf(wv)
	if !ok {
		l.reject(ErrUnliftable, "a causal conv whose filter is computed")
	}
	taps := g.Type(k).Shape[1]
	if g.Type(k).Shape[0] != cols || taps < 2 {
		l.reject(ErrUnliftable, "a filter %v for %d channels", g.Type(k), cols)
	}
	return l.weight(wv, formMatrix), taps
}

// deltaForm checks a gated_delta record's attributes and returns the
// statement's clauses (heads, groups, tiling, epsilon).
func (l *lifter) deltaForm(c poot.Composite) lang.GatedDelta {
	a := c.Attrs
	hk, _ := a.Int("key_heads")
	hv, _ := a.Int("value_heads")
	tiled, _ := a.Bool("tiled_heads")
	scale, _ := a.Float("scale")
	l2, _ := a.Float("l2_eps")
	ne, _ := a.Float("norm_eps")
	qc := l.v.g.Type(c.Operands[0]).Shape[1]
	l.cols(c.Operands[0])
	l.cols(c.Operands[2])
	if hk < 1 || hv < 1 || hv%hk != 0 || qc%hk != 0 {
		l.reject(ErrUnliftable, "a gated delta rule of %d key and %d value heads over %d columns", hk, hv, qc)
	}
	if dk := qc / hk; scale != 0 && scale != 1/math.Sqrt(float64(dk)) {
		l.reject(ErrUnliftable, "a query scale of %v (the statement scales by 1/sqrt(%d))", scale, dk)
	}
	if l2 == 0 {
		l2 = 1e-6
	}
	if l2 != ne || !(l2 > 0) || math.IsInf(l2, 0) {
		l.reject(ErrEpsilon, "L2 epsilon %v and norm epsilon %v (the statement has one)", l2, ne)
	}
	if c.Operands[6] < 0 {
		l.reject(ErrUnliftable, "a gated delta rule without its norm's weight")
	}
	return lang.GatedDelta{Heads: hv, Groups: hk, Tiled: tiled && hk != hv, Epsilon: l2}
}

// isView says a value is a strided column view of a projection (Qwen3-Next's
// query and gate heads, cut from one projection).
func (l *lifter) isView(id poot.ValueID) bool {
	s, ok := l.viewOut[l.root(id)]
	if !ok {
		return false
	}
	p := l.v.prod[l.root(s.x)]
	if p < 0 {
		return false
	}
	c := l.v.top(p)
	return c.Name == "linear" && len(c.Results) == 1 && c.Results[0] == l.root(s.x)
}

// recurrentStates declares sequence b's block of a recurrent state for
// each sequence of a batched program, and carries them to the statement's
// new state; it returns the names and each sequence's reset clause.
func (l *lifter) recurrentStates(id, next poot.ValueID) ([]string, []*lang.Index) {
	st := l.root(id)
	reset := false
	if s, ok := l.resets[st]; ok {
		st, reset = s, true
	}
	val := l.v.g.Value(st)
	if val.Kind != poot.State {
		l.reject(ErrUnliftable, "a recurrent state that is not a state of the step")
	}
	if _, seen := l.stateCur[st]; seen || l.split[st] != nil {
		l.reject(ErrUnliftable, "the state %q is read twice", val.Name)
	}
	t := val.Type
	r := l.low.batch
	if len(t.Shape) < 3 || t.DType != poot.F32 || t.Shape[0] != r {
		l.reject(ErrRecurrent, "state %q is %v, not one block a sequence of %d", val.Name, t, r)
	}
	rows := 1
	for _, d := range t.Shape[1 : len(t.Shape)-1] {
		rows *= d
	}
	names, froms := make([]string, r), make([]*lang.Index, r)
	for b := range names {
		names[b] = l.n.freshSeq(stateBase(val.Name, l.layer), b)
		l.declare(names[b], rows, t.Shape[len(t.Shape)-1], lang.Real, declared{kind: bindState, value: st, row: b * rows, recurrent: true})
		if reset {
			froms[b] = &lang.Index{Name: l.seqPos(b)}
		}
	}
	l.split[st], l.split[next] = names, names
	l.stateCur[st] = next
	return names, froms
}

// recurrentSeqs writes a recurrent composite of a batched program: the
// convolution and the delta rule once a sequence, over its own state.
func (l *lifter) recurrentSeqs(c poot.Composite) {
	op := func(i int) poot.ValueID { return c.Operands[i] }
	res := c.Results[0]
	switch c.Name {
	case "causal_conv":
		l.preview(res, "cv")
		if op(3) >= 0 {
			l.reject(ErrUnliftable, "a causal conv with a bias")
		}
		w, taps := l.convFilter(op(2), l.cols(op(0)))
		states, froms := l.recurrentStates(op(1), c.Results[1])
		for b, name := range l.bindSeqs(res, "cv") {
			l.emit(lang.Let{Name: name, Expr: lang.CausalConv{X: l.seq(op(0), b), Weight: w, State: states[b], From: froms[b], Taps: taps}})
		}
	case "gated_delta":
		l.preview(res, "gd")
		e := l.deltaForm(c)
		norm := l.weight(op(6), formRow)
		states, froms := l.recurrentStates(op(7), c.Results[1])
		for b, name := range l.bindSeqs(res, "gd") {
			f := e
			f.Q, f.K, f.V, f.Decay, f.Beta, f.Gate = l.seq(op(0), b), l.seq(op(1), b), l.seq(op(2), b), l.seq(op(3), b), l.seq(op(4), b), l.seq(op(5), b)
			f.State, f.From, f.Norm = states[b], froms[b], norm
			l.emit(lang.Let{Name: name, Expr: f})
		}
	}
}
