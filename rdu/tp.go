package rdu

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/lang"
)

// The tensor-parallel deployments split each layer kind's program over tp
// chips; the embedding and the head stay on the replicated spine. The
// split is found by propagating a layout through the kind's one-chip
// program: a product of a replicated activation by a weight is
// column-parallel (each chip its columns of the weight: its heads, its
// feed-forward columns), the layout follows the columns through the
// statements that keep them apart (norms and rotations across heads,
// attention, activations, cache writes), and a product of a split
// activation by a weight is row-parallel: each chip's partial is summed
// by an all-reduce into a replicated value. Columns are dealt to the chips
// in whole units, a unit being an attention's key-value head (with its
// query heads), a normalisation's head, or a block of 32 columns (one
// column when the width is not a multiple of 32), in consecutive runs as
// even as the units allow.

// ErrTensorParallel is the cause of a model the tensor-parallel deployment
// cannot split over the chips asked for.
var ErrTensorParallel = errors.New("the model does not split over the chips")

// TPError is a kind that does not split: the statement and why.
type TPError struct {
	Chips     int
	Kind      string
	Statement int
	Binder    string
	Detail    string
}

// Error formats the error on one line.
func (e *TPError) Error() string {
	return fmt.Sprintf("rdu: tensor parallelism over %d chips: kind %s, statement %d (%s): %v: %s", e.Chips, e.Kind, e.Statement, e.Binder, ErrTensorParallel, e.Detail)
}

// Unwrap returns ErrTensorParallel.
func (e *TPError) Unwrap() error { return ErrTensorParallel }

// tpClass is a set of split values that share one layout: width columns
// dealt in units (0 until resolved).
type tpClass struct {
	parent, width, units int
	fixed                bool   // units set by an attention
	heads                []int  // head counts the layout must respect
	what                 string // what a unit is, for refusals
	at                   int    // the statement that made the class, for refusals
	by                   string
}

type tpPlan struct {
	tp      int
	kind    string
	stmt    int
	binder  string
	classes []tpClass
	cls     map[string]int   // split name -> class
	partial map[string]int   // row-parallel product -> class of its operand
	slices  map[string]tpUse // sliced weight -> how
	types   map[string]lang.Type
	bind    map[string]bundle.Binding
}

// tpUse is how a weight is sliced: its declared rows or columns, dealt as
// class cls deals its columns.
type tpUse struct {
	axis string
	cls  int
}

func (p *tpPlan) fail(format string, args ...any) {
	panic(rejection{r: nil, tp: &TPError{Chips: p.tp, Kind: p.kind, Statement: p.stmt, Binder: p.binder, Detail: fmt.Sprintf(format, args...)}})
}

func (p *tpPlan) find(c int) int {
	for p.classes[c].parent != c {
		c = p.classes[c].parent
	}
	return c
}

func (p *tpPlan) newClass(width int, what string) int {
	p.classes = append(p.classes, tpClass{parent: len(p.classes), width: width, what: what, at: p.stmt, by: p.binder})
	return len(p.classes) - 1
}

func (p *tpPlan) union(a, b int) int {
	a, b = p.find(a), p.find(b)
	if a == b {
		return a
	}
	ca, cb := &p.classes[a], &p.classes[b]
	if ca.width != cb.width {
		p.fail("columns of two splits, %d and %d wide, combined", ca.width, cb.width)
	}
	if ca.fixed && cb.fixed && ca.units != cb.units {
		p.fail("two attentions' heads, %d and %d key-value heads, combined", ca.units, cb.units)
	}
	if cb.fixed {
		ca.fixed, ca.units, ca.what = true, cb.units, cb.what
	}
	ca.heads = append(ca.heads, cb.heads...)
	cb.parent = a
	return a
}

func (p *tpPlan) fix(c, units int, what string) {
	c = p.find(c)
	k := &p.classes[c]
	if k.fixed && k.units != units {
		p.fail("%d and %d key-value heads over one split", k.units, units)
	}
	if units < 1 || k.width%units != 0 {
		p.fail("%d key-value heads over %d columns", units, k.width)
	}
	k.fixed, k.units, k.what = true, units, what
}

