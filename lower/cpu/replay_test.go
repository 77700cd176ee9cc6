package cpu_test

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/pootest"
	"github.com/pootlabs/poot/quant"
	"github.com/pootlabs/poot/tensor"
	"pgregory.net/rapid"
)

// TestReplayIdentical: running one executable twice from equal state gives
// bit-identical outputs and state (the captured plan is replayable).
func TestReplayIdentical(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		c := pootest.GenGraph().Draw(rt, "case")
		x, err := cpu.Interpreter{Threads: 2}.CompileExec(c.Graph, c.Consts)
		if err != nil {
			rt.Fatal(err)
		}
		defer x.Close()
		s1, s2 := c.State.Clone(), c.State.Clone()
		o1, err1 := x.Run(c.Slots, s1)
		o2, err2 := x.Run(c.Slots, s2)
		if (err1 == nil) != (err2 == nil) {
			rt.Fatalf("errors differ: %v, %v", err1, err2)
		}
		if err1 != nil {
			return
		}
		for i := range o1 {
			if !bytes.Equal(o1[i].Data, o2[i].Data) {
				rt.Fatalf("output %d differs between replays", i)
			}
		}
		for name, t1 := range s1.Tensors {
			if !bytes.Equal(t1.Data, s2.Tensors[name].Data) {
				rt.Fatalf("state %q differs between replays", name)
			}
		}
	})
}

// TestDecodeStepAllocs: a decode step of stories260K allocates nothing once
// compiled, and replaying it from the same state gives the same logits.
func TestDecodeStepAllocs(t *testing.T) {
	for _, file := range []string{"stories260K-f32.gguf", "stories260K-q8_0.gguf", "stories260K-q4_0.gguf"} {
		t.Run(file, func(t *testing.T) {
			md := openModel(t, file)
			g, consts := md.step(t, 1, 64)
			x, err := cpu.Interpreter{}.CompileExec(g, consts)
			if err != nil {
				t.Fatal(err)
			}
			defer x.Close()
			state, err := interp.NewState(g)
			if err != nil {
				t.Fatal(err)
			}
			s := slots(t, []int32{5}, 3)
			outs, err := x.Run(s, state)
			if err != nil {
				t.Fatal(err)
			}
			first := outs[0].Clone()
			if allocs := testing.AllocsPerRun(20, func() {
				if err := x.RunInto(s, state, outs); err != nil {
					t.Fatal(err)
				}
			}); allocs != 0 {
				t.Errorf("%v allocations per decode step, want 0", allocs)
			}
			if !bytes.Equal(first.Data, outs[0].Data) {
				t.Errorf("replayed decode steps differ")
			}
		})
	}
}

// TestQuantizedContractionBound states and checks how far a contraction
// over packed weights (activations quantized to int8 per block, as
// llama.cpp does) may differ from the oracle's exact product: for output
// n, |cpu - oracle| ≤ Σ_blocks b (amax_b/127/2)·Σ_{k∈b}|w_nk| + 1e-5·Σ_k|x_k·w_nk| + 1e-6,
// the first term the rounding of each activation to its block's int8 grid,
// the second float32 summation.
func TestQuantizedContractionBound(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		wt := rapid.SampledFrom(cpu.Target(false).MatMulWeights).Draw(rt, "dtype")
		be := max(wt.BlockElems(), 32)
		k := be * rapid.IntRange(1, 3).Draw(rt, "blocks")
		n := rapid.IntRange(1, 40).Draw(rt, "n")
		tRows := rapid.IntRange(1, 9).Draw(rt, "t")
		rng := rand.New(rand.NewPCG(uint64(rapid.IntRange(0, 1<<30).Draw(rt, "seed")), 2))
		xv := make([]float32, tRows*k)
		for i := range xv {
			xv[i] = float32(rng.NormFloat64() * 2)
		}
		wv := make([]float32, n*k)
		for i := range wv {
			wv[i] = float32(rng.NormFloat64())
		}
		wten, err := tensor.Quantize(poot.T(wt, n, k), wv)
		if err != nil {
			rt.Fatal(err)
		}
		type brand struct{}
		b := poot.NewBuilder[brand](poot.Limits{})
		x := b.SlotNamed("x", poot.T(poot.F32, tRows, k))
		w := b.Constant("w", poot.T(wt, n, k))
		g, err := b.Finish(poot.Out(b.MatMul(x, w)))
		if err != nil {
			rt.Fatal(err)
		}
		xten, _ := tensor.FromF32(poot.Shape{tRows, k}, xv)
		consts := interp.ConstMap{"w": wten}
		sl := interp.Slots{"x": xten}
		want, err := interp.Eval(g, consts, sl, nil)
		if err != nil {
			rt.Fatal(err)
		}
		ex, err := cpu.Interpreter{Threads: 2}.CompileExec(g, consts)
		if err != nil {
			rt.Fatal(err)
		}
		defer ex.Close()
		if ex.Plan().Kernels[0].Kind != lower.Contract {
			rt.Fatalf("not a fast contraction: %v", ex.Plan())
		}
		got, err := ex.Run(sl, nil)
		if err != nil {
			rt.Fatal(err)
		}
		// The decoded weights, for the bound.
		dec := make([]float32, n*k)
		rb := int(wt.RowBytes(int64(k)))
		for j := range n {
			if wt == poot.F32 {
				copy(dec[j*k:(j+1)*k], wv[j*k:(j+1)*k])
			} else if err := quant.DequantizeRow(wt, dec[j*k:(j+1)*k], wten.Data[j*rb:(j+1)*rb]); err != nil {
				rt.Fatal(err)
			}
		}
		qb := 32
		if wt.BlockElems() == 256 {
			qb = 256
		}
		quantized := wt.Packed()
		g32, w32 := got[0].F32(), want[0].F32()
		for r := range tRows {
			xr := xv[r*k : (r+1)*k]
			for j := range n {
				wr := dec[j*k : (j+1)*k]
				var bound, mag float64
				for b0 := 0; b0 < k; b0 += qb {
					var amax, wsum float64
					for i := b0; i < b0+qb; i++ {
						amax = max(amax, math.Abs(float64(xr[i])))
						wsum += math.Abs(float64(wr[i]))
						mag += math.Abs(float64(xr[i]) * float64(wr[i]))
					}
					if quantized {
						bound += amax / 127 / 2 * wsum * 1.0001
					}
				}
				bound += 1e-5*mag + 1e-6
				d := math.Abs(float64(g32[r*n+j]) - float64(w32[r*n+j]))
				if d > bound {
					rt.Fatalf("%v row %d col %d: cpu %v, oracle %v, difference %g above the bound %g", wt, r, j, g32[r*n+j], w32[r*n+j], d, bound)
				}
			}
		}
	})
}

