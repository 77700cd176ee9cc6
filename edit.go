package poot

import (
	"fmt"
	"slices"
)

// Rewrite is the brand of the builders that record replacement subgraphs in
// Graph.Replace. It differs from every model's brand, so a pass cannot mix a
// model's handles into an edit.
type Rewrite struct{}

func editError(format string, args ...any) error {
	return &Error{Kind: ErrEdit, Detail: fmt.Sprintf(format, args...)}
}

// Replace returns a copy of g in which equations [lo, hi) are replaced by the
// equations fn records. fn receives handles to the range's free inputs (the
// values the range reads but does not compute, in order of first use) and
// returns the replacements of the range's live results (the values it
// computes that later equations, outputs, states or witnesses read, or that
// a composite holding the range returns, in order of computation), each of
// the same type. Constants fn declares are added to
// the graph, or reuse an existing constant of the same name and type. The new
// equations are recorded in the scope of equation lo.
//
// Composites whose bodies lie inside the range are replaced with it; the
// composites fn records are kept. A composite holding the whole range holds
// the new equations, so a pass can rewrite the inside of a body. A range
// that cuts a body only partly is an error. The result is validated; on any
// error g is untouched and the error says why.
func (g *Graph) Replace(lo, hi int, fn func(b *Builder[Rewrite], in []Traced[Rewrite]) []Traced[Rewrite]) (*Graph, error) {
	if lo < 0 || hi > len(g.eqns) || lo >= hi {
		return nil, editError("range [%d, %d) of %d equations", lo, hi, len(g.eqns))
	}
	var container CompositeID // the innermost composite holding the range
	for i, c := range g.composites {
		switch {
		case c.Hi <= lo || c.Lo >= hi, c.Lo >= lo && c.Hi <= hi:
		case c.Lo <= lo && c.Hi >= hi:
			container = CompositeID(i + 1) // records nest in order
		default:
			return nil, editError("range [%d, %d) cuts the body [%d, %d) of composite %d (%s)", lo, hi, c.Lo, c.Hi, i+1, c.Name)
		}
	}
	produced := make(map[ValueID]bool)
	for _, e := range g.eqns[lo:hi] {
		produced[e.Out] = true
	}
	var free []ValueID
	seen := make(map[ValueID]bool)
	for _, e := range g.eqns[lo:hi] {
		for _, in := range e.Inputs {
			if !produced[in] && !seen[in] {
				seen[in] = true
				free = append(free, in)
			}
		}
	}
	used := make(map[ValueID]bool)
	for _, e := range g.eqns[hi:] {
		for _, in := range e.Inputs {
			used[in] = true
		}
	}
	for _, o := range g.outputs {
		used[o] = true
	}
	for _, s := range g.states {
		used[s.Out] = true
	}
	for _, w := range g.witnesses {
		used[w.Value] = true
	}
	for _, c := range g.composites {
		if c.Lo <= lo && c.Hi >= hi && (c.Lo < lo || c.Hi > hi) {
			for _, r := range c.Results {
				used[r] = true
			}
		}
	}
	var live []ValueID
	for _, e := range g.eqns[lo:hi] {
		if used[e.Out] {
			live = append(live, e.Out)
		}
	}

	b := NewBuilder[Rewrite](Limits{})
	handles := make([]Traced[Rewrite], len(free))
	for i, id := range free {
		handles[i] = Traced[Rewrite]{id: ValueID(len(b.values)), owner: b.serial}
		b.values = append(b.values, Value{Type: g.values[id].Type})
	}
	b.external = len(free)
	outs := fn(b, handles)
	if b.err != nil {
		return nil, fmt.Errorf("%w: the replacement failed: %w", ErrEdit, b.err)
	}
	if len(b.stack) != 0 {
		return nil, editError("the replacement left scope %q open", b.scopes[b.cur()])
	}
	if len(outs) != len(live) {
		return nil, editError("the replacement returned %d values for %d live results", len(outs), len(live))
	}

	values := append([]Value(nil), g.values...)
	scopes := append([]string(nil), g.scopes...)
	scopeIndex := make(map[string]ScopeID, len(scopes))
	for i, s := range scopes {
		scopeIndex[s] = ScopeID(i)
	}
	base := g.scopes[g.eqns[lo].Scope]
	mapScope := func(sub ScopeID) ScopeID {
		p := b.scopes[sub]
		switch {
		case p == "":
			p = base
		case base != "":
			p = base + "/" + p
		}
		id, ok := scopeIndex[p]
		if !ok {
			id = ScopeID(len(scopes))
			scopes = append(scopes, p)
			scopeIndex[p] = id
		}
		return id
	}
	subMap := make([]ValueID, len(b.values))
	copy(subMap, free)
	for i := len(free); i < len(b.values); i++ {
		v := b.values[i]
		if v.Kind != Device {
			if old, ok := g.Lookup(v.Name); ok {
				if g.values[old].Kind != v.Kind || !g.values[old].Type.Equal(v.Type) || v.Kind != Const {
					return nil, editError("the replacement declares %v %q %v, which the graph has as %v %v", v.Kind, v.Name, v.Type, g.values[old].Kind, g.values[old].Type)
				}
				subMap[i] = old
				continue
			}
		}
		subMap[i] = ValueID(len(values))
		values = append(values, v)
	}
	subst := make(map[ValueID]ValueID)
	for i, h := range outs {
		id, ok := b.resolve(h)
		if !ok {
			return nil, editError("replacement result %d is not a handle of the edit's builder", i)
		}
		if !b.values[id].Type.Equal(g.values[live[i]].Type) {
			return nil, editError("replacement result %d is %v, the value it replaces is %v", i, b.values[id].Type, g.values[live[i]].Type)
		}
		subst[live[i]] = subMap[id]
	}
	sub := func(id ValueID) ValueID {
		if r, ok := subst[id]; ok {
			return r
		}
		return id
	}

	// The records of composites inside the range are dropped when compact
	// finds them without equations; fn's records follow the old ones.
	comps := make([]Composite, 0, len(g.composites)+len(b.composites))
	for _, c := range g.composites {
		c = c.clone()
		for j, o := range c.Operands {
			if o >= 0 {
				c.Operands[j] = sub(o)
			}
		}
		for j, r := range c.Results {
			c.Results[j] = sub(r)
		}
		comps = append(comps, c)
	}
	offset := CompositeID(len(g.composites))
	mapComp := func(c CompositeID) CompositeID {
		if c == 0 {
			return container
		}
		return c + offset
	}
	for _, c := range b.composites {
		c = c.clone()
		for j, o := range c.Operands {
			if o >= 0 {
				c.Operands[j] = subMap[o]
			}
		}
		for j, r := range c.Results {
			c.Results[j] = subMap[r]
		}
		c.Parent = mapComp(c.Parent)
		c.Scope = mapScope(c.Scope)
		comps = append(comps, c)
	}

	eqns := make([]Eqn, 0, len(g.eqns)-(hi-lo)+len(b.eqns))
	for _, e := range g.eqns[:lo] {
		eqns = append(eqns, e.clone())
	}
	for _, e := range b.eqns {
		e = e.clone()
		for j, in := range e.Inputs {
			e.Inputs[j] = subMap[in]
		}
		e.Out = subMap[e.Out]
		e.Scope = mapScope(e.Scope)
		e.Composite = mapComp(e.Composite)
		eqns = append(eqns, e)
	}
	for _, e := range g.eqns[hi:] {
		e = e.clone()
		for j, in := range e.Inputs {
			e.Inputs[j] = sub(in)
		}
		eqns = append(eqns, e)
	}
	ng := &Graph{values: values, eqns: eqns, scopes: scopes, composites: comps}
	for _, o := range g.outputs {
		ng.outputs = append(ng.outputs, sub(o))
	}
	for _, s := range g.states {
		ng.states = append(ng.states, StatePair{In: s.In, Out: sub(s.Out)})
	}
	for _, w := range g.witnesses {
		ng.witnesses = append(ng.witnesses, Witness{Name: w.Name, Value: sub(w.Value)})
	}
	return ng.compact(false)
}

