package rdu

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"

	"github.com/pootlabs/poot"
)

// A traced step, as the streamed lowering sees it, is cut into programs by
// its scopes: "embed", one "layer.<l>" per layer, "head". Everything else
// (the rotary tables of scope "rope", say) must be a step table: a value
// computed from the step's slots, literals and iotas, and constants that no
// program reads (a GGUF rope_freqs table). A program's items (its top-level
// composites and the primitive equations outside any composite) that
// compute only step tables are hoisted out of it too: the attention mask a
// family builds lazily inside the first layer that needs it belongs to
// every layer that reads it, and is a clause of their attention statements,
// not a statement of the first layer.

// stepView is the lowering's analysis of one step graph.
type stepView struct {
	g     *poot.Graph
	eqns  []poot.Eqn
	prod  []int  // producing equation of each value, -1 for inputs
	table []bool // the value is a step table
	// progs holds the equations of each program, hoisted items removed:
	// progs[0] is the embedding, progs[1+l] layer l, progs[len-1] the head.
	embed, head []int
	layers      [][]int
	cone        map[poot.ValueID][32]byte
	tokens      int // new tokens of the step (T)
	// digestVals and digestComps are programDigest's scratch numbering.
	digestVals  []uint64
	digestComps []uint64
	comps       []poot.Composite // the graph's composite records; id i at i-1
	byName      map[string]poot.ValueID
}

// comp returns the record of composite id (the zero record for 0).
func (v *stepView) comp(id poot.CompositeID) poot.Composite {
	if id < 1 || int(id) > len(v.comps) {
		return poot.Composite{}
	}
	return v.comps[id-1]
}

// top returns the record of the outermost composite holding equation i
// (the zero record when none does).
func (v *stepView) top(i int) poot.Composite { return v.comp(v.g.Top(v.eqns[i].Composite)) }

// part says which program an equation's scope belongs to.
func part(scope string) (name string, layer int) {
	first, _, _ := strings.Cut(scope, "/")
	switch {
	case first == "embed", first == "head":
		return first, -1
	case strings.HasPrefix(first, "layer."):
		l, err := strconv.Atoi(first[len("layer."):])
		if err != nil || l < 0 || strconv.Itoa(l) != first[len("layer."):] {
			return "", -1
		}
		return "layer", l
	}
	return "", -1
}

