package rdu

import (
	"fmt"
	"math"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/lang"
)

// This file lifts multi-head latent attention (DeepSeek-V2 and V3), in
// the seed's absorbed form whichever form the graph computes (the ops
// package's naive and absorbed forms are equal up to rounding). The cache
// holds one row of the normalised latent and the shared rotary key a
// position, and serves as the one key head every query head attends over;
// the latent part of each row is the values:
//
//	Let qn be the first N of every N+R of q.
//	Let ql be qn matmul Wkb across H heads.
//	Let qa be ql joined with qpp across H heads.
//	Set row pos of Kc to kc.
//	Let Vl be the first L of every L+R of Kc.
//	Let ol be attention of qa over Kc and Vl with H heads 1 groups up to pos scaled by s.
//	Let ct be ol matmul Wvb across H heads.
//
// Wkb (H·N by L: head h's block is W_UK of head h, N by L) and Wvb (H·L by
// V: head h's block is W_UV transposed) are cut head by head from the
// checkpoint's kv_b (or its split k_b and v_b): their bindings say which
// rows of which head's block, and whether transposed (bundle.HeadCut); the
// host fills them dense. The compressed keys (the latent_kv composite) lift
// part by part: a projection, its columns, a norm, a rotation, a join.

// headJoin is a join of column views head by head (a latent query's
// rotated and plain channels): each part is N columns of every E cut from
// its own matrix, and head h of the result is head h of each part in turn.
type headJoin struct {
	heads int
	parts []strided
}

// headJoins finds the head-by-head joins of the program: a reshape to a
// matrix of a join along the last axis of per-head views, each the
// reshape of a matrix to [T, H, W] or a slice of one along its last axis.
// The views and the join write no statement; the join is written where it
// is first read (a latent attention reads its parts instead).
func (l *lifter) headJoins() (inner map[poot.ValueID]bool, joins map[poot.ValueID]headJoin) {
	v := l.v
	inner, joins = map[poot.ValueID]bool{}, map[poot.ValueID]headJoin{}
	local := func(id poot.ValueID, op poot.Op) (poot.Eqn, bool) {
		p := v.prod[id]
		if p < 0 || !l.inProg[p] || v.eqns[p].Composite != 0 || v.eqns[p].Op != op {
			return poot.Eqn{}, false
		}
		return v.eqns[p], true
	}
	// view reads a [T, H, W] value as columns of a matrix [T, H·M].
	view := func(id poot.ValueID) (strided, []poot.ValueID, bool) {
		t := v.g.Type(id).Shape
		if r, ok := local(id, poot.Reshape); ok {
			if src := v.g.Type(r.Inputs[0]).Shape; len(src) == 2 && src[0] == t[0] && src[1] == t[1]*t[2] {
				return strided{x: r.Inputs[0], n: t[2], e: t[2]}, []poot.ValueID{id}, true
			}
		}
		s, ok := local(id, poot.Slice)
		if !ok {
			return strided{}, nil, false
		}
		r, ok := local(s.Inputs[0], poot.Reshape)
		mid, src := v.g.Type(s.Inputs[0]).Shape, v.g.Type(r.Inputs[0]).Shape
		if !ok || len(mid) != 3 || len(src) != 2 || src[0] != mid[0] || src[1] != mid[1]*mid[2] ||
			s.Params.Start[0] != 0 || s.Params.Limit[0] != mid[0] || s.Params.Start[1] != 0 || s.Params.Limit[1] != mid[1] {
			return strided{}, nil, false
		}
		st, lim := s.Params.Start[2], s.Params.Limit[2]
		return strided{x: r.Inputs[0], n: lim - st, after: st, e: mid[2]}, []poot.ValueID{id, s.Inputs[0]}, true
	}
	for _, i := range l.eqns {
		e := v.eqns[i]
		if e.Composite != 0 || e.Op != poot.Reshape || len(v.g.Type(e.Out).Shape) != 2 {
			continue
		}
		c, ok := local(e.Inputs[0], poot.Concat)
		t := v.g.Type(e.Inputs[0]).Shape
		if !ok || len(t) != 3 || c.Params.Axis != 2 || len(c.Inputs) < 2 {
			continue
		}
		j := headJoin{heads: t[1]}
		cone := []poot.ValueID{c.Out}
		for _, in := range c.Inputs {
			s, vals, ok := view(in)
			if !ok {
				j.parts = nil
				break
			}
			j.parts = append(j.parts, s)
			cone = append(cone, vals...)
		}
		if j.parts == nil {
			continue
		}
		for _, id := range cone {
			inner[id] = true
		}
		joins[e.Out] = j
	}
	return inner, joins
}