// TestSharedPreparation: consecutive products of the same activations share
// one preparation where their weights take the same one (Q4_K beside Q6_K,
// Q8_0 beside Q4_0, F16 beside F32), and each output is then bit for bit
// the output of its product compiled alone; products of other activations
// or other preparations in between prepare their own.
func TestSharedPreparation(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		type brand struct{}
		dtypes := cpu.Target(false).MatMulWeights
		k := 256 * rapid.IntRange(1, 2).Draw(rt, "blocks")
		tRows := rapid.SampledFrom([]int{1, 2, 5}).Draw(rt, "t")
		m := rapid.IntRange(2, 5).Draw(rt, "products")
		rng := rand.New(rand.NewPCG(uint64(rapid.IntRange(0, 1<<30).Draw(rt, "seed")), 3))
		floats := func(n int) []float32 {
			v := make([]float32, n)
			for i := range v {
				v[i] = float32(rng.NormFloat64())
			}
			return v
		}
		xs := [2][]float32{floats(tRows * k), floats(tRows * k)}
		b := poot.NewBuilder[brand](poot.Limits{})
		x := [2]poot.Traced[brand]{b.SlotNamed("x0", poot.T(poot.F32, tRows, k)), b.SlotNamed("x1", poot.T(poot.F32, tRows, k))}
		slots := interp.Slots{}
		for i, v := range xs {
			slots[fmt.Sprintf("x%d", i)], _ = tensor.FromF32(poot.Shape{tRows, k}, v)
		}
		consts := interp.ConstMap{}
		var outs []poot.Traced[brand]
		var alone []*poot.Graph
		for i := range m {
			wt := rapid.SampledFrom(dtypes).Draw(rt, fmt.Sprintf("dtype%d", i))
			which := rapid.IntRange(0, 1).Draw(rt, fmt.Sprintf("x%d", i))
			n := rapid.IntRange(1, 9).Draw(rt, fmt.Sprintf("n%d", i))
			name := fmt.Sprintf("w%d", i)
			wten, err := tensor.Quantize(poot.T(wt, n, k), floats(n*k))
			if err != nil {
				rt.Fatal(err)
			}
			consts[name] = wten
			outs = append(outs, b.MatMul(x[which], b.Constant(name, poot.T(wt, n, k))))
			ab := poot.NewBuilder[brand](poot.Limits{})
			g, err := ab.Finish(poot.Out(ab.MatMul(ab.SlotNamed(fmt.Sprintf("x%d", which), poot.T(poot.F32, tRows, k)), ab.Constant(name, poot.T(wt, n, k)))))
			if err != nil {
				rt.Fatal(err)
			}
			alone = append(alone, g)
		}
		g, err := b.Finish(poot.Out(outs...))
		if err != nil {
			rt.Fatal(err)
		}
		run := func(g *poot.Graph, consts interp.ConstMap, sl interp.Slots) []tensor.Tensor {
			ex, err := cpu.Interpreter{Threads: 2}.CompileExec(g, consts)
			if err != nil {
				rt.Fatal(err)
			}
			defer ex.Close()
			out, err := ex.Run(sl, nil)
			if err != nil {
				rt.Fatal(err)
			}
			return out
		}
		got := run(g, consts, slots)
		for i, ag := range alone {
			name, w := ag.Value(ag.Inputs(poot.Slot)[0]).Name, fmt.Sprintf("w%d", i)
			want := run(ag, interp.ConstMap{w: consts[w]}, interp.Slots{name: slots[name]})
			if !slices.Equal(got[i].Data, want[0].Data) {
				rt.Fatalf("product %d: %v together, %v alone", i, got[i].F32(), want[0].F32())
			}
		}
	})
}
