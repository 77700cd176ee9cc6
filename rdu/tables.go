package rdu

import (
	"encoding/binary"
	"fmt"
	"math"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/rdu/lang"
	"github.com/pootlabs/poot/tensor"
)

// A host table is a step table the programs read by position: a rotary
// embedding's cos and sin, a position-dependent scale of the queries. The
// graph computes it from the step's positions; the lowering computes it
// once for every position of the context (by evaluating the graph's own
// equations for it) and the programs read row pos.

// table is one host table of the bundle.
type table struct {
	name    string
	value   poot.ValueID // the step table, [T, cols]
	cols    int
	meaning string
	data    []float32 // ctx rows of cols, filled by evalTables
}

// rotation returns the host tables of a rope's cos and sin, declaring them
// in the program at their first read.
func (l *lifter) rotation(cos, sin poot.ValueID) (*table, *table) {
	low := l.low
	d := l.v.coneDigest(cos)
	pair, ok := low.rotations[d]
	if !ok {
		r := len(low.rotations)
		pair = [2]*table{
			low.newTable(l, cos, fmt.Sprintf("Cos%d", r), fmt.Sprintf("the cosines of rotation %d by position", r)),
			low.newTable(l, sin, fmt.Sprintf("Sin%d", r), fmt.Sprintf("the sines of rotation %d by position", r)),
		}
		low.rotations[d] = pair
	}
	if low.coneDigestOf(pair[1]) != l.v.coneDigest(sin) {
		l.reject(ErrUnliftable, "a rope whose sines are not those of its cosines' rotation")
	}
	l.declareTable(pair[0])
	l.declareTable(pair[1])
	return pair[0], pair[1]
}

// positionTable reads a step table that depends on the position (a
// position-dependent scale, say) through a host table: it declares the
// table and binds its row at pos, whose name it returns.
func (l *lifter) positionTable(id poot.ValueID) string {
	if n, ok := l.names[id]; ok {
		return n
	}
	var name string
	if l.low.stacked {
		name = l.positionRows(id)
	} else {
		name = l.positionRow(id, -1)
	}
	l.names[id] = name
	return name
}

// positionRow declares the host table of a step table of the positions and
// binds its row at the position: sequence b's in a batch, else the step's
// (b < 0).
func (l *lifter) positionRow(id poot.ValueID, b int) string {
	t := l.positional(id)
	name, pos := "", ""
	if b >= 0 {
		name, pos = l.n.freshSeq("tr", b), l.seqPos(b)
	} else {
		name, pos = l.n.fresh("tr"), l.pos()
	}
	l.emit(lang.Let{Name: name, Expr: lang.Row{Index: lang.Index{Name: pos}, X: t.name}})
	return name
}

// positionRows declares the host table of a step table of the positions
// and binds, in a prefill program, its rows at the chunk's positions (the
// runtime input poss).
func (l *lifter) positionRows(id poot.ValueID) string {
	t := l.positional(id)
	if _, ok := l.res.decls["poss"]; !ok {
		l.n.fixed("poss")
		l.emit(lang.Declare{Name: "poss", Rows: 1, Cols: l.rows(), Elem: lang.Int})
		l.res.decls["poss"] = declared{kind: bindRuntime, slot: poot.SlotPos}
	}
	name := l.fresh("tr")
	l.emit(lang.Let{Name: name, Expr: lang.Rows{Indices: "poss", X: t.name}})
	return name
}

// positional declares, at its first read, the host table of a step table
// of the positions (one table for every equal cone) and returns it.
func (l *lifter) positional(id poot.ValueID) *table {
	low := l.low
	d := l.v.coneDigest(id)
	t, ok := low.positional[d]
	if !ok {
		t = low.newTable(l, id, fmt.Sprintf("Tab%d", len(low.positional)), "a table of the step's positions")
		low.positional[d] = t
	}
	l.declareTable(t)
	return t
}

func (low *lowering) coneDigestOf(t *table) [32]byte { return low.v.coneDigest(t.value) }

func (low *lowering) newTable(l *lifter, id poot.ValueID, name, meaning string) *table {
	t := l.v.g.Type(id)
	if len(t.Shape) != 2 || t.Shape[0] != l.v.tokens || t.DType != poot.F32 {
		l.reject(ErrUnliftable, "a step table %v that is not one row of Reals per token", t)
	}
	if low.dependsOnToken(id) {
		l.reject(ErrPerLayerEmbedding, "a table of the step's tokens read by a layer")
	}
	tb := &table{name: name, value: id, cols: t.Shape[1], meaning: meaning}
	low.tables = append(low.tables, tb)
	return tb
}

func (l *lifter) declareTable(t *table) {
	if _, ok := l.res.decls[t.name]; ok {
		return
	}
	l.n.fixed(t.name)
	l.declare(t.name, l.low.ctx, t.cols, lang.Real, declared{kind: bindTable, value: t.value, table: t})
}

// dependsOnToken reports whether a value is computed from the token slot.
func (low *lowering) dependsOnToken(id poot.ValueID) bool {
	if r, ok := low.tokenDep[id]; ok {
		return r
	}
	v := low.v
	val := v.g.Value(id)
	r := false
	if p := v.prod[id]; p >= 0 {
		for _, in := range v.eqns[p].Inputs {
			r = r || low.dependsOnToken(in)
		}
	} else {
		r = val.Kind == poot.Slot && val.Slot == poot.SlotToken
	}
	low.tokenDep[id] = r
	return r
}

type tableBrand struct{}