// resolve deals each class's units: an attention's key-value heads, else
// the heads its norms and rotations need, else blocks of 32 columns.
func (p *tpPlan) resolve() {
	for i := range p.classes {
		if p.find(i) != i {
			continue
		}
		k := &p.classes[i]
		p.stmt, p.binder = k.at, k.by
		if !k.fixed {
			k.units, k.what = k.width, "columns"
			if k.width%32 == 0 {
				k.units, k.what = k.width/32, "blocks of 32 columns"
			}
			for _, h := range k.heads {
				k.units, k.what = gcd(k.units, h), "heads"
			}
		}
		for _, h := range k.heads {
			if h%k.units != 0 {
				p.fail("%d %s dealt to the chips do not keep %d heads of %d columns whole", k.units, k.what, h, k.width/h)
			}
		}
		if k.units < p.tp {
			p.fail("%d %s do not split over %d chips: a chip would hold none", k.units, k.what, p.tp)
		}
	}
}

func gcd(a, b int) int {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}

// cut is chip c's run of class cls's columns: its first column and width.
func (p *tpPlan) cut(cls, c int) (int, int) {
	k := p.classes[p.find(cls)]
	lo, hi := c*k.units/p.tp, (c+1)*k.units/p.tp
	w := k.width / k.units
	return lo * w, (hi - lo) * w
}

// share is the part of n (a head count, a width) chip c holds of class
// cls.
func (p *tpPlan) share(cls, c, n int) int {
	k := p.classes[p.find(cls)]
	lo, hi := c*k.units/p.tp, (c+1)*k.units/p.tp
	return n * (hi - lo) / k.units
}

// reads lists the names a statement reads, and the name it binds or
// writes.
func reads(s lang.Stmt) (names []string, binder string) {
	switch s := s.(type) {
	case lang.Declare:
		return nil, s.Name
	case lang.Scalar:
		return nil, s.Name
	case lang.SetItem:
		return nil, s.Name
	case lang.SetRow:
		binder = s.Target
	case lang.SetRows:
		binder = s.Target
	case lang.Let:
		binder = s.Name
	}
	first := true
	lang.Rename(&lang.Program{Stmts: []lang.Stmt{s}}, func(n string) string {
		if _, isLet := s.(lang.Let); isLet && first {
			first = false
			return n
		}
		if n != binder {
			names = append(names, n)
		}
		return n
	})
	return names, binder
}

