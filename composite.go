package poot

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// A composite operation (an RMSNorm, a rotary embedding, an attention core,
// a mixture of experts) is recorded as primitive equations, its body, plus
// a record that says what the body is: the composite's name, its typed
// attributes, its operands and its results. Interpreters that know nothing
// of a composite run its body; a backend with a fused kernel for it may run
// the kernel instead, chosen by name and attributes; printers fold it into
// one line. The body's equations stay in the graph's one equation list,
// contiguous, each marking the innermost composite that holds it
// (Eqn.Composite), so nested composites nest.

// CompositeID numbers the composite records of a graph from 1; 0 means
// "no composite".
type CompositeID int32

// Attr is one attribute of a composite: a name and a value of one of the
// types int, float64, bool, string or []int.
type Attr struct {
	Name  string
	Value any
}

// Attrs are a composite's attributes, in the order they were given.
type Attrs []Attr

// Get returns the value of the attribute called name.
func (a Attrs) Get(name string) (any, bool) {
	for _, x := range a {
		if x.Name == name {
			return x.Value, true
		}
	}
	return nil, false
}

// attrOf returns the attribute called name as a T; ok is false when there
// is none or it is not a T.
func attrOf[T any](a Attrs, name string) (v T, ok bool) {
	x, _ := a.Get(name)
	v, ok = x.(T)
	return v, ok
}

// Int returns the int attribute called name; ok is false when there is
// none or it is not an int.
func (a Attrs) Int(name string) (int, bool) { return attrOf[int](a, name) }

// Float returns the float64 attribute called name.
func (a Attrs) Float(name string) (float64, bool) { return attrOf[float64](a, name) }

// Bool returns the bool attribute called name.
func (a Attrs) Bool(name string) (bool, bool) { return attrOf[bool](a, name) }

// Str returns the string attribute called name.
func (a Attrs) Str(name string) (string, bool) { return attrOf[string](a, name) }

// Ints returns a copy of the []int attribute called name.
func (a Attrs) Ints(name string) ([]int, bool) {
	v, ok := attrOf[[]int](a, name)
	return slices.Clone(v), ok
}

// String formats the attributes as "name=value" pairs separated by spaces:
// "epsilon=1e-06 heads=8".
func (a Attrs) String() string {
	parts := make([]string, len(a))
	for i, x := range a {
		parts[i] = x.Name + "=" + formatAttr(x.Value)
	}
	return strings.Join(parts, " ")
}

func formatAttr(v any) string {
	switch v := v.(type) {
	case int:
		return strconv.Itoa(v)
	case float64:
		return strconv.FormatFloat(v, 'g', -1, 64)
	case bool:
		return strconv.FormatBool(v)
	case string:
		return strconv.Quote(v)
	case []int:
		return Shape(v).String()
	}
	return fmt.Sprintf("%v", v)
}

// check says what is wrong with the attributes, if anything: an empty or
// repeated name, or a value of a type attributes cannot hold.
func (a Attrs) check() error {
	for i, x := range a {
		if x.Name == "" {
			return fmt.Errorf("attribute %d has no name", i)
		}
		for _, y := range a[:i] {
			if y.Name == x.Name {
				return fmt.Errorf("attribute %q is given twice", x.Name)
			}
		}
		switch x.Value.(type) {
		case int, float64, bool, string, []int:
		default:
			return fmt.Errorf("attribute %q is a %T; attributes are int, float64, bool, string or []int", x.Name, x.Value)
		}
	}
	return nil
}

func (a Attrs) clone() Attrs {
	out := slices.Clone(a)
	for i, x := range out {
		if s, ok := x.Value.([]int); ok {
			out[i].Value = slices.Clone(s)
		}
	}
	return out
}

// Composite is the record of one composite operation of a graph.
type Composite struct {
	// Name says what the composite is ("rmsnorm", "attention"); its body is
	// recorded in a scope of that name inside Scope.
	Name string
	// Attrs are its static attributes (epsilon, heads, scale, …).
	Attrs Attrs
	// Operands are the values the body reads that it does not compute, in
	// the composite's own order; -1 marks an optional operand that is
	// absent. The body reads nothing else.
	Operands []ValueID
	// Results are the values the body computes that the composite returns.
	Results []ValueID
	// Parent is the composite whose body holds this one, or 0.
	Parent CompositeID
	// Scope is the scope the composite was recorded in.
	Scope ScopeID
	// Lo and Hi delimit the body: equations [Lo, Hi).
	Lo, Hi int
}

func (c Composite) clone() Composite {
	c.Attrs = c.Attrs.clone()
	c.Operands = slices.Clone(c.Operands)
	c.Results = slices.Clone(c.Results)
	return c
}

