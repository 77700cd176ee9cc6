package cuda

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/pootest"
	"github.com/pootlabs/poot/tensor"
)

// flashCase is one attention over slots q [R·T, H·D], k and v caches
// [R·S, Hkv·D] (F16 ones cast to F32 before the composite when half) and
// a mask [R·T, S] hiding random positions and, in row 0, the whole second
// chunk of splitChunk positions; nanV plants NaN in a visible V row of
// sequence 0, and in every row a NaN and an infinity in V rows hidden from
// it; blind hides every position from the last row; negInf makes every
// score of sequence 0's third chunk -Inf (positive queries against keys
// of -3e38) and plants NaN in one of its visible V rows, which must reach
// the output as 0·NaN.
type flashCase struct {
	R, T, S, H, KV, D, Dv int
	cap                   float64
	sinks, nanV, blind    bool
	half, negInf, q8      bool
	// negFirst puts negInf's scores of -Inf in the first chunk of 32
	// positions instead of the third; infSinks makes the first two heads'
	// sinks +Inf and -Inf.
	negFirst, infSinks bool
}

func (c flashCase) String() string {
	return fmt.Sprintf("R%d_T%d_S%d_H%d_KV%d_D%d_Dv%d_cap%g_sinks%v_nan%v_blind%v_half%v_neginf%v_q8%v_first%v_inf%v",
		c.R, c.T, c.S, c.H, c.KV, c.D, c.Dv, c.cap, c.sinks, c.nanV, c.blind, c.half, c.negInf, c.q8, c.negFirst, c.infSinks)
}

func (c flashCase) build(t *testing.T) (*poot.Graph, interp.Consts, interp.Slots) {
	t.Helper()
	rng := rand.New(rand.NewPCG(uint64(c.S), uint64(c.H*c.KV)))
	n := c.R * c.T
	normal := func(k int, sd float64) []float32 {
		v := make([]float32, k)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * sd)
		}
		return v
	}
	mask := make([]bool, n*c.S)
	for row := range n {
		for s := range c.S {
			mask[row*c.S+s] = rng.IntN(5) != 0 && !(row == 0 && s >= splitChunk && s < 2*splitChunk) && !(c.blind && row == n-1)
		}
	}
	qv, kv, vv := normal(n*c.H*c.D, 1), normal(c.R*c.S*c.KV*c.D, 1), normal(c.R*c.S*c.KV*c.Dv, 1)
	vw := c.KV * c.Dv
	if c.nanV {
		s := 37
		mask[s] = true
		vv[s*vw+1] = float32(math.NaN())
		for row := range n {
			r := row / c.T
			for s := range c.S {
				if !mask[row*c.S+s] {
					vv[(r*c.S+s)*vw] = float32(math.NaN())
					vv[(r*c.S+s)*vw+vw-1] = float32(math.Inf(1))
					break
				}
			}
		}
	}
	if c.nanV && c.T > 1 {
		// A position no row of the first sequence sees, holding NaN and
		// Inf: it must not reach any output.
		s := c.S - 2
		for row := range c.T {
			mask[row*c.S+s] = false
		}
		vv[s*vw+vw/2] = float32(math.NaN())
		vv[s*vw+vw/2+1] = float32(math.Inf(-1))
	}
	if c.negInf {
		for i := range qv {
			qv[i] = float32(math.Abs(float64(qv[i]))) + 0.5
		}
		s0 := 2 * splitChunk
		if c.negFirst {
			s0 = 0
		}
		for s := s0; s < min(s0+splitChunk, c.S); s++ {
			for j := range c.KV * c.D {
				kv[s*c.KV*c.D+j] = -3e38
			}
		}
		s := s0 + 5
		mask[s] = true
		vv[s*vw+2] = float32(math.NaN())
	}
	slots := interp.Slots{}
	slotF32 := func(name string, shape poot.Shape, v []float32) {
		x, err := tensor.FromF32(shape, v)
		if err != nil {
			t.Fatal(err)
		}
		slots[name] = x
	}
	b := poot.NewBuilder[struct{}](poot.Limits{})
	kvSlot := func(name string, v []float32, w int) poot.Traced[struct{}] {
		shape := poot.Shape{c.R * c.S, w}
		if c.q8 {
			// Slots cannot be packed: the cache is quantized in the step
			// and read back, as Step.Cache does.
			slotF32(name, shape, v)
			return b.Cast(b.Cast(b.SlotNamed(name, poot.T(poot.F32, shape...)), poot.Q8_0), poot.F32)
		}
		if !c.half {
			slotF32(name, shape, v)
			return b.SlotNamed(name, poot.T(poot.F32, shape...))
		}
		x, err := tensor.New(poot.T(poot.F16, shape...))
		if err != nil {
			t.Fatal(err)
		}
		for i, f := range v {
			binary.LittleEndian.PutUint16(x.Data[2*i:], f16Bits(f))
		}
		slots[name] = x
		return b.Cast(b.SlotNamed(name, poot.T(poot.F16, shape...)), poot.F32)
	}
	slotF32("q", poot.Shape{n, c.H * c.D}, qv)
	mt, err := tensor.FromBool(poot.Shape{n, c.S}, mask)
	if err != nil {
		t.Fatal(err)
	}
	slots["mask"] = mt
	q := b.SlotNamed("q", poot.T(poot.F32, n, c.H*c.D))
	k, v := kvSlot("k", kv, c.KV*c.D), kvSlot("v", vv, vw)
	cfg := ops.AttentionConfig[struct{}]{Heads: c.H, KVHeads: c.KV, HeadDim: c.D, ValueDim: c.Dv, Rows: c.R, SoftCap: c.cap}
	consts := interp.ConstMap{}
	if c.sinks {
		sv := normal(c.H, 2)
		if c.infSinks {
			sv[0], sv[1] = float32(math.Inf(1)), float32(math.Inf(-1))
		}
		st, err := tensor.FromF32(poot.Shape{c.H}, sv)
		if err != nil {
			t.Fatal(err)
		}
		consts["sinks"] = st
		cfg.Sinks = b.Constant("sinks", poot.T(poot.F32, c.H))
	}
	out := ops.Attention(b, q, k, v, b.SlotNamed("mask", poot.T(poot.Bool, n, c.S)), cfg)
	g, err := b.Finish(poot.Out(out))
	if err != nil {
		t.Fatal(err)
	}
	return g, consts, slots
}

