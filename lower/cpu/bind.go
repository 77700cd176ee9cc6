package cpu

import (
	"fmt"
	"sort"
	"unsafe"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/tensor"
)

func bindingError(name string, err error) error {
	return &interp.Error{Eqn: -1, Value: name, Err: err}
}

// check validates one bound tensor against its declaration without
// allocating on success.
func check(v poot.Value, t tensor.Tensor, ok bool) error {
	if !ok {
		return bindingError(v.Name, fmt.Errorf("%w: %v %v is not bound", interp.ErrBinding, v.Kind, v.Type))
	}
	if !t.Type.Equal(v.Type) {
		return bindingError(v.Name, fmt.Errorf("%w: %v is declared %v, bound to %v", interp.ErrBinding, v.Kind, v.Type, t.Type))
	}
	if int64(len(t.Data)) != v.Type.Bytes() {
		return bindingError(v.Name, fmt.Errorf("%w: %v holds %d bytes, want %d", interp.ErrBinding, v.Type, len(t.Data), v.Type.Bytes()))
	}
	return nil
}

// bind checks the step's slots and state, copies the slots into their
// buffers and points the state buffers at the caller's tensors.
func (x *Exec) bind(slots interp.Slots, state *interp.State) error {
	for _, s := range x.slots {
		t, ok := slots[s.v.Name]
		if err := check(s.v, t, ok); err != nil {
			return err
		}
		if s.v.Ranged() {
			for i := 0; i+4 <= len(t.Data); i += 4 {
				e := int64(int32(uint32(t.Data[i]) | uint32(t.Data[i+1])<<8 | uint32(t.Data[i+2])<<16 | uint32(t.Data[i+3])<<24))
				if e < s.v.Min || e > s.v.Max {
					return bindingError(s.v.Name, fmt.Errorf("%w: element %d is %d, outside [%d, %d]", interp.ErrSlotRange, i/4, e, s.v.Min, s.v.Max))
				}
			}
		}
	}
	if len(slots) > len(x.slots) {
		return x.extra(poot.Slot, slots)
	}
	var tensors map[string]tensor.Tensor
	if state != nil {
		tensors = state.Tensors
	}
	for _, s := range x.states {
		t, ok := tensors[s.v.Name]
		if err := check(s.v, t, ok); err != nil {
			return err
		}
		if d := s.v.Type.DType; (d == poot.F32 || d == poot.I32) && len(t.Data) > 0 && uintptr(unsafe.Pointer(&t.Data[0]))%4 != 0 {
			return bindingError(s.v.Name, fmt.Errorf("%w: state data is not 4-byte aligned", interp.ErrBinding))
		}
	}
	if len(tensors) > len(x.states) {
		return x.extra(poot.State, tensors)
	}
	for _, s := range x.slots {
		if b := x.bufs[s.id]; b != nil {
			copy(b.b, slots[s.v.Name].Data)
		}
	}
	for _, s := range x.states {
		b := x.bufs[s.id]
		if b == nil {
			continue
		}
		d := tensors[s.v.Name].Data
		if len(b.b) != len(d) || len(d) > 0 && unsafe.SliceData(b.b) != unsafe.SliceData(d) {
			b.set(d)
		}
	}
	return nil
}

func (x *Exec) extra(k poot.Kind, m map[string]tensor.Tensor) error {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		id, ok := x.g.Lookup(n)
		if !ok || x.g.Value(id).Kind != k {
			return bindingError(n, fmt.Errorf("%w: the graph declares no %v of that name", interp.ErrBinding, k))
		}
	}
	return nil
}

func (x *Exec) copyOutputs(outs []tensor.Tensor) error {
	if len(outs) != len(x.outputs) {
		return fmt.Errorf("cpu: %d output tensors for %d outputs", len(outs), len(x.outputs))
	}
	for i, id := range x.outputs {
		src := x.bufs[id]
		if !outs[i].Type.Equal(x.g.Type(id)) || len(outs[i].Data) != len(src.b) {
			return fmt.Errorf("cpu: output %d is %v, want %v", i, outs[i].Type, x.g.Type(id))
		}
		copy(outs[i].Data, src.b)
	}
	return nil
}

// Witness returns a copy of the named witness of the last successful Run.
func (x *Exec) Witness(name string) (tensor.Tensor, bool) {
	if !x.ran {
		return tensor.Tensor{}, false
	}
	for _, w := range x.witness {
		if w.Name == name {
			t, err := tensor.New(x.g.Type(w.Value))
			if err != nil {
				return tensor.Tensor{}, false
			}
			copy(t.Data, x.bufs[w.Value].b)
			return t, true
		}
	}
	return tensor.Tensor{}, false
}
