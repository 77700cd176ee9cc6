package rdu

import (
	"errors"
	"fmt"
	"slices"
	"strconv"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/lang"
)

// The tensor-parallel deployments split each layer kind's program over tp
// chips; the embedding and the head stay on the replicated spine. The
// split is found by propagating a layout through the kind's one-chip
// program (tplayout.go): a product of a replicated activation by a weight
// is column-parallel (each chip its columns of the weight: its heads, its
// feed-forward columns, its runs of a fused projection), the layout
// follows the columns through the statements that keep them apart (norms
// and rotations across heads, column views and joins, attention, the
// causal conv, the decay and the gated delta rule, activations, cache
// writes), and a product of a split activation by a weight is
// row-parallel: each chip's partial is summed by an all-reduce into a
// replicated value. Columns are dealt to the chips in whole units, a unit
// being an attention's key-value head (with its query heads), a gated
// delta's key head (with its value heads), a normalisation's head, or a
// block of 32 columns (one column where the blocks are fewer than the
// chips), in consecutive runs as even as the units allow.

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
		p := newTPPlan(tp, k.Name, typed.Types, m.Layers[k.Layers[0]].Bindings)
		p.classify(prog)
		if _, split := p.cols[k.Output]; split {
			p.fail("the layer's result %s is split", k.Output)
		}
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
		_, splitOut := p.cols[binder]
		use, sliced := p.slices[binder]
		_, partial := p.partial[binder]
		if d, ok := s.(lang.Declare); ok && (sliced || splitOut) {
			for c := range p.tp {
				d := d
				d.Name = chipName(binder, c)
				switch {
				case sliced && use.axis == "rows":
					d.Rows = p.held(use.like, c)
				case sliced:
					d.Cols = p.held(use.like, c)
				default:
					d.Cols = p.held(binder, c)
				}
				if d.Rows == 0 || d.Cols == 0 {
					p.fail("chip %d would hold none of %s", c, binder)
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
					p.fail("the sliced %s read on the spine", n)
				}
				if _, ok := p.cols[n]; ok {
					p.fail("the split %s read on the spine", n)
				}
			}
			out.Stmts = append(out.Stmts, s)
			continue
		}
		ar := bundle.AllReduce{Out: binder}
		for c := range p.tp {
			if splitOut && p.held(binder, c) == 0 {
				p.fail("chip %d would hold none of %s", c, binder)
			}
			st := s
			if l, ok := s.(lang.Let); ok {
				l.Expr = p.local(l.Expr, c)
				st = l
			}
			one := lang.Rename(&lang.Program{Stmts: []lang.Stmt{st}}, func(n string) string {
				_, split := p.cols[n]
				_, sl := p.slices[n]
				if split || sl || n == binder {
					return chipName(n, c)
				}
				return n
			}).Stmts[0]
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
		if _, split := p.cols[binder]; local[binder] && !split && !slices.Contains(nl, binder) {
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

// bindings binds a layer's names over the chips: each chip's slices of a
// cut weight (their byte runs in the checkpoint) and of a cut state.
func (p *tpPlan) bindings(one map[string]bundle.Binding) map[string]bundle.Binding {
	out := map[string]bundle.Binding{}
	for name, bd := range one {
		use, sliced := p.slices[name]
		_, split := p.cols[name]
		if !sliced && !split {
			out[name] = bd
			continue
		}
		if split {
			use = tpUse{axis: "cols", like: name}
		}
		p.stmt = p.decl[name]
		for c := range p.tp {
			cb := bd
			cb.Name = chipName(bd.Name, c)
			runs := p.runs(use.like)[c]
			switch bd.Source {
			case bundle.SourceWeight:
				cb.Slices = nil
				for _, r := range runs {
					cb.Slices = append(cb.Slices, p.slice(bd, use.axis, r.from, r.n))
				}
			case bundle.SourceState:
				cb.Slices = nil
				for _, r := range runs {
					cb.Slices = append(cb.Slices, bundle.Slice{Axis: use.axis, From: r.from, N: r.n})
				}
				if t := p.types[name]; use.axis == "rows" && t.Rows > 0 {
					// Sequence b's block of the state is the b-th block of
					// the chip's own storage.
					cb.Row = bd.Row / t.Rows * p.held(use.like, c)
				}
			}
			out[chipName(name, c)] = cb
		}
	}
	return out
}

// slice finds the byte runs of a declared matrix's rows or columns from
// … from+n-1 in the stored tensor.
func (p *tpPlan) slice(bd bundle.Binding, axis string, from, n int) bundle.Slice {
	p.binder = bd.Name
	dt, err := poot.ParseDType(bd.DType)
	s := bd.Shape
	if err != nil || len(s) < 1 || len(s) > 2 || len(bd.Parts) > 0 || bd.Heads != nil {
		p.fail("the weight %s stored %s%v", bd.Tensor, bd.DType, s)
	}
	if len(s) == 1 {
		s = []int{1, s[0]}
	}
	// Which stored axis the declared axis is: a transposed weight's
	// declared columns are its stored rows.
	storedRows := (axis == "cols") == bd.Transposed
	rowBytes := dt.RowBytes(int64(s[1]))
	out := bundle.Slice{Axis: axis, From: from, N: n}
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
			case bd.Source == bundle.SourceWeight && len(bd.Slices) > 0:
				for _, sl := range bd.Slices {
					n += sl.Bytes * sl.Count
				}
				key += name
			case bd.Source == bundle.SourceWeight:
				n = bd.Bytes
				if n == 0 {
					n = int64(types.Types[name].Rows) * int64(types.Types[name].Cols) * 4
				}
			case bd.Source == bundle.SourceState && types != nil:
				n, key = 4*int64(types.Types[name].Rows)*int64(types.Types[name].Cols), fmt.Sprint(bd.State, "@", bd.Row, bd.Slices)
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
