package rdu

import (
	"cmp"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/lang"
)

// Stored says where a constant's bytes lie in a checkpoint: the stored
// tensor's name, the file, and the byte range; or, for a constant stacked
// from tensors of one shape (per-expert matrices), each tensor's, in
// order, Bytes their sum.
type Stored struct {
	Tensor        string
	File          string
	Offset, Bytes int64
	Parts         []Stored
}

// Locator says where a graph constant is stored. A constant whose bytes are
// neither one range of one file nor stacked tensors (a tensor transposed
// or reordered at load) is an error.
type Locator func(constant string) (Stored, error)

// Options configure a lowering.
type Options struct {
	// Locate gives each weight's byte range; nil leaves the ranges out, and
	// the weights are then found by their constant's name (as an
	// interpreter given the constants in memory finds them).
	Locate Locator
	// Checkpoint names the model in the manifest.
	Checkpoint string
	// Consts are the graph's constants, for host tables computed from one
	// (a GGUF's rotary frequency factors); nil when none is.
	Consts interp.Consts
	// Deployment is Decode (the default), Prefill or Batched.
	Deployment string
	// TP, when 1 or more, writes the decode or batched deployment
	// tensor-parallel over TP chips (TensorParallel).
	TP int
}

// The deployments Lower writes.
const (
	// Decode runs one token of one sequence a run: tok and pos are runtime
	// inputs, every attention layer appends to and attends over its KV
	// cache. A step of several tokens runs as that many decode runs.
	Decode = "decode"
	// Prefill runs the step's tokens, a chunk of one sequence, as the rows
	// of one run: toks and pos_s0 (the chunk's first position) are runtime
	// inputs, the caches are the decode deployment's (so a decode bundle
	// continues from them), and the head reads the last row when the step
	// wants the last logits only.
	Prefill = "prefill"
	// Batched runs one token of each of the step's sequences (its rows) a
	// run, stacked as the rows of the programs' hidden states: toks and
	// each sequence's position pos_s0, pos_s1, … are runtime inputs, each
	// sequence has its own caches (Kc3_s1), and every weight is read once
	// for all of them. A step of several tokens a sequence runs as that
	// many runs.
	Batched = "batched"
)

// lowering is the state of one Lower call.
type lowering struct {
	v          *stepView
	stacked    bool // the prefill deployment: the chunk's tokens as rows
	batch      int  // the batched deployment's sequences; 0 otherwise
	ctx        int
	cacheIndex map[[32]byte]int
	tables     []*table
	rotations  map[[32]byte][2]*table
	positional map[[32]byte]*table
	tokenDep   map[poot.ValueID]bool
}

func (low *lowering) nLayers() int { return len(low.v.layers) }

// seqs is the number of sequences a run of the bundle holds.
func (low *lowering) seqs() int { return max(low.batch, 1) }

// rowsNamed says the programs' hidden states are named as stacked rows
// (X, bxo0): the prefill and batched deployments.
func (low *lowering) rowsNamed() bool { return low.stacked || low.batch > 0 }

// StepRows returns the number of sequences (rows) of a traced step: the
// rows its attention cores are recorded over, 1 when it has none.
func StepRows(g *poot.Graph) int {
	rows := 1
	for _, c := range g.Composites() {
		if r, ok := c.Attrs.Int("rows"); ok && c.Name == "attention" {
			rows = max(rows, r)
		}
	}
	return rows
}

// Lower writes the decode bundle of a traced step of one sequence: the
// embedding program, one program per layer kind, the head program, and the
// manifest binding every layer. The step may have several new tokens: the
// bundle runs them one at a time, and is the bundle of the decode step of
// the same model. A graph the lowering cannot write is a *StructureError
// or a *Reject.
func Lower(g *poot.Graph, opts Options) (*bundle.Bundle, error) {
	r, err := readStep(g)
	if err != nil {
		return nil, err
	}
	return r.lower(opts)
}

// stepRead is what lowering learns from reading every layer of a step:
// its programs, the layer kinds and how values flow between them. It is
// the part of lowering whose cost grows with depth (as tracing's does);
// what follows it works a kind at a time.
type stepRead struct {
	g     *poot.Graph
	v     *stepView
	kinds []Kind
	flow  *flowInfo
}

func readStep(g *poot.Graph) (*stepRead, error) {
	v, err := analyse(g)
	if err != nil {
		return nil, err
	}
	kinds, err := v.kinds()
	if err != nil {
		return nil, err
	}
	flow, err := v.flow()
	if err != nil {
		return nil, err
	}
	return &stepRead{g: g, v: v, kinds: kinds, flow: flow}, nil
}

