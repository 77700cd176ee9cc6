package pootest

import (
	"fmt"
	"slices"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/tensor"
	"pgregory.net/rapid"
)

// compositeGens are the generators of graphs around one composite, by the
// composite's name: random attributes, shapes and data, for holding a
// backend's fused kernel to the composite's body (see GenComposite).
var compositeGens = map[string]func() *rapid.Generator[*GraphCase]{
	"attention": genAttention,
	"rmsnorm":   genRMSNorm,
	"rope":      genRope,
	"swiglu":    genSwiGLU,
}

// Composites lists the composites GenComposite has generators for.
func Composites() []string {
	names := make([]string, 0, len(compositeGens))
	for n := range compositeGens {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// GenComposite generates graphs whose work is one composite called name,
// recorded through package ops with random attributes and inputs (data
// include special values where the composite defines them), so that an interpreter that runs a fused kernel
// for it can be compared with the oracle, which runs its body. ok is false
// for a composite without a generator: a backend that fuses a composite
// should add one here.
func GenComposite(name string) (gen *rapid.Generator[*GraphCase], ok bool) {
	f, ok := compositeGens[name]
	if !ok {
		return nil, false
	}
	return f(), true
}

// AgreeComposite checks that in computes what the oracle computes on random
// graphs around the composite called name, within tol: a fused kernel
// against the body it replaces. It fails t when there is no generator for
// name.
func AgreeComposite(t rapid.TB, in interp.Interpreter, name string, tol Tolerance) {
	gen, ok := GenComposite(name)
	if !ok {
		t.Fatalf("pootest: no generator for composite %q (have %v)", name, Composites())
		return
	}
	rapid.Check(t, func(rt *rapid.T) {
		c := gen.Draw(rt, name)
		Agree(rt, interp.Oracle{}, in, c.Graph, c.Consts, c.Slots, c.State, tol)
	})
}

// genAttention records ops.CachedAttention of one layer: random rows,
// new tokens, capacity, grouped heads, head widths, soft cap, sinks,
// sliding window and scale, with the cache written at random positions.
func genAttention() *rapid.Generator[*GraphCase] {
	return rapid.Custom(func(t *rapid.T) *GraphCase {
		g := newGen(t)
		rows := rapid.IntRange(1, 2).Draw(t, "rows")
		newT := rapid.IntRange(1, 3).Draw(t, "new")
		capacity := rapid.IntRange(newT, 6).Draw(t, "capacity")
		kvHeads := rapid.IntRange(1, 2).Draw(t, "kv_heads")
		rep := rapid.IntRange(1, 3).Draw(t, "rep")
		d := rapid.IntRange(1, 5).Draw(t, "d")
		dv := rapid.IntRange(1, 5).Draw(t, "dv")
		softCap := rapid.SampledFrom([]float64{0, 0, 2.5, 30}).Draw(t, "soft_cap")
		scale := rapid.SampledFrom([]float64{0, 0, 0.125, 1}).Draw(t, "scale")
		window := rapid.SampledFrom([]int{0, 0, 1, 2}).Draw(t, "window")
		h := kvHeads * rep
		n := rows * newT
		b := g.b
		// Every input may carry special values, the caches' unused rows
		// included: the definition says exactly what a masked position
		// contributes (nothing, or 0·x when another query of the sequence
		// sees it), and fused kernels must agree.
		data := func(special bool, dims ...int) tensor.Tensor {
			return g.f32(poot.Shape(dims), g.floats(int(poot.Shape(dims).Size()), special))
		}
		q := b.SlotNamed("q", poot.T(poot.F32, n, h*d))
		k := b.SlotNamed("k", poot.T(poot.F32, n, kvHeads*d))
		v := b.SlotNamed("v", poot.T(poot.F32, n, kvHeads*dv))
		pos := b.Slot(poot.SlotPos, poot.Shape{n}, 0, int64(capacity-1))
		kc := b.StateInput("cache.k", poot.T(poot.F32, rows*capacity, kvHeads*d))
		vc := b.StateInput("cache.v", poot.T(poot.F32, rows*capacity, kvHeads*dv))
		cfg := ops.AttentionConfig[GenBrand]{Heads: h, KVHeads: kvHeads, HeadDim: d, ValueDim: dv, Rows: rows, SoftCap: softCap, Scale: scale}
		if rapid.Bool().Draw(t, "sinks") {
			cfg.Sinks = b.Constant("sinks", poot.T(poot.F32, h))
			g.consts["sinks"] = data(true, h)
		}
		var out, kn, vn poot.Traced[GenBrand]
		b.Scope("layer.0", func() {
			mask := ops.CausalMask(b, pos, capacity, window, 0)
			out, kn, vn = ops.CachedAttention(b, q, k, v, kc, vc, pos, mask, cfg)
		})
		graph, err := b.Finish(poot.Out(out).WithState(kc, kn).WithState(vc, vn))
		if err != nil {
			g.fail(err)
		}
		ps := make([]int32, n)
		for r := range rows {
			start := rapid.IntRange(0, capacity-newT).Draw(t, fmt.Sprintf("start%d", r))
			for i := range newT {
				ps[r*newT+i] = int32(start + i)
			}
		}
		pt, err := tensor.FromI32(poot.Shape{n}, ps)
		if err != nil {
			g.fail(err)
		}
		slots := interp.Slots{"q": data(true, n, h*d), "k": data(true, n, kvHeads*d), "v": data(true, n, kvHeads*dv), "pos": pt}
		state := &interp.State{Tensors: map[string]tensor.Tensor{
			"cache.k": data(true, rows*capacity, kvHeads*d), "cache.v": data(true, rows*capacity, kvHeads*dv)}}
		return &GraphCase{Graph: graph, Consts: g.consts, Slots: slots, State: state}
	})
}

// genRope records ops.RoPE: random rows, heads, rotated pairs and head
// widths (partial rotary when wider than the pairs), either layout, with
// tables drawn directly (special values included) rather than from
// positions, so every product and sum meets them.
func genRope() *rapid.Generator[*GraphCase] {
	return rapid.Custom(func(t *rapid.T) *GraphCase {
		g := newGen(t)
		rows := rapid.IntRange(1, 3).Draw(t, "rows")
		heads := rapid.IntRange(1, 3).Draw(t, "heads")
		half := rapid.IntRange(1, 3).Draw(t, "half")
		d := 2*half + rapid.IntRange(0, 3).Draw(t, "pass")
		layout := rapid.SampledFrom([]ops.RopeLayout{ops.RopeNeoX, ops.RopeInterleaved}).Draw(t, "layout")
		b := g.b
		x := b.SlotNamed("x", poot.T(poot.F32, rows, heads*d))
		r := ops.Rotary[GenBrand]{Cos: b.SlotNamed("cos", poot.T(poot.F32, rows, half)), Sin: b.SlotNamed("sin", poot.T(poot.F32, rows, half)), Layout: layout}
		graph, err := b.Finish(poot.Out(ops.RoPE(b, x, heads, r)))
		if err != nil {
			g.fail(err)
		}
		data := func(dims ...int) tensor.Tensor {
			return g.f32(poot.Shape(dims), g.floats(int(poot.Shape(dims).Size()), true))
		}
		slots := interp.Slots{"x": data(rows, heads*d), "cos": data(rows, half), "sin": data(rows, half)}
		return &GraphCase{Graph: graph, Consts: g.consts, Slots: slots}
	})
}

// genSwiGLU records ops.SwiGLU over operands of a random shape; the gates
// are sometimes scaled past ±88, where e^-gate overflows or underflows.
func genSwiGLU() *rapid.Generator[*GraphCase] {
	return rapid.Custom(func(t *rapid.T) *GraphCase {
		g := newGen(t)
		sh := g.shape(1)
		b := g.b
		gate, up := b.SlotNamed("gate", poot.T(poot.F32, sh...)), b.SlotNamed("up", poot.T(poot.F32, sh...))
		graph, err := b.Finish(poot.Out(ops.SwiGLU(b, gate, up)))
		if err != nil {
			g.fail(err)
		}
		n := int(sh.Size())
		gv := g.floats(n, true)
		scale := rapid.SampledFrom([]float32{1, 1, 40}).Draw(t, "scale")
		for i := range gv {
			gv[i] *= scale
		}
		gt := g.f32(sh, gv)
		ut := g.f32(sh, g.floats(n, true))
		return &GraphCase{Graph: graph, Consts: g.consts, Slots: interp.Slots{"gate": gt, "up": ut}}
	})
}

// genRMSNorm records ops.RMSNorm over the last axis of a random shape, or
// ops.RMSNormHeads over heads of it, with an F32 weight (a constant or a
// slot) or none, a weight of 1+w or w, and epsilon 0 or not, of a slot or
// of a sum of two; the rows are sometimes scaled to 1e20, whose squares
// overflow float32.
func genRMSNorm() *rapid.Generator[*GraphCase] {
	return rapid.Custom(func(t *rapid.T) *GraphCase {
		g := newGen(t)
		rows := rapid.IntRange(1, 3).Draw(t, "rows")
		heads := rapid.IntRange(1, 3).Draw(t, "heads")
		d := rapid.IntRange(1, 40).Draw(t, "d")
		eps := rapid.SampledFrom([]float64{0, 1e-6, 1e-5, 0.5}).Draw(t, "eps")
		var opts []ops.NormOption
		if rapid.Bool().Draw(t, "one_plus") {
			opts = append(opts, ops.OnePlusWeight())
		}
		b := g.b
		slots := interp.Slots{}
		xt := poot.T(poot.F32, rows, heads*d)
		data := func() tensor.Tensor {
			xv := g.floats(rows*heads*d, true)
			if rapid.IntRange(0, 3).Draw(t, "huge") == 0 {
				for i := range xv {
					xv[i] *= 1e20
				}
			}
			return g.f32(xt.Shape, xv)
		}
		// x is a slot, or a sum (a residual add) read by nothing else, by
		// an equation before the norm, or by the graph's outputs.
		x, outs := b.SlotNamed("x", xt), []poot.Traced[GenBrand]{}
		slots["x"] = data()
		if sum := rapid.IntRange(0, 3).Draw(t, "sum"); sum > 0 {
			x = b.Add(x, b.SlotNamed("x2", xt))
			slots["x2"] = data()
			switch sum {
			case 2:
				outs = append(outs, b.Mul(x, x))
			case 3:
				outs = append(outs, x)
			}
		}
		var w poot.Traced[GenBrand]
		wv := g.f32(poot.Shape{d}, g.floats(d, true))
		switch rapid.IntRange(0, 2).Draw(t, "weight") {
		case 1:
			w = b.Constant("w", poot.T(poot.F32, d))
			g.consts["w"] = wv
		case 2:
			w = b.SlotNamed("w", poot.T(poot.F32, d))
			slots["w"] = wv
		}
		var y poot.Traced[GenBrand]
		if heads > 1 || rapid.Bool().Draw(t, "as_heads") {
			y = ops.RMSNormHeads(b, x, w, heads, eps, opts...)
		} else {
			y = ops.RMSNorm(b, x, w, eps, opts...)
		}
		graph, err := b.Finish(poot.Out(append(outs, y)...))
		if err != nil {
			g.fail(err)
		}
		return &GraphCase{Graph: graph, Consts: g.consts, Slots: slots}
	})
}
