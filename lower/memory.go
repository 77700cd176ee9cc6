package lower

import (
	"cmp"
	"slices"

	"github.com/pootlabs/poot"
)

// align is the alignment of every arena region, a cache line.
const align = 64

// memory drops alias kernels from the schedule, resolves every value to
// its storage and places the arena regions.
func (p *planner) memory(plan *Plan) {
	g := p.g
	root := p.storageRoots()
	plan.Kernels = nil
	for _, k := range p.kernels {
		if k.Kind != Alias {
			plan.Kernels = append(plan.Kernels, k)
		}
	}
	end := len(plan.Kernels)
	live := p.lifetimes(plan.Kernels, root)
	stages := p.writebacks(plan, root)

	locs := make([]Loc, g.NumValues())
	for id := range locs {
		switch g.Value(poot.ValueID(id)).Kind {
		case poot.Const:
			locs[id] = Loc{Space: ConstSpace, Root: poot.ValueID(id)}
		case poot.Slot:
			locs[id] = Loc{Space: SlotSpace, Root: poot.ValueID(id)}
		case poot.State:
			locs[id] = Loc{Space: StateSpace, Root: poot.ValueID(id)}
		}
	}
	// Place the arena roots largest first, then the staging regions of the
	// writebacks, which live at the very end of the step.
	var a arena
	size := func(r poot.ValueID) int64 { return (max(g.Type(r).Bytes(), 1) + align - 1) / align * align }
	roots := slices.Collect(func(yield func(poot.ValueID) bool) {
		for r := range live {
			if !yield(r) {
				return
			}
		}
	})
	slices.SortFunc(roots, func(x, y poot.ValueID) int {
		return cmp.Or(cmp.Compare(size(y), size(x)), cmp.Compare(x, y))
	})
	plan.Live = map[poot.ValueID][2]int{}
	for _, r := range roots {
		iv := live[r]
		locs[r] = Loc{Space: Arena, Root: r, Offset: a.place(size(r), iv[0], iv[1]), Bytes: g.Type(r).Bytes()}
		plan.Live[r] = iv
	}
	stageAt := map[poot.ValueID]int64{}
	for _, v := range stages {
		if _, ok := stageAt[v]; !ok {
			stageAt[v] = a.place(size(v), end, end)
		}
	}
	for i := range plan.Writebacks {
		if wb := &plan.Writebacks[i]; wb.Staged {
			wb.Stage = stageAt[wb.Out]
		}
	}
	plan.ArenaBytes = a.bytes
	for id, r := range root {
		if poot.ValueID(id) != r {
			locs[id] = locs[r]
			if locs[id].Space == Arena {
				locs[id].Bytes = g.Type(poot.ValueID(id)).Bytes()
			}
		}
	}
	plan.Locs = locs
}

// storageRoots follows reshapes (aliases) and in-place writes to the value
// whose storage each value uses.
func (p *planner) storageRoots() []poot.ValueID {
	root := make([]poot.ValueID, p.g.NumValues())
	for id := range root {
		root[id] = poot.ValueID(id)
	}
	for _, e := range p.eqns {
		if e.Op == poot.Reshape || e.Op == poot.WriteRows && p.inplace[e.Out] {
			root[e.Out] = root[e.Inputs[0]]
		}
	}
	return root
}

// lifetimes gives every arena root the interval [first, last] of the
// scheduled kernels that touch it: -1 to len(sched) for the results of
// init kernels that are read, to len(sched) for values that leave the step.
func (p *planner) lifetimes(sched []*Kernel, root []poot.ValueID) map[poot.ValueID][2]int {
	live := map[poot.ValueID][2]int{}
	touch := func(v poot.ValueID, at int) {
		r := root[v]
		if p.g.Value(r).Kind != poot.Device {
			return
		}
		if iv, ok := live[r]; ok {
			live[r] = [2]int{min(iv[0], at), max(iv[1], at)}
		} else {
			live[r] = [2]int{at, at}
		}
	}
	end := len(sched)
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
	for id, esc := range p.escapes {
		if esc {
			touch(poot.ValueID(id), end)
		}
	}
	return live
}

// writebacks records the state outputs that do not already live in their
// state's storage, to be copied back at the end of a step, and returns those
// stored in another input's storage, which are staged through the arena
// first.
func (p *planner) writebacks(plan *Plan, root []poot.ValueID) (stages []poot.ValueID) {
	for _, s := range p.g.States() {
		if root[s.Out] == s.In {
			continue
		}
		wb := Writeback{In: s.In, Out: s.Out}
		if p.g.Value(root[s.Out]).Kind != poot.Device {
			wb.Staged = true
			stages = append(stages, s.Out)
		}
		plan.Writebacks = append(plan.Writebacks, wb)
	}
	return stages
}

// arena places regions first fit: each at the lowest offset free of every
// placed region whose kernel interval meets its own.
type arena struct {
	placed []region
	bytes  int64
}

type region struct {
	off, size   int64
	first, last int
}

func (a *arena) place(size int64, first, last int) int64 {
	var busy []region
	for _, q := range a.placed {
		if q.first <= last && first <= q.last {
			busy = append(busy, q)
		}
	}
	slices.SortFunc(busy, func(x, y region) int { return cmp.Compare(x.off, y.off) })
	off := int64(0)
	for _, q := range busy {
		if off+size <= q.off {
			break
		}
		off = max(off, q.off+q.size)
	}
	a.placed = append(a.placed, region{off, size, first, last})
	a.bytes = max(a.bytes, off+size)
	return off
}
