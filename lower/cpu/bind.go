package cpu

import (
	"fmt"
	"unsafe"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/tensor"
)

// bind checks the step's slots and state, copies the slots into their
// buffers and points the state buffers at the caller's tensors.
func (x *Exec) bind(slots interp.Slots, state *interp.State) error {
	if err := x.binds.Check(slots, state); err != nil {
		return err
	}
	if err := state.Sync(); err != nil {
		return &interp.Error{Eqn: -1, Err: err}
	}
	var tensors map[string]tensor.Tensor
	if state != nil {
		tensors = state.Tensors
	}
	for _, s := range x.states {
		t := tensors[s.v.Name]
		if d := s.v.Type.DType; (d == poot.F32 || d == poot.I32) && len(t.Data) > 0 && uintptr(unsafe.Pointer(&t.Data[0]))%4 != 0 {
			return &interp.Error{Eqn: -1, Value: s.v.Name, Err: fmt.Errorf("%w: state data is not 4-byte aligned", interp.ErrBinding)}
		}
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
