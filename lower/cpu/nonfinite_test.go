package cpu_test

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/pootest"
	"github.com/pootlabs/poot/quant"
	"github.com/pootlabs/poot/tensor"
	"pgregory.net/rapid"
)

var (
	nan32    = float32(math.NaN())
	posInf32 = float32(math.Inf(1))
	negInf32 = float32(math.Inf(-1))
	specials = []float32{nan32, posInf32, negInf32}
)

// sameNonFinite reports the first element where got and want (the
// oracle's) differ in kind: NaN where the other is not, an infinity where
// the other is not the same infinity, or a finite value where the other
// is not finite. Finite values are not compared.
func sameNonFinite(got, want []float32) (int, bool) {
	for i, w := range want {
		g := got[i]
		switch {
		case w != w || g != g:
			if w == w || g == g {
				return i, false
			}
		case math.IsInf(float64(w), 0) || math.IsInf(float64(g), 0):
			if w != g {
				return i, false
			}
		}
	}
	return -1, true
}

// poisonWeight writes value into element (row, col) of a stored weight
// of dtype wt, n rows of k: directly for the float dtypes, as the binary16
// scale of the element's block for packed ones (every element of the
// block decodes from it).
func poisonWeight(wt poot.DType, data []byte, k, row, col int, value float32) {
	rb := int(wt.RowBytes(int64(k)))
	switch wt {
	case poot.F32:
		copy(data[row*rb+4*col:], le32(math.Float32bits(value)))
		return
	case poot.F16:
		copy(data[row*rb+2*col:], le16(quant.F32ToF16(value)))
		return
	case poot.BF16:
		copy(data[row*rb+2*col:], le16(uint16(math.Float32bits(value)>>16)))
		return
	}
	be := wt.BlockElems()
	bb := int(wt.RowBytes(int64(be)))
	at := row*rb + col/be*bb // the block's d is its first two bytes…
	if wt == poot.MXFP4 {
		// MXFP4 holds no NaN: its non-finite weights are the infinities
		// of the largest scale, 2^127, times a code of 2 or more (here
		// 6, ±inf by value's sign; NaN becomes +inf).
		code := byte(7)
		if value < 0 {
			code = 15
		}
		j := col % be
		data[at] = 255
		q := &data[at+1+j%16]
		*q = *q&^(15<<(4*(j/16))) | code<<(4*(j/16))
		return
	}
	if wt == poot.Q6_K {
		at += bb - 2 // …but Q6_K keeps d last
	}
	copy(data[at:], le16(quant.F32ToF16(value)))
}

func le32(v uint32) []byte { return []byte{byte(v), byte(v >> 8), byte(v >> 16), byte(v >> 24)} }
func le16(v uint16) []byte { return []byte{byte(v), byte(v >> 8)} }

// TestNonFiniteContractions holds every contraction the CPU backend runs
// fast (each weight dtype, MatMul and IndexedMatMul) to the oracle's
// propagation of NaN and infinity: NaN and ±Inf activations (which the
// int8 activation blocks of the packed dtypes once turned into finite
// garbage), infinities of both signs in one row, and non-finite weights.
func TestNonFiniteContractions(t *testing.T) {
	for _, wt := range cpu.Target(false).MatMulWeights {
		t.Run(wt.String(), func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				be := max(wt.BlockElems(), 32)
				k := be * rapid.IntRange(1, 2).Draw(rt, "blocks")
				n := rapid.IntRange(1, 20).Draw(rt, "n")
				rows := rapid.IntRange(1, 5).Draw(rt, "rows")
				experts := 2
				rng := rand.New(rand.NewPCG(uint64(rapid.IntRange(0, 1<<30).Draw(rt, "seed")), 3))
				xv := make([]float32, rows*k)
				for i := range xv {
					xv[i] = float32(rng.NormFloat64())
				}
				for range rapid.IntRange(0, 4).Draw(rt, "x specials") {
					xv[rng.IntN(len(xv))] = specials[rng.IntN(3)]
				}
				if rapid.Bool().Draw(rt, "zero column") {
					// An infinity against a zero weight is NaN in the oracle.
					xv[0] = posInf32
				}
				wv := make([]float32, experts*n*k)
				for i := range wv {
					wv[i] = float32(rng.NormFloat64())
				}
				wv[0] = 0
				wten, err := tensor.Quantize(poot.T(wt, experts*n, k), wv)
				if err != nil {
					rt.Fatal(err)
				}
				for range rapid.IntRange(0, 2).Draw(rt, "w specials") {
					poisonWeight(wt, wten.Data, k, rng.IntN(experts*n), rng.IntN(k), specials[rng.IntN(3)])
				}
				idx := make([]int32, rows)
				for i := range idx {
					idx[i] = int32(rng.IntN(experts))
				}
				type brand struct{}
				b := poot.NewBuilder[brand](poot.Limits{})
				x := b.SlotNamed("x", poot.T(poot.F32, rows, k))
				w := b.Constant("w", poot.T(wt, experts*n, k))
				we := b.Constant("we", poot.T(wt, experts, n, k))
				ix := b.SlotNamed("idx", poot.T(poot.I32, rows))
				g, err := b.Finish(poot.Out(b.MatMul(x, w), b.IndexedMatMul(x, we, ix)))
				if err != nil {
					rt.Fatal(err)
				}
				weTen := tensor.Tensor{Type: poot.T(wt, experts, n, k), Data: wten.Data}
				consts := interp.ConstMap{"w": wten, "we": weTen}
				xt, _ := tensor.FromF32(poot.Shape{rows, k}, xv)
				it, _ := tensor.FromI32(poot.Shape{rows}, idx)
				slots := interp.Slots{"x": xt, "idx": it}
				want, err := interp.Eval(g, consts, slots, nil)
				if err != nil {
					rt.Fatal(err)
				}
				ex, err := cpu.Interpreter{Threads: 2}.CompileExec(g, consts)
				if err != nil {
					rt.Fatal(err)
				}
				defer ex.Close()
				if !slices.ContainsFunc(ex.Plan().Kernels, func(k *lower.Kernel) bool { return k.Kind == lower.Contract }) {
					rt.Fatalf("no fast contraction:\n%v", ex.Plan())
				}
				got, err := ex.Run(slots, nil)
				if err != nil {
					rt.Fatal(err)
				}
				for o, name := range []string{"MatMul", "IndexedMatMul"} {
					if i, ok := sameNonFinite(got[o].F32(), want[o].F32()); !ok {
						rt.Fatalf("%s output %d: cpu %g, oracle %g", name, i, got[o].F32()[i], want[o].F32()[i])
					}
				}
			})
		})
	}
}