// NumComposites is the number of composite records; their ids run from 1
// to NumComposites().
func (g *Graph) NumComposites() int { return len(g.composites) }

// Composite returns a copy of the record of composite id, or the zero
// Composite (with an empty Name) for an id out of range.
func (g *Graph) Composite(id CompositeID) Composite {
	if id < 1 || int(id) > len(g.composites) {
		return Composite{}
	}
	return g.composites[id-1].clone()
}

// Composites returns a copy of every composite record, in the order they
// were recorded (an enclosing composite before the ones it holds); the
// record of id i is at index i-1.
func (g *Graph) Composites() []Composite {
	out := make([]Composite, len(g.composites))
	for i, c := range g.composites {
		out[i] = c.clone()
	}
	return out
}

// Composite records a composite operation named name with attributes attrs
// over operands: body records the primitive equations that define it and
// returns its results, which Composite returns. The body is recorded in a
// scope called name. It may read only the operands and what it computes
// itself (declare constants outside and pass them in); every result must be
// computed by the body. An operand may be the zero handle, for an optional
// operand that is absent. Composites nest: a composite called inside a body
// is held by the enclosing one.
//
// A misuse is recorded as the builder's error (ErrComposite), like any
// other; body still runs once, so the returned handles are always as many
// as it returns.
func (b *Builder[B]) Composite(name string, attrs Attrs, operands []Traced[B], body func() []Traced[B]) []Traced[B] {
	if b.err != nil {
		return body()
	}
	if err := attrs.check(); err != nil {
		b.fail(ErrComposite, name, nil, "%v", err)
		return body()
	}
	if name == "" || containsSlash(name) {
		b.fail(ErrComposite, name, nil, "invalid composite name %q", name)
		return body()
	}
	ops := make([]ValueID, len(operands))
	for i, h := range operands {
		if h == (Traced[B]{}) {
			ops[i] = -1
			continue
		}
		id, ok := b.resolve(h)
		if !ok {
			b.fail(ErrForeignHandle, name, nil, "operand %d was made by another builder", i)
			return body()
		}
		ops[i] = id
	}
	id := CompositeID(len(b.composites) + 1)
	b.composites = append(b.composites, Composite{Name: name, Attrs: attrs.clone(), Operands: ops, Parent: b.curComposite(), Scope: b.cur()})
	lo, firstValue := len(b.eqns), ValueID(len(b.values))
	b.compStack = append(b.compStack, id)
	var out []Traced[B]
	b.Scope(name, func() { out = body() })
	b.compStack = b.compStack[:len(b.compStack)-1]
	if b.err != nil {
		return out
	}
	c := &b.composites[id-1]
	c.Lo, c.Hi = lo, len(b.eqns)
	if c.Lo == c.Hi {
		b.fail(ErrComposite, name, nil, "the body records no equation")
		return out
	}
	inside := func(v ValueID) bool { return v >= firstValue && b.values[v].Kind == Device }
	for i, h := range out {
		v, ok := b.resolve(h)
		if !ok || !inside(v) {
			b.fail(ErrComposite, name, nil, "result %d is not computed by the body", i)
			return out
		}
		c.Results = append(c.Results, v)
	}
	for _, e := range b.eqns[lo:] {
		for _, in := range e.Inputs {
			if !inside(in) && !slices.Contains(ops, in) {
				b.fail(ErrComposite, name, nil, "the body reads %s, which is not an operand", b.describe(in))
				return out
			}
		}
	}
	return out
}

// describe names a value for an error message.
func (b *Builder[B]) describe(id ValueID) string {
	v := b.values[id]
	if v.Kind == Device {
		return fmt.Sprintf("%%%d (%v)", id, v.Type)
	}
	return fmt.Sprintf("%v %q", v.Kind, v.Name)
}

func (b *Builder[B]) curComposite() CompositeID {
	if len(b.compStack) == 0 {
		return 0
	}
	return b.compStack[len(b.compStack)-1]
}

// Top returns the outermost composite holding composite id (id itself when
// it is held by none), or 0 for id 0.
func (g *Graph) Top(id CompositeID) CompositeID {
	for id > 0 && int(id) <= len(g.composites) && g.composites[id-1].Parent != 0 {
		id = g.composites[id-1].Parent
	}
	return id
}

// Holds reports whether composite outer is inner or holds it, at any depth.
func (g *Graph) Holds(outer, inner CompositeID) bool {
	for inner > 0 && int(inner) <= len(g.composites) {
		if inner == outer {
			return true
		}
		inner = g.composites[inner-1].Parent
	}
	return false
}

