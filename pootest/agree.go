package pootest

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/tensor"
)

// Bound is how far two float elements may differ: |a-b| ≤ Abs + Rel·|b|.
// NaN matches only NaN, and an infinity only the same infinity.
type Bound struct {
	Abs, Rel float64
}

// Tolerance bounds the differences allowed per dtype. I32 and Bool values
// must always be equal; F16 and BF16 values are compared after widening.
type Tolerance struct {
	F32, F16, BF16 Bound
}

// Exact allows no difference at all: not even between -0 and +0.
var Exact = Tolerance{}

// Default suits two faithful float32 interpreters that sum in different
// orders: a few float32 ulps for F32 and one unit in the last place for the
// half types.
var Default = Tolerance{
	F32:  Bound{Abs: 1e-5, Rel: 1e-4},
	F16:  Bound{Abs: 1e-3, Rel: 2e-3},
	BF16: Bound{Abs: 1e-2, Rel: 1.6e-2},
}

// bound returns the bound for dtype d and whether d is compared by value.
func (tol Tolerance) bound(d poot.DType) (Bound, bool) {
	switch d {
	case poot.F32:
		return tol.F32, true
	case poot.F16:
		return tol.F16, true
	case poot.BF16:
		return tol.BF16, true
	}
	return Bound{}, false
}

// Mismatch says where two tensors first differ.
type Mismatch struct {
	Index int     // flat element index (or byte index for packed data)
	A, B  float64 // the two values
}

