package poot_test

import (
	"errors"
	"github.com/google/go-cmp/cmp"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"pgregory.net/rapid"
)

// rerecord replays equations [lo, hi) of g into an edit builder, giving a
// faithful replacement.
func rerecord(g *poot.Graph, lo, hi int) func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
	return func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
		env := map[poot.ValueID]poot.Traced[poot.Rewrite]{}
		produced := map[poot.ValueID]bool{}
		k := 0
		eqns := g.Eqns()
		for _, e := range eqns[lo:hi] {
			for _, id := range e.Inputs {
				if _, ok := env[id]; !ok && !produced[id] {
					env[id] = in[k]
					k++
				}
			}
			ops := make([]poot.Traced[poot.Rewrite], len(e.Inputs))
			for j, id := range e.Inputs {
				ops[j] = env[id]
			}
			env[e.Out] = b.Apply(e.Op, e.Params, ops...)
			produced[e.Out] = true
		}
		used := map[poot.ValueID]bool{}
		for _, e := range eqns[hi:] {
			for _, id := range e.Inputs {
				used[id] = true
			}
		}
		for _, o := range g.Outputs() {
			used[o] = true
		}
		for _, s := range g.States() {
			used[s.Out] = true
		}
		for _, w := range g.Witnesses() {
			used[w.Value] = true
		}
		for _, c := range g.Composites() {
			if c.Lo <= lo && c.Hi >= hi && (c.Lo < lo || c.Hi > hi) {
				for _, r := range c.Results {
					used[r] = true
				}
			}
		}
		var outs []poot.Traced[poot.Rewrite]
		for _, e := range eqns[lo:hi] {
			if used[e.Out] {
				outs = append(outs, env[e.Out])
			}
		}
		return outs
	}
}

func TestEditsKeepGraphsValid(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g, err := genGraph(t, "c")
		if err != nil {
			t.Fatal(err)
		}
		before := g.String()
		lo := rapid.IntRange(0, g.NumEqns()-1).Draw(t, "lo")
		hi := rapid.IntRange(lo+1, g.NumEqns()).Draw(t, "hi")
		cuts, inside := false, 0
		for _, c := range g.Composites() {
			switch {
			case c.Hi <= lo || c.Lo >= hi, c.Lo <= lo && c.Hi >= hi && (c.Lo < lo || c.Hi > hi):
			case c.Lo >= lo && c.Hi <= hi:
				inside++
			default:
				cuts = true
			}
		}
		r, err := g.Replace(lo, hi, rerecord(g, lo, hi))
		if cuts {
			if !errors.Is(err, poot.ErrEdit) {
				t.Fatalf("a range [%d,%d) that cuts a composite's body: %v, want ErrEdit", lo, hi, err)
			}
			r = g
		} else if err != nil {
			t.Fatalf("faithful replacement of [%d,%d): %v", lo, hi, err)
		} else if r.NumComposites() != g.NumComposites()-inside {
			// rerecord replays primitives only: the composites inside go.
			t.Fatalf("replacement of [%d,%d) keeps %d of %d composites, want %d", lo, hi, r.NumComposites(), g.NumComposites(), g.NumComposites()-inside)
		}
		if err := r.Validate(); err != nil {
			t.Fatal(err)
		}
		if r.NumEqns() != g.NumEqns() {
			t.Fatalf("replacement changed the equation count %d -> %d", g.NumEqns(), r.NumEqns())
		}
		d, err := g.RemoveDead()
		if err != nil {
			t.Fatal(err)
		}
		if d.NumEqns() > g.NumEqns() {
			t.Fatal("RemoveDead added equations")
		}
		d2, err := d.RemoveDead()
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(d.String(), d2.String()); diff != "" {
			t.Fatalf("RemoveDead is not idempotent (-once +twice):\n%s", diff)
		}
		if diff := cmp.Diff(before, g.String()); diff != "" {
			t.Fatalf("an edit changed its receiver (-before +after):\n%s", diff)
		}
	})
}

