package lower

import (
	"slices"

	"github.com/pootlabs/poot"
)

// flashAttention replaces each "attention" composite (ops.Attention) whose
// attributes and operand types the FlashAttention kernel supports by one
// such kernel computing its whole body. A composite whose intermediates are
// read outside its body (a witness) is left alone, and so is every
// composite when the target does not fuse attention.
func (p *planner) flashAttention() error {
	if !p.target.Fuses(FusedAttention) {
		return nil
	}
	return p.fuseComposites(FusedAttention, func(c poot.Composite, pos map[int]int) (*Kernel, []int) {
		a, ok := AttentionOf(p.g, c)
		if !ok {
			return nil, nil
		}
		var casts []int
		if len(p.target.NarrowKV) > 0 {
			casts = p.narrowKV(a, c, pos)
		}
		k := &Kernel{Kind: FlashAttention, Attention: a, Inputs: []poot.ValueID{a.Q, a.K, a.V, a.Mask}, Outputs: []poot.ValueID{a.Out}}
		if a.Sinks >= 0 {
			k.Inputs = append(k.Inputs, a.Sinks)
		}
		return k, casts
	})
}

// fuseComposites replaces each composite called name for which build
// returns a kernel by that kernel, which computes the whole body (and the
// equations of the kernels build lists besides, which are dropped too).
// build sees the kernel index of every equation (pos). A composite is left
// alone when a value of its body other than its results is read outside
// it, or when a kernel already holds its equations with others (an
// enclosing composite fused before it).
func (p *planner) fuseComposites(name string, build func(c poot.Composite, pos map[int]int) (*Kernel, []int)) error {
	users := p.users()
	pos := map[int]int{} // equation -> kernel index
	for ki, k := range p.kernels {
		for _, i := range k.Eqns {
			pos[i] = ki
		}
	}
	replace := map[int]*Kernel{} // kernel index of the result -> fused kernel
	drop := map[int]bool{}
	for _, c := range p.g.Composites() {
		if c.Name != name || p.bodyEscapes(c, users) || !p.ownKernels(c, pos) {
			continue
		}
		k, extra := build(c, pos)
		if k == nil {
			continue
		}
		resultAt, ok := pos[p.prod[k.Outputs[0]]]
		if !ok {
			continue
		}
		for j := c.Lo; j < c.Hi; j++ {
			k.Eqns = append(k.Eqns, j)
			if ki, ok := pos[j]; ok && ki != resultAt {
				drop[ki] = true
			}
		}
		for _, ki := range extra {
			drop[ki] = true
			k.Eqns = append(k.Eqns, p.kernels[ki].Eqns...) // done as the kernel reads
		}
		replace[resultAt] = k
	}
	if len(replace) == 0 {
		return nil
	}
	var out []*Kernel
	for ki, k := range p.kernels {
		switch {
		case replace[ki] != nil:
			out = append(out, replace[ki])
		case drop[ki]:
		default:
			out = append(out, k)
		}
	}
	p.kernels = out
	// Literals only the fused bodies read need no storage.
	for _, k := range replace {
		for _, j := range k.Eqns {
			for _, in := range p.eqns[j].Inputs {
				if pi := p.prod[in]; pi >= 0 && p.eqns[pi].Op == poot.Literal {
					p.readers[in]--
				}
			}
		}
	}
	return nil
}

// ownKernels reports whether every kernel that holds an equation of c's
// body holds only equations of the body.
func (p *planner) ownKernels(c poot.Composite, pos map[int]int) bool {
	for j := c.Lo; j < c.Hi; j++ {
		ki, ok := pos[j]
		if !ok {
			continue
		}
		for _, e := range p.kernels[ki].Eqns {
			if e < c.Lo || e >= c.Hi {
				return false
			}
		}
	}
	return true
}