// evalTables fills every table for every position of the context, by
// evaluating the graph's equations for the tables with the oracle, one
// position at a time (every token of the step at that position; a table
// whose rows then differ is not a function of its token's position).
func (low *lowering) evalTables(consts interp.Consts) error {
	if len(low.tables) == 0 {
		return nil
	}
	var ids []poot.ValueID
	for _, t := range low.tables {
		ids = append(ids, t.value)
	}
	prog, err := low.tableProgram(ids, consts)
	if err != nil {
		return err
	}
	v := low.v
	for _, t := range low.tables {
		t.data = make([]float32, low.ctx*t.cols)
	}
	pos := make([]int32, v.tokens)
	for p := range low.ctx {
		for i := range pos {
			pos[i] = int32(p)
		}
		pt, err := tensor.FromI32(poot.Shape{v.tokens}, pos)
		if err != nil {
			return err
		}
		res, err := prog.Run(interp.Slots{"pos": pt}, nil)
		if err != nil {
			return fmt.Errorf("rdu: the host tables at position %d: %w", p, err)
		}
		for i, t := range low.tables {
			vals := res[i].F32()
			row := vals[:t.cols]
			for r := 1; r < v.tokens; r++ {
				for c, x := range vals[r*t.cols : (r+1)*t.cols] {
					if math.Float32bits(x) != math.Float32bits(row[c]) {
						return fmt.Errorf("rdu: host table %s differs between tokens at one position: it is not a function of the position", t.name)
					}
				}
			}
			copy(t.data[p*t.cols:], row)
		}
	}
	return nil
}

// tableProgram compiles, for the oracle, the equations that compute the
// step tables ids from the positions (and the constants they read).
func (low *lowering) tableProgram(ids []poot.ValueID, consts interp.Consts) (*interp.Program, error) {
	v := low.v
	need := make([]bool, v.g.NumValues())
	var mark func(id poot.ValueID)
	mark = func(id poot.ValueID) {
		if need[id] {
			return
		}
		need[id] = true
		if p := v.prod[id]; p >= 0 {
			for _, in := range v.eqns[p].Inputs {
				mark(in)
			}
		}
	}
	for _, id := range ids {
		mark(id)
	}
	b := poot.NewBuilder[tableBrand](poot.Limits{})
	h := map[poot.ValueID]poot.Traced[tableBrand]{}
	for id := range need {
		if !need[id] || v.prod[id] >= 0 {
			continue
		}
		val := v.g.Value(poot.ValueID(id))
		switch {
		case val.Kind == poot.Slot && val.Slot == poot.SlotPos:
			h[poot.ValueID(id)] = b.Slot(poot.SlotPos, val.Type.Shape, 0, int64(low.ctx-1))
		case val.Kind == poot.Const:
			h[poot.ValueID(id)] = b.Constant(val.Name, val.Type)
		default:
			return nil, fmt.Errorf("rdu: a host table reads %v %q", val.Kind, val.Name)
		}
	}
	for _, e := range v.eqns {
		if !need[e.Out] {
			continue
		}
		in := make([]poot.Traced[tableBrand], len(e.Inputs))
		for i, x := range e.Inputs {
			in[i] = h[x]
		}
		h[e.Out] = b.Apply(e.Op, e.Params, in...)
	}
	var outs []poot.Traced[tableBrand]
	for _, id := range ids {
		outs = append(outs, h[id])
	}
	tg, err := b.Finish(poot.Out(outs...))
	if err != nil {
		return nil, fmt.Errorf("rdu: the host tables' equations: %w", err)
	}
	// The oracle wants exactly the constants the tables' graph declares.
	used := interp.ConstMap{}
	for _, id := range tg.Inputs(poot.Const) {
		name := tg.Value(id).Name
		if consts == nil {
			return nil, fmt.Errorf("rdu: the host tables read the constant %q, and no constants were given", name)
		}
		t, ok := consts.Lookup(name)
		if !ok {
			return nil, fmt.Errorf("rdu: the host tables read the constant %q, which is not given", name)
		}
		used[name] = t
	}
	prog, err := interp.Compile(tg, used)
	if err != nil {
		return nil, fmt.Errorf("rdu: compiling the host tables: %w", err)
	}
	return prog, nil
}

// cacheRows reports whether the step table idx holds, for each token of
// a batch, its sequence's block of rows rows of a cache plus its
// position: what a batched step writes its keys and values at. It
// evaluates idx for two sets of positions.
func (low *lowering) cacheRows(idx poot.ValueID, rows int) bool {
	d := low.v.coneDigest(idx)
	if r, ok := low.cacheIndex[d]; ok {
		return r == rows
	}
	t := low.v.g.Type(idx)
	ok := low.v.table[idx] && t.DType == poot.I32 && t.Shape.Equal(poot.Shape{low.v.tokens})
	var prog *interp.Program
	if ok {
		var err error
		prog, err = low.tableProgram([]poot.ValueID{idx}, nil)
		ok = err == nil
	}
	per := low.v.tokens / low.batch
	for trial := 0; ok && trial < 2; trial++ {
		pos := make([]int32, low.v.tokens)
		for i := range pos {
			pos[i] = int32((i*7 + 3 + trial*(low.ctx-1)) % low.ctx)
		}
		pt, err := tensor.FromI32(poot.Shape{len(pos)}, pos)
		if err != nil {
			return false
		}
		res, err := prog.Run(interp.Slots{"pos": pt}, nil)
		if err != nil {
			return false
		}
		for i, x := range res[0].I32() {
			ok = ok && int(x) == (i/per)*rows+int(pos[i])
		}
	}
	if ok {
		low.cacheIndex[d] = rows
	}
	return ok
}

// tableBytes lays the tables out one after the other, float32
// little-endian, and returns the bytes and each table's offset.
func (low *lowering) tableBytes() ([]byte, []int64) {
	var out []byte
	var offs []int64
	for _, t := range low.tables {
		offs = append(offs, int64(len(out)))
		for _, x := range t.data {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(x))
		}
	}
	return out, offs
}
