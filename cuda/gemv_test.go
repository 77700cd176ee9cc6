package cuda

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/pootest"
	"github.com/pootlabs/poot/quant"
	"github.com/pootlabs/poot/tensor"
)

// weightCase is a graph over one random weight of a dtype the GEMV reads:
// a decode-style MatMul x[T,K]·w[N,K]ᵀ (op "gemv"), an IndexedMatMul over
// experts w[E,N,K] with E = 3 ("experts"), or w decoded to F32 ("cast").
type weightCase struct {
	dt      poot.DType
	T, K, N int
	op      string
	cast    bool
	g       *poot.Graph
	consts  interp.ConstMap
	slots   interp.Slots
	w       []byte // w as stored
}

func (c weightCase) String() string {
	return fmt.Sprintf("%s/%v/T%d_K%d_N%d", c.op, c.dt, c.T, c.K, c.N)
}

// weightShapes are the (T, K, N) of the cases of a dtype: K one block of
// the dtype, three blocks (for the K-quants a multiple of 256 but not of
// 512), 33 blocks (each lane of the GEMV's warp dots several units of
// the row, some lanes one more), and N not a multiple of the four outputs
// of a GEMV block; for the unpacked dtypes also a K of no whole units
// (gemvUnit), which the element-by-element path reads.
func weightShapes(dt poot.DType) [][3]int {
	b := dt.BlockElems()
	k := max(b, 32)
	s := [][3]int{{1, k, 5}, {2, 3 * k, 3}, {1, 2 * k, 9}, {1, 33 * k, 3}}
	if !dt.Packed() {
		s = append(s, [3]int{2, 45, 4})
	}
	return s
}

// newWeightCase quantizes random weights with package quant and builds
// the case's graph.
func newWeightCase(t testing.TB, dt poot.DType, T, K, N int, op string, seed uint64) weightCase {
	t.Helper()
	const experts = 3
	rng := rand.New(rand.NewPCG(seed, uint64(dt)))
	wt := poot.T(dt, N, K)
	rows := N
	if op == "experts" {
		wt = poot.T(dt, experts, N, K)
		rows = experts * N
	}
	w, err := tensor.New(wt)
	if err != nil {
		t.Fatal(err)
	}
	rb := int(dt.RowBytes(int64(K)))
	row := make([]float32, K)
	for n := range rows {
		for i := range row {
			row[i] = float32(rng.NormFloat64() * 0.5)
		}
		if err := quant.QuantizeRow(dt, w.Data[n*rb:(n+1)*rb], row); err != nil {
			t.Fatal(err)
		}
	}
	c := weightCase{dt: dt, T: T, K: K, N: N, op: op, cast: op == "cast", consts: interp.ConstMap{"w": w}, w: w.Data}
	b := poot.NewBuilder[struct{}](poot.Limits{})
	wv := b.Constant("w", wt)
	var y poot.Traced[struct{}]
	if c.cast {
		y = b.Cast(wv, poot.F32)
	} else {
		x := b.SlotNamed("x", poot.T(poot.F32, T, K))
		c.slots = interp.Slots{}
		if op == "experts" {
			idx := make([]int32, T)
			for i := range idx {
				idx[i] = int32(rng.IntN(experts))
			}
			it, err := tensor.FromI32(poot.Shape{T}, idx)
			if err != nil {
				t.Fatal(err)
			}
			c.slots["idx"] = it
			y = b.IndexedMatMul(x, wv, b.SlotNamed("idx", poot.T(poot.I32, T)))
		} else {
			y = b.MatMul(x, wv)
		}
		xs := make([]float32, T*K)
		for i := range xs {
			xs[i] = float32(rng.NormFloat64())
		}
		xt, err := tensor.FromF32(poot.Shape{T, K}, xs)
		if err != nil {
			t.Fatal(err)
		}
		c.slots["x"] = xt
	}
	if c.g, err = b.Finish(poot.Out(y)); err != nil {
		t.Fatal(err)
	}
	return c
}

// weightCases are the GEMV and decode cases of every weight dtype the
// target's contraction reads.
func weightCases(t testing.TB) []weightCase {
	var cs []weightCase
	for _, dt := range Target().MatMulWeights {
		for i, s := range weightShapes(dt) {
			cs = append(cs, newWeightCase(t, dt, s[0], s[1], s[2], "gemv", uint64(i)))
		}
		k := max(dt.BlockElems(), 32)
		cs = append(cs, newWeightCase(t, dt, 4, 2*k, 5, "experts", 8))
		if dt.Packed() {
			cs = append(cs, newWeightCase(t, dt, 0, 2*k, 2, "cast", 9))
		}
	}
	return cs
}

