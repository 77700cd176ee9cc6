package poot

// Validate checks that g is well formed: every value has a valid type; inputs
// (constants, slots, states) have unique non-empty names and are produced by
// no equation; every device value is produced by exactly one equation; every
// equation reads only values defined before it (topological order) and its
// result has the type its primitive's rule infers; outputs, witnesses and
// state pairs name existing values; every state input is paired exactly once
// with a value of its type; every composite record describes its body (see
// Composite). Graphs made by a Builder or an edit always pass;
// Validate exists so that tests and passes can say so.
func (g *Graph) Validate() error { return g.validate(true) }

// validate checks g; with reinfer it also re-applies every type rule, which
// a builder's own graphs need not (each equation was inferred when it was
// recorded).
func (g *Graph) validate(reinfer bool) error {
	n := len(g.values)
	names := make(map[string]bool)
	for i, v := range g.values {
		if err := checkType(v.Type); err != nil {
			return graphError("value %%%d: %v", i, err)
		}
		switch v.Kind {
		case Device:
		case Const, Slot, State:
			if v.Name == "" {
				return graphError("%v value %%%d has no name", v.Kind, i)
			}
			if names[v.Name] {
				return graphError("input name %q is used twice", v.Name)
			}
			names[v.Name] = true
			if v.Type.DType.Packed() && (v.Kind == Slot || v.Kind == State && v.Type.DType != Q8_0) {
				return graphError("%v %q is packed %v", v.Kind, v.Name, v.Type.DType)
			}
		default:
			return graphError("value %%%d has unknown kind %v", i, v.Kind)
		}
	}
	defined := make([]bool, n)
	for i, v := range g.values {
		defined[i] = v.Kind != Device
	}
	if len(g.scopes) == 0 || g.scopes[0] != "" {
		return graphError("scope table lacks the root scope")
	}
	types := make([]TensorType, 0, 4)
	prod := make([]int, n)
	for i := range prod {
		prod[i] = -1
	}
	for i, e := range g.eqns {
		if e.Scope < 0 || int(e.Scope) >= len(g.scopes) {
			return graphError("equation %d has unknown scope %d", i, e.Scope)
		}
		types = types[:0]
		for _, in := range e.Inputs {
			if in < 0 || int(in) >= n || !defined[in] {
				return graphError("equation %d (%v) reads %%%d before it is defined", i, e.Op, in)
			}
			types = append(types, g.values[in].Type)
		}
		if e.Out < 0 || int(e.Out) >= n {
			return graphError("equation %d (%v) writes unknown value %%%d", i, e.Op, e.Out)
		}
		if g.values[e.Out].Kind != Device {
			return graphError("equation %d (%v) writes %v %q", i, e.Op, g.values[e.Out].Kind, g.values[e.Out].Name)
		}
		if defined[e.Out] {
			return graphError("value %%%d is assigned twice", e.Out)
		}
		if reinfer {
			t, err := e.Op.Infer(e.Params, types...)
			if err != nil {
				return graphError("equation %d (%v): %v", i, e.Op, err)
			}
			if !t.Equal(g.values[e.Out].Type) {
				return graphError("equation %d (%v) infers %v but %%%d is %v", i, e.Op, t, e.Out, g.values[e.Out].Type)
			}
		}
		defined[e.Out] = true
		prod[e.Out] = i
	}
	for i, d := range defined {
		if !d {
			return graphError("device value %%%d is never computed", i)
		}
	}
	inRange := func(id ValueID) bool { return id >= 0 && int(id) < n }
	for i, o := range g.outputs {
		if !inRange(o) {
			return graphError("output %d names unknown value %%%d", i, o)
		}
	}
	wnames := make(map[string]bool)
	for _, w := range g.witnesses {
		if !inRange(w.Value) || w.Name == "" || wnames[w.Name] {
			return graphError("witness %q is unnamed, duplicated or names an unknown value", w.Name)
		}
		wnames[w.Name] = true
	}
	paired := make(map[ValueID]bool)
	for _, s := range g.states {
		if !inRange(s.In) || !inRange(s.Out) {
			return graphError("state pair %%%d <- %%%d names an unknown value", s.In, s.Out)
		}
		in := g.values[s.In]
		if in.Kind != State {
			return graphError("state pair input %%%d is a %v, not a state", s.In, in.Kind)
		}
		if paired[s.In] {
			return graphError("state %q is carried twice", in.Name)
		}
		paired[s.In] = true
		if !g.values[s.Out].Type.Equal(in.Type) {
			return graphError("state %q is %v but its output is %v", in.Name, in.Type, g.values[s.Out].Type)
		}
	}
	for i, v := range g.values {
		if v.Kind == State && !paired[ValueID(i)] {
			return graphError("state %q has no output", v.Name)
		}
	}
	return g.validateComposites(prod)
}
