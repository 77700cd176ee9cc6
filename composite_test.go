package poot_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/pootlabs/poot"
)

type brandC struct{}

type cb = poot.Builder[brandC]
type ch = poot.Traced[brandC]

// norm records a small normalisation composite over x with weight w (the
// zero handle for none), eps as its attribute.
func norm(b *cb, x, w ch, eps float64) ch {
	return b.Composite("norm", poot.Attrs{{Name: "epsilon", Value: eps}}, []ch{x, w}, func() []ch {
		ms := b.ReduceSum(b.Mul(x, x), -1)
		r := b.Rsqrt(b.Add(ms, b.FullLike(ms, eps)))
		y := b.Mul(x, b.Broadcast(r, b.Shape(x)...))
		if w != (ch{}) {
			y = b.Mul(y, w)
		}
		return []ch{y}
	})[0]
}

func TestCompositeRecord(t *testing.T) {
	b := poot.NewBuilder[brandC](poot.Limits{})
	x := b.Constant("x", poot.T(poot.F32, 4))
	w := b.Constant("w", poot.T(poot.F32, 4))
	var inner ch
	outs := b.Composite("block", poot.Attrs{{Name: "heads", Value: 2}, {Name: "dims", Value: []int{1, 2}}}, []ch{x, w}, func() []ch {
		inner = norm(b, b.Exp(x), ch{}, 1e-6)
		return []ch{b.Mul(inner, w), inner}
	})
	g, err := b.Finish(poot.Out(outs[0]))
	if err != nil {
		t.Fatal(err)
	}
	want := []poot.Composite{
		{Name: "block", Attrs: poot.Attrs{{Name: "heads", Value: 2}, {Name: "dims", Value: []int{1, 2}}},
			Operands: []poot.ValueID{0, 1}, Results: []poot.ValueID{outs[0].ID(), inner.ID()}, Lo: 0, Hi: g.NumEqns()},
		{Name: "norm", Attrs: poot.Attrs{{Name: "epsilon", Value: 1e-6}}, Operands: []poot.ValueID{2, -1},
			Results: []poot.ValueID{inner.ID()}, Parent: 1, Scope: 1, Lo: 1, Hi: g.NumEqns() - 1},
	}
	if d := cmp.Diff(want, g.Composites()); d != "" {
		t.Errorf("records (-want +got):\n%s", d)
	}
	if g.Scope(g.Composite(2).Scope) != "block" || g.Scope(g.Eqn(2).Scope) != "block/norm" {
		t.Errorf("scopes: %q %q", g.Scope(g.Composite(2).Scope), g.Scope(g.Eqn(2).Scope))
	}
	if g.Top(2) != 1 || !g.Holds(1, 2) || g.Holds(2, 1) || g.Eqn(0).Composite != 1 || g.Eqn(1).Composite != 2 {
		t.Error("nesting")
	}
	if h, _ := g.Composite(1).Attrs.Int("heads"); h != 2 {
		t.Error("Attrs.Int")
	}
	if d, _ := g.Composite(1).Attrs.Ints("dims"); !cmp.Equal(d, []int{1, 2}) {
		t.Error("Attrs.Ints")
	}
	if _, ok := g.Composite(1).Attrs.Float("heads"); ok {
		t.Error("an int attribute read as a float")
	}
	if g.Composite(3).Name != "" || g.Composite(0).Name != "" {
		t.Error("out-of-range ids give the zero record")
	}

	folded := g.String()
	if !strings.Contains(folded, `= block[heads=2 dims=[1,2]] %0 %1  {9 equations}`) || strings.Contains(folded, "rsqrt") {
		t.Errorf("folded:\n%s", folded)
	}
	var sb strings.Builder
	if err := g.Print(&sb, poot.PrintOptions{Unfold: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "rsqrt") || !strings.Contains(sb.String(), "block/norm:") {
		t.Errorf("unfolded:\n%s", sb.String())
	}
	sb.Reset()
	if err := g.DOT(&sb, "", poot.PrintOptions{}); err != nil {
		t.Fatal(err)
	}
	if dot := sb.String(); !strings.Contains(dot, `c1 [label="block[heads=2 dims=[1,2]]`) || strings.Contains(dot, "rsqrt") || !strings.Contains(dot, "v0 -> c1") {
		t.Errorf("folded DOT:\n%s", dot)
	}
	sb.Reset()
	if err := g.DOT(&sb, "", poot.PrintOptions{Unfold: true}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(sb.String(), "rsqrt") {
		t.Errorf("unfolded DOT:\n%s", sb.String())
	}
}

func TestCompositeMisuse(t *testing.T) {
	for name, rec := range map[string]func(b *cb, x, y ch) ch{
		"reads a value that is not an operand": func(b *cb, x, y ch) ch {
			return b.Composite("c", nil, []ch{x}, func() []ch { return []ch{b.Add(x, y)} })[0]
		},
		"returns an operand": func(b *cb, x, y ch) ch {
			return b.Composite("c", nil, []ch{x}, func() []ch { return []ch{x} })[0]
		},
		"returns a value from outside": func(b *cb, x, y ch) ch {
			z := b.Exp(y)
			return b.Composite("c", nil, []ch{x}, func() []ch { b.Neg(x); return []ch{z} })[0]
		},
		"records nothing": func(b *cb, x, y ch) ch {
			return b.Composite("c", nil, []ch{x}, func() []ch { return nil })[0]
		},
		"declares a constant inside": func(b *cb, x, y ch) ch {
			return b.Composite("c", nil, []ch{x}, func() []ch { return []ch{b.Add(x, b.Constant("k", poot.T(poot.F32, 2)))} })[0]
		},
		"has an attribute of another type": func(b *cb, x, y ch) ch {
			return b.Composite("c", poot.Attrs{{Name: "a", Value: int64(1)}}, []ch{x}, func() []ch { return []ch{b.Neg(x)} })[0]
		},
		"repeats an attribute": func(b *cb, x, y ch) ch {
			a := poot.Attrs{{Name: "a", Value: 1}, {Name: "a", Value: 2}}
			return b.Composite("c", a, []ch{x}, func() []ch { return []ch{b.Neg(x)} })[0]
		},
		"has a name with a slash": func(b *cb, x, y ch) ch {
			return b.Composite("a/b", nil, []ch{x}, func() []ch { return []ch{b.Neg(x)} })[0]
		},
	} {
		t.Run(name, func(t *testing.T) {
			b := poot.NewBuilder[brandC](poot.Limits{})
			x := b.Constant("x", poot.T(poot.F32, 2))
			y := b.Constant("y", poot.T(poot.F32, 2))
			var out ch
			func() {
				defer func() {
					if r := recover(); r != nil {
						// A body returning nothing makes the caller's [0]
						// panic; the builder must still hold the error.
						out = ch{}
					}
				}()
				out = rec(b, x, y)
			}()
			_, err := b.Finish(poot.Out(out))
			var pe *poot.Error
			if !errors.As(err, &pe) || !errors.Is(err, poot.ErrComposite) {
				t.Fatalf("got %v, want ErrComposite", err)
			}
		})
	}
	// A foreign operand.
	b := poot.NewBuilder[brandC](poot.Limits{})
	other := poot.NewBuilder[brandC](poot.Limits{})
	f := other.Constant("f", poot.T(poot.F32, 2))
	b.Composite("c", nil, []ch{f}, func() []ch { return []ch{b.Neg(f)} })
	if !errors.Is(b.Err(), poot.ErrForeignHandle) {
		t.Errorf("foreign operand: %v", b.Err())
	}
	// After an error the body still runs once and its handles come back.
	n := 0
	outs := b.Composite("c", nil, nil, func() []ch { n++; return []ch{b.Neg(f), b.Neg(f)} })
	if n != 1 || len(outs) != 2 {
		t.Errorf("body ran %d times, %d results", n, len(outs))
	}
}

// TestCompositeEdits: RemoveDead keeps a composite whole or drops it whole;
// RetypeConstants casts a weight outside the composites that read it and
// updates their operands; Replace keeps the records of a body it rewrites
// inside and drops those it replaces.
func TestCompositeEdits(t *testing.T) {
	b := poot.NewBuilder[brandC](poot.Limits{})
	x := b.Constant("x", poot.T(poot.F32, 4))
	w := b.Constant("w", poot.T(poot.F32, 4))
	a := norm(b, x, w, 1e-5)
	dead := norm(b, b.Exp(x), w, 1e-6)
	_ = dead
	g, err := b.Finish(poot.Out(a))
	if err != nil {
		t.Fatal(err)
	}
	d, err := g.RemoveDead()
	if err != nil {
		t.Fatal(err)
	}
	if d.NumComposites() != 1 || d.Composite(1).Hi-d.Composite(1).Lo != g.Composite(1).Hi-g.Composite(1).Lo {
		t.Errorf("RemoveDead: %d composites\n%v", d.NumComposites(), d)
	}

	r, err := g.RetypeConstants(map[string]poot.DType{"w": poot.F16})
	if err != nil {
		t.Fatal(err)
	}
	cast := r.Eqn(0)
	if cast.Op != poot.Cast || cast.Composite != 0 {
		t.Fatalf("the weight's cast is not first and outside every composite:\n%v", r)
	}
	for _, c := range r.Composites() {
		if c.Operands[1] != cast.Out {
			t.Errorf("%s reads %%%d, want the cast %%%d", c.Name, c.Operands[1], cast.Out)
		}
	}

	// Rewrite the inside of the first body (its rsqrt) as 1/sqrt: the
	// record stays, holding the new equations.
	c := g.Composite(1)
	at := -1
	for i := c.Lo; i < c.Hi; i++ {
		if g.Eqn(i).Op == poot.Rsqrt {
			at = i
		}
	}
	inside, err := g.Replace(at, at+1, func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
		s := b.Sqrt(in[0])
		return []poot.Traced[poot.Rewrite]{b.Div(b.FullLike(s, 1), s)}
	})
	if err != nil {
		t.Fatal(err)
	}
	if inside.NumComposites() != 2 || inside.Composite(1).Hi-inside.Composite(1).Lo != c.Hi-c.Lo+2 {
		t.Errorf("a rewrite inside a body:\n%v", inside)
	}
	whole, err := g.Replace(c.Lo, c.Hi, rerecord(g, c.Lo, c.Hi))
	if err != nil {
		t.Fatal(err)
	}
	if whole.NumComposites() != 1 || whole.Composite(1).Attrs.String() != "epsilon=1e-06" {
		t.Errorf("replacing a whole body keeps its record:\n%v", whole)
	}
	if _, err := g.Replace(c.Lo+1, c.Hi+1, rerecord(g, c.Lo+1, c.Hi+1)); !errors.Is(err, poot.ErrEdit) {
		t.Errorf("a range cutting a body: %v", err)
	}
}

// TestDigestSeesComposites: two scopes that record the same primitives
// differ in digest when their composites' attributes or nesting differ.
func TestDigestSeesComposites(t *testing.T) {
	b := poot.NewBuilder[brandC](poot.Limits{})
	x := b.Constant("x", poot.T(poot.F32, 4))
	var outs []ch
	eps := []float64{1e-5, 1e-5, 1e-6}
	for i, e := range eps {
		b.Scope([]string{"a", "b", "c"}[i], func() { outs = append(outs, norm(b, x, ch{}, e)) })
	}
	b.Scope("d", func() {
		// The same primitives as "c", recorded without a composite.
		ms := b.ReduceSum(b.Mul(x, x), -1)
		r := b.Rsqrt(b.Add(ms, b.FullLike(ms, 1e-6)))
		outs = append(outs, b.Mul(x, b.Broadcast(r, 4)))
	})
	g, err := b.Finish(poot.Out(outs...))
	if err != nil {
		t.Fatal(err)
	}
	if poot.Digest(g, "a") != poot.Digest(g, "b") {
		t.Error("equal composites, different digests")
	}
	if poot.Digest(g, "a") == poot.Digest(g, "c") {
		t.Error("another epsilon kept the digest")
	}
	if poot.Digest(g, "c") == poot.Digest(g, "d") {
		t.Error("a composite and its bare body share a digest")
	}
}
