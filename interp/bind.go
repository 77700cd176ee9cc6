package interp

import (
	"encoding/binary"
	"fmt"
	"sort"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/tensor"
)

// Consts supplies the data of a graph's constants by name. A loader can
// implement it over a memory-mapped checkpoint and hand out zero-copy views
// lazily; tests use [ConstMap].
type Consts interface {
	// Lookup returns the tensor bound to name, as stored.
	Lookup(name string) (tensor.Tensor, bool)
}

// ConstNamer is implemented by Consts that can list every name they bind.
// Interpreters use it to reject bindings the graph does not declare.
type ConstNamer interface {
	Names() []string
}

// ConstMap is the simplest Consts: tensors by name.
type ConstMap map[string]tensor.Tensor

// Lookup returns m[name].
func (m ConstMap) Lookup(name string) (tensor.Tensor, bool) {
	t, ok := m[name]
	return t, ok
}

// Names lists the bound names in sorted order.
func (m ConstMap) Names() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// Slots are the per-step inputs by name. A slot of a kind other than
// poot.SlotNamed is named after its kind (poot.SlotToken.String() is
// "token").
type Slots map[string]tensor.Tensor

// State holds the state carried between steps (KV caches, recurrent state)
// by the names of the graph's state inputs. A step reads every state tensor
// and, when it succeeds, overwrites each with its new value in place (the
// same Data, so views handed out earlier see the update). A failed step
// leaves the state untouched. The prefill and decode graphs of one model
// share one State.
//
// An interpreter on an accelerator may keep the state's values in its own
// memory between steps instead of copying them home after each (a GPU's
// KV caches would otherwise cross the bus twice a token): it marks the
// State held ([State.Hold]) and the host tensors are stale until
// [State.Sync] brings the values home. Code that reads or writes the
// tensors' data outside a step calls Sync first; every interpreter that
// reads them from the host does so at the start of its Run.
type State struct {
	Tensors map[string]tensor.Tensor
	holder  Holder
}

// A Holder keeps the current values of a State's tensors in memory of its
// own (a GPU's) between steps.
type Holder interface {
	// Release copies the held values into the State's host tensors.
	Release(s *State) error
}

// Hold records that h holds s's current values: the host tensors are
// stale until Sync. An interpreter calls it after a step that left the
// values in its memory.
func (s *State) Hold(h Holder) { s.holder = h }

// Holder returns who holds s's current values, or nil when the host
// tensors are current.
func (s *State) Holder() Holder {
	if s == nil {
		return nil
	}
	return s.holder
}

// Discard lets go of held values without copying them home, for a
// caller about to overwrite every tensor (a cache being emptied): the host
// tensors become the state's values as they stand.
func (s *State) Discard() {
	if s != nil {
		s.holder = nil
	}
}

// Sync makes the host tensors current: where an interpreter holds the
// values, it copies them home and lets go. A nil or unheld State is
// current already. After an error the values are lost (the driver then
// empties its cache), and the State is no longer held.
func (s *State) Sync() error {
	if s == nil || s.holder == nil {
		return nil
	}
	h := s.holder
	s.holder = nil
	if err := h.Release(s); err != nil {
		return fmt.Errorf("interp: bringing the state home: %w", err)
	}
	return nil
}

// NewState returns a State holding a zero-filled tensor for every state
// input of g.
func NewState(g *poot.Graph) (*State, error) {
	s := &State{Tensors: map[string]tensor.Tensor{}}
	for _, id := range g.Inputs(poot.State) {
		v := g.Value(id)
		t, err := tensor.New(v.Type)
		if err != nil {
			return nil, bindingError(v.Name, fmt.Errorf("%w: %w", ErrBinding, err))
		}
		s.Tensors[v.Name] = t
	}
	return s, nil
}

// Clone returns a deep copy of s, for comparing two interpreters from the
// same starting state. A held State is brought home first (Sync); one
// that cannot be is copied as its host tensors stand.
func (s *State) Clone() *State {
	if s == nil {
		return nil
	}
	_ = s.Sync()
	c := &State{Tensors: make(map[string]tensor.Tensor, len(s.Tensors))}
	for k, t := range s.Tensors {
		c.Tensors[k] = t.Clone()
	}
	return c
}