func TestReplaceSimplifies(t *testing.T) {
	b := poot.NewBuilder[brandA](poot.Limits{})
	x := b.Constant("x", poot.T(poot.F32, 4))
	y := b.Neg(b.Neg(x)) // equations 0 and 1
	z := b.Exp(y)
	g, err := b.Finish(poot.Out(z))
	if err != nil {
		t.Fatal(err)
	}
	// Replace neg(neg(x)) by x itself.
	r, err := g.Replace(0, 2, func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
		return in
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.NumEqns() != 1 || r.Eqn(0).Op != poot.Exp || r.Value(r.Eqn(0).Inputs[0]).Name != "x" {
		t.Fatalf("got\n%v", r)
	}
	// Replacements that cannot be right are errors, and g is untouched.
	before := g.String()
	bad := map[string]func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite]{
		"count": func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
			return nil
		},
		"type": func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
			return []poot.Traced[poot.Rewrite]{b.Scalar(1)}
		},
		"failing": func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
			return []poot.Traced[poot.Rewrite]{b.Add(in[0], b.Scalar(1))}
		},
		"open": func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
			b.Push("x")
			return in
		},
		"clash": func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
			return []poot.Traced[poot.Rewrite]{b.Constant("x", poot.T(poot.F32, 4, 1))}
		},
		"foreign": func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
			return []poot.Traced[poot.Rewrite]{{}}
		},
	}
	for name, fn := range bad {
		if _, err := g.Replace(0, 2, fn); !errors.Is(err, poot.ErrEdit) {
			t.Errorf("%s: err = %v, want ErrEdit", name, err)
		}
	}
	for _, rng := range [][2]int{{-1, 1}, {1, 1}, {0, 4}} {
		if _, err := g.Replace(rng[0], rng[1], rerecord(g, 0, 1)); !errors.Is(err, poot.ErrEdit) {
			t.Errorf("range %v: err = %v", rng, err)
		}
	}
	if g.String() != before {
		t.Error("failed edits changed the graph")
	}
	// A replacement may declare constants: new ones are added, same-named
	// same-typed ones are shared.
	r, err = g.Replace(2, 3, func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
		s := b.Constant("scale", poot.T(poot.F32, 4))
		return []poot.Traced[poot.Rewrite]{b.Mul(b.Exp(in[0]), b.Add(s, b.Constant("x", poot.T(poot.F32, 4))))}
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Inputs(poot.Const)) != 2 {
		t.Errorf("constants after the edit:\n%v", r)
	}
}

