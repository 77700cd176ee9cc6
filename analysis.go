package poot

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"math"
)

// DispatchCount is the number of equations that would launch work: all but
// pure metadata (reshapes, which only reinterpret contiguous data).
func DispatchCount(g *Graph) int {
	n := 0
	for _, e := range g.eqns {
		if !e.Op.Metadata() {
			n++
		}
	}
	return n
}

// Digest is a structural hash of the equations recorded in scope (and its
// sub-scopes). It covers every primitive, parameter, type and the way values
// flow, the scope paths relative to scope, and the composites the equations
// belong to (names, attributes, operand and result counts), but not the names of
// constants or state inputs: two layers that differ only in which weights
// they read have equal digests. Slots are identified by name, since every
// layer reads the same ones.
func Digest(g *Graph, scope string) [32]byte {
	d, _ := canonical(g, scope)
	return d
}

// Renaming maps the names of the constants and states read by scope sa of
// graph a onto those read at the same places by scope sb of graph b (a and b
// may be the same graph). It fails with ErrDigestMismatch unless the two
// scopes' digests agree. Renaming a's constants with the result makes the
// scope read exactly what sb reads.
func Renaming(a *Graph, sa string, b *Graph, sb string) (map[string]string, error) {
	da, na := canonical(a, sa)
	db, nb := canonical(b, sb)
	if da != db || len(na) != len(nb) {
		return nil, &Error{Kind: ErrDigestMismatch, Detail: fmt.Sprintf("scope %q and scope %q", sa, sb)}
	}
	m := make(map[string]string, len(na))
	for i := range na {
		from, to := a.values[na[i]].Name, b.values[nb[i]].Name
		if prev, ok := m[from]; ok && prev != to {
			return nil, &Error{Kind: ErrDigestMismatch, Detail: fmt.Sprintf("%q maps to both %q and %q", from, prev, to)}
		}
		m[from] = to
	}
	return m, nil
}

// canonical encodes scope's equations with values numbered by first use, and
// returns the hash and the named inputs (constants and states) in that order.
func canonical(g *Graph, scope string) ([32]byte, []ValueID) {
	h := sha256.New()
	var buf []byte
	u := func(v uint64) { buf = binary.AppendUvarint(buf, v) }
	str := func(s string) { u(uint64(len(s))); buf = append(buf, s...) }
	ints := func(s []int) {
		u(uint64(len(s)))
		for _, x := range s {
			buf = binary.AppendVarint(buf, int64(x))
		}
	}
	typ := func(t TensorType) { u(uint64(t.DType)); ints(t.Shape) }

	local := make(map[ValueID]uint64)
	ext := make(map[ValueID]uint64)
	comps := make(map[CompositeID]uint64)
	var named []ValueID
	for _, i := range g.ScopeEqns(scope) {
		e := g.eqns[i]
		// The chain of composites holding the equation, innermost first;
		// a composite's record is written where it is first met.
		for c := e.Composite; c > 0 && int(c) <= len(g.composites); c = g.composites[c-1].Parent {
			x, seen := comps[c]
			if !seen {
				x = uint64(len(comps))
				comps[c] = x
				u(1)
				buf = AppendComposite(buf, g.composites[c-1])
			} else {
				u(2)
			}
			u(x)
		}
		u(0)
		u(uint64(e.Op))
		buf = AppendParams(buf, e.Params)
		str(g.scopes[e.Scope][min(len(scope), len(g.scopes[e.Scope])):])
		u(uint64(len(e.Inputs)))
		for _, in := range e.Inputs {
			if l, ok := local[in]; ok {
				u(0)
				u(l)
				continue
			}
			v := g.values[in]
			x, ok := ext[in]
			if !ok {
				x = uint64(len(ext))
				ext[in] = x
				if v.Kind == Const || v.Kind == State {
					named = append(named, in)
				}
			}
			u(1 + uint64(v.Kind))
			u(x)
			typ(v.Type)
			if v.Kind == Slot {
				str(v.Name)
			}
		}
		local[e.Out] = uint64(len(local))
		typ(g.values[e.Out].Type)
		h.Write(buf)
		buf = buf[:0]
	}
	var d [32]byte
	h.Sum(d[:0])
	return d, named
}

// AppendParams appends an encoding of p to buf, the one Digest hashes:
// two equations of one primitive with the same encoding compute the same
// function of their operands. Other structural hashes (a lowering's own
// program digests) use it so that they see parameters as Digest does.
func AppendParams(buf []byte, p Params) []byte {
	ints := func(s []int) {
		buf = binary.AppendUvarint(buf, uint64(len(s)))
		for _, x := range s {
			buf = binary.AppendVarint(buf, int64(x))
		}
	}
	buf = binary.AppendVarint(buf, int64(p.Axis))
	buf = binary.AppendVarint(buf, int64(p.K))
	ints(p.Perm)
	ints(p.Shape)
	ints(p.Start)
	ints(p.Limit)
	buf = binary.AppendUvarint(buf, uint64(p.DType))
	return binary.AppendUvarint(buf, math.Float64bits(p.Value))
}

// AppendComposite appends an encoding of a composite's record as Digest
// hashes it: its name, its attributes, which operands are present and how
// many results it has (not the values, which the equations encode).
func AppendComposite(buf []byte, r Composite) []byte {
	buf = binary.AppendUvarint(buf, uint64(len(r.Name)))
	buf = append(buf, r.Name...)
	a := r.Attrs.String()
	buf = binary.AppendUvarint(buf, uint64(len(a)))
	buf = append(buf, a...)
	buf = binary.AppendUvarint(buf, uint64(len(r.Operands)))
	for _, o := range r.Operands {
		if o < 0 {
			buf = binary.AppendUvarint(buf, 0)
		} else {
			buf = binary.AppendUvarint(buf, 1)
		}
	}
	return binary.AppendUvarint(buf, uint64(len(r.Results)))
}