// analyse cuts g into its programs. A graph without the streamed shape
// (no layer scopes, gaps in their numbering, weights read outside every
// program) is a *StructureError.
func analyse(g *poot.Graph) (*stepView, error) {
	if g == nil {
		return nil, structureErr("no graph")
	}
	v := &stepView{g: g, eqns: g.Eqns(), prod: g.Producers(), table: make([]bool, g.NumValues()), cone: map[poot.ValueID][32]byte{},
		comps: g.Composites(), byName: map[string]poot.ValueID{}}
	for _, k := range []poot.Kind{poot.Const, poot.Slot, poot.State} {
		for _, id := range g.Inputs(k) {
			v.byName[g.Value(id).Name] = id
		}
	}
	partOf := make([]int, len(v.eqns)) // -2 embed, -3 head, -1 none, l layer
	inProgram := make([]bool, g.NumValues())
	nLayers := 0
	for i, e := range v.eqns {
		name, l := part(g.Scope(e.Scope))
		switch name {
		case "embed":
			partOf[i] = -2
		case "head":
			partOf[i] = -3
		case "layer":
			partOf[i] = l
			nLayers = max(nLayers, l+1)
		default:
			partOf[i] = -1
		}
		if partOf[i] != -1 {
			for _, in := range e.Inputs {
				inProgram[in] = true
			}
		}
	}
	if nLayers == 0 {
		return nil, structureErr("the step has no layer scopes (layer.0, layer.1, …)")
	}
	for id := range v.table {
		val := g.Value(poot.ValueID(id))
		switch val.Kind {
		case poot.Slot:
			v.table[id] = true
		case poot.Const:
			v.table[id] = !inProgram[id]
		}
	}
	for _, e := range v.eqns {
		t := true
		for _, in := range e.Inputs {
			t = t && v.table[in]
		}
		v.table[e.Out] = t
	}
	for _, id := range g.Inputs(poot.Slot) {
		val := g.Value(id)
		if val.Slot == poot.SlotToken {
			v.tokens = int(val.Type.Shape.Size())
		}
	}
	v.layers = make([][]int, nLayers)
	for _, it := range v.items() {
		p := partOf[it.lo]
		hoisted := true
		for i := it.lo; i < it.hi; i++ {
			if partOf[i] != p {
				return nil, structureErr("composite %q spans the scopes %q and %q", v.comp(it.comp).Name, g.Scope(v.eqns[it.lo].Scope), g.Scope(v.eqns[i].Scope))
			}
		}
		for _, r := range it.results(v) {
			hoisted = hoisted && v.table[r]
		}
		if hoisted {
			continue
		}
		if p == -1 {
			return nil, structureErr("equation %d (%s) in scope %q reads weights or state outside the embedding, the layers and the head", it.lo, v.eqns[it.lo].Op, g.Scope(v.eqns[it.lo].Scope))
		}
		var dst *[]int
		switch p {
		case -2:
			dst = &v.embed
		case -3:
			dst = &v.head
		default:
			dst = &v.layers[p]
		}
		for i := it.lo; i < it.hi; i++ {
			*dst = append(*dst, i)
		}
	}
	for l, eqns := range v.layers {
		if len(eqns) == 0 {
			return nil, structureErr("layer %d of %d records nothing", l, nLayers)
		}
	}
	return v, nil
}

// item is one top-level unit of a program: a composite and its body, or a
// primitive equation outside any composite.
type item struct {
	lo, hi int
	comp   poot.CompositeID // 0 for a loose equation
}

// items lists the graph's items in equation order.
func (v *stepView) items() []item {
	var out []item
	for i := 0; i < len(v.eqns); {
		c := v.g.Top(v.eqns[i].Composite)
		if c == 0 {
			out = append(out, item{lo: i, hi: i + 1})
			i++
			continue
		}
		r := v.comp(c)
		out = append(out, item{lo: r.Lo, hi: r.Hi, comp: c})
		i = r.Hi
	}
	return out
}

// results are the values an item gives its program.
func (it item) results(v *stepView) []poot.ValueID {
	if it.comp == 0 {
		return []poot.ValueID{v.eqns[it.lo].Out}
	}
	return v.comp(it.comp).Results
}

// coneDigest identifies a step table by what it computes: two tables with
// equal digests hold equal values in every step.
func (v *stepView) coneDigest(id poot.ValueID) [32]byte {
	if d, ok := v.cone[id]; ok {
		return d
	}
	h := sha256.New()
	var buf []byte
	u := func(x uint64) { buf = binary.AppendUvarint(buf, x) }
	str := func(s string) { u(uint64(len(s))); buf = append(buf, s...) }
	ints := func(s []int) {
		u(uint64(len(s)))
		for _, x := range s {
			buf = binary.AppendVarint(buf, int64(x))
		}
	}
	typ := func(t poot.TensorType) { u(uint64(t.DType)); ints(t.Shape) }
	val := v.g.Value(id)
	typ(val.Type)
	if p := v.prod[id]; p < 0 {
		u(uint64(val.Kind))
		str(val.Name)
	} else {
		e := v.eqns[p]
		u(100 + uint64(e.Op))
		buf = poot.AppendParams(buf, e.Params)
		for _, in := range e.Inputs {
			d := v.coneDigest(in)
			buf = append(buf, d[:]...)
		}
	}
	h.Write(buf)
	var d [32]byte
	h.Sum(d[:0])
	v.cone[id] = d
	return d
}