// classify finds the split of a kind's program.
func (p *tpPlan) classify(prog *lang.Program) {
	for i, s := range prog.Stmts {
		if l, ok := s.(lang.Let); ok {
			p.stmt, p.binder = i, l.Name
			if _, moe := l.Expr.(lang.MoE); moe {
				p.fail("an expert mixture: the tensor-parallel deployment splits heads and dense feed-forward columns, not experts")
			}
			if b, ok := l.Expr.(lang.Binary); ok && b.Op == lang.MatMul && b.Heads > 0 && p.bind[b.B].Source == bundle.SourceWeight {
				p.fail("latent attention (%s, a product head by head with %s): every chip would need the whole latent cache", l.Name, b.B)
			}
		}
	}
	keep := p.sharedKV(prog)
	for i, s := range prog.Stmts {
		names, binder := reads(s)
		p.stmt, p.binder = i, binder
		var split []string
		for _, n := range names {
			if _, ok := p.cls[n]; ok {
				split = append(split, n)
			}
		}
		weight := func(n string) bool { return p.bind[n].Source == bundle.SourceWeight }
		width := p.types[binder].Cols
		like := func(n string) { p.cls[binder] = p.cls[n] }
		switch s := s.(type) {
		case lang.Declare, lang.Scalar, lang.SetItem:
			continue
		case lang.SetRow, lang.SetRows:
			val := ""
			switch w := s.(type) {
			case lang.SetRow:
				val = w.Value
			case lang.SetRows:
				val = w.Value
			}
			if c, ok := p.cls[val]; ok {
				if old, ok := p.cls[binder]; ok {
					p.cls[binder] = p.union(old, c)
				} else {
					p.cls[binder] = c
				}
			}
			continue
		case lang.Let:
			switch e := s.Expr.(type) {
			case lang.MoE:
				p.fail("an expert mixture: the tensor-parallel deployment splits heads and dense feed-forward columns, not experts")
			case lang.CausalConv, lang.Decay, lang.GatedDelta:
				p.fail("a recurrent mixer")
			case lang.Binary:
				switch {
				case e.Op == lang.MatMul && weight(e.B) && e.Heads == 0 && len(split) == 0:
					if p.types[e.B].Cols == 1 || keep[binder] {
						continue // a one-column product (a shared expert's gate) stays on the spine
					}
					c := p.newClass(width, "columns")
					p.cls[binder], p.slices[e.B] = c, tpUse{axis: "cols", cls: c}
					continue
				case e.Op == lang.MatMul && weight(e.B) && e.Heads == 0 && len(split) == 1 && split[0] == e.A:
					p.partial[binder] = p.cls[e.A]
					p.slices[e.B] = tpUse{axis: "rows", cls: p.cls[e.A]}
					continue
				case (e.Op == lang.Plus || e.Op == lang.Hadamard) && len(split) == 2:
					p.cls[binder] = p.union(p.cls[e.A], p.cls[e.B])
					continue
				case (e.Op == lang.Plus || e.Op == lang.Hadamard) && len(split) == 1:
					other := e.B
					if split[0] == e.B {
						other = e.A
					}
					if !weight(other) || p.types[other].Rows != 1 {
						p.fail("a chip's columns of %s combined with the replicated %s", split[0], other)
					}
					like(split[0])
					p.slices[other] = tpUse{axis: "cols", cls: p.cls[split[0]]}
					continue
				}
			case lang.RMSNorm, lang.L2Norm:
				if len(split) == 0 {
					continue
				}
				x, w, heads := "", "", 0
				if n, ok := e.(lang.RMSNorm); ok {
					x, w, heads = n.X, n.Weight, n.Heads
				} else {
					n := e.(lang.L2Norm)
					x, heads = n.X, n.Heads
				}
				if x != split[0] || len(split) != 1 || heads < 1 {
					p.fail("a norm over the whole row of a split value")
				}
				if w != "" && p.types[w].Cols != width/heads {
					p.fail("a norm weight %d wide over heads of %d columns", p.types[w].Cols, width/heads)
				}
				like(x)
				k := &p.classes[p.find(p.cls[x])]
				k.heads = append(k.heads, heads)
				continue
			case lang.Rope:
				if len(split) == 0 {
					continue
				}
				like(e.X)
				k := &p.classes[p.find(p.cls[e.X])]
				k.heads = append(k.heads, e.Heads)
				continue
			case lang.Attention:
				if len(split) == 0 {
					continue
				}
				if len(split) == 1 && split[0] == e.Q && e.Groups == 1 && e.Sinks == "" {
					// One key-value head, on the spine: each chip its
					// query heads over the shared keys and values.
					like(e.Q)
					k := &p.classes[p.find(p.cls[e.Q])]
					k.heads = append(k.heads, e.Heads)
					c := p.newClass(width, "heads")
					p.classes[c].heads = []int{e.Heads}
					p.cls[binder] = c
					continue
				}
				if len(split) != 3 || e.Sinks != "" {
					p.fail("an attention whose queries, keys and values are not all split by heads, or with sinks")
				}
				what := "key-value heads"
				p.fix(p.cls[e.Q], e.Groups, what)
				p.fix(p.cls[e.K], e.Groups, what)
				p.fix(p.cls[e.V], e.Groups, what)
				c := p.newClass(width, what)
				p.fix(c, e.Groups, what)
				p.cls[binder] = c
				continue
			case lang.Unary, lang.Scaled, lang.Capped, lang.Row:
				if len(split) == 1 {
					if u, ok := e.(lang.Unary); ok && u.Op == lang.Argmax {
						p.fail("an argmax of a split value")
					}
					like(split[0])
				}
				if len(split) <= 1 {
					continue
				}
			case lang.SwiGLU:
				if len(split) == 2 {
					p.cls[binder] = p.union(p.cls[e.Gate], p.cls[e.Up])
					continue
				}
			}
		}
		if len(split) > 0 {
			p.fail("a statement the tensor-parallel deployment does not split (it reads the split %s)", strings.Join(split, ", "))
		}
	}
}

