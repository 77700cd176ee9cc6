package interp_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/tensor"
)

// bindGraph reads a table through a position slot and a named index slot
// inside scope layer.0/attn, and appends to a cache state.
func bindGraph(t *testing.T) *poot.Graph {
	t.Helper()
	b := poot.NewBuilder[unit](poot.Limits{})
	table := b.Constant("table", poot.T(poot.F32, 4, 2))
	pos := b.Slot(poot.SlotPos, poot.Shape{1}, 0, 3)
	idx := b.SlotNamed("idx", poot.T(poot.I32, 1))
	cache := b.StateInput("cache", poot.T(poot.F32, 4, 2))
	var out, next poot.Traced[unit]
	b.Scope("layer.0", func() {
		b.Scope("attn", func() {
			rows := b.Gather(table, idx)
			next = b.WriteRows(cache, pos, rows)
			out = b.ReduceSum(b.Gather(table, pos), 1)
		})
	})
	g, err := b.Finish(poot.Out(out).WithState(cache, next))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func bindConsts() interp.ConstMap {
	return interp.ConstMap{"table": f32(poot.Shape{4, 2}, 1, 2, 3, 4, 5, 6, 7, 8)}
}

func bindSlots(pos, idx int32) interp.Slots {
	return interp.Slots{"pos": i32(poot.Shape{1}, pos), "idx": i32(poot.Shape{1}, idx)}
}

func TestBindingErrors(t *testing.T) {
	g := bindGraph(t)
	goodState := func() *interp.State {
		s, err := interp.NewState(g)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	with := func(m interp.ConstMap, name string, v tensor.Tensor) interp.ConstMap {
		c := interp.ConstMap{}
		for k, x := range m {
			c[k] = x
		}
		c[name] = v
		return c
	}
	short := f32(poot.Shape{4, 2}, 1, 2, 3, 4, 5, 6, 7, 8)
	short.Data = short.Data[:8]
	cases := []struct {
		name   string
		consts interp.ConstMap
		slots  interp.Slots
		state  *interp.State
		kind   error
		value  string
	}{
		{"missing const", interp.ConstMap{}, bindSlots(0, 0), goodState(), interp.ErrBinding, "table"},
		{"wrong const dtype", interp.ConstMap{"table": i32(poot.Shape{4, 2}, 1, 2, 3, 4, 5, 6, 7, 8)}, bindSlots(0, 0), goodState(), interp.ErrBinding, "table"},
		{"wrong const shape", interp.ConstMap{"table": f32(poot.Shape{8}, 1, 2, 3, 4, 5, 6, 7, 8)}, bindSlots(0, 0), goodState(), interp.ErrBinding, "table"},
		{"short const data", interp.ConstMap{"table": short}, bindSlots(0, 0), goodState(), interp.ErrBinding, "table"},
		{"extra const", with(bindConsts(), "stray", f32(s1, 1)), bindSlots(0, 0), goodState(), interp.ErrBinding, "stray"},
		{"missing slot", bindConsts(), interp.Slots{"pos": i32(s1, 0)}, goodState(), interp.ErrBinding, "idx"},
		{"extra slot", bindConsts(), interp.Slots{"pos": i32(s1, 0), "idx": i32(s1, 0), "token": i32(s1, 0)}, goodState(), interp.ErrBinding, "token"},
		{"wrong slot type", bindConsts(), interp.Slots{"pos": f32(s1, 0), "idx": i32(s1, 0)}, goodState(), interp.ErrBinding, "pos"},
		{"slot above range", bindConsts(), bindSlots(4, 0), goodState(), interp.ErrSlotRange, "pos"},
		{"slot below range", bindConsts(), bindSlots(-1, 0), goodState(), interp.ErrSlotRange, "pos"},
		{"missing state", bindConsts(), bindSlots(0, 0), &interp.State{}, interp.ErrBinding, "cache"},
		{"nil state", bindConsts(), bindSlots(0, 0), nil, interp.ErrBinding, "cache"},
		{"wrong state type", bindConsts(), bindSlots(0, 0), &interp.State{Tensors: map[string]tensor.Tensor{"cache": f32(poot.Shape{2}, 0, 0)}}, interp.ErrBinding, "cache"},
		{"extra state", bindConsts(), bindSlots(0, 0), &interp.State{Tensors: map[string]tensor.Tensor{"cache": goodState().Tensors["cache"], "other": f32(s1, 0)}}, interp.ErrBinding, "other"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := interp.Eval(g, c.consts, c.slots, c.state)
			if !errors.Is(err, c.kind) {
				t.Fatalf("error %v, want %v", err, c.kind)
			}
			var ie *interp.Error
			if !errors.As(err, &ie) || ie.Value != c.value || ie.Eqn != -1 {
				t.Fatalf("error %#v does not name %q", err, c.value)
			}
			if !strings.Contains(err.Error(), c.value) {
				t.Fatalf("message %q does not name %q", err, c.value)
			}
		})
	}
}

// TestRuntimeFaultNamesEquation checks that an index out of range names the
// equation and its scope, and that a failed step leaves the state alone.
func TestRuntimeFaultNamesEquation(t *testing.T) {
	g := bindGraph(t)
	prog, err := interp.Compile(g, bindConsts())
	if err != nil {
		t.Fatal(err)
	}
	st, _ := interp.NewState(g)
	if _, err := prog.Run(bindSlots(1, 3), st); err != nil {
		t.Fatal(err)
	}
	before := st.Tensors["cache"].Clone()
	if got := before.F32(); got[2] != 7 || got[3] != 8 {
		t.Fatalf("cache row 1 is %v, want [7 8]", got[2:4])
	}
	_, err = prog.Run(bindSlots(2, 4), st)
	if !errors.Is(err, interp.ErrIndexRange) {
		t.Fatalf("error %v, want ErrIndexRange", err)
	}
	var ie *interp.Error
	if !errors.As(err, &ie) || ie.Eqn != 0 || ie.Op != poot.Gather || ie.Scope != "layer.0/attn" {
		t.Fatalf("error %#v should name equation 0 (gather) in layer.0/attn", ie)
	}
	if !strings.Contains(err.Error(), "layer.0/attn") {
		t.Fatalf("message %q lacks the scope", err)
	}
	if string(st.Tensors["cache"].Data) != string(before.Data) {
		t.Fatal("a failed step changed the state")
	}
	if _, ok := prog.Witness("anything"); ok {
		t.Fatal("a witness after a failed step")
	}
}

// TestStateSharedInPlace checks that Run overwrites the state tensors' own
// bytes, so views of them see each step.
func TestStateSharedInPlace(t *testing.T) {
	g := bindGraph(t)
	st, _ := interp.NewState(g)
	view := st.Tensors["cache"].F32()
	for step := int32(0); step < 4; step++ {
		if _, err := interp.Eval(g, bindConsts(), bindSlots(step, 3-step), st); err != nil {
			t.Fatal(err)
		}
	}
	want := []float32{7, 8, 5, 6, 3, 4, 1, 2}
	for i := range want {
		if view[i] != want[i] {
			t.Fatalf("cache %v, want %v", view, want)
		}
	}
}

// TestUnalignedConstant binds an F32 constant whose bytes start at an odd
// address, as a memory-mapped file may hand over.
func TestUnalignedConstant(t *testing.T) {
	raw := make([]byte, 1+8*4)
	src := f32(poot.Shape{4, 2}, 1, 2, 3, 4, 5, 6, 7, 8)
	copy(raw[1:], src.Data)
	v, err := tensor.View(poot.T(poot.F32, 4, 2), raw[1:])
	if err != nil {
		t.Fatal(err)
	}
	g := bindGraph(t)
	st, _ := interp.NewState(g)
	out, err := interp.Eval(g, interp.ConstMap{"table": v}, bindSlots(2, 0), st)
	if err != nil {
		t.Fatal(err)
	}
	if got := out[0].F32(); got[0] != 11 {
		t.Fatalf("got %v, want [11]", got)
	}
}