// part returns the name of one part of a head join, writing its columns
// (named from base, or from the matrix they are cut from).
func (l *lifter) part(s strided, base string) string {
	x := l.ref(s.x)
	if s.after == 0 && s.n == s.e {
		return x
	}
	if base == "" {
		base = l.baseOf(x) + "c"
	}
	name := l.fresh(base)
	l.emit(lang.Let{Name: name, Expr: s.expr(x)})
	return name
}

// join writes a head join where it is first read.
func (l *lifter) join(id poot.ValueID, j headJoin) string {
	delete(l.joins, id)
	a := l.part(j.parts[0], "")
	for k, p := range j.parts[1:] {
		b := l.part(p, "")
		name := ""
		if k == len(j.parts)-2 {
			name = l.bind(id, "jn")
		} else {
			name = l.fresh("jn")
		}
		l.emit(lang.Let{Name: name, Expr: lang.Binary{Op: lang.Joined, A: a, B: b, Heads: j.heads}})
		a = name
	}
	return a
}

// queryParts names the plain and the rotated channels of a latent query
// q, H heads of N+R channels: the parts of its head join, else columns
// of q.
func (l *lifter) queryParts(q poot.ValueID, h, nope, rope int) (string, string) {
	q = l.root(q)
	if j, ok := l.joins[q]; ok && len(j.parts) == 2 && j.heads == h && j.parts[0].n == nope && j.parts[1].n == rope {
		delete(l.joins, q)
		return l.part(j.parts[0], "qn"), l.part(j.parts[1], "qe")
	}
	x := l.ref(q)
	qn, qe := l.fresh("qn"), l.fresh("qe")
	l.emit(lang.Let{Name: qn, Expr: lang.Columns{N: nope, Every: nope + rope, X: x}})
	l.emit(lang.Let{Name: qe, Expr: lang.Columns{Last: true, N: rope, Every: nope + rope, X: x}})
	return qn, qe
}