// RemoveDead returns a copy of g without the equations whose results reach
// no output, state or witness, and without the constants nothing reads.
// Slots and states are kept: the driver fills them whether or not they are
// read.
func (g *Graph) RemoveDead() (*Graph, error) {
	live := make([]bool, len(g.values))
	for _, o := range g.outputs {
		live[o] = true
	}
	for _, s := range g.states {
		live[s.Out] = true
	}
	for _, w := range g.witnesses {
		live[w.Value] = true
	}
	// A composite is kept whole or dropped whole: a body that lost some of
	// its equations would no longer be what its record says. Keeping a body
	// makes what it reads live, so sweep until nothing changes.
	keep := make([]bool, len(g.eqns))
	for changed := true; changed; {
		changed = false
		for i := len(g.eqns) - 1; i >= 0; i-- {
			e := g.eqns[i]
			if keep[i] || !live[e.Out] {
				continue
			}
			keep[i], changed = true, true
			for _, in := range e.Inputs {
				live[in] = true
			}
			if top := g.Top(e.Composite); top > 0 {
				c := g.composites[top-1]
				for j := c.Lo; j < c.Hi; j++ {
					live[g.eqns[j].Out] = true
				}
			}
		}
	}
	ng := &Graph{values: g.values, scopes: g.scopes, composites: g.composites, outputs: g.outputs, states: g.states, witnesses: g.witnesses}
	for i, e := range g.eqns {
		if keep[i] {
			ng.eqns = append(ng.eqns, e.clone())
		}
	}
	return ng.compact(true)
}

