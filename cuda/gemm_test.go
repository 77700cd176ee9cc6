package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/quant"
)

// gemmShapes are the (M, K, N) of the tensor-core cases of a dtype: M at
// the threshold, one past it, one past two fragments and past a 64-row
// tile; N under and past one 64-column tile, never a multiple of 8; K one
// block and three blocks of a packed format (a multiple of 256 but not of
// 512 for the K-quants), and for the unpacked ones lengths that end
// inside a 32-wide step and inside a fragment register, one shorter than
// a fragment, and whole steps (one and three: the 16-byte staging).
func gemmShapes(dt poot.DType) [][3]int {
	k := max(dt.BlockElems(), 32)
	if dt.Packed() {
		return [][3]int{{16, k, 13}, {17, 3 * k, 70}, {33, k, 5}, {70, 3 * k, 19}}
	}
	return [][3]int{{16, 45, 13}, {17, 101, 70}, {33, 45, 5}, {70, 101, 19}, {20, 7, 3}, {70, 96, 19}, {33, 32, 70}}
}

// gemmCases are the tensor-core MatMuls of every weight dtype the target
// reads.
func gemmCases(t testing.TB) []weightCase {
	var cs []weightCase
	for _, dt := range Target().MatMulWeights {
		for i, s := range gemmShapes(dt) {
			cs = append(cs, newWeightCase(t, dt, s[0], s[1], s[2], "gemm", uint64(20+i)))
		}
	}
	return cs
}

// gemmModelTol is the largest difference allowed between the oracle's
// logits and those of a step whose MatMuls run on tensor cores, as a
// fraction of their range: each such MatMul is only held to gemmBound,
// about 2⁻⁷ of Σ|x·w| for bf16, 2⁻¹¹ for f16. For prefills of 20 tokens
// the reference models measure up to 6.3e-3 (bf16: F32 and packed
// weights) and 4.7e-4 (f16 weights), the synthesized families about 1e-3.
const gemmModelTol = 1.5e-2

// gemmBound is the precision contract of the tensor-core GEMM for one
// output: each operand rounds to the GEMM's half type (unit roundoff ux
// for the activation, uw for the weight, 0 where the weight is exact in
// it), the products are exact and the f32 sums (the GEMM's and the
// oracle's) each cost at most K·2⁻²⁴ of Σ|x·w|; f16 activations under
// 2⁻¹⁴ also lose up to 2⁻²⁵ absolutely.
func gemmBound(dt poot.DType, K int, sumAbs, sumW float64) float64 {
	ux, uw := math.Ldexp(1, -8), math.Ldexp(1, -8)
	switch dt {
	case poot.F16:
		ux, uw = math.Ldexp(1, -11), 0
	case poot.BF16:
		uw = 0
	}
	b := (ux + uw + ux*uw + float64(K)*math.Ldexp(1, -22)) * sumAbs
	if dt == poot.F16 {
		b += math.Ldexp(1, -25) * sumW
	}
	return b
}

// checkGemm runs case c on in and holds every output to the oracle within
// gemmBound; it returns the largest error as a fraction of its bound.
func checkGemm(t *testing.T, in interp.Interpreter, c weightCase) (float64, error) {
	t.Helper()
	want := runOnce(t, interp.Oracle{}, c)
	got := runOnce(t, in, c)
	x := c.slots["x"].F32()
	w := make([]float32, c.N*c.K)
	rb := int(c.dt.RowBytes(int64(c.K)))
	for n := range c.N {
		if err := quant.DequantizeRow(c.dt, w[n*c.K:(n+1)*c.K], c.w[n*rb:(n+1)*rb]); err != nil {
			t.Fatal(err)
		}
	}
	worst := 0.0
	for m := range c.T {
		for n := range c.N {
			var s, sw float64
			for k := range c.K {
				s += math.Abs(float64(x[m*c.K+k]) * float64(w[n*c.K+k]))
				sw += math.Abs(float64(w[n*c.K+k]))
			}
			bound := gemmBound(c.dt, c.K, s, sw)
			g, o := float64(got[m*c.N+n]), float64(want[m*c.N+n])
			if special(g) || special(o) {
				if !(g == o || math.IsNaN(g) && math.IsNaN(o)) {
					return 0, fmt.Errorf("output [%d,%d] is %v, the oracle's %v", m, n, g, o)
				}
				continue
			}
			if e := math.Abs(g - o); !(e <= bound) {
				return 0, fmt.Errorf("output [%d,%d] is %v, the oracle's %v: error %.3g above the bound %.3g", m, n, g, o, e, bound)
			} else if bound > 0 {
				worst = max(worst, e/bound)
			}
		}
	}
	return worst, nil
}