// lower writes the bundle of a step read by readStep.
func (r *stepRead) lower(opts Options) (*bundle.Bundle, error) {
	g, v, kinds, flow := r.g, r.v, r.kinds, r.flow
	low := &lowering{v: v, rotations: map[[32]byte][2]*table{}, positional: map[[32]byte]*table{}, tokenDep: map[poot.ValueID]bool{}, cacheIndex: map[[32]byte]int{}}
	rows := StepRows(g)
	switch opts.Deployment {
	case "", Decode, Prefill:
		if rows > 1 {
			return nil, structureErr("a step of %d sequences: the %s deployment runs one (lower it as the batched deployment)", rows, cmp.Or(opts.Deployment, Decode))
		}
		low.stacked = opts.Deployment == Prefill
	case Batched:
		if v.tokens%rows != 0 {
			return nil, structureErr("%d tokens for %d sequences", v.tokens, rows)
		}
		low.batch = rows
	default:
		return nil, fmt.Errorf("rdu: the %q deployment: this version writes %q, %q and %q bundles", opts.Deployment, Decode, Prefill, Batched)
	}
	var havePos, haveTok bool
	for _, id := range g.Inputs(poot.Slot) {
		val := g.Value(id)
		switch val.Slot {
		case poot.SlotPos:
			havePos = true
			if !val.HasRange || val.Min != 0 || val.Max < 0 {
				return nil, structureErr("the position slot has no range from 0")
			}
			low.ctx = int(val.Max) + 1
			if !val.Type.Shape.Equal(poot.Shape{v.tokens}) {
				return nil, structureErr("positions %v for %d tokens", val.Type, v.tokens)
			}
		case poot.SlotToken:
			haveTok = true
		default:
			return nil, structureErr("the slot %q of a paged cache: the language writes a cache a sequence, a position a row, and has no form for rows a table of slots chooses", val.Name)
		}
	}
	if !havePos || !haveTok || v.tokens < 1 {
		return nil, structureErr("the step has no token and position slots")
	}
	embed, err := low.lift("embed", v.embed, -1, flow.out[0])
	if err != nil {
		return nil, err
	}
	var kindProgs []*lifted
	for _, k := range kinds {
		l0 := k.Layers[0]
		p, err := low.lift(k.Name, v.layers[l0], l0, flow.out[1+l0])
		if err != nil {
			if r, ok := err.(*Reject); ok {
				r.Program = fmt.Sprintf("%s (layer %d)", k.Name, l0)
			}
			return nil, err
		}
		kindProgs = append(kindProgs, p)
	}
	head, err := low.lift("head", v.head, -1, flow.out[len(flow.out)-1])
	if err != nil {
		return nil, err
	}
	if _, ok := head.decls["next"]; ok {
		return nil, structureErr("the head binds %q, the name of the token it picks", "next")
	}
	switch {
	case low.batch > 0:
		for b := range low.batch {
			lg, next := fmt.Sprintf("logits_s%d", b), fmt.Sprintf("next_s%d", b)
			if _, ok := head.decls[lg]; ok {
				return nil, structureErr("the head binds %q, the name of a sequence's logits", lg)
			}
			head.prog.Stmts = append(head.prog.Stmts, lang.Let{Name: lg, Expr: lang.Row{Index: lang.Index{Num: b + 1}, X: head.output}},
				lang.Let{Name: next, Expr: lang.Unary{Op: lang.Argmax, X: lg}})
			head.nexts = append(head.nexts, next)
		}
	case !low.stacked || head.lastOnly || v.tokens == 1:
		head.prog.Stmts = append(head.prog.Stmts, lang.Let{Name: "next", Expr: lang.Unary{Op: lang.Argmax, X: head.output}})
		head.next = "next"
	}
	if err := low.evalTables(opts.Consts); err != nil {
		return nil, err
	}
	b, err := low.assemble(opts, kinds, embed, kindProgs, head)
	if err == nil && opts.TP > 0 {
		b, err = TensorParallel(b, opts.TP)
	}
	if err == nil {
		remember(g, v, flow)
	}
	return b, err
}

// flowInfo is how values pass between the programs: out[0] is the
// embedding's result, out[1+l] layer l's, out[len-1] the head's (the
// step's logits).
type flowInfo struct{ out []poot.ValueID }