// TestNonFiniteAttention holds the fused attention, on package kernels'
// path (no soft cap or sinks) and the portable one, to the oracle with
// NaN and infinities in the queries, the keys (new and cached, visible or
// not), the values every query sees, and the sinks. (The oracle also
// carries a non-finite V value from a masked position into the output,
// through its weight of 0; the fused kernels never read masked rows, so
// those stay finite here.)
func TestNonFiniteAttention(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rows := rapid.IntRange(1, 2).Draw(rt, "rows")
		newT := rapid.IntRange(1, 3).Draw(rt, "new")
		capacity := rapid.IntRange(newT, 9).Draw(rt, "capacity")
		kvHeads := rapid.IntRange(1, 2).Draw(rt, "kv_heads")
		rep := rapid.IntRange(1, 5).Draw(rt, "rep")
		d := rapid.SampledFrom([]int{1, 4, 16, 20}).Draw(rt, "d")
		dv := d
		portable := rapid.Bool().Draw(rt, "portable")
		softCap, sinks := 0.0, false
		if portable {
			softCap = rapid.SampledFrom([]float64{0, 2.5}).Draw(rt, "cap")
			sinks = rapid.Bool().Draw(rt, "sinks")
			dv = rapid.IntRange(1, 5).Draw(rt, "dv")
		}
		h, n := kvHeads*rep, rows*newT
		rng := rand.New(rand.NewPCG(uint64(rapid.IntRange(0, 1<<30).Draw(rt, "seed")), 4))
		randV := func(size int) []float32 {
			v := make([]float32, size)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			return v
		}
		poke := func(v []float32, label string, ok func(i int) bool) {
			for range rapid.IntRange(0, 2).Draw(rt, label) {
				if i := rng.IntN(len(v)); ok(i) {
					v[i] = specials[rng.IntN(3)]
				}
			}
		}
		any := func(int) bool { return true }
		starts := make([]int, rows)
		ps := make([]int32, n)
		for r := range rows {
			starts[r] = rapid.IntRange(0, capacity-newT).Draw(rt, fmt.Sprintf("start%d", r))
			for i := range newT {
				ps[r*newT+i] = int32(starts[r] + i)
			}
		}
		q, k, v := randV(n*h*d), randV(n*kvHeads*d), randV(n*kvHeads*dv)
		kc, vc := randV(rows*capacity*kvHeads*d), randV(rows*capacity*kvHeads*dv)
		poke(q, "q specials", any)
		poke(k, "k specials", any)
		poke(kc, "k cache specials", any)
		// A value row reaches a query only where the mask lets it: the
		// cached rows before the row's first new position (every query
		// sees those), and the new tokens' rows, each seen by its own
		// query and the later ones, and hidden from the earlier ones,
		// which the definition still turns NaN in its non-finite columns.
		poke(vc, "v cache specials", func(i int) bool {
			row := i / (kvHeads * dv)
			return row%capacity < starts[row/capacity]
		})
		poke(v, "v specials", any)
		type brand struct{}
		b := poot.NewBuilder[brand](poot.Limits{})
		consts := interp.ConstMap{}
		cfg := ops.AttentionConfig[brand]{Heads: h, KVHeads: kvHeads, HeadDim: d, ValueDim: dv, Rows: rows, SoftCap: softCap}
		if sinks {
			cfg.Sinks = b.Constant("sinks", poot.T(poot.F32, h))
			sv := randV(h)
			poke(sv, "sink specials", any)
			consts["sinks"], _ = tensor.FromF32(poot.Shape{h}, sv)
		}
		qs := b.SlotNamed("q", poot.T(poot.F32, n, h*d))
		ks := b.SlotNamed("k", poot.T(poot.F32, n, kvHeads*d))
		vs := b.SlotNamed("v", poot.T(poot.F32, n, kvHeads*dv))
		pos := b.Slot(poot.SlotPos, poot.Shape{n}, 0, int64(capacity-1))
		kcs := b.StateInput("cache.k", poot.T(poot.F32, rows*capacity, kvHeads*d))
		vcs := b.StateInput("cache.v", poot.T(poot.F32, rows*capacity, kvHeads*dv))
		var out, kn, vn poot.Traced[brand]
		b.Scope("layer.0", func() {
			mask := ops.CausalMask(b, pos, capacity, 0, 0)
			out, kn, vn = ops.CachedAttention(b, qs, ks, vs, kcs, vcs, pos, mask, cfg)
		})
		g, err := b.Finish(poot.Out(out).WithState(kcs, kn).WithState(vcs, vn))
		if err != nil {
			rt.Fatal(err)
		}
		ften := func(v []float32, dims ...int) tensor.Tensor {
			x, _ := tensor.FromF32(poot.Shape(dims), v)
			return x
		}
		pt, _ := tensor.FromI32(poot.Shape{n}, ps)
		slots := interp.Slots{"q": ften(q, n, h*d), "k": ften(k, n, kvHeads*d), "v": ften(v, n, kvHeads*dv), "pos": pt}
		state := &interp.State{Tensors: map[string]tensor.Tensor{
			"cache.k": ften(kc, rows*capacity, kvHeads*d), "cache.v": ften(vc, rows*capacity, kvHeads*dv)}}
		pootest.Agree(rt, interp.Oracle{}, cpu.Interpreter{Threads: 2}, g, consts, slots, state, pootest.Default)
	})
}