// tidyComposites brings the records of g in line with the equations' marks
// after an edit: records holding no equation are dropped, ids renumbered
// densely in their old order, and every body's range recomputed. It leaves
// checking to validate.
func (g *Graph) tidyComposites() {
	if len(g.composites) == 0 {
		return
	}
	used := make([]bool, len(g.composites)+1)
	for _, e := range g.eqns {
		for c := e.Composite; c > 0 && int(c) <= len(g.composites) && !used[c]; c = g.composites[c-1].Parent {
			used[c] = true
		}
	}
	remap := make([]CompositeID, len(g.composites)+1)
	var kept []Composite
	for i, c := range g.composites {
		if used[i+1] {
			kept = append(kept, c)
			remap[i+1] = CompositeID(len(kept))
		}
	}
	for i := range kept {
		if p := kept[i].Parent; p > 0 && int(p) < len(remap) {
			kept[i].Parent = remap[p]
		}
		kept[i].Lo, kept[i].Hi = -1, -1
	}
	for i := range g.eqns {
		if c := g.eqns[i].Composite; c > 0 && int(c) < len(remap) {
			g.eqns[i].Composite = remap[c]
		}
	}
	g.composites = kept
	g.spans()
}

// spans recomputes every body's range [Lo, Hi) from the equations' marks.
func (g *Graph) spans() {
	for i := range g.composites {
		g.composites[i].Lo, g.composites[i].Hi = -1, -1
	}
	for i, e := range g.eqns {
		for c := e.Composite; c > 0 && int(c) <= len(g.composites); c = g.composites[c-1].Parent {
			r := &g.composites[c-1]
			if r.Lo < 0 {
				r.Lo = i
			}
			r.Hi = i + 1
		}
	}
}

// validateComposites checks the records: names and attributes valid,
// parents recorded first, each body contiguous and non-empty, operands
// defined before the body, results computed inside it, and no body reading
// anything but its operands and its own values. prod gives each value's
// producing equation (-1 for inputs).
func (g *Graph) validateComposites(prod []int) error {
	n := len(g.composites)
	count := make([]int, n+1)
	for i, e := range g.eqns {
		if e.Composite < 0 || int(e.Composite) > n {
			return graphError("equation %d belongs to unknown composite %d", i, e.Composite)
		}
		for c := e.Composite; c > 0; c = g.composites[c-1].Parent {
			count[c]++
		}
	}
	for i, c := range g.composites {
		id := CompositeID(i + 1)
		if c.Name == "" || containsSlash(c.Name) {
			return graphError("composite %d has invalid name %q", id, c.Name)
		}
		if err := c.Attrs.check(); err != nil {
			return graphError("composite %d (%s): %v", id, c.Name, err)
		}
		if c.Parent < 0 || c.Parent >= id {
			return graphError("composite %d (%s) has parent %d, which is not recorded before it", id, c.Name, c.Parent)
		}
		if c.Scope < 0 || int(c.Scope) >= len(g.scopes) {
			return graphError("composite %d (%s) has unknown scope %d", id, c.Name, c.Scope)
		}
		if count[id] == 0 || c.Lo < 0 || c.Hi-c.Lo != count[id] || c.Hi > len(g.eqns) {
			return graphError("composite %d (%s): its body is not %d contiguous equations", id, c.Name, count[id])
		}
		for j := c.Lo; j < c.Hi; j++ {
			if !g.Holds(id, g.eqns[j].Composite) {
				return graphError("composite %d (%s): equation %d inside its range is not in its body", id, c.Name, j)
			}
		}
		for k, o := range c.Operands {
			if o == -1 {
				continue
			}
			if o < 0 || int(o) >= len(g.values) || prod[o] >= c.Lo {
				return graphError("composite %d (%s): operand %d (%%%d) is not defined before the body", id, c.Name, k, o)
			}
		}
		if len(c.Results) == 0 {
			return graphError("composite %d (%s) has no results", id, c.Name)
		}
		for k, r := range c.Results {
			if r < 0 || int(r) >= len(g.values) || prod[r] < c.Lo || prod[r] >= c.Hi {
				return graphError("composite %d (%s): result %d (%%%d) is not computed by the body", id, c.Name, k, r)
			}
		}
		for j := c.Lo; j < c.Hi; j++ {
			for _, in := range g.eqns[j].Inputs {
				if p := prod[in]; (p < c.Lo || p >= c.Hi) && !slices.Contains(c.Operands, in) {
					return graphError("composite %d (%s): equation %d reads %%%d, which is not an operand", id, c.Name, j, in)
				}
			}
		}
	}
	return nil
}