// f16Bits rounds f to binary16 (to nearest even; the test's values are
// normal and well inside f16's range or NaN and infinities).
func f16Bits(f float32) uint16 {
	x := math.Float32bits(f)
	s := uint16(x>>16) & 0x8000
	switch {
	case f != f:
		return s | 0x7e00
	case math.IsInf(float64(f), 0):
		return s | 0x7c00
	case math.Abs(float64(f)) < 1.0/16384:
		return s // the test's values this small are rounded to zero
	}
	a := x&0x7fffffff - 0x38000000
	return s | uint16((a+0xfff+((a>>13)&1))>>13)
}

// flashCases: split-K decode (S of 600 and 2100) with n_rep 1 and 4, a soft
// cap, sinks, NaN in visible and hidden V rows, a row that sees nothing and
// F16 caches; the one-pass kernel for a short cache and for prefill,
// also over F16 caches; the tiled prefill kernel (T of 9 to 37 rows, so
// several blocks of pairs, head dimensions 32 to 128, sinks of ±Inf,
// scores of −Inf in the first chunk, F16 and Q8_0 caches) and, for heads
// of 256, the one-pass kernel again; split-K stages its chunks for heads
// up to 128 and walks them a warp a position for one of 160.
var flashCases = []flashCase{
	{R: 1, T: 1, S: 600, H: 4, KV: 4, D: 32, Dv: 32},
	{R: 1, T: 1, S: 600, H: 4, KV: 4, D: 32, Dv: 32, negInf: true},
	{R: 2, T: 1, S: 600, H: 8, KV: 2, D: 40, Dv: 36, nanV: true, blind: true},
	{R: 1, T: 1, S: 2100, H: 8, KV: 2, D: 64, Dv: 64, cap: 5, sinks: true},
	{R: 2, T: 1, S: 2100, H: 4, KV: 4, D: 16, Dv: 48, sinks: true, blind: true},
	{R: 1, T: 1, S: 600, H: 12, KV: 1, D: 32, Dv: 32, cap: 3},
	{R: 2, T: 1, S: 600, H: 8, KV: 2, D: 32, Dv: 32, sinks: true, nanV: true, half: true},
	{R: 1, T: 1, S: 300, H: 8, KV: 2, D: 32, Dv: 32, sinks: true, nanV: true},
	{R: 1, T: 3, S: 600, H: 8, KV: 2, D: 32, Dv: 32, nanV: true, half: true},
	{R: 2, T: 1, S: 600, H: 8, KV: 2, D: 32, Dv: 32, sinks: true, nanV: true, q8: true},
	{R: 1, T: 1, S: 300, H: 4, KV: 2, D: 16, Dv: 48, q8: true},
	{R: 1, T: 1, S: 40, H: 8, KV: 2, D: 32, Dv: 32, sinks: true, nanV: true},
	{R: 1, T: 3, S: 600, H: 8, KV: 2, D: 64, Dv: 64, nanV: true, q8: true},
	{R: 2, T: 37, S: 100, H: 8, KV: 2, D: 64, Dv: 64, nanV: true, sinks: true},
	{R: 1, T: 20, S: 130, H: 6, KV: 2, D: 40, Dv: 36, cap: 4, blind: true},
	{R: 1, T: 17, S: 100, H: 4, KV: 4, D: 32, Dv: 32, negInf: true},
	{R: 1, T: 17, S: 100, H: 4, KV: 4, D: 32, Dv: 32, negInf: true, negFirst: true, sinks: true, infSinks: true, blind: true},
	{R: 1, T: 9, S: 70, H: 4, KV: 1, D: 128, Dv: 128, nanV: true, half: true},
	{R: 1, T: 9, S: 70, H: 4, KV: 2, D: 32, Dv: 32, sinks: true, nanV: true, q8: true},
	{R: 1, T: 5, S: 40, H: 2, KV: 2, D: 256, Dv: 256},
	{R: 1, T: 1, S: 100, H: 4, KV: 2, D: 160, Dv: 160, sinks: true, nanV: true},
	{R: 1, T: 1, S: 100, H: 4, KV: 2, D: 160, Dv: 160, negInf: true},
}

