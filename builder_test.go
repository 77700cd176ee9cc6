package poot_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
)

type brandA struct{}

func TestForeignHandle(t *testing.T) {
	b1 := poot.NewBuilder[brandA](poot.Limits{})
	b2 := poot.NewBuilder[brandA](poot.Limits{})
	x1 := b1.Constant("x", poot.T(poot.F32, 4))
	x2 := b2.Constant("x", poot.T(poot.F32, 4))
	y := b2.Add(x2, x1) // x1 belongs to b1
	if y.ID() != -1 {
		t.Errorf("mixing builders returned a live handle %d", y.ID())
	}
	err := b2.Err()
	if !errors.Is(err, poot.ErrForeignHandle) {
		t.Fatalf("err = %v, want ErrForeignHandle", err)
	}
	var pe *poot.Error
	if !errors.As(err, &pe) || pe.Op != "add" || !strings.Contains(pe.Pos, "builder_test.go:") {
		t.Errorf("error lacks op or position: %+v", pe)
	}
	if _, err := b2.Finish(poot.Out(y)); !errors.Is(err, poot.ErrForeignHandle) {
		t.Errorf("Finish = %v, want the first error", err)
	}
	// b1 is unaffected.
	if _, err := b1.Finish(poot.Out(b1.Neg(x1))); err != nil {
		t.Errorf("b1: %v", err)
	}
	// The zero handle is foreign to every builder.
	b3 := poot.NewBuilder[brandA](poot.Limits{})
	b3.Neg(poot.Traced[brandA]{})
	if !errors.Is(b3.Err(), poot.ErrForeignHandle) {
		t.Errorf("zero handle: %v", b3.Err())
	}
}

func TestFirstErrorKept(t *testing.T) {
	b := poot.NewBuilder[brandA](poot.Limits{})
	x := b.Constant("x", poot.T(poot.F32, 4))
	y := b.Constant("y", poot.T(poot.F32, 5))
	var bad poot.Traced[brandA]
	b.Scope("layer.0", func() {
		b.Scope("attn", func() {
			bad = b.Add(x, y)
		})
	})
	n := b.NumEqns()
	z := b.Exp(bad)
	b.Constant("later", poot.T(poot.F32, 1))
	if b.NumEqns() != n || z.ID() != -1 {
		t.Error("a builder with an error kept recording")
	}
	var pe *poot.Error
	if !errors.As(b.Err(), &pe) || !errors.Is(pe, poot.ErrType) {
		t.Fatalf("err = %v", b.Err())
	}
	if pe.Scope != "layer.0/attn" || len(pe.Inputs) != 2 || pe.Op != "add" {
		t.Errorf("error context = %+v", pe)
	}
	msg := pe.Error()
	for _, want := range []string{"layer.0/attn", "add(f32[4], f32[5])", "shapes differ", "builder_test.go:"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message %q lacks %q", msg, want)
		}
	}
	// Shape helpers stay safe after an error.
	if b.Dim(bad, 0) != 1 || b.Dim(x, 7) != 1 || b.Rank(bad) != 0 {
		t.Error("Dim or Rank unsafe after an error")
	}
}

func TestInputs(t *testing.T) {
	b := poot.NewBuilder[brandA](poot.Limits{})
	b.Constant("w", poot.T(poot.F32, 4))
	b.Constant("w", poot.T(poot.F32, 4))
	if !errors.Is(b.Err(), poot.ErrName) {
		t.Errorf("duplicate constant: %v", b.Err())
	}
	for name, fn := range map[string]func(b *poot.Builder[brandA]){
		"empty name":      func(b *poot.Builder[brandA]) { b.Constant("", poot.T(poot.F32, 1)) },
		"zero extent":     func(b *poot.Builder[brandA]) { b.Constant("w", poot.T(poot.F32, 0)) },
		"bad block":       func(b *poot.Builder[brandA]) { b.Constant("w", poot.T(poot.Q8_0, 2, 31)) },
		"slot named kind": func(b *poot.Builder[brandA]) { b.Slot(poot.SlotNamed, poot.Shape{1}, 0, 1) },
		"slot range":      func(b *poot.Builder[brandA]) { b.Slot(poot.SlotPos, poot.Shape{1}, 5, 1) },
		"slot wide":       func(b *poot.Builder[brandA]) { b.Slot(poot.SlotPos, poot.Shape{1}, 0, 1<<40) },
		"duplicate slots": func(b *poot.Builder[brandA]) {
			b.Slot(poot.SlotPos, poot.Shape{1}, 0, 1)
			b.Slot(poot.SlotPos, poot.Shape{1}, 0, 1)
		},
		"packed state": func(b *poot.Builder[brandA]) { b.StateInput("s", poot.T(poot.Q4_K, 1, 256)) },
		"packed slot":  func(b *poot.Builder[brandA]) { b.SlotNamed("s", poot.T(poot.Q8_0, 1, 32)) },
		"slot/const clash": func(b *poot.Builder[brandA]) {
			b.Constant("pos", poot.T(poot.F32, 1))
			b.Slot(poot.SlotPos, poot.Shape{1}, 0, 1)
		},
		"pop without push":  func(b *poot.Builder[brandA]) { b.Pop() },
		"scope with slash":  func(b *poot.Builder[brandA]) { b.Push("a/b") },
		"empty scope":       func(b *poot.Builder[brandA]) { b.Push("") },
		"finish in scope":   func(b *poot.Builder[brandA]) { b.Push("a"); b.Finish(poot.Out[brandA]()) },
		"unpaired state":    func(b *poot.Builder[brandA]) { b.StateInput("s", poot.T(poot.F32, 1)); b.Finish(poot.Out[brandA]()) },
		"state twice":       stateTwice,
		"state wrong type":  stateWrongType,
		"carry non-state":   carryNonState,
		"finish twice":      func(b *poot.Builder[brandA]) { b.Finish(poot.Out[brandA]()); b.Finish(poot.Out[brandA]()) },
		"record after":      func(b *poot.Builder[brandA]) { b.Finish(poot.Out[brandA]()); b.Scalar(1) },
		"duplicate witness": dupWitness,
	} {
		b := poot.NewBuilder[brandA](poot.Limits{})
		fn(b)
		if b.Err() == nil {
			t.Errorf("%s: no error", name)
		}
		var pe *poot.Error
		if !errors.As(b.Err(), &pe) {
			t.Errorf("%s: error %v is not a *poot.Error", name, b.Err())
		}
	}
}