// RenameConstants returns a copy of g in which the constants and state
// inputs named by the keys of names are renamed to the values. Every key must
// name a constant or state of g, and the resulting names must be unique.
func (g *Graph) RenameConstants(names map[string]string) (*Graph, error) {
	values := append([]Value(nil), g.values...)
	for from, to := range names {
		id, ok := g.Lookup(from)
		if !ok || (values[id].Kind != Const && values[id].Kind != State) {
			return nil, editError("no constant or state named %q", from)
		}
		if to == "" {
			return nil, editError("empty new name for %q", from)
		}
		values[id].Name = to
	}
	ng := &Graph{values: values, eqns: g.Eqns(), scopes: g.scopes, composites: g.composites, outputs: g.outputs, states: g.states, witnesses: g.witnesses}
	if err := ng.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEdit, err)
	}
	return ng, nil
}

// compact renumbers values densely, in the old id order, dropping device
// values no equation computes and (with dropConsts) constants nothing reads,
// then validates. Its receiver is a scratch graph that compact may modify.
func (g *Graph) compact(dropConsts bool) (*Graph, error) {
	keep := make([]bool, len(g.values))
	for _, e := range g.eqns {
		keep[e.Out] = true
		for _, in := range e.Inputs {
			keep[in] = true
		}
	}
	for _, o := range g.outputs {
		keep[o] = true
	}
	for _, s := range g.states {
		keep[s.In], keep[s.Out] = true, true
	}
	for _, w := range g.witnesses {
		keep[w.Value] = true
	}
	for i, v := range g.values {
		if v.Kind == Slot || v.Kind == State || (v.Kind == Const && !dropConsts) {
			keep[i] = true
		}
	}
	remap := make([]ValueID, len(g.values))
	var values []Value
	for i, v := range g.values {
		remap[i] = -1
		if keep[i] {
			remap[i] = ValueID(len(values))
			values = append(values, v)
		}
	}
	ng := &Graph{values: values, scopes: g.scopes}
	ng.eqns = make([]Eqn, len(g.eqns))
	for i, e := range g.eqns {
		e.Inputs = append([]ValueID(nil), e.Inputs...)
		for j, in := range e.Inputs {
			e.Inputs[j] = remap[in]
		}
		e.Out = remap[e.Out]
		ng.eqns[i] = e
	}
	for _, o := range g.outputs {
		ng.outputs = append(ng.outputs, remap[o])
	}
	for _, s := range g.states {
		ng.states = append(ng.states, StatePair{In: remap[s.In], Out: remap[s.Out]})
	}
	for _, w := range g.witnesses {
		ng.witnesses = append(ng.witnesses, Witness{Name: w.Name, Value: remap[w.Value]})
	}
	for _, c := range g.composites {
		c = c.clone()
		for j, o := range c.Operands {
			if o >= 0 {
				c.Operands[j] = remap[o]
			}
		}
		for j, r := range c.Results {
			c.Results[j] = remap[r]
		}
		ng.composites = append(ng.composites, c)
	}
	ng.tidyComposites()
	if err := ng.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEdit, err)
	}
	return ng, nil
}