// latentAttention writes a latent_attention composite (see the file
// comment).
func (l *lifter) latentAttention(c poot.Composite) {
	g := l.v.g
	a := c.Attrs
	res := c.Results[0]
	l.preview(res, "ct")
	get := func(k string) int { n, _ := a.Int(k); return n }
	h, nope, rope, vd, lora, rows := get("heads"), get("nope_dim"), get("rope_dim"), get("value_dim"), get("kv_lora_rank"), get("rows")
	scale, _ := a.Float("scale")
	q, cache := c.Operands[0], c.Operands[1]
	kw := lora + rope
	if h < 1 || nope < 1 || rope < 1 || vd < 1 || lora < 1 || scale == 0 || math.IsNaN(scale) || math.IsInf(scale, 0) {
		l.reject(ErrUnliftable, "a latent attention of %d heads of %d+%d channels, values %d, latent %d, scale %v", h, nope, rope, vd, lora, scale)
	}
	if rows != l.low.seqs() {
		l.reject(ErrUnliftable, "a latent attention over %d sequences in a deployment of %d", rows, l.low.seqs())
	}
	window, chunk := l.visible(c.Operands[2], cache, rows)
	if kt := g.Type(l.root(cache)); kt.Shape[1] != kw || l.cols(q) != h*(nope+rope) {
		l.reject(ErrUnliftable, "a latent cache %v and queries %v for %d heads of %d+%d channels over a latent of %d", kt, g.Type(q), h, nope, rope, lora)
	}
	wkb, wvb := l.latentWeights(c, h, nope, vd, lora)
	qn, qe := l.queryParts(q, h, nope, rope)
	ql, qa := l.fresh("ql"), l.fresh("qa")
	l.emit(lang.Let{Name: ql, Expr: lang.Binary{Op: lang.MatMul, A: qn, B: wkb, Heads: h}})
	l.emit(lang.Let{Name: qa, Expr: lang.Binary{Op: lang.Joined, A: ql, B: qe, Heads: h}})
	e := lang.Attention{Heads: h, Groups: 1, Causal: l.low.stacked, Window: window, Chunk: chunk}
	if scale != 1/math.Sqrt(float64(kw)) {
		e.Scale = scale
	}
	values := func(kc, name string) string {
		l.emit(lang.Let{Name: name, Expr: lang.Columns{N: lora, Every: kw, X: kc}})
		return name
	}
	var ol string
	if l.low.batch > 0 {
		ol = l.fresh("ol")
		l.declare(ol, l.low.batch, h*lora, lang.Real, declared{kind: bindScratch, value: -1})
		for b := range l.low.batch {
			qb, kc := l.n.freshSeq("qa", b), l.seq(cache, b)
			l.emit(lang.Let{Name: qb, Expr: lang.Row{Index: lang.Index{Num: b + 1}, X: qa}})
			e.Q, e.K, e.V, e.At = qb, kc, values(kc, l.n.freshSeq("Vl", b)), &lang.Index{Name: l.seqPos(b)}
			ob := l.n.freshSeq("ol", b)
			l.emit(lang.Let{Name: ob, Expr: e})
			l.emit(lang.SetRow{Target: ol, Row: lang.Index{Num: b + 1}, Value: ob})
		}
	} else {
		kc := l.ref(cache)
		e.Q, e.K, e.V, e.At = qa, kc, values(kc, l.fresh("Vl")), &lang.Index{Name: l.pos()}
		ol = l.fresh("ol")
		l.emit(lang.Let{Name: ol, Expr: e})
	}
	l.emit(lang.Let{Name: l.bind(res, "ct"), Expr: lang.Binary{Op: lang.MatMul, A: ol, B: wvb, Heads: h}})
}

// latentWeights declares the per-head products' weights of a latent
// attention, cut from its kv_b (H blocks of N key rows then V value rows,
// each L wide) or from its split k_b (H blocks L by N) and v_b (H blocks
// V by L).
func (l *lifter) latentWeights(c poot.Composite, h, nope, vd, lora int) (wkb, wvb string) {
	kvb, kbt, vb := c.Operands[3], c.Operands[4], c.Operands[5]
	if kvb >= 0 {
		return l.headWeight(kvb, "Wkb", bundle.HeadCut{Heads: h, Rows: nope + vd, Cols: lora, N: nope}),
			l.headWeight(kvb, "Wvb", bundle.HeadCut{Heads: h, Rows: nope + vd, Cols: lora, From: nope, N: vd, Transposed: true})
	}
	return l.headWeight(kbt, "Wkb", bundle.HeadCut{Heads: h, Rows: lora, Cols: nope, N: lora, Transposed: true}),
		l.headWeight(vb, "Wvb", bundle.HeadCut{Heads: h, Rows: vd, Cols: lora, N: vd, Transposed: true})
}

// headWeight declares a weight cut head by head from the constant id.
func (l *lifter) headWeight(id poot.ValueID, base string, cut bundle.HeadCut) string {
	if id < 0 {
		l.reject(ErrUnliftable, "a latent attention without its %s", base)
	}
	k, ok := l.constOf(id)
	if !ok {
		l.reject(ErrUnliftable, "the %s of a latent attention computed in the program", base)
	}
	key := fmt.Sprintf("%d %+v", k, cut)
	if n, ok := l.cuts[key]; ok {
		return n
	}
	val := l.v.g.Value(k)
	if val.Type.Shape.Size() != int64(cut.Heads*cut.Rows*cut.Cols) {
		l.reject(ErrUnliftable, "the weight %q is %v, not %d heads of %d by %d", val.Name, val.Type, cut.Heads, cut.Rows, cut.Cols)
	}
	rows, cols := cut.Declared()
	name := l.n.fresh(base)
	l.cuts[key] = name
	l.declare(name, rows, cols, lang.Real, declared{kind: bindWeight, value: k, heads: &cut})
	return name
}
