package lower

import (
	"slices"

	"github.com/pootlabs/poot"
)

// align is the alignment of every arena region, a cache line.
const align = 64

// memory drops alias kernels from the schedule, resolves every value to
// its storage and places the arena regions.
func (p *planner) memory(plan *Plan) {
	g := p.g
	n := g.NumValues()
	locs := make([]Loc, n)
	for id := range n {
		v := g.Value(poot.ValueID(id))
		switch v.Kind {
		case poot.Const:
			locs[id] = Loc{Space: ConstSpace, Root: poot.ValueID(id)}
		case poot.Slot:
			locs[id] = Loc{Space: SlotSpace, Root: poot.ValueID(id)}
		case poot.State:
			locs[id] = Loc{Space: StateSpace, Root: poot.ValueID(id)}
		}
	}
	// root follows aliases and in-place writes to the value whose storage
	// a value uses.
	root := make([]poot.ValueID, n)
	for id := range root {
		root[id] = poot.ValueID(id)
	}
	for i, e := range p.eqns {
		switch {
		case e.Op == poot.Reshape:
			root[e.Out] = root[e.Inputs[0]]
		case e.Op == poot.WriteRows && p.inplace[e.Out]:
			root[e.Out] = root[e.Inputs[0]]
		}
		_ = i
	}
	var sched []*Kernel
	for _, k := range p.kernels {
		if k.Kind != Alias {
			sched = append(sched, k)
		}
	}
	plan.Kernels = sched
	end := len(sched)
	type interval struct{ first, last int }
	live := map[poot.ValueID]*interval{}
	isArena := func(r poot.ValueID) bool { return g.Value(r).Kind == poot.Device }
	touch := func(v poot.ValueID, at int) {
		r := root[v]
		if !isArena(r) {
			return
		}
		iv := live[r]
		if iv == nil {
			iv = &interval{at, at}
			live[r] = iv
		}
		iv.first, iv.last = min(iv.first, at), max(iv.last, at)
	}
	for _, k := range p.inits {
		if p.readers[k.Outputs[0]] > 0 {
			touch(k.Outputs[0], -1)
			touch(k.Outputs[0], end)
		}
	}
	for i, k := range sched {
		for _, v := range k.Outputs {
			touch(v, i)
		}
		for _, v := range k.Inputs {
			touch(v, i)
		}
	}
	for id := range n {
		if p.escapes[id] {
			touch(poot.ValueID(id), end)
		}
	}
	// State outputs that do not already live in their state's storage are
	// copied back at the end; those stored in another input's storage are
	// staged through the arena first.
	var stages []poot.ValueID
	for _, s := range g.States() {
		if root[s.Out] == s.In {
			continue
		}
		wb := Writeback{In: s.In, Out: s.Out}
		if !isArena(root[s.Out]) {
			wb.Staged = true
			stages = append(stages, s.Out)
		}
		plan.Writebacks = append(plan.Writebacks, wb)
	}
	// Place the arena roots: largest first, each at the lowest offset free
	// of every region whose interval meets its own.
	roots := make([]poot.ValueID, 0, len(live))
	for r := range live {
		roots = append(roots, r)
	}
	size := func(r poot.ValueID) int64 { return (max(g.Type(r).Bytes(), 1) + align - 1) / align * align }
	slices.SortFunc(roots, func(a, b poot.ValueID) int {
		if sa, sb := size(a), size(b); sa != sb {
			if sa > sb {
				return -1
			}
			return 1
		}
		return int(a - b)
	})
	type region struct {
		off, size   int64
		first, last int
	}
	var placed []region
	place := func(sz int64, first, last int) int64 {
		var busy []region
		for _, q := range placed {
			if q.first <= last && first <= q.last {
				busy = append(busy, q)
			}
		}
		slices.SortFunc(busy, func(a, b region) int { return int(a.off - b.off) })
		off := int64(0)
		for _, q := range busy {
			if off+sz <= q.off {
				break
			}
			off = max(off, q.off+q.size)
		}
		placed = append(placed, region{off, sz, first, last})
		plan.ArenaBytes = max(plan.ArenaBytes, off+sz)
		return off
	}
	plan.Live = map[poot.ValueID][2]int{}
	for _, r := range roots {
		iv := live[r]
		off := place(size(r), iv.first, iv.last)
		locs[r] = Loc{Space: Arena, Root: r, Offset: off, Bytes: g.Type(r).Bytes()}
		plan.Live[r] = [2]int{iv.first, iv.last}
	}
	stageAt := map[poot.ValueID]int64{}
	for _, v := range stages {
		if _, ok := stageAt[v]; !ok {
			stageAt[v] = place(size(v), end, end)
		}
	}
	for i := range plan.Writebacks {
		if wb := &plan.Writebacks[i]; wb.Staged {
			wb.Stage = stageAt[wb.Out]
		}
	}
	for id := range n {
		r := root[id]
		if poot.ValueID(id) != r {
			locs[id] = locs[r]
			if locs[id].Space == Arena {
				locs[id].Bytes = g.Type(poot.ValueID(id)).Bytes()
			}
		}
	}
	plan.Locs = locs
}
