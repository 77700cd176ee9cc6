package lower

import (
	"math"
	"strings"

	"github.com/pootlabs/poot"
)

// flashAttention replaces each attention core recorded by ops.Attention by
// one FlashAttention kernel. The match runs backwards from the core's
// result through the exact sequence ops/attention.go documents; anything
// else in the scope (a cast of the sinks) stays as it is, and a core whose
// intermediates are read outside it (a witness) is left alone.
func (p *planner) flashAttention() error {
	users := p.users()
	pos := map[int]int{} // equation -> kernel index
	for ki, k := range p.kernels {
		for _, i := range k.Eqns {
			pos[i] = ki
		}
	}
	replace := map[int]*Kernel{} // kernel index of the result -> fused kernel
	drop := map[int]bool{}
	for i, e := range p.eqns {
		if e.Op != poot.Reshape || !isAttentionScope(p.scope(i)) {
			continue
		}
		// The result is a Reshape whose reader (if any) is outside the
		// scope.
		m := &matcher{p: p, scope: p.scope(i)}
		a, ok := m.core(i)
		if !ok {
			continue
		}
		members := map[int]bool{}
		for _, j := range m.eqns {
			members[j] = true
		}
		escape := false
		for _, j := range m.eqns {
			if j == i {
				continue
			}
			out := p.eqns[j].Out
			escape = escape || p.escapes[out]
			for _, u := range users[out] {
				escape = escape || !members[u]
			}
		}
		if escape {
			continue
		}
		k := &Kernel{Kind: FlashAttention, Eqns: sortedInts(m.eqns), Attention: a, Outputs: []poot.ValueID{e.Out}}
		k.Inputs = []poot.ValueID{a.Q, a.K, a.V, a.Mask}
		if a.Sinks >= 0 {
			k.Inputs = append(k.Inputs, a.Sinks)
		}
		replace[pos[i]] = k
		for _, j := range m.eqns {
			if ki, ok := pos[j]; ok && j != i {
				drop[ki] = true
			}
		}
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
	// Literals only the fused cores read need no storage.
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

func isAttentionScope(s string) bool {
	last := s[strings.LastIndexByte(s, '/')+1:]
	return strings.HasSuffix(last, "attention")
}

func sortedInts(s []int) []int {
	out := append([]int(nil), s...)
	for i := 1; i < len(out); i++ {
		for j := i; j > 0 && out[j] < out[j-1]; j-- {
			out[j], out[j-1] = out[j-1], out[j]
		}
	}
	return out
}

// matcher walks an attention core backwards, recording the equations it
// consumes.
type matcher struct {
	p     *planner
	scope string
	eqns  []int
}

// eq returns the equation producing id if it applies op inside the scope.
func (m *matcher) eq(id poot.ValueID, op poot.Op) (poot.Eqn, bool) {
	i := m.p.prod[id]
	if i < 0 || m.p.eqns[i].Op != op || !poot.InScope(m.p.scope(i), m.scope) {
		return poot.Eqn{}, false
	}
	m.eqns = append(m.eqns, i)
	return m.p.eqns[i], true
}

// lit returns the value of a literal operand.
func (m *matcher) lit(id poot.ValueID) (float64, bool) {
	e, ok := m.eq(id, poot.Literal)
	if !ok || e.Params.DType != poot.F32 {
		return 0, false
	}
	return e.Params.Value, true
}

func permIs(e poot.Eqn, perm ...int) bool {
	if len(e.Params.Perm) != len(perm) {
		return false
	}
	for i := range perm {
		if e.Params.Perm[i] != perm[i] {
			return false
		}
	}
	return true
}

// heads undoes Transpose(Reshape(x)) and an optional RepeatKV, returning x
// and the number of heads before repetition.
func (m *matcher) heads(id poot.ValueID, perm ...int) (x poot.ValueID, kvHeads int, ok bool) {
	if e, isReshape := m.eq(id, poot.Reshape); isReshape {
		// RepeatKV: Reshape(Broadcast(Reshape(t)))
		b, ok1 := m.eq(e.Inputs[0], poot.Broadcast)
		if !ok1 {
			return 0, 0, false
		}
		r, ok2 := m.eq(b.Inputs[0], poot.Reshape)
		if !ok2 {
			return 0, 0, false
		}
		id = r.Inputs[0]
	}
	t, ok1 := m.eq(id, poot.Transpose)
	if !ok1 || !permIs(t, perm...) {
		return 0, 0, false
	}
	r, ok2 := m.eq(t.Inputs[0], poot.Reshape)
	if !ok2 || len(r.Params.Shape) != 4 {
		return 0, 0, false
	}
	return r.Inputs[0], r.Params.Shape[2], true
}

// core matches the sequence ending at equation i.
func (m *matcher) core(i int) (*Attention, bool) {
	p := m.p
	g := p.g
	m.eqns = append(m.eqns, i)
	outT, ok := m.eq(p.eqns[i].Inputs[0], poot.Transpose)
	if !ok || !permIs(outT, 0, 2, 1, 3) {
		return nil, false
	}
	o, ok := m.eq(outT.Inputs[0], poot.MatMul)
	if !ok {
		return nil, false
	}
	pv := o.Inputs[0]
	sliced := false
	if sl, ok := m.eq(pv, poot.Slice); ok {
		pv, sliced = sl.Inputs[0], true
	}
	// softmax: Div(E, Broadcast(ReduceSum(E))), E = Exp(Sub(X, Broadcast(ReduceMax(X))))
	div, ok := m.eq(pv, poot.Div)
	if !ok {
		return nil, false
	}
	ex := div.Inputs[0]
	bs, ok := m.eq(div.Inputs[1], poot.Broadcast)
	if !ok {
		return nil, false
	}
	rs, ok := m.eq(bs.Inputs[0], poot.ReduceSum)
	if !ok || rs.Inputs[0] != ex || rs.Params.Axis != 3 {
		return nil, false
	}
	exp, ok := m.eq(ex, poot.Exp)
	if !ok {
		return nil, false
	}
	sub, ok := m.eq(exp.Inputs[0], poot.Sub)
	if !ok {
		return nil, false
	}
	x := sub.Inputs[0]
	bm, ok := m.eq(sub.Inputs[1], poot.Broadcast)
	if !ok {
		return nil, false
	}
	rm, ok := m.eq(bm.Inputs[0], poot.ReduceMax)
	if !ok || rm.Inputs[0] != x || rm.Params.Axis != 3 {
		return nil, false
	}
	a := &Attention{Sinks: -1, Out: p.eqns[i].Out}
	if sliced {
		cat, ok := m.eq(x, poot.Concat)
		if !ok || len(cat.Inputs) != 2 || cat.Params.Axis != 3 {
			return nil, false
		}
		x = cat.Inputs[0]
		sb, ok := m.eq(cat.Inputs[1], poot.Broadcast)
		if !ok {
			return nil, false
		}
		sr, ok := m.eq(sb.Inputs[0], poot.Reshape)
		if !ok || g.Type(sr.Inputs[0]).DType != poot.F32 {
			return nil, false
		}
		a.Sinks = sr.Inputs[0]
	}
	sel, ok := m.eq(x, poot.Select)
	if !ok {
		return nil, false
	}
	if v, ok := m.lit(sel.Inputs[2]); !ok || !math.IsInf(v, -1) {
		return nil, false
	}
	mb, ok := m.eq(sel.Inputs[0], poot.Broadcast)
	if !ok {
		return nil, false
	}
	mr, ok := m.eq(mb.Inputs[0], poot.Reshape)
	if !ok {
		return nil, false
	}
	a.Mask = mr.Inputs[0]
	s := sel.Inputs[1]
	// optional soft cap: Mul(Tanh(Mul(s, 1/cap)), cap)
	if capMul, ok := m.eq(s, poot.Mul); ok {
		if th, ok := m.eq(capMul.Inputs[0], poot.Tanh); ok {
			c, ok1 := m.lit(capMul.Inputs[1])
			inner, ok2 := m.eq(th.Inputs[0], poot.Mul)
			if !ok1 || !ok2 {
				return nil, false
			}
			if _, ok := m.lit(inner.Inputs[1]); !ok {
				return nil, false
			}
			a.SoftCap = float32(c)
			s = inner.Inputs[0]
		} else {
			// not a cap: this Mul is the scale; undo the record.
			m.eqns = m.eqns[:len(m.eqns)-1]
		}
	}
	scale, ok := m.eq(s, poot.Mul)
	if !ok {
		return nil, false
	}
	sv, ok := m.lit(scale.Inputs[1])
	if !ok {
		return nil, false
	}
	a.Scale = float32(sv)
	qk, ok := m.eq(scale.Inputs[0], poot.MatMul)
	if !ok {
		return nil, false
	}
	var qh int
	if a.Q, qh, ok = m.heads(qk.Inputs[0], 0, 2, 1, 3); !ok {
		return nil, false
	}
	if a.K, a.KVHeads, ok = m.heads(qk.Inputs[1], 0, 2, 1, 3); !ok {
		return nil, false
	}
	var vh int
	if a.V, vh, ok = m.heads(o.Inputs[1], 0, 2, 3, 1); !ok || vh != a.KVHeads {
		return nil, false
	}
	sh := g.Type(qk.Out).Shape // [R,H,T,S]
	if len(sh) != 4 || sh[1] != qh {
		return nil, false
	}
	a.R, a.Heads, a.T, a.S = sh[0], sh[1], sh[2], sh[3]
	qs, ks, vs := g.Type(a.Q).Shape, g.Type(a.K).Shape, g.Type(a.V).Shape
	if len(qs) != 2 || len(ks) != 2 || len(vs) != 2 || a.KVHeads < 1 || a.Heads%a.KVHeads != 0 {
		return nil, false
	}
	a.Rep = a.Heads / a.KVHeads
	a.D = qs[1] / a.Heads
	a.Dv = vs[1] / a.KVHeads
	if qs[0] != a.R*a.T || ks[0] != a.R*a.S || vs[0] != a.R*a.S || ks[1] != a.KVHeads*a.D ||
		g.Type(a.Q).DType != poot.F32 || g.Type(a.K).DType != poot.F32 || g.Type(a.V).DType != poot.F32 {
		return nil, false
	}
	ms := g.Type(a.Mask)
	if ms.DType != poot.Bool || len(ms.Shape) != 2 || ms.Shape[0] != a.R*a.T || ms.Shape[1] != a.S {
		return nil, false
	}
	if a.Sinks >= 0 {
		if ss := g.Type(a.Sinks).Shape; ss.Size() != int64(a.Heads) {
			return nil, false
		}
	}
	return a, true
}