// TestNonFiniteRows holds the row fusions of softmax and RMSNorm to the
// oracle on rows with NaN and infinities, rows of -Inf only included.
func TestNonFiniteRows(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rows := rapid.IntRange(2, 6).Draw(rt, "rows")
		n := rapid.IntRange(16, 300).Draw(rt, "n")
		rng := rand.New(rand.NewPCG(uint64(rapid.IntRange(0, 1<<30).Draw(rt, "seed")), 5))
		xv := make([]float32, rows*n)
		for i := range xv {
			xv[i] = float32(rng.NormFloat64() * 3)
		}
		for range rapid.IntRange(0, 4).Draw(rt, "specials") {
			xv[rng.IntN(len(xv))] = specials[rng.IntN(3)]
		}
		if rapid.Bool().Draw(rt, "masked row") {
			r := rng.IntN(rows)
			for i := range n {
				xv[r*n+i] = negInf32
			}
		}
		wv := make([]float32, n)
		for i := range wv {
			wv[i] = float32(rng.NormFloat64())
		}
		if rapid.Bool().Draw(rt, "weight special") {
			wv[rng.IntN(n)] = specials[rng.IntN(3)]
		}
		type brand struct{}
		b := poot.NewBuilder[brand](poot.Limits{})
		x := b.SlotNamed("x", poot.T(poot.F32, rows, n))
		w := b.Constant("w", poot.T(poot.F32, n))
		g, err := b.Finish(poot.Out(ops.Softmax(b, x, -1), ops.RMSNorm(b, x, w, 1e-5)))
		if err != nil {
			rt.Fatal(err)
		}
		xt, _ := tensor.FromF32(poot.Shape{rows, n}, xv)
		wten, _ := tensor.FromF32(poot.Shape{n}, wv)
		in := cpu.Interpreter{Threads: 2}
		ex, err := in.CompileExec(g, interp.ConstMap{"w": wten})
		if err != nil {
			rt.Fatal(err)
		}
		ex.Close()
		if !slices.ContainsFunc(ex.Plan().Kernels, func(k *lower.Kernel) bool { return k.Kind == lower.Rows }) {
			rt.Fatalf("no row fusion:\n%v", ex.Plan())
		}
		pootest.Agree(rt, interp.Oracle{}, in, g, interp.ConstMap{"w": wten}, interp.Slots{"x": xt}, nil, pootest.Default)
	})
}