// sharedKV lists the names an attention of one key-value head reads its
// keys and values through: over more than one chip they stay on the
// spine, each chip holding the one head whole.
func (p *tpPlan) sharedKV(prog *lang.Program) map[string]bool {
	keep := map[string]bool{}
	if p.tp == 1 {
		return keep
	}
	def := map[string][]string{}
	var roots []string
	for _, s := range prog.Stmts {
		names, binder := reads(s)
		if _, ok := s.(lang.Declare); !ok {
			def[binder] = append(def[binder], names...)
		}
		if l, ok := s.(lang.Let); ok {
			if a, ok := l.Expr.(lang.Attention); ok && a.Groups == 1 {
				roots = append(roots, a.K, a.V)
			}
		}
	}
	var mark func(string)
	mark = func(n string) {
		if keep[n] {
			return
		}
		keep[n] = true
		for _, r := range def[n] {
			mark(r)
		}
	}
	for _, r := range roots {
		mark(r)
	}
	return keep
}

// chipName is the name chip c gives a split name.
func chipName(n string, c int) string { return n + "_c" + strconv.Itoa(c) }

// TensorParallel writes the tensor-parallel form of a decode or batched
// bundle over tp chips: each kind's program over the chips, the embedding
// and the head on the replicated spine, the manifest saying which rows or
// columns of which checkpoint tensor each chip loads. A kind that does not
// split over tp chips is a *TPError.
func TensorParallel(b *bundle.Bundle, tp int) (out *bundle.Bundle, err error) {
	m := b.Manifest
	switch {
	case tp < 1:
		return nil, fmt.Errorf("rdu: tensor parallelism over %d chips", tp)
	case m.Deployment.Kind == Prefill:
		return nil, fmt.Errorf("rdu: the %s deployment is not tensor-parallel (decode and batched bundles are)", Prefill)
	case m.Deployment.TP != 0:
		return nil, fmt.Errorf("rdu: the bundle is already split over %d chips", m.Deployment.TP)
	}
	defer func() {
		if r := recover(); r != nil {
			rj, ok := r.(rejection)
			if !ok || rj.tp == nil {
				panic(r)
			}
			out, err = nil, rj.tp
		}
	}()
	nb := &bundle.Bundle{Manifest: m, Programs: map[string]*lang.Program{}, Tables: b.Tables}
	nb.Manifest.Deployment.TP = tp
	nb.Manifest.Kinds = nil
	nb.Manifest.Layers = make([]bundle.Layer, len(m.Layers))
	for name, p := range b.Programs {
		nb.Programs[name] = p
	}
	for _, k := range m.Kinds {
		prog := b.Programs[k.Name]
		typed, err := lang.Check(prog)
		if err != nil {
			return nil, err
		}
		p := &tpPlan{tp: tp, kind: k.Name, cls: map[string]int{}, partial: map[string]int{}, slices: map[string]tpUse{},
			types: typed.Types, bind: m.Layers[k.Layers[0]].Bindings}
		p.classify(prog)
		p.resolve()
		np, nk := p.emit(prog, k)
		nb.Programs[k.Name] = np
		for _, l := range k.Layers {
			nb.Manifest.Layers[l] = bundle.Layer{Layer: l, Kind: k.Name, Bindings: p.bindings(m.Layers[l].Bindings)}
		}
		nb.Manifest.Kinds = append(nb.Manifest.Kinds, nk)
	}
	if err := nb.Check(); err != nil {
		return nil, err
	}
	return nb, nil
}