// flow finds each program's one result and checks that each program reads
// the one before it: the embedding's result feeds layer 0, layer l's feeds
// layer l+1, the last layer's the head, and the head's is the step's only
// output.
func (v *stepView) flow() (*flowInfo, error) {
	n := len(v.layers)
	progs := make([]int, len(v.eqns)) // 0 embed, 1+l layer, n+1 head, -1 none
	for i := range progs {
		progs[i] = -1
	}
	for _, e := range v.embed {
		progs[e] = 0
	}
	for l, eqns := range v.layers {
		for _, e := range eqns {
			progs[e] = 1 + l
		}
	}
	for _, e := range v.head {
		progs[e] = n + 1
	}
	out := make([]poot.ValueID, n+2)
	for i := range out {
		out[i] = -1
	}
	reads := make([]map[int]bool, n+2)
	for i := range reads {
		reads[i] = map[int]bool{}
	}
	for i, e := range v.eqns {
		p := progs[i]
		if p < 0 {
			continue
		}
		for _, in := range e.Inputs {
			q := -1
			if pr := v.prod[in]; pr >= 0 {
				q = progs[pr]
			}
			if q < 0 || q == p || v.table[in] {
				continue
			}
			if out[q] >= 0 && out[q] != in {
				return nil, &Reject{Program: progName(q, n), Binder: progName(q, n) + " result", Err: ErrHyperConnections,
					Detail: fmt.Sprintf("it leaves two hidden streams (%%%d and %%%d)", out[q], in)}
			}
			out[q] = in
			reads[p][q] = true
		}
	}
	outs := v.g.Outputs()
	if len(outs) != 1 {
		return nil, structureErr("the step has %d outputs; the decode deployment returns the logits alone", len(outs))
	}
	if p := v.prod[outs[0]]; p < 0 || progs[p] != n+1 {
		return nil, structureErr("the step's output is not computed by the head")
	}
	out[n+1] = outs[0]
	for p := 1; p <= n+1; p++ {
		if !reads[p][p-1] || len(reads[p]) != 1 {
			var from []string
			for q := range reads[p] {
				from = append(from, progName(q, n))
			}
			slices.Sort(from)
			detail := fmt.Sprintf("it reads the results of %v; a program reads the one before it (%s) alone", from, progName(p-1, n))
			if len(reads[p]) > 1 {
				return nil, &Reject{Program: progName(p, n), Binder: LayerInput(p - 1), Err: ErrHyperConnections, Detail: detail}
			}
			return nil, structureErr("program %s: %s", progName(p, n), detail)
		}
	}
	return &flowInfo{out: out}, nil
}

func progName(p, n int) string {
	switch {
	case p == 0:
		return "embed"
	case p == n+1:
		return "head"
	}
	return fmt.Sprintf("layer %d", p-1)
}

// rebind gives the name layer to's program calls what layer from's calls
// name: the hidden state by position, a per-layer name (local) with its
// suffix changed, anything else (tables, runtime inputs) as is.
func rebind(name string, from, to int, local map[string]bool) string {
	if name == LayerInput(from) {
		return LayerInput(to)
	}
	if name == StackedInput(from) {
		return StackedInput(to)
	}
	if local[name] {
		seq := ""
		if i := strings.LastIndex(name, "_s"); i > 0 && isDigits(name[i+2:]) {
			name, seq = name[:i], name[i:]
		}
		return strings.TrimSuffix(name, strconv.Itoa(from)) + strconv.Itoa(to) + seq
	}
	return name
}

