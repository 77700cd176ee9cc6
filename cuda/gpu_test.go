package cuda

import (
	"errors"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
)

// TestGPUReferenceModels runs every reference model's prefill and four
// decode steps on the GPU (CUDA graphs on, then off) against the oracle,
// and a prefill of 20 tokens, which runs the tensor-core GEMM.
// It runs only where a GPU, its driver and NVRTC are present
// (scripts/cuda-check.sh); elsewhere it skips with the reason.
func TestGPUReferenceModels(t *testing.T) {
	if err := Available(); err != nil {
		var ue *UnavailableError
		if !errors.As(err, &ue) {
			t.Fatalf("Available returned an untyped error: %v", err)
		}
		t.Skipf("no GPU here: %v", err)
	}
	d, _, _ := Interpreter{}.Open()
	t.Logf("device %s, sm_%d%d, driver %d", d.Name, d.Major, d.Minor, d.Version)
	dir := refDir(t)
	prompt := []int32{1, 5, 9, 13, 2, 7, 11, 3}
	for _, name := range refModels {
		for _, noGraph := range []bool{false, true} {
			t.Run(name, func(t *testing.T) {
				c, err := load.Open(filepath.Join(dir, name))
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				m, err := registry.FromGGUF(c.GGUF())
				if err != nil {
					t.Fatal(err)
				}
				pg, pc := refStep(t, c, m, len(prompt), 32)
				dg, dc := refStep(t, c, m, 1, 32)
				in := Interpreter{NoGraph: noGraph}
				px, err := in.CompileExec(pg, pc)
				if err != nil {
					t.Fatal(err)
				}
				defer px.Close()
				dx, err := in.CompileExec(dg, dc)
				if err != nil {
					t.Fatal(err)
				}
				defer dx.Close()
				po, _ := interp.Compile(pg, pc)
				do, _ := interp.Compile(dg, dc)
				so, err := interp.NewState(pg)
				if err != nil {
					t.Fatal(err)
				}
				sc := so.Clone()
				step := func(what string, o, x interp.Executable, s interp.Slots) int32 {
					ro, err := o.Run(s, so)
					if err != nil {
						t.Fatal(err)
					}
					rx, err := x.Run(s, sc)
					if err != nil {
						t.Fatalf("%s: %v", what, err)
					}
					diff := maxRelDiff(rx[0].F32(), ro[0].F32())
					t.Logf("%s (graphs %v): max relative logit difference %.3g", what, !noGraph, diff)
					if diff > refTol {
						t.Errorf("%s: logits differ by %.3g of their range, above %.3g", what, diff, refTol)
					}
					return argmaxF32(ro[0].F32())
				}
				next := step("prefill", po, px, stepSlots(t, prompt, 0))
				for i := range 4 {
					next = step("decode", do, dx, stepSlots(t, []int32{next}, len(prompt)+i))
				}
				// A prefill of 20 tokens runs its projections on tensor
				// cores (on sm_80 or later), held to gemmModelTol.
				long := make([]int32, 20)
				for i := range long {
					long[i] = prompt[i%len(prompt)]
				}
				lg, lc := refStep(t, c, m, len(long), 32)
				lx, err := in.CompileExec(lg, lc)
				if err != nil {
					t.Fatal(err)
				}
				defer lx.Close()
				d := compareStep(t, "prefill of 20", lg, lc, lx, stepSlots(t, long, 0), gemmModelTol)
				t.Logf("prefill of 20 (tensor cores %v): max relative logit difference %.3g", hasLaunch(lx.Module(), "gemm_tc_"), d)
			})
		}
	}
}

// TestGPUGemm holds the tensor-core GEMM of every weight dtype, at the
// awkward shapes of TestHostGemm, to gemmBound on the GPU. It runs only
// where a GPU, its driver and NVRTC are present.
func TestGPUGemm(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("no GPU here: %v", err)
	}
	in := Interpreter{CacheDir: testCache}
	for _, c := range gemmCases(t) {
		worst, err := checkGemm(t, in, c)
		if err != nil {
			t.Errorf("%v: %v", c, err)
			continue
		}
		t.Logf("%v: largest error %.2f of the bound", c, worst)
	}
}

// TestGPUCopyBandwidth logs the device's copy bandwidth, the figure
// poot bench divides decode's read rate by.
func TestGPUCopyBandwidth(t *testing.T) {
	if err := Available(); err != nil {
		t.Skipf("no GPU here: %v", err)
	}
	bw, err := Interpreter{}.CopyBandwidth()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("device copy bandwidth %.0f GB/s (bytes read and written)", bw)
}