func TestRenameConstants(t *testing.T) {
	g, err := traceDecoder(1, 16, 2, 1, 32, 50, 8)
	if err != nil {
		t.Fatal(err)
	}
	r, err := g.RenameConstants(map[string]string{"blk.0.attn_q.weight": "q", "cache.k.0": "kc"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Lookup("q"); !ok {
		t.Error("rename lost the constant")
	}
	if _, ok := r.Lookup("kc"); !ok {
		t.Error("rename lost the state")
	}
	if _, ok := g.Lookup("blk.0.attn_q.weight"); !ok {
		t.Error("rename changed its receiver")
	}
	for name, m := range map[string]map[string]string{
		"unknown":   {"nope": "x"},
		"duplicate": {"blk.0.attn_q.weight": "blk.0.attn_k.weight"},
		"empty":     {"blk.0.attn_q.weight": ""},
		"slot":      {"pos": "p"},
	} {
		if _, err := g.RenameConstants(m); !errors.Is(err, poot.ErrEdit) {
			t.Errorf("%s: err = %v", name, err)
		}
	}
}

func TestRetypeConstants(t *testing.T) {
	b := poot.NewBuilder[brandA](poot.Limits{})
	tok := b.Slot(poot.SlotToken, poot.Shape{2}, 0, 9)
	emb := b.Constant("emb", poot.T(poot.F32, 10, 32))
	norm := b.Constant("norm", poot.T(poot.F32, 32))
	w := b.Constant("w", poot.T(poot.F32, 8, 32))
	x := b.Gather(emb, tok)
	x = b.Mul(x, b.Broadcast(b.Reshape(norm, 1, 32), 2, 32))
	y := b.MatMul(x, w)
	y2 := b.MatMul(x, emb) // a tied head reads the embedding as stored too
	g, err := b.Finish(poot.Out(y, y2))
	if err != nil {
		t.Fatal(err)
	}
	r, err := g.RetypeConstants(map[string]poot.DType{"emb": poot.Q8_0, "norm": poot.F16, "w": poot.Q4_0})
	if err != nil {
		t.Fatal(err)
	}
	text := r.String()
	for _, want := range []string{
		`const "emb" q8_0[10,32]`, `const "norm" f16[32]`, `const "w" q4_0[8,32]`,
		"q8_0[2,32] = gather", "f32[2,32] = cast[dtype=f32]", "f32[32] = cast[dtype=f32]",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("retyped graph lacks %q:\n%s", want, text)
		}
	}
	if n := strings.Count(text, "= cast"); n != 2 {
		t.Errorf("%d casts, want 2 (the gathered rows and the norm)", n)
	}
	if _, err := g.RetypeConstants(map[string]poot.DType{"w": poot.Q4_K}); !errors.Is(err, poot.ErrEdit) {
		t.Errorf("rows of 32 stored in 256-element blocks: %v", err)
	}
	if _, err := g.RetypeConstants(map[string]poot.DType{"w": poot.Invalid}); !errors.Is(err, poot.ErrEdit) {
		t.Errorf("invalid dtype: %v", err)
	}
	if _, err := g.RetypeConstants(map[string]poot.DType{"nope": poot.F16}); !errors.Is(err, poot.ErrEdit) {
		t.Errorf("unknown constant: %v", err)
	}
	same, err := g.RetypeConstants(map[string]poot.DType{"w": poot.F32})
	if err != nil {
		t.Fatal(err)
	}
	if d := cmp.Diff(g.String(), same.String()); d != "" {
		t.Errorf("retyping to the declared dtype changed the graph (-before +after):\n%s", d)
	}
}

func TestDigestAndRenaming(t *testing.T) {
	g, err := traceDecoder(3, 16, 2, 1, 32, 50, 8)
	if err != nil {
		t.Fatal(err)
	}
	d0, d1 := poot.Digest(g, "layer.0"), poot.Digest(g, "layer.1")
	if d0 != d1 {
		t.Fatal("identical layers have different digests")
	}
	if poot.Digest(g, "layer.0") == poot.Digest(g, "head") {
		t.Fatal("different scopes share a digest")
	}
	m, err := poot.Renaming(g, "layer.0", g, "layer.2")
	if err != nil {
		t.Fatal(err)
	}
	if m["blk.0.ffn_up.weight"] != "blk.2.ffn_up.weight" || m["cache.v.0"] != "cache.v.2" {
		t.Errorf("renaming = %v", m)
	}
	if _, err := poot.Renaming(g, "layer.0", g, "head"); !errors.Is(err, poot.ErrDigestMismatch) {
		t.Errorf("mismatched scopes: %v", err)
	}
	// A layer with another width differs.
	g2, _ := traceDecoder(1, 16, 2, 1, 48, 50, 8)
	if poot.Digest(g2, "layer.0") == d0 {
		t.Error("a different FFN width kept the digest")
	}
}

// TestDigestProperties: the digest ignores constant names but sees every
// change of op, shape or dtype; Renaming composed with RenameConstants
// reproduces the other scope exactly.
func TestDigestProperties(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		g, err := genGraph(t, "a")
		if err != nil {
			t.Fatal(err)
		}
		// The same draws with other constant names.
		names := map[string]string{}
		for _, id := range g.Inputs(poot.Const) {
			n := g.Value(id).Name
			names[n] = "renamed." + n
		}
		h, err := g.RenameConstants(names)
		if err != nil {
			t.Fatal(err)
		}
		if poot.Digest(g, "") != poot.Digest(h, "") {
			t.Fatal("renaming constants changed the digest")
		}
		m, err := poot.Renaming(h, "", g, "")
		if err != nil {
			t.Fatal(err)
		}
		back, err := h.RenameConstants(m)
		if err != nil {
			t.Fatal(err)
		}
		if back.String() != g.String() {
			t.Fatalf("Renaming did not reproduce the scope:\n%v\nvs\n%v", back, g)
		}
		// Any change of an equation's op, shape or dtype changes the digest.
		i := rapid.IntRange(0, g.NumEqns()-1).Draw(t, "eqn")
		e := g.Eqn(i)
		alt, err := g.Replace(i, i+1, func(b *poot.Builder[poot.Rewrite], in []poot.Traced[poot.Rewrite]) []poot.Traced[poot.Rewrite] {
			env := map[poot.ValueID]poot.Traced[poot.Rewrite]{}
			var ops []poot.Traced[poot.Rewrite]
			for _, id := range e.Inputs {
				if _, ok := env[id]; !ok {
					env[id] = in[len(env)]
				}
				ops = append(ops, env[id])
			}
			y := b.Apply(e.Op, e.Params, ops...)
			// neg(neg(y)) has the same type but another structure.
			if b.DType(y) == poot.F32 {
				y = b.Neg(b.Neg(y))
			} else {
				y = b.Cast(b.Cast(y, poot.F32), b.DType(y))
			}
			return []poot.Traced[poot.Rewrite]{y}
		})
		if err != nil {
			// The equation's result may be dead (no live result to replace).
			if !strings.Contains(err.Error(), "live results") {
				t.Fatal(err)
			}
			return
		}
		if poot.Digest(alt, "") == poot.Digest(g, "") {
			t.Fatal("a structural change kept the digest")
		}
	})
}