func stateTwice(b *poot.Builder[brandA]) {
	s := b.StateInput("s", poot.T(poot.F32, 1))
	y := b.Neg(s)
	b.Finish(poot.Out[brandA]().WithState(s, y).WithState(s, y))
}

func stateWrongType(b *poot.Builder[brandA]) {
	s := b.StateInput("s", poot.T(poot.F32, 1))
	b.Finish(poot.Out[brandA]().WithState(s, b.Scalar(1)))
}

func carryNonState(b *poot.Builder[brandA]) {
	c := b.Constant("c", poot.T(poot.F32, 1))
	b.Finish(poot.Out[brandA]().WithState(c, b.Neg(c)))
}

func dupWitness(b *poot.Builder[brandA]) {
	x := b.Scalar(1)
	b.Finish(poot.Out(x).WithWitness("w", x).WithWitness("w", x))
}

func TestLimits(t *testing.T) {
	for name, c := range map[string]struct {
		limits poot.Limits
		fn     func(b *poot.Builder[brandA])
	}{
		"equations": {poot.Limits{MaxEquations: 3}, func(b *poot.Builder[brandA]) {
			x := b.Scalar(1)
			for range 5 {
				x = b.Neg(x)
			}
		}},
		"const bytes": {poot.Limits{MaxConstBytes: 100}, func(b *poot.Builder[brandA]) {
			b.Constant("a", poot.T(poot.F32, 20))
			b.Constant("b", poot.T(poot.F32, 20))
		}},
		"value bytes": {poot.Limits{MaxValueBytes: 100}, func(b *poot.Builder[brandA]) {
			b.Full(poot.T(poot.F32, 26), 0)
		}},
		"device bytes": {poot.Limits{MaxDeviceBytes: 100}, func(b *poot.Builder[brandA]) {
			x := b.Full(poot.T(poot.F32, 20), 0)
			b.Neg(x)
		}},
	} {
		b := poot.NewBuilder[brandA](c.limits)
		c.fn(b)
		if !errors.Is(b.Err(), poot.ErrLimit) {
			t.Errorf("%s: err = %v, want ErrLimit", name, b.Err())
		}
	}
	// Exactly at the limit is fine.
	b := poot.NewBuilder[brandA](poot.Limits{MaxEquations: 2, MaxConstBytes: 80, MaxValueBytes: 80, MaxDeviceBytes: 160})
	c := b.Constant("a", poot.T(poot.F32, 20))
	b.Neg(b.Neg(c))
	if b.Err() != nil {
		t.Errorf("at the limits: %v", b.Err())
	}
}

func TestScopes(t *testing.T) {
	b := poot.NewBuilder[brandA](poot.Limits{})
	x := b.Constant("x", poot.T(poot.F32, 2))
	b.Scope("layer.0", func() {
		x = b.Neg(x)
		b.Scope("attn", func() { x = b.Exp(x) })
		b.Push("ffn")
		if b.CurrentScope() != "layer.0/ffn" {
			t.Errorf("CurrentScope = %q", b.CurrentScope())
		}
		x = b.Abs(x)
		b.Pop()
	})
	x = b.Neg(x)
	g, err := b.Finish(poot.Out(x))
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range g.Eqns() {
		got = append(got, g.Scope(e.Scope))
	}
	want := []string{"layer.0", "layer.0/attn", "layer.0/ffn", ""}
	if strings.Join(got, ",") != strings.Join(want, ",") {
		t.Errorf("scopes %q, want %q", got, want)
	}
	if n := len(g.ScopeEqns("layer.0")); n != 3 {
		t.Errorf("layer.0 holds %d equations, want 3", n)
	}
	if n := len(g.ScopeEqns("layer")); n != 0 {
		t.Errorf("prefix 'layer' matched %d equations; scopes match whole path elements", n)
	}
}

func TestGraphAccessorsCopy(t *testing.T) {
	g, err := traceDecoder(1, 16, 2, 1, 32, 50, 8)
	if err != nil {
		t.Fatal(err)
	}
	before := g.String()
	es := g.Eqns()
	es[3].Inputs[0] = 999
	e := g.Eqn(3)
	e.Inputs[0] = 998
	g.Outputs()[0] = 997
	if g.String() != before {
		t.Error("mutating returned copies changed the graph")
	}
	if err := g.Validate(); err != nil {
		t.Error(err)
	}
	if _, ok := g.Lookup("blk.0.attn_q.weight"); !ok {
		t.Error("Lookup failed")
	}
	if len(g.Inputs(poot.State)) != 2 || len(g.Inputs(poot.Slot)) != 2 {
		t.Error("Inputs by kind miscounted")
	}
}