// emit writes the kind's program over the chips.
func (p *tpPlan) emit(prog *lang.Program, k bundle.Kind) (*lang.Program, bundle.Kind) {
	out := &lang.Program{Name: prog.Name}
	k.Placement = map[string]int{}
	k.AllReduce = nil
	local := map[string]bool{}
	for _, n := range k.Local {
		local[n] = true
	}
	var nl []string
	addLocal := func(base, n string) {
		if local[base] {
			nl = append(nl, n)
		}
	}
	for i, s := range prog.Stmts {
		_, binder := reads(s)
		p.stmt, p.binder = i, binder
		c0, splitOut := p.cls[binder]
		use, sliced := p.slices[binder]
		_, partial := p.partial[binder]
		if d, ok := s.(lang.Declare); ok && (sliced || splitOut) {
			for c := range p.tp {
				d := d
				d.Name = chipName(binder, c)
				if sliced && use.axis == "rows" {
					_, d.Rows = p.cut(use.cls, c)
				} else if sliced {
					_, d.Cols = p.cut(use.cls, c)
				} else {
					_, d.Cols = p.cut(c0, c)
				}
				out.Stmts = append(out.Stmts, d)
				k.Placement[d.Name] = c
				addLocal(binder, d.Name)
			}
			continue
		}
		if !splitOut && !partial {
			names, _ := reads(s)
			for _, n := range names {
				if _, ok := p.slices[n]; ok {
					p.fail("the sliced weight %s read on the spine", n)
				}
				if _, ok := p.cls[n]; ok {
					p.fail("the split %s read on the spine", n)
				}
			}
			out.Stmts = append(out.Stmts, s)
			continue
		}
		cls := c0
		if partial {
			cls = p.partial[binder]
		}
		ar := bundle.AllReduce{Out: binder}
		for c := range p.tp {
			one := lang.Rename(&lang.Program{Stmts: []lang.Stmt{s}}, func(n string) string {
				_, split := p.cls[n]
				_, sl := p.slices[n]
				if split || sl || n == binder {
					return chipName(n, c)
				}
				return n
			}).Stmts[0]
			if l, ok := one.(lang.Let); ok {
				l.Expr = p.scaleHeads(l.Expr, cls, c)
				one = l
			}
			out.Stmts = append(out.Stmts, one)
			k.Placement[chipName(binder, c)] = c
			addLocal(binder, chipName(binder, c))
			ar.Partials = append(ar.Partials, chipName(binder, c))
		}
		if !partial {
			continue
		}
		if p.tp == 1 {
			out.Stmts = append(out.Stmts, lang.Let{Name: binder, Expr: lang.Scaled{X: ar.Partials[0], By: 1}})
		}
		acc := ar.Partials[0]
		for c := 1; c < p.tp; c++ {
			f := binder
			if c < p.tp-1 {
				f = binder + "_f" + strconv.Itoa(c)
				addLocal(binder, f)
			}
			out.Stmts = append(out.Stmts, lang.Let{Name: f, Expr: lang.Binary{Op: lang.Plus, A: acc, B: ar.Partials[c]}})
			ar.Folds = append(ar.Folds, f)
			acc = f
		}
		k.AllReduce = append(k.AllReduce, ar)
	}
	stmts, decls := len(out.Stmts), 0
	for _, s := range out.Stmts {
		_, binder := reads(s)
		if _, split := p.cls[binder]; local[binder] && !split && !slices.Contains(nl, binder) {
			if _, sl := p.slices[binder]; !sl {
				nl = append(nl, binder)
			}
		}
		switch s.(type) {
		case lang.Declare, lang.Scalar:
			decls++
		}
	}
	k.Local = nl
	k.Statements, k.Declarations = stmts, decls
	return out, k
}

// scaleHeads gives chip c's share of the heads a statement of class cls
// names.
func (p *tpPlan) scaleHeads(e lang.Expr, cls, c int) lang.Expr {
	switch x := e.(type) {
	case lang.RMSNorm:
		x.Heads = p.share(cls, c, x.Heads)
		return x
	case lang.L2Norm:
		x.Heads = p.share(cls, c, x.Heads)
		return x
	case lang.Rope:
		x.Heads = p.share(cls, c, x.Heads)
		return x
	case lang.Attention:
		if x.Groups > 1 {
			x.Groups = p.share(cls, c, x.Groups)
		}
		x.Heads = p.share(cls, c, x.Heads)
		return x
	}
	return e
}