// RetypeConstants returns a copy of g in which each constant named in dtypes
// is read as the given stored dtype instead of the dtype it was declared
// with. This is how binding makes weights "move as they are stored": a
// contraction (the weight operand of MatMul or IndexedMatMul) reads the
// stored dtype directly; a Gather reads stored rows and a Cast to the
// declared dtype is inserted after it, so only the gathered rows are
// converted; any other reader gets one Cast of the whole constant, inserted
// before its first reader. A stored dtype that cannot be cast to the declared
// one is an error naming the constant.
func (g *Graph) RetypeConstants(dtypes map[string]DType) (*Graph, error) {
	values := append([]Value(nil), g.values...)
	declared := make(map[ValueID]DType)
	for name, d := range dtypes {
		id, ok := g.Lookup(name)
		if !ok || values[id].Kind != Const {
			return nil, editError("no constant named %q", name)
		}
		decl := values[id].Type
		if d == decl.DType {
			continue
		}
		stored := TensorType{Shape: decl.Shape, DType: d}
		if _, err := Cast.Infer(Params{DType: decl.DType}, stored); err != nil {
			return nil, editError("constant %q is declared %v but stored as %v: %v", name, decl, d, err)
		}
		if err := checkType(stored); err != nil {
			return nil, editError("constant %q stored as %v: %v", name, stored, err)
		}
		declared[id] = decl.DType
		values[id].Type = stored
	}
	if len(declared) == 0 {
		return g, nil
	}
	newValue := func(t TensorType) ValueID {
		values = append(values, Value{Type: t})
		return ValueID(len(values) - 1)
	}
	whole := make(map[ValueID]ValueID) // constant -> its cast
	subst := make(map[ValueID]ValueID) // gather result -> its cast
	var eqns []Eqn
	// A whole constant's cast goes outside every composite, before the
	// outermost one whose body first reads it, so that any later reader
	// may read it too; topAt is where each top-level body begins in eqns.
	topAt := make(map[CompositeID]int)
	for _, e := range g.eqns {
		if top := g.Top(e.Composite); top > 0 {
			if _, ok := topAt[top]; !ok {
				topAt[top] = len(eqns)
			}
		}
		e = e.clone()
		for j, in := range e.Inputs {
			if r, ok := subst[in]; ok {
				e.Inputs[j] = r
				continue
			}
			decl, retyped := declared[in]
			if !retyped {
				continue
			}
			asStored := (j == 1 && (e.Op == MatMul || e.Op == IndexedMatMul) && values[in].Type.DType.Float()) ||
				(j == 0 && e.Op == Gather)
			if asStored {
				continue
			}
			c, ok := whole[in]
			if !ok {
				c = newValue(TensorType{Shape: values[in].Type.Shape, DType: decl})
				whole[in] = c
				cast := Eqn{Op: Cast, Params: Params{DType: decl}, Inputs: []ValueID{in}, Out: c, Scope: e.Scope}
				at := len(eqns)
				if top := g.Top(e.Composite); top > 0 {
					at, cast.Scope = topAt[top], g.composites[top-1].Scope
					for t, p := range topAt {
						if p >= at {
							topAt[t] = p + 1
						}
					}
				}
				eqns = slices.Insert(eqns, at, cast)
			}
			e.Inputs[j] = c
		}
		if e.Op == Gather {
			if decl, ok := declared[e.Inputs[0]]; ok {
				stored := values[e.Inputs[0]].Type.DType
				rows := values[e.Out].Type
				values[e.Out].Type.DType = stored
				c := newValue(rows)
				eqns = append(eqns, e, Eqn{Op: Cast, Params: Params{DType: decl}, Inputs: []ValueID{e.Out}, Out: c, Scope: e.Scope, Composite: e.Composite})
				subst[e.Out] = c
				continue
			}
		}
		eqns = append(eqns, e)
	}
	sub := func(id ValueID) ValueID {
		if r, ok := subst[id]; ok {
			return r
		}
		return id
	}
	ng := &Graph{values: values, eqns: eqns, scopes: g.scopes, composites: retypedComposites(g.composites, eqns, whole, sub)}
	for _, o := range g.outputs {
		ng.outputs = append(ng.outputs, sub(o))
	}
	for _, s := range g.states {
		ng.states = append(ng.states, StatePair{In: s.In, Out: sub(s.Out)})
	}
	for _, w := range g.witnesses {
		ng.witnesses = append(ng.witnesses, Witness{Name: w.Name, Value: sub(w.Value)})
	}
	return ng.compact(false)
}