func TestDispatchCount(t *testing.T) {
	b := poot.NewBuilder[brandA](poot.Limits{})
	x := b.Constant("x", poot.T(poot.F32, 2, 3))
	y := b.Reshape(b.Exp(b.Reshape(x, 6)), 3, 2)
	g, err := b.Finish(poot.Out(y))
	if err != nil {
		t.Fatal(err)
	}
	if g.NumEqns() != 3 || poot.DispatchCount(g) != 1 {
		t.Errorf("%d equations, %d dispatches; want 3 and 1", g.NumEqns(), poot.DispatchCount(g))
	}
}

func TestPrinting(t *testing.T) {
	g, err := traceDecoder(1, 16, 2, 1, 32, 50, 8)
	if err != nil {
		t.Fatal(err)
	}
	text := g.String()
	for _, want := range []string{"graph: 13 constants, 2 slots, 2 states", `slot "pos" i32[1] in [0, 7]`, "layer.0/attn:", "reduce_sum[axis=1]", `state "cache.k.0":`} {
		if !strings.Contains(text, want) {
			t.Errorf("text form lacks %q", want)
		}
	}
	var sb strings.Builder
	if err := g.DOT(&sb, "layer.0/ffn", poot.PrintOptions{}); err != nil {
		t.Fatal(err)
	}
	dot := sb.String()
	if !strings.HasPrefix(dot, "digraph poot {") || !strings.Contains(dot, "cluster_0") || !strings.Contains(dot, "matmul") || strings.Contains(dot, "rsqrt\\nf32[1,1]\"];\n  }\n  subgraph") {
		t.Errorf("DOT output:\n%s", dot)
	}
	if strings.Count(dot, "{") != strings.Count(dot, "}") {
		t.Error("unbalanced DOT braces")
	}
}