// Diff compares two tensors under tol and returns the first element that
// differs, or nil when they agree. Types must be equal.
func Diff(a, b tensor.Tensor, tol Tolerance) (*Mismatch, error) {
	if !a.Type.Equal(b.Type) {
		return nil, fmt.Errorf("types differ: %v and %v", a.Type, b.Type)
	}
	if err := a.Validate(); err != nil {
		return nil, err
	}
	if err := b.Validate(); err != nil {
		return nil, err
	}
	bd, isFloat := tol.bound(a.Type.DType)
	if !isFloat {
		switch a.Type.DType {
		case poot.I32:
			x, y := a.I32(), b.I32()
			for i := range x {
				if x[i] != y[i] {
					return &Mismatch{i, float64(x[i]), float64(y[i])}, nil
				}
			}
		case poot.Bool:
			x, y := a.Bool(), b.Bool()
			for i := range x {
				if x[i] != y[i] {
					return &Mismatch{i, b2f(x[i]), b2f(y[i])}, nil
				}
			}
		default: // packed data is compared as stored
			for i := range a.Data {
				if a.Data[i] != b.Data[i] {
					return &Mismatch{i, float64(a.Data[i]), float64(b.Data[i])}, nil
				}
			}
		}
		return nil, nil
	}
	x, err := a.ToF32()
	if err != nil {
		return nil, err
	}
	y, err := b.ToF32()
	if err != nil {
		return nil, err
	}
	for i := range x {
		if !within(float64(x[i]), float64(y[i]), bd) {
			return &Mismatch{i, float64(x[i]), float64(y[i])}, nil
		}
	}
	return nil, nil
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func within(a, b float64, bd Bound) bool {
	switch {
	case math.IsNaN(a) || math.IsNaN(b):
		return math.IsNaN(a) && math.IsNaN(b)
	case math.IsInf(a, 0) || math.IsInf(b, 0):
		return a == b
	case a == b:
		// Under an exact bound a zero's sign is part of its value: it
		// decides the sign of a later division or Rsqrt.
		return bd != (Bound{}) || math.Signbit(a) == math.Signbit(b)
	}
	return math.Abs(a-b) <= bd.Abs+bd.Rel*math.Abs(b)
}

// ConstsFor returns the bindings of m that g declares, so that a graph
// from which an edit removed constants can be run with its parent's
// bindings without an extra-binding error.
func ConstsFor(g *poot.Graph, m interp.ConstMap) interp.ConstMap {
	out := interp.ConstMap{}
	for _, id := range g.Inputs(poot.Const) {
		name := g.Value(id).Name
		if t, ok := m[name]; ok {
			out[name] = t
		}
	}
	return out
}

// TB is the part of testing.TB (and of *rapid.T) that Agree uses.
type TB interface {
	Helper()
	Fatalf(format string, args ...any)
}

// Agree runs g under a and b from the same slots and (cloned) state and
// fails t unless every output and every carried state agree within tol, or
// both interpreters fail with the same kind of error. On a difference the
// message names the first equation whose value differs, with its scope.
func Agree(t TB, a, b interp.Interpreter, g *poot.Graph, consts interp.Consts, slots interp.Slots, state *interp.State, tol Tolerance) {
	t.Helper()
	if err := Compare(a, b, g, consts, slots, state, tol); err != nil {
		t.Fatalf("%v", err)
	}
}

// sentinels are the error kinds two interpreters must agree on.
var sentinels = []error{interp.ErrBinding, interp.ErrIndexRange, interp.ErrSlotRange, interp.ErrDivideByZero, interp.ErrUnsupported}

func kindOf(err error) error {
	for _, s := range sentinels {
		if errors.Is(err, s) {
			return s
		}
	}
	return err
}

// Compare is Agree returning an error instead of failing a test.
func Compare(a, b interp.Interpreter, g *poot.Graph, consts interp.Consts, slots interp.Slots, state *interp.State, tol Tolerance) error {
	sa, sb := state.Clone(), state.Clone()
	oa, ea := run(a, g, consts, slots, sa)
	ob, eb := run(b, g, consts, slots, sb)
	switch {
	case ea != nil && eb != nil:
		if ka, kb := kindOf(ea), kindOf(eb); ka != kb {
			return fmt.Errorf("pootest: %s and %s fail differently:\n  %s: %v\n  %s: %v", a.Name(), b.Name(), a.Name(), ea, b.Name(), eb)
		}
		return nil
	case ea != nil || eb != nil:
		return fmt.Errorf("pootest: only one interpreter fails:\n  %s: %v\n  %s: %v", a.Name(), ea, b.Name(), eb)
	}
	var diffs []string
	for i := range oa {
		m, err := Diff(oa[i], ob[i], tol)
		if err != nil {
			diffs = append(diffs, fmt.Sprintf("output %d: %v", i, err))
		} else if m != nil {
			diffs = append(diffs, fmt.Sprintf("output %d (%v) element %d: %s %v, %s %v", i, oa[i].Type, m.Index, a.Name(), m.A, b.Name(), m.B))
		}
	}
	if sa != nil {
		for _, s := range []*interp.State{sa, sb} {
			if err := s.Sync(); err != nil {
				diffs = append(diffs, err.Error())
			}
		}
		for name, ta := range sa.Tensors {
			m, err := Diff(ta, sb.Tensors[name], tol)
			if err != nil {
				diffs = append(diffs, fmt.Sprintf("state %q: %v", name, err))
			} else if m != nil {
				diffs = append(diffs, fmt.Sprintf("state %q (%v) element %d: %s %v, %s %v", name, ta.Type, m.Index, a.Name(), m.A, b.Name(), m.B))
			}
		}
	}
	if len(diffs) == 0 {
		return nil
	}
	return fmt.Errorf("pootest: %s and %s disagree:\n  %s\n%s", a.Name(), b.Name(), strings.Join(diffs, "\n  "), Locate(a, b, g, consts, slots, state, tol))
}

func run(in interp.Interpreter, g *poot.Graph, consts interp.Consts, slots interp.Slots, state *interp.State) ([]tensor.Tensor, error) {
	x, err := in.Compile(g, consts)
	if err != nil {
		return nil, err
	}
	return x.Run(slots, state)
}

// Locate runs the witness-everything copy of g under both interpreters and
// describes the first equation whose value differs under tol: its index,
// primitive, scope and the differing element.
func Locate(a, b interp.Interpreter, g *poot.Graph, consts interp.Consts, slots interp.Slots, state *interp.State, tol Tolerance) string {
	wg, err := WitnessAll(g)
	if err != nil {
		return fmt.Sprintf("  (cannot locate: %v)", err)
	}
	xa, err := a.Compile(wg, consts)
	if err != nil {
		return fmt.Sprintf("  (cannot locate: %v)", err)
	}
	xb, err := b.Compile(wg, consts)
	if err != nil {
		return fmt.Sprintf("  (cannot locate: %v)", err)
	}
	if _, err := xa.Run(slots, state.Clone()); err != nil {
		return fmt.Sprintf("  (cannot locate: %v)", err)
	}
	if _, err := xb.Run(slots, state.Clone()); err != nil {
		return fmt.Sprintf("  (cannot locate: %v)", err)
	}
	for i := range g.NumEqns() {
		ta, oka := xa.Witness(EqnWitness(i))
		tb, okb := xb.Witness(EqnWitness(i))
		if !oka || !okb {
			return fmt.Sprintf("  (cannot locate: witness of equation %d missing)", i)
		}
		m, err := Diff(ta, tb, tol)
		if err != nil || m != nil {
			e := g.Eqn(i)
			msg := fmt.Sprintf("  first difference: equation %d %s in scope %q", i, g.FormatEqn(e), g.Scope(e.Scope))
			if m != nil {
				msg += fmt.Sprintf(": element %d is %v under %s, %v under %s", m.Index, m.A, a.Name(), m.B, b.Name())
			} else {
				msg += fmt.Sprintf(": %v", err)
			}
			return msg
		}
	}
	return "  (every equation agrees: the difference is in how outputs or state are returned)"
}