// TestHostFlashSplit holds fused attention, split-K for decode over long
// caches, tiled for prefill and one-pass otherwise, with F32 and F16
// caches, to the oracle in the host harness, and checks each case's
// choice of kernels: the split pair exactly when T = 1 and S ≥ splitMinS,
// the tiled kernel when T > 1 and heads are at most 128 wide, and no cast of an F16
// or Q8_0 cache to F32 left in the plan (a Q8_0 cache's quantizing cast
// runs, once a case).
func TestHostFlashSplit(t *testing.T) {
	host(t)
	type run struct {
		c      flashCase
		g      *poot.Graph
		consts interp.Consts
		slots  interp.Slots
	}
	var runs []run
	var mods []*Module
	for _, c := range flashCases {
		g, consts, slots := c.build(t)
		plan, err := lower.Build(g, Target(), lower.Options{})
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		ps, err := PlanString(plan)
		if err != nil {
			t.Fatalf("%v: %v", c, err)
		}
		split := c.T == 1 && c.S >= splitMinS
		if has := strings.Contains(ps, "cuda flash_split_") && strings.Contains(ps, "cuda flash_combine_"); has != split {
			t.Errorf("%v: split-K kernels %v, want %v:\n%s", c, has, split, ps)
		}
		tiled := c.T > 1 && c.D <= 128
		if has := strings.Contains(ps, "cuda flash_tile_"); has != tiled {
			t.Errorf("%v: tiled kernel %v, want %v:\n%s", c, has, tiled, ps)
		}
		if has := strings.Contains(ps, "cuda flash_attention_"); has != (!split && !tiled) {
			t.Errorf("%v: one-pass kernel %v, want %v:\n%s", c, has, !split && !tiled, ps)
		}
		if strings.Contains(ps, "cast_f16_f32") || strings.Contains(ps, "cast_q8_0_f32") {
			t.Errorf("%v: the plan still casts a narrow cache to F32:\n%s", c, ps)
		}
		if has := strings.Contains(ps, "cast_f32_q8_0"); has != c.q8 {
			t.Errorf("%v: quantizing cast %v, want %v:\n%s", c, has, c.q8, ps)
		}
		mod, err := Generate(plan)
		if err != nil {
			t.Fatal(err)
		}
		if split && mod.Scratch == 0 {
			t.Errorf("%v: split-K without scratch", c)
		}
		mods = append(mods, mod)
		runs = append(runs, run{c, g, consts, slots})
	}
	in := sharedHost{lib: hostLibrary(t, mods)}
	for _, r := range runs {
		if err := pootest.Compare(interp.Oracle{}, in, r.g, r.consts, r.slots, nil, pootest.Default); err != nil {
			t.Errorf("%v: %v", r.c, err)
		}
	}
}

// flashModules are the modules of flashCases, for the NVRTC check.
func flashModules(t *testing.T) []*Module {
	var mods []*Module
	for _, c := range flashCases {
		g, _, _ := c.build(t)
		mods = append(mods, mustGenerate(t, g, c.String()))
	}
	return mods
}

// TestGPUFlashSplit runs flashCases on the GPU against the oracle. It runs
// only where a GPU, its driver and NVRTC are present
// (scripts/cuda-check.sh); elsewhere it skips with the reason.
func TestGPUFlashSplit(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("no GPU here: %v", err)
	}
	for _, c := range flashCases {
		g, consts, slots := c.build(t)
		if err := pootest.Compare(interp.Oracle{}, Interpreter{}, g, consts, slots, nil, pootest.Default); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
}