func (low *lowering) assemble(opts Options, kinds []Kind, embed *lifted, progs []*lifted, head *lifted) (*bundle.Bundle, error) {
	g := low.v.g
	data, offs := low.tableBytes()
	m := bundle.Manifest{
		Format:     bundle.Format,
		Deployment: bundle.Deployment{Kind: Decode, Ctx: low.ctx, Tokens: low.v.tokens},
		Checkpoint: opts.Checkpoint,
		Inputs: []bundle.Input{
			{Name: "tok", Meaning: "the token's id plus one: its row of the embedding"},
			{Name: "pos", Meaning: "the token's position plus one (positions count from 1)"},
		},
		Output:   head.output,
		Next:     head.next,
		Nexts:    head.nexts,
		LastOnly: head.lastOnly,
	}
	switch {
	case low.stacked:
		m.Deployment.Kind = Prefill
		m.Inputs = []bundle.Input{
			{Name: "toks", Meaning: "the chunk's token ids plus one, in order"},
			{Name: "pos_s0", Meaning: "the chunk's first position plus one; the chunk's tokens sit at the positions after it"},
			{Name: "poss", Meaning: "the chunk's positions plus one, in order (the rows of the tables of the positions)"},
		}
	case low.batch > 0:
		m.Deployment.Kind, m.Deployment.Batch = Batched, low.batch
		m.Inputs = []bundle.Input{{Name: "toks", Meaning: "each sequence's token id plus one, in the order of the sequences"}}
		for b := range low.batch {
			m.Inputs = append(m.Inputs, bundle.Input{Name: fmt.Sprintf("pos_s%d", b), Meaning: fmt.Sprintf("sequence %d's position plus one", b)})
		}
	}
	for i, t := range low.tables {
		m.Tables = append(m.Tables, bundle.Table{Name: t.name, Rows: low.ctx, Cols: t.cols, Offset: offs[i], Meaning: t.meaning})
	}
	b := &bundle.Bundle{Programs: map[string]*lang.Program{}, Tables: data}
	bindings := func(p *lifted, rename func(string) string, layerIdx int, ren map[string]string) (map[string]bundle.Binding, error) {
		out := map[string]bundle.Binding{}
		for name, d := range p.decls {
			bd := bundle.Binding{Name: rename(name)}
			switch d.kind {
			case bindWeight:
				c := g.Value(d.value).Name
				if ren != nil {
					c = ren[c]
				}
				var err error
				if bd, err = low.weightBinding(opts, bd.Name, c, d); err != nil {
					return nil, err
				}
			case bindState:
				s := g.Value(d.value).Name
				if ren != nil {
					s = ren[s]
				}
				bd.Source, bd.State, bd.Row, bd.Recurrent = bundle.SourceState, s, d.row, d.recurrent
			case bindTable:
				bd.Source, bd.Table = bundle.SourceTable, d.table.name
			case bindInput:
				bd.Source = bundle.SourceInput
				bd.From = "embed"
				if layerIdx > 0 {
					bd.From = fmt.Sprintf("layer %d", layerIdx-1)
				} else if layerIdx < 0 {
					bd.From = fmt.Sprintf("layer %d", low.nLayers()-1)
				}
			case bindRuntime:
				bd.Source = bundle.SourceRuntime
			case bindScratch:
				bd.Source = bundle.SourceScratch
			}
			out[name] = bd
		}
		return out, nil
	}
	id := func(s string) string { return s }
	var err error
	m.Embed = bundle.Program{Name: "embed", File: "embed.prog", Output: embed.output}
	if m.Embed.Bindings, err = bindings(embed, id, 0, nil); err != nil {
		return nil, err
	}
	m.Head = bundle.Program{Name: "head", File: "head.prog", Input: head.input, Output: head.output}
	if m.Head.Bindings, err = bindings(head, id, -1, nil); err != nil {
		return nil, err
	}
	b.Programs["embed"], b.Programs["head"] = embed.prog, head.prog
	m.Layers = make([]bundle.Layer, low.nLayers())
	for ki, k := range kinds {
		p := progs[ki]
		b.Programs[k.Name] = p.prog
		decls := 0
		for _, s := range p.prog.Stmts {
			switch s.(type) {
			case lang.Declare, lang.Scalar:
				decls++
			}
		}
		local := map[string]bool{}
		for _, n := range p.local {
			local[n] = true
		}
		m.Kinds = append(m.Kinds, bundle.Kind{Name: k.Name, File: k.Name + ".prog", Layers: k.Layers,
			Statements: len(p.prog.Stmts), Declarations: decls, Local: p.local, Input: p.input, Output: p.output})
		for i, l := range k.Layers {
			from := k.Layers[0]
			rename := func(name string) string { return rebind(name, from, l, local) }
			bs, err := bindings(p, rename, l, k.Renamings[i])
			if err != nil {
				return nil, err
			}
			m.Layers[l] = bundle.Layer{Layer: l, Kind: k.Name, Bindings: bs}
		}
	}
	b.Manifest = m
	if err := b.Check(); err != nil {
		return nil, err
	}
	return b, nil
}

// weightBinding binds a declared weight to the constant called c.
func (low *lowering) weightBinding(opts Options, name, c string, d declared) (bundle.Binding, error) {
	g := low.v.g
	id, ok := low.v.byName[c]
	if !ok || g.Value(id).Kind != poot.Const {
		return bundle.Binding{}, structureErr("no constant %q", c)
	}
	t := g.Value(id).Type
	bd := bundle.Binding{Name: name, Source: bundle.SourceWeight, Const: c, Tensor: c, DType: t.DType.String(),
		Shape: slices.Clone([]int(t.Shape)), Storage: bundle.StorageDense, Transposed: d.transposed, Heads: d.heads}
	if t.DType == poot.Q8_0 && d.contraction {
		bd.Storage = bundle.StorageQ8_0
	}
	if opts.Locate != nil {
		s, err := opts.Locate(c)
		if err != nil {
			return bd, fmt.Errorf("rdu: binding %s to the checkpoint: %w", name, err)
		}
		if s.Bytes != t.Bytes() {
			return bd, fmt.Errorf("rdu: %s: the stored tensor %q holds %d bytes, %v takes %d", name, s.Tensor, s.Bytes, t, t.Bytes())
		}
		bd.Tensor, bd.File, bd.Offset, bd.Bytes = s.Tensor, s.File, s.Offset, s.Bytes
		for _, p := range s.Parts {
			bd.Parts = append(bd.Parts, bundle.Part{Tensor: p.Tensor, File: p.File, Offset: p.Offset, Bytes: p.Bytes})
		}
	}
	return bd, nil
}
