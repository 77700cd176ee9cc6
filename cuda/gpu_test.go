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
// decode steps on the GPU (CUDA graphs on, then off) against the oracle.
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
			})
		}
	}
}