// narrowKV reads an attention whose keys and values are both casts to F32
// of values of one dtype the target reads in place (F16 or Q8_0 caches)
// over those values: it sets a.KV, a.K and a.V to them, and returns the
// kernels of the casts, which run no more when nothing else reads their
// results (pos: equation -> kernel).
func (p *planner) narrowKV(a *Attention, c poot.Composite, pos map[int]int) []int {
	src := func(id poot.ValueID) (poot.ValueID, int, poot.DType, bool) {
		pi := p.prod[id]
		if pi < 0 || p.eqns[pi].Op != poot.Cast || p.escapes[id] {
			return 0, 0, 0, false
		}
		d := p.g.Type(p.eqns[pi].Inputs[0]).DType
		if !slices.Contains(p.target.NarrowKV, d) {
			return 0, 0, 0, false
		}
		return p.eqns[pi].Inputs[0], pi, d, true
	}
	kn, kc, kd, ok1 := src(a.K)
	vn, vc, vd, ok2 := src(a.V)
	if !ok1 || !ok2 || kd != vd {
		return nil
	}
	body := 0 // reads of the cast results inside the body
	for j := c.Lo; j < c.Hi; j++ {
		for _, in := range p.eqns[j].Inputs {
			if in == a.K || in == a.V {
				body++
			}
		}
	}
	reads := p.readers[a.K]
	if a.V != a.K {
		reads += p.readers[a.V]
	}
	if reads != body {
		return nil // another reader needs the F32 values
	}
	a.K, a.V, a.KV = kn, vn, kd
	casts := []int{pos[kc]}
	if vc != kc {
		casts = append(casts, pos[vc])
	}
	return casts
}

// bodyEscapes reports whether a value the body of c computes, other than
// its results, is read outside the body or leaves the step.
func (p *planner) bodyEscapes(c poot.Composite, users [][]int) bool {
	for j := c.Lo; j < c.Hi; j++ {
		out := p.eqns[j].Out
		if slices.Contains(c.Results, out) {
			continue
		}
		if p.escapes[out] {
			return true
		}
		for _, u := range users[out] {
			if u < c.Lo || u >= c.Hi {
				return true
			}
		}
	}
	return false
}

// AttentionOf reads an "attention" composite's record as the FlashAttention
// kernel's description, and reports false when the kernel cannot run it:
// operands other than F32 queries, keys and values, a Bool mask and F32
// sinks [H], or attributes inconsistent with their shapes.
func AttentionOf(g *poot.Graph, c poot.Composite) (*Attention, bool) {
	if c.Name != FusedAttention || len(c.Operands) != 5 || len(c.Results) != 1 {
		return nil, false
	}
	h, ok1 := c.Attrs.Int("heads")
	hkv, ok2 := c.Attrs.Int("kv_heads")
	d, ok3 := c.Attrs.Int("head_dim")
	dv, ok4 := c.Attrs.Int("value_dim")
	r, ok5 := c.Attrs.Int("rows")
	scale, ok6 := c.Attrs.Float("scale")
	softCap, ok7 := c.Attrs.Float("soft_cap")
	if !(ok1 && ok2 && ok3 && ok4 && ok5 && ok6 && ok7) || h < 1 || hkv < 1 || h%hkv != 0 || d < 1 || dv < 1 || r < 1 {
		return nil, false
	}
	a := &Attention{Q: c.Operands[0], K: c.Operands[1], V: c.Operands[2], Mask: c.Operands[3], Sinks: c.Operands[4],
		Out: c.Results[0], R: r, Heads: h, KVHeads: hkv, Rep: h / hkv, D: d, Dv: dv,
		Scale: float32(scale), SoftCap: float32(softCap)}
	if a.Q < 0 || a.K < 0 || a.V < 0 || a.Mask < 0 {
		return nil, false
	}
	qt, kt, vt, mt := g.Type(a.Q), g.Type(a.K), g.Type(a.V), g.Type(a.Mask)
	if len(qt.Shape) != 2 || len(kt.Shape) != 2 || len(vt.Shape) != 2 || len(mt.Shape) != 2 ||
		qt.DType != poot.F32 || kt.DType != poot.F32 || vt.DType != poot.F32 || mt.DType != poot.Bool ||
		qt.Shape[0]%r != 0 || kt.Shape[0]%r != 0 {
		return nil, false
	}
	a.T, a.S = qt.Shape[0]/r, kt.Shape[0]/r
	if qt.Shape[1] != h*d || kt.Shape[1] != hkv*d || vt.Shape[0] != r*a.S || vt.Shape[1] != hkv*dv ||
		mt.Shape[0] != r*a.T || mt.Shape[1] != a.S {
		return nil, false
	}
	if ot := g.Type(a.Out); ot.DType != poot.F32 || !ot.Shape.Equal(poot.Shape{r * a.T, h * dv}) {
		return nil, false
	}
	if a.Sinks >= 0 {
		if st := g.Type(a.Sinks); st.DType != poot.F32 || st.Shape.Size() != int64(h) {
			return nil, false
		}
	}
	return a, true
}