func special(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) }

func runOnce(t *testing.T, in interp.Interpreter, c weightCase) []float32 {
	t.Helper()
	ex, err := in.Compile(c.g, c.consts)
	if err != nil {
		t.Fatalf("%v on %s: %v", c, in.Name(), err)
	}
	out, err := ex.Run(c.slots, nil)
	if err != nil {
		t.Fatalf("%v on %s: %v", c, in.Name(), err)
	}
	return out[0].F32()
}

// hasLaunch reports whether m launches a kernel whose name starts with
// prefix.
func hasLaunch(m *Module, prefix string) bool {
	return slices.ContainsFunc(m.Launches, func(l Launch) bool { return strings.HasPrefix(l.Kernel, prefix) })
}

// TestHostGemm runs the tensor-core GEMM of every weight dtype the target
// reads at awkward shapes in the host harness, whose mma.sync follows the
// PTX ISA's fragment layout, and holds every output to the oracle within
// gemmBound. Each MatMul must plan as the dtype's gemm_tc kernel and not
// the GEMV.
func TestHostGemm(t *testing.T) {
	host(t)
	cs := gemmCases(t)
	mods := make([]*Module, len(cs))
	for i, c := range cs {
		mods[i] = mustGenerate(t, c.g, c.String())
		d := strings.ToLower(c.dt.String())
		if !hasLaunch(mods[i], "gemm_tc_"+d+"_") || hasLaunch(mods[i], "gemv_") {
			t.Errorf("%v: want a gemm_tc_%s launch and no GEMV, got %v", c, d, mods[i].Launches)
		}
	}
	in := sharedHost{lib: hostLibrary(t, mods)}
	for _, c := range cs {
		worst, err := checkGemm(t, in, c)
		if err != nil {
			t.Errorf("%v: %v", c, err)
			continue
		}
		t.Logf("%v: largest error %.2f of the bound", c, worst)
	}
}

// TestHostGemmFragments changes the fragment loads and stores of the
// generated GEMM, one way at a time, and requires the host harness to
// then miss the bound: its mma.sync reads the fragments as the hardware
// does, so a kernel that loads a lane's registers wrongly fails here as
// it would on a GPU.
func TestHostGemmFragments(t *testing.T) {
	host(t)
	swaps := []struct{ what, from, to string }{
		{"A registers 1 and 2", "a[i][1] = A[r + 8][kw + q]; a[i][2] = A[r][kw + q + 4];", "a[i][1] = A[r][kw + q + 4]; a[i][2] = A[r + 8][kw + q];"},
		{"B registers", "b[j][0] = B[r][kw + q]; b[j][1] = B[r][kw + q + 4];", "b[j][0] = B[r][kw + q + 4]; b[j][1] = B[r][kw + q];"},
		{"D rows and columns", "g + 8 * (c >> 1), n = n0 + wn + 8 * j + 2 * q + (c & 1);", "g + 8 * (c & 1), n = n0 + wn + 8 * j + 2 * q + (c >> 1);"},
	}
	for _, dt := range []poot.DType{poot.F32, poot.F16} {
		c := newWeightCase(t, dt, 17, 45, 13, "gemm", 30)
		if _, err := checkGemm(t, host(t), c); err != nil {
			t.Fatalf("%v unchanged: %v", c, err)
		}
		for _, s := range swaps {
			m := mustGenerate(t, c.g, c.String())
			changed := 0
			for i, k := range m.Kernels {
				if strings.HasPrefix(k.Name, "gemm_tc_") && strings.Contains(k.Text, s.from) {
					m.Kernels[i].Text = strings.Replace(k.Text, s.from, s.to, 1)
					changed++
				}
			}
			if changed != 1 {
				t.Fatalf("%v: the GEMM's text has no %q", c, s.from)
			}
			if _, err := checkGemm(t, sharedHost{lib: hostLibrary(t, []*Module{m})}, c); err == nil {
				t.Errorf("%v with %s swapped: the host harness still meets the bound", c, s.what)
			}
		}
	}
}

