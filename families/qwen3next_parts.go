package families

import (
	"github.com/pootlabs/poot"
)

// SequenceState declares a recurrent state that belongs to each sequence
// (a convolution window, a delta-rule matrix) and returns the step's rows'
// states, f32[rows, dims...], with a function that records their next
// values (call it once, with a value of the same shape).
//
// In a contiguous layout it is RowState: row r of the step owns slice r.
// In a paged layout the state is a pool f32[pages, dims...] shared by steps
// of any number of rows, and a sequence's state lives at the page that holds
// its position 0 (slot_map[r, 0] / page size), so it follows the sequence
// from step to step as its cache pages do. Sequences must therefore not
// share the page of their position 0 (no prefix sharing of that page).
//
// Whatever the layout, a row whose step starts at position 0 starts from
// zeros: a new sequence never sees what an earlier owner of its slice or
// page left there.
func (s *Step[B]) SequenceState(name string, dims ...int) (poot.Traced[B], func(next poot.Traced[B])) {
	b, sh := s.B, s.Shape
	var in, cur, idx poot.Traced[B]
	if sh.Layout == Paged {
		pages := sh.PoolRows() / max(sh.PageSize, 1)
		in = b.StateInput(name, poot.T(poot.F32, append([]int{pages}, dims...)...))
		first := b.Reshape(b.SliceAxis(s.SlotMap, 1, 0, 1), sh.Rows)
		idx = b.Div(first, b.Full(poot.T(poot.I32, sh.Rows), float64(sh.PageSize)))
		cur = b.Gather(in, idx)
	} else {
		in = s.RowState(name, dims...)
		cur = in
	}
	full := append([]int{sh.Rows}, dims...)
	unit := append([]int{sh.Rows}, make([]int, len(dims))...)
	for i := range dims {
		unit[i+1] = 1
	}
	start := b.Reshape(b.SliceAxis(b.Reshape(s.Pos, sh.Rows, sh.New), 1, 0, 1), sh.Rows)
	fresh := b.Eq(start, b.Full(poot.T(poot.I32, sh.Rows), 0))
	cur = b.Select(b.Broadcast(b.Reshape(fresh, unit...), full...), b.Full(poot.T(poot.F32, full...), 0), cur)
	store := func(next poot.Traced[B]) {
		if sh.Layout == Paged {
			next = b.WriteRows(in, idx, next)
		}
		s.Carry(in, next)
	}
	return cur, store
}