// retypedComposites carries composite records across RetypeConstants: a
// result that gained a cast is the cast, and a constant operand whose
// readers in the body now read its cast is the cast (both, when the body
// reads the stored constant too, as a contraction does).
func retypedComposites(comps []Composite, eqns []Eqn, whole map[ValueID]ValueID, sub func(ValueID) ValueID) []Composite {
	if len(comps) == 0 {
		return nil
	}
	scratch := &Graph{eqns: eqns, composites: make([]Composite, len(comps))}
	for i, c := range comps {
		c = c.clone()
		for j, r := range c.Results {
			c.Results[j] = sub(r)
		}
		for j, o := range c.Operands {
			if o >= 0 {
				c.Operands[j] = sub(o)
			}
		}
		scratch.composites[i] = c
	}
	scratch.spans()
	for i := range scratch.composites {
		c := &scratch.composites[i]
		var extra []ValueID
		for j, o := range c.Operands {
			w, ok := whole[o]
			if !ok {
				continue
			}
			readsConst, readsCast := false, false
			for _, e := range eqns[c.Lo:c.Hi] {
				readsConst = readsConst || slices.Contains(e.Inputs, o)
				readsCast = readsCast || slices.Contains(e.Inputs, w)
			}
			switch {
			case readsCast && !readsConst:
				c.Operands[j] = w
			case readsCast:
				extra = append(extra, w)
			}
		}
		c.Operands = append(c.Operands, extra...)
	}
	return scratch.composites
}

// WithWitnesses returns a copy of g with the given witnesses added (names
// must be new and unique; values must exist). Agreement tests use it to
// expose every intermediate of a finished graph.
func (g *Graph) WithWitnesses(ws []Witness) (*Graph, error) {
	ng := &Graph{values: g.values, eqns: g.eqns, scopes: g.scopes, composites: g.composites, outputs: g.outputs, states: g.states}
	ng.witnesses = append(append([]Witness(nil), g.witnesses...), ws...)
	if err := ng.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEdit, err)
	}
	return ng, nil
}