// TestGemmChoice holds the kernel choice to its rule on a reference
// model, as `poot trace --plan --target cuda` prints it: a decode step
// (one row) and a prefill of fewer than 16 tokens run their projections
// by the GEMV, a prefill of 16 or more by the tensor-core GEMM (its head,
// of the last token only, by the GEMV); for a
// device below sm_80 (a fake capability) the prefill keeps the GEMV, and
// the host harness runs that module in agreement with the oracle.
func TestGemmChoice(t *testing.T) {
	c := openRef(t, "tiny-llama-f16.gguf")
	for _, tc := range []struct {
		tokens int
		gen    GenOptions
		gemm   bool
	}{{1, GenOptions{}, false}, {8, GenOptions{}, false}, {20, GenOptions{}, true}, {20, GenOptions{SM: 90}, true},
		{20, GenOptions{SM: 86}, true}, {20, GenOptions{SM: 75}, false}, {20, GenOptions{NoTensorCores: true}, false}} {
		g, _ := refStep(t, c.ckpt, c.model, tc.tokens, 32)
		plan := mustPlan(t, g)
		m, err := GenerateFor(plan, tc.gen)
		if err != nil {
			t.Fatal(err)
		}
		if hasLaunch(m, "gemm_tc_f16_") != tc.gemm || !hasLaunch(m, "gemv_f16_") {
			t.Errorf("%d tokens, %+v: gemm_tc launched %v, want %v", tc.tokens, tc.gen, hasLaunch(m, "gemm_tc_"), tc.gemm)
		}
		if tc.gen == (GenOptions{}) {
			text, err := PlanString(plan)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Contains(text, "cuda gemm_tc_f16_") != tc.gemm || !strings.Contains(text, "cuda gemv_f16_") {
				t.Errorf("%d tokens: the plan runs the GEMM %v, want %v (and the head's GEMV):\n%s", tc.tokens, !tc.gemm, tc.gemm, text)
			}
		}
	}
	host(t)
	g, consts := refStep(t, c.ckpt, c.model, 20, 32)
	in := HostInterpreter{CacheDir: testCache, Gen: GenOptions{SM: 75}}
	ex, err := in.CompileExec(g, consts)
	if err != nil {
		t.Fatal(err)
	}
	defer ex.Close()
	if hasLaunch(ex.Module(), "gemm_tc_") {
		t.Errorf("sm_75: the module launches a tensor-core GEMM")
	}
	toks := make([]int32, 20)
	for i := range toks {
		toks[i] = int32(1 + 7*i%50)
	}
	compareStep(t, "sm_75 prefill", g, consts, ex, stepSlots(t, toks, 0), refTol)
}

type refModel struct {
	ckpt  *load.Checkpoint
	model families.Model
}