// bindings binds a layer's names over the chips: each chip's slice of a
// split weight (its byte runs in the checkpoint) and of a split cache.
func (p *tpPlan) bindings(one map[string]bundle.Binding) map[string]bundle.Binding {
	out := map[string]bundle.Binding{}
	for name, bd := range one {
		use, sliced := p.slices[name]
		cls, split := p.cls[name]
		if !sliced && !split {
			out[name] = bd
			continue
		}
		for c := range p.tp {
			cb := bd
			cb.Name = chipName(bd.Name, c)
			switch {
			case sliced:
				from, n := p.cut(use.cls, c)
				cb.Slice = p.slice(bd, use.axis, from, n)
			default:
				cb.Col, cb.Cols = p.cut(cls, c)
			}
			out[chipName(name, c)] = cb
		}
	}
	return out
}

// slice finds the byte runs of a declared matrix's rows or columns from
// … from+n-1 in the stored tensor.
func (p *tpPlan) slice(bd bundle.Binding, axis string, from, n int) *bundle.Slice {
	p.binder = bd.Name
	dt, err := poot.ParseDType(bd.DType)
	s := bd.Shape
	if err != nil || len(s) < 1 || len(s) > 2 {
		p.fail("the weight %s stored %s%v", bd.Tensor, bd.DType, s)
	}
	if len(s) == 1 {
		s = []int{1, s[0]}
	}
	// Which stored axis the declared axis is: a transposed weight's
	// declared columns are its stored rows.
	storedRows := (axis == "cols") == bd.Transposed
	rowBytes := dt.RowBytes(int64(s[1]))
	out := &bundle.Slice{Axis: axis, From: from, N: n}
	if storedRows {
		out.Shape = []int{n, s[1]}
		out.Offset, out.Bytes, out.Count = int64(from)*rowBytes, int64(n)*rowBytes, 1
	} else {
		off, size := dt.RowBytes(int64(from)), dt.RowBytes(int64(n))
		if off < 0 || size < 0 {
			p.fail("the %s tensor %s cut at columns %d…%d of %d, inside its blocks of %d", bd.DType, bd.Tensor, from, from+n, s[1], dt.BlockElems())
		}
		out.Shape = []int{s[0], n}
		out.Offset, out.Bytes, out.Count = off, size, int64(s[0])
	}
	out.Stride = rowBytes
	if len(bd.Shape) == 1 {
		out.Shape = out.Shape[1:]
	}
	return out
}

// ChipBytes is what each chip of a bundle holds: the bytes of the weights
// it loads (the spine's, every chip loads alike, and its own slices) and
// of its caches at the bundle's context. One chip's bundle is one chip.
func ChipBytes(b *bundle.Bundle) (weights, kv []int64) {
	m := &b.Manifest
	chips := max(m.Deployment.TP, 1)
	weights, kv = make([]int64, chips), make([]int64, chips)
	place := map[string]map[string]int{}
	for _, k := range m.Kinds {
		place[k.Name] = k.Placement
	}
	seen := map[string]bool{}
	add := func(kind string, bs map[string]bundle.Binding, types *lang.Typed) {
		for name, bd := range bs {
			c, onChip := place[kind][name]
			var n int64
			key := bd.Const + "\x00" + bd.File
			switch {
			case bd.Source == bundle.SourceWeight && bd.Slice != nil:
				n, key = bd.Slice.Bytes*bd.Slice.Count, key+name
			case bd.Source == bundle.SourceWeight:
				n = bd.Bytes
				if n == 0 {
					n = int64(types.Types[name].Rows) * int64(types.Types[name].Cols) * 4
				}
			case bd.Source == bundle.SourceState && types != nil:
				n, key = 4*int64(types.Types[name].Rows)*int64(types.Types[name].Cols), fmt.Sprint(bd.State, "@", bd.Row, "+", bd.Col)
			default:
				continue
			}
			if seen[key] {
				continue
			}
			seen[key] = true
			for ch := range chips {
				if onChip && ch != c {
					continue
				}
				if bd.Source == bundle.SourceState {
					kv[ch] += n
				} else {
					weights[ch] += n
				}
			}
		}
	}
	typed := map[string]*lang.Typed{}
	for _, name := range b.Names() {
		if t, err := lang.Check(b.Programs[name]); err == nil {
			typed[name] = t
		}
	}
	add("", m.Embed.Bindings, typed[m.Embed.Name])
	add("", m.Head.Bindings, typed[m.Head.Name])
	for _, l := range m.Layers {
		add(l.Kind, l.Bindings, typed[l.Kind])
	}
	return weights, kv
}