// TestHostWeightDTypes runs the GEMV of every weight dtype the target
// reads as stored, for a MatMul and for an IndexedMatMul over experts (and
// the decoding cast of every packed one), in the host
// harness on random weights quantized by package quant: the GEMV agrees
// with the oracle, the cast with quant.DequantizeRow bit for bit. Each
// contraction must plan as a Contract kernel run by the dtype's GEMV.
func TestHostWeightDTypes(t *testing.T) {
	host(t)
	cs := weightCases(t)
	mods := make([]*Module, len(cs))
	for i, c := range cs {
		mods[i] = mustGenerate(t, c.g, c.String())
		if !c.cast {
			want := "gemv_" + strings.ToLower(c.dt.String()) + "_"
			if !slices.ContainsFunc(mods[i].Launches, func(l Launch) bool { return strings.HasPrefix(l.Kernel, want) }) {
				t.Errorf("%v: no %s* launch in the module", c, want)
			}
		}
	}
	lib := hostLibrary(t, mods)
	in := sharedHost{lib: lib}
	for _, c := range cs {
		if !c.cast {
			if err := pootest.Compare(interp.Oracle{}, in, c.g, c.consts, c.slots, nil, pootest.Default); err != nil {
				t.Errorf("%v: %v", c, err)
			}
			continue
		}
		ex, err := in.Compile(c.g, c.consts)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		out, err := ex.Run(nil, nil)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		got := out[0].F32()
		want := make([]float32, c.N*c.K)
		rb := int(c.dt.RowBytes(int64(c.K)))
		for n := range c.N {
			if err := quant.DequantizeRow(c.dt, want[n*c.K:(n+1)*c.K], c.w[n*rb:(n+1)*rb]); err != nil {
				t.Fatal(err)
			}
		}
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Errorf("%v: element %d is %v, quant.DequantizeRow gives %v", c, i, got[i], want[i])
				break
			}
		}
	}
}

// TestUnsupportedWeights holds the weight dtypes the backend does not read
// to a typed error: the planner's *lower.LegalizeError for a MatMul, and
// Generate's *UnsupportedError (an interp.ErrUnsupported) for a plan made
// for a target that claims them.
func TestUnsupportedWeights(t *testing.T) {
	for _, dt := range poot.DTypes() {
		if !dt.Packed() && dt != poot.F16 && dt != poot.BF16 || slices.Contains(Target().MatMulWeights, dt) {
			continue
		}
		c := newWeightCase(t, dt, 1, 256, 2, "gemv", 1)
		_, err := lower.Build(c.g, Target(), lower.Options{})
		var le *lower.LegalizeError
		if !errors.As(err, &le) {
			t.Errorf("%v: lower.Build gave %v, want a *lower.LegalizeError", c, err)
		}
		tg := Target()
		tg.MatMulWeights = append(tg.MatMulWeights, dt)
		tg.Fallback = append(tg.Fallback, dt)
		plan, err := lower.Build(c.g, tg, lower.Options{})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		_, err = Generate(plan)
		var ue *UnsupportedError
		if !errors.As(err, &ue) || !errors.Is(err, interp.ErrUnsupported) {
			t.Errorf("%v: Generate gave %v, want an *UnsupportedError", c, err)
		}
	}
}

// TestHostMXFP4Codes decodes every MXFP4 code at every position of a
// block under the extreme exponents (0 and 1, float32 subnormal scales;
// 253 and more, where the largest codes overflow; 255, which ggml reads
// as 2^127) in the host harness, bit for bit as quant.DequantizeRow does.
func TestHostMXFP4Codes(t *testing.T) {
	in := host(t)
	exps := []byte{0, 1, 2, 100, 127, 128, 200, 252, 253, 254, 255}
	const K = 32
	w, err := tensor.New(poot.T(poot.MXFP4, 2*len(exps), K))
	if err != nil {
		t.Fatal(err)
	}
	for i, e := range exps {
		for half := range 2 {
			b := w.Data[(2*i+half)*17:]
			b[0] = e
			for j := range 16 {
				b[1+j] = byte((j+half)%16) | byte((15-j)%16)<<4
			}
		}
	}
	b := poot.NewBuilder[struct{}](poot.Limits{})
	y := b.Cast(b.Constant("w", w.Type), poot.F32)
	g, err := b.Finish(poot.Out(y))
	if err != nil {
		t.Fatal(err)
	}
	ex, err := in.CompileExec(g, interp.ConstMap{"w": w})
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	out, err := ex.Run(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, 2*len(exps)*K)
	if err := quant.DequantizeRow(poot.MXFP4, want, w.Data); err != nil {
		t.Fatal(err)
	}
	for i, x := range out[0].F32() {
		if math.Float32bits(x) != math.Float32bits(want[i]) {
			t.Errorf("element %d (exponent %d): %v, quant.DequantizeRow gives %v", i, exps[i/(2*K)], x, want[i])
		}
	}
}