// programDigest is a structural hash of the equations eqns (a program's,
// in order): every primitive, parameter and type, the way values flow, the
// scope paths below the program's own scope, the composites the equations
// belong to (names, attributes, operand and result counts), and what the
// program reads from outside: slots by name, step tables by what they
// compute, other values of the step (the hidden state) by order of first
// use, and constants and states by order of first use with their types
// (stored dtypes included) but not their names. named lists those
// constants and states in that order, for the renaming between two
// programs of one digest.
//
// poot.Digest is the same idea over a scope; it is not used here because a
// family may record a table every layer shares inside the first layer that
// needs it (the attention mask), and because it numbers values from outside
// the scope by order alone, so two layers reading different masks or
// rotary tables would look alike.
func (v *stepView) programDigest(eqns []int) (d [32]byte, named []poot.ValueID) {
	h := sha256.New()
	var buf []byte
	u := func(x uint64) { buf = binary.AppendUvarint(buf, x) }
	str := func(s string) { u(uint64(len(s))); buf = append(buf, s...) }
	ints := func(s []int) {
		u(uint64(len(s)))
		for _, x := range s {
			buf = binary.AppendVarint(buf, int64(x))
		}
	}
	typ := func(t poot.TensorType) { u(uint64(t.DType)); ints(t.Shape) }
	// Numbers by value and composite id, in scratch slices shared by the
	// calls (0: not numbered yet), cleared of what this call set.
	if len(v.digestVals) == 0 {
		v.digestVals, v.digestComps = make([]uint64, v.g.NumValues()), make([]uint64, len(v.comps)+1)
	}
	vals, comps := v.digestVals, v.digestComps
	var touched []poot.ValueID
	var touchedComps []poot.CompositeID
	defer func() {
		for _, id := range touched {
			vals[id] = 0
		}
		for _, c := range touchedComps {
			comps[c] = 0
		}
	}()
	nLocal, nExt, nComps := uint64(0), uint64(0), uint64(0)
	base := ""
	if len(eqns) > 0 {
		base, _, _ = strings.Cut(v.g.Scope(v.eqns[eqns[0]].Scope), "/")
	}
	for _, i := range eqns {
		e := v.eqns[i]
		for c := e.Composite; c > 0; c = v.comp(c).Parent {
			x := comps[c]
			if x == 0 {
				nComps++
				x, comps[c] = nComps, nComps
				touchedComps = append(touchedComps, c)
				u(1)
				buf = poot.AppendComposite(buf, v.comp(c))
			} else {
				u(2)
			}
			u(x)
		}
		u(0)
		u(uint64(e.Op))
		buf = poot.AppendParams(buf, e.Params)
		s := v.g.Scope(e.Scope)
		str(strings.TrimPrefix(s, base))
		u(uint64(len(e.Inputs)))
		// A value's number: 2n for the n-th local value, 2n+1 for the n-th
		// value read from outside.
		for _, in := range e.Inputs {
			if x := vals[in]; x != 0 && x%2 == 0 {
				u(0)
				u(x / 2)
				continue
			}
			if v.table[in] {
				u(1)
				dg := v.coneDigest(in)
				buf = append(buf, dg[:]...)
				continue
			}
			val := v.g.Value(in)
			x := vals[in]
			if x == 0 {
				nExt++
				x, vals[in] = 2*nExt+1, 2*nExt+1
				touched = append(touched, in)
				if val.Kind == poot.Const || val.Kind == poot.State {
					named = append(named, in)
				}
			}
			u(2 + uint64(val.Kind))
			u(x / 2)
			typ(val.Type)
		}
		nLocal++
		vals[e.Out] = 2 * nLocal
		touched = append(touched, e.Out)
		typ(v.g.Type(e.Out))
		h.Write(buf)
		buf = buf[:0]
	}
	h.Sum(d[:0])
	return d, named
}

func structureErr(format string, args ...any) error {
	return &StructureError{Detail: fmt.Sprintf(format, args...)}
}