// openRef opens a reference checkpoint and its family.
func openRef(t testing.TB, name string) refModel {
	t.Helper()
	c, err := load.Open(filepath.Join(refDir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	m, err := registry.FromGGUF(c.GGUF())
	if err != nil {
		t.Fatal(err)
	}
	return refModel{c, m}
}

func mustPlan(t *testing.T, g *poot.Graph) *lower.Plan {
	t.Helper()
	plan, err := lower.Build(g, Target(), lower.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

// compareStep runs one step of g from the initial state under the oracle
// and under x, and fails t when the logits differ by more than tol of
// their range; it returns the difference.
func compareStep(t *testing.T, what string, g *poot.Graph, consts interp.Consts, x interp.Executable, slots interp.Slots, tol float64) float64 {
	t.Helper()
	o, err := interp.Compile(g, consts)
	if err != nil {
		t.Fatal(err)
	}
	so, err := interp.NewState(g)
	if err != nil {
		t.Fatal(err)
	}
	sx := so.Clone()
	ro, err := o.Run(slots, so)
	if err != nil {
		t.Fatal(err)
	}
	rx, err := x.Run(slots, sx)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	d := maxRelDiff(rx[0].F32(), ro[0].F32())
	if d > tol {
		t.Errorf("%s: logits differ by %.3g of their range, above %.3g", what, d, tol)
	}
	return d
}

// TestHostGemmReferenceModels runs a prefill of 20 tokens of every
// reference model, its projections on tensor cores, in the host harness,
// and holds its logits to the oracle's within gemmModelTol of their range.
func TestHostGemmReferenceModels(t *testing.T) {
	host(t)
	toks := make([]int32, 20)
	for i := range toks {
		toks[i] = int32(1 + 7*i%50)
	}
	type step struct {
		name   string
		g      *poot.Graph
		consts interp.Consts
	}
	var steps []step
	var mods []*Module
	for _, name := range refModels {
		r := openRef(t, name)
		g, consts := refStep(t, r.ckpt, r.model, len(toks), 32)
		m := mustGenerate(t, g, name)
		if !hasLaunch(m, "gemm_tc_") {
			t.Errorf("%s: a prefill of %d tokens launches no tensor-core GEMM", name, len(toks))
		}
		mods = append(mods, m)
		steps = append(steps, step{name, g, consts})
	}
	in := sharedHost{lib: hostLibrary(t, mods)}
	for _, s := range steps {
		x, err := in.Compile(s.g, s.consts)
		if err != nil {
			t.Fatal(err)
		}
		d := compareStep(t, s.name, s.g, s.consts, x, stepSlots(t, toks, 0), gemmModelTol)
		x.(*Exec).Close()
		t.Logf("%s: prefill logits within %.3g of their range", s.name, d)
	}
}

// TestHostGemmHalfRange: a finite activation that f16 cannot hold faults
// the step of a GEMM over F16 weights with ErrHalfRange rather than turn
// its outputs infinite; one just inside f16's range, or an infinity
// (which the oracle's sums carry too), does not fault.
func TestHostGemmHalfRange(t *testing.T) {
	in := host(t)
	for _, tc := range []struct {
		v     float32
		fault bool
	}{{7e4, true}, {-65520, true}, {65519, false}, {float32(math.Inf(1)), false}} {
		c := newWeightCase(t, poot.F16, 16, 45, 13, "gemm", 31)
		x := c.slots["x"]
		x.Data = slices.Clone(x.Data)
		binary.LittleEndian.PutUint32(x.Data[4*50:], math.Float32bits(tc.v))
		c.slots["x"] = x
		ex, err := in.Compile(c.g, c.consts)
		if err != nil {
			t.Fatal(err)
		}
		_, err = ex.Run(c.slots, nil)
		if errors.Is(err, ErrHalfRange) != tc.fault {
			t.Errorf("activation %v: Run gave %v, want a fault %v", tc.v, err, tc.fault)
		}
		if !tc.fault && err == nil && !math.IsInf(float64(tc.v), 0) {
			if _, err := checkGemm(t, in, c); err != nil {
				t.Errorf("activation %v: %v", tc.v, err)
			}
		}
	}
}

// TestHostGemmSpecials: NaN and infinite activations give the oracle's
// NaN and infinite outputs (an infinity times a weight, opposite
// infinities summed), and leave the other rows to the bound.
func TestHostGemmSpecials(t *testing.T) {
	in := host(t)
	inf := float32(math.Inf(1))
	for _, dt := range []poot.DType{poot.F32, poot.F16, poot.Q8_0} {
		c := newWeightCase(t, dt, 17, 64, 13, "gemm", 32)
		x := c.slots["x"]
		x.Data = slices.Clone(x.Data)
		for _, s := range []struct {
			at int
			v  float32
		}{{3, float32(math.NaN())}, {64 + 5, inf}, {2*64 + 40, -inf}, {3*64 + 1, inf}, {3*64 + 2, -inf}} {
			binary.LittleEndian.PutUint32(x.Data[4*s.at:], math.Float32bits(s.v))
		}
		c.slots["x"] = x
		if _, err := checkGemm(t, in, c); err != nil {
			t.Errorf("%v: %v", c, err)
		}
	}
}

// TestHostMmaNeedsWholeWarp: in the host harness an mma.sync that only
// part of a warp executes fails the launch, as it is undefined on a GPU,
// and one the whole warp executes passes.
func TestHostMmaNeedsWholeWarp(t *testing.T) {
	host(t)
	for _, tc := range []struct {
		cond string
		ok   bool
	}{{"true", true}, {"threadIdx.x < 16", false}, {"threadIdx.x != 31 || blockIdx.x == 0", false}} {
		name := fmt.Sprintf("mma_warp_%d", len(tc.cond))
		text := "extern \"C\" __global__ void " + name + "(float* a0) {\n" +
			"  u32 a[4] = {0x3f803f80u, 0, 0, 0}, b[2] = {0x3f803f80u, 0}; float d[4] = {0, 0, 0, 0};\n" +
			"  if (" + tc.cond + ") mma_16816_bf16(d, a, b);\n" +
			"  a0[blockIdx.x * 32 + threadIdx.x] = d[0];\n}\n"
		m := &Module{Kernels: []KernelSource{{Name: name, Params: []string{"float*"}, Text: text}}}
		d := &hostDevice{cxx: "g++", cache: testCache}
		fns, err := d.load(m)
		if err != nil {
			t.Fatal(err)
		}
		out, err := d.alloc(2 * 32 * 4)
		if err == nil {
			err = d.launch(fns[name], &Launch{Grid: [3]uint32{2, 1, 1}, Block: [3]uint32{32, 1, 1}}, hostParams(t, d, out))
		}
		if (err == nil) != tc.ok {
			t.Errorf("mma.sync under %q: launch gave %v", tc.cond, err)
		}
		if tc.ok && err == nil {
			res := make([]byte, 2*32*4)
			if err := d.download(res, out); err != nil {
				t.Fatal(err)
			}
			// Every lane's first registers hold two bf16 ones, so
			// A[0..7][0..7] and B[0..7][0..7] are ones, the rest zeros:
			// lane 0's d[0], D[0][0], is 8.
			if v := math.Float32frombits(binary.LittleEndian.Uint32(res)); v != 8 {
				t.Errorf("D[0][0] is %v, want 8", v)
			}
		}
		d.close()
	}
}

// hostParams lays out, in host "device" memory, the launch parameters of
// one pointer argument: the pointer and the array pointing at it.
func hostParams(t *testing.T, d *hostDevice, arg uint64) uintptr {
	t.Helper()
	p, err := d.alloc(16)
	if err != nil {
		t.Fatal(err)
	}
	var b [16]byte
	binary.LittleEndian.PutUint64(b[:], arg)
	binary.LittleEndian.PutUint64(b[8:], p)
	if err := d.upload(p, b[:]); err != nil {
		t.Fatal(err)
	}
	return uintptr(p + 8)
}

// TestFakeDriverCapability compiles a prefill of 20 tokens through the
// driver bindings against the fake libcuda, reporting sm_75 and then
// sm_80: the Interpreter generates the GEMV for the first and the
// tensor-core GEMM for the second, and both runs (the fake's launches run
// the host-harness build) agree with the oracle, to refTol and to
// gemmModelTol.
func TestFakeDriverCapability(t *testing.T) {
	so := fakeCUDA(t)
	host(t)
	r := openRef(t, "tiny-llama-f32.gguf")
	toks := make([]int32, 20)
	for i := range toks {
		toks[i] = int32(1 + 7*i%50)
	}
	g, consts := refStep(t, r.ckpt, r.model, len(toks), 32)
	plan := mustPlan(t, g)
	var mods []*Module
	for _, sm := range []int{75, 80} {
		m, err := GenerateFor(plan, GenOptions{SM: sm})
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, m)
	}
	kernels, err := (&hostDevice{cxx: "g++", cache: testCache}).library(dedupe(&Module{Kernels: append(mods[0].Kernels, mods[1].Kernels...)}))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_CUDA_KERNELS", kernels)
	for _, tc := range []struct {
		sm   string
		gemm bool
		tol  float64
	}{{"75", false, refTol}, {"80", true, gemmModelTol}} {
		// OpenDriver keeps one driver per path: each capability has its own.
		t.Setenv("FAKE_CUDA_SM", tc.sm)
		drv := so + "." + tc.sm
		if err := os.Symlink(so, drv); err != nil {
			t.Fatal(err)
		}
		x, err := Interpreter{Driver: drv, NVRTC: so, CacheDir: t.TempDir()}.CompileExec(g, consts)
		if err != nil {
			t.Fatal(err)
		}
		if hasLaunch(x.Module(), "gemm_tc_") != tc.gemm {
			t.Errorf("sm_%s: tensor-core GEMM launched %v, want %v", tc.sm, !tc.gemm, tc.gemm)
		}
		d := compareStep(t, "sm_"+tc.sm, g, consts, x, stepSlots(t, toks, 0), tc.tol)
		t.Logf("sm_%s: logits within %.3g of their range", tc.sm, d)
		x.Close()
	}
}