// checkBound reports whether t is valid data for value v.
func checkBound(v poot.Value, t tensor.Tensor, ok bool) error {
	if !ok {
		return bindingError(v.Name, fmt.Errorf("%w: %v %v is not bound", ErrBinding, v.Kind, v.Type))
	}
	if !t.Type.Equal(v.Type) {
		return bindingError(v.Name, fmt.Errorf("%w: %v is declared %v, bound to %v", ErrBinding, v.Kind, v.Type, t.Type))
	}
	if err := t.Validate(); err != nil {
		return bindingError(v.Name, fmt.Errorf("%w: %w", ErrBinding, err))
	}
	return nil
}

// CheckConsts validates that consts binds every constant of g with its
// declared type and, when consts can list its names, nothing else.
func CheckConsts(g *poot.Graph, consts Consts) error {
	ids := g.Inputs(poot.Const)
	if consts == nil && len(ids) > 0 {
		consts = ConstMap(nil)
	}
	for _, id := range ids {
		v := g.Value(id)
		t, ok := consts.Lookup(v.Name)
		if err := checkBound(v, t, ok); err != nil {
			return err
		}
	}
	if n, ok := consts.(ConstNamer); ok {
		for _, name := range n.Names() {
			id, ok := g.Lookup(name)
			if !ok || g.Value(id).Kind != poot.Const {
				return bindingError(name, fmt.Errorf("%w: the graph declares no constant of that name", ErrBinding))
			}
		}
	}
	return nil
}

// CheckStep validates the slots and state of one step of g: every slot and
// state present with its declared type, nothing extra, and every ranged
// slot's values within [Min, Max].
func CheckStep(g *poot.Graph, slots Slots, state *State) error {
	return NewBindings(g).Check(slots, state)
}

// input is a slot or state of a graph with its id.
type input struct {
	poot.Value
	id poot.ValueID
}

// Bindings lists what a step of a graph must bind, so that checking a step
// costs time in the number of inputs only and allocates nothing unless it
// fails. Every interpreter checks its steps with it.
type Bindings struct {
	g      *poot.Graph
	slots  []input
	states []input
}

// NewBindings lists the slots and state of g.
func NewBindings(g *poot.Graph) *Bindings {
	b := &Bindings{g: g}
	for _, id := range g.Inputs(poot.Slot) {
		b.slots = append(b.slots, input{g.Value(id), id})
	}
	for _, id := range g.Inputs(poot.State) {
		b.states = append(b.states, input{g.Value(id), id})
	}
	return b
}

// Check validates the slots and state of one step (see [CheckStep]).
func (b *Bindings) Check(slots Slots, state *State) error {
	for _, v := range b.slots {
		t, ok := slots[v.Name]
		if err := checkBound(v.Value, t, ok); err != nil {
			return err
		}
		if v.Ranged() {
			for i := 0; i+4 <= len(t.Data); i += 4 {
				x := int64(int32(binary.LittleEndian.Uint32(t.Data[i:])))
				if x < v.Min || x > v.Max {
					return bindingError(v.Name, fmt.Errorf("%w: element %d is %d, outside [%d, %d]", ErrSlotRange, i/4, x, v.Min, v.Max))
				}
			}
		}
	}
	// Every declared slot is present and names are unique, so a map with
	// more entries holds one the graph does not declare.
	if len(slots) > len(b.slots) {
		return extra(b.g, poot.Slot, mapKeys(slots))
	}
	var tensors map[string]tensor.Tensor
	if state != nil {
		tensors = state.Tensors
	}
	for _, v := range b.states {
		t, ok := tensors[v.Name]
		if err := checkBound(v.Value, t, ok); err != nil {
			return err
		}
	}
	if len(tensors) > len(b.states) {
		return extra(b.g, poot.State, mapKeys(tensors))
	}
	return nil
}

func mapKeys(m map[string]tensor.Tensor) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// extra reports the first of names that g does not declare as kind k.
func extra(g *poot.Graph, k poot.Kind, names []string) error {
	for _, name := range names {
		id, ok := g.Lookup(name)
		if !ok || g.Value(id).Kind != k {
			return bindingError(name, fmt.Errorf("%w: the graph declares no %v of that name", ErrBinding, k))
		}
	}
	return nil
}
