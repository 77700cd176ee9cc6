package poot

import "fmt"

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
// computes that later equations, outputs, states or witnesses read, in order
// of computation), each of the same type. Constants fn declares are added to
// the graph, or reuse an existing constant of the same name and type. The new
// equations are recorded in the scope of equation lo. The result is
// validated; on any error g is untouched and the error says why.
func (g *Graph) Replace(lo, hi int, fn func(b *Builder[Rewrite], in []Traced[Rewrite]) []Traced[Rewrite]) (*Graph, error) {
	if lo < 0 || hi > len(g.eqns) || lo >= hi {
		return nil, editError("range [%d, %d) of %d equations", lo, hi, len(g.eqns))
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
		eqns = append(eqns, e)
	}
	for _, e := range g.eqns[hi:] {
		e = e.clone()
		for j, in := range e.Inputs {
			e.Inputs[j] = sub(in)
		}
		eqns = append(eqns, e)
	}
	ng := &Graph{values: values, eqns: eqns, scopes: scopes}
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
	keep := make([]bool, len(g.eqns))
	for i := len(g.eqns) - 1; i >= 0; i-- {
		e := g.eqns[i]
		if !live[e.Out] {
			continue
		}
		keep[i] = true
		for _, in := range e.Inputs {
			live[in] = true
		}
	}
	ng := &Graph{values: g.values, scopes: g.scopes, outputs: g.outputs, states: g.states, witnesses: g.witnesses}
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
	ng := &Graph{values: values, eqns: g.Eqns(), scopes: g.scopes, outputs: g.outputs, states: g.states, witnesses: g.witnesses}
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
	for _, e := range g.eqns {
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
				eqns = append(eqns, Eqn{Op: Cast, Params: Params{DType: decl}, Inputs: []ValueID{in}, Out: c, Scope: e.Scope})
			}
			e.Inputs[j] = c
		}
		if e.Op == Gather {
			if decl, ok := declared[e.Inputs[0]]; ok {
				stored := values[e.Inputs[0]].Type.DType
				rows := values[e.Out].Type
				values[e.Out].Type.DType = stored
				c := newValue(rows)
				eqns = append(eqns, e, Eqn{Op: Cast, Params: Params{DType: decl}, Inputs: []ValueID{e.Out}, Out: c, Scope: e.Scope})
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
	ng := &Graph{values: values, eqns: eqns, scopes: g.scopes}
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

// WithWitnesses returns a copy of g with the given witnesses added (names
// must be new and unique; values must exist). Agreement tests use it to
// expose every intermediate of a finished graph.
func (g *Graph) WithWitnesses(ws []Witness) (*Graph, error) {
	ng := &Graph{values: g.values, eqns: g.eqns, scopes: g.scopes, outputs: g.outputs, states: g.states}
	ng.witnesses = append(append([]Witness(nil), g.witnesses...), ws...)
	if err := ng.Validate(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrEdit, err)
	}
	return ng, nil
}
