package cuda

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
)

// TestHostSynthesizedFamilies holds the host harness to the oracle on the
// tiny random-weight checkpoint of every family, its matrices stored as
// each of synthTypes (for the K-quants, the families whose shapes take
// them, at least one each): a prefill of four tokens and two decode steps,
// within 1e-5 of the logits' range, or gemmModelTol for a step that runs
// a tensor-core GEMM (MatMuls over 16 rows or more, such as the per-head
// products of latent attention). It compiles several
// hundred kernels, so it runs when POOT_CUDA_FAMILIES is set
// (scripts/cuda-compile.sh sets it).
func TestHostSynthesizedFamilies(t *testing.T) {
	if os.Getenv("POOT_CUDA_FAMILIES") == "" {
		t.Skip("POOT_CUDA_FAMILIES is not set: scripts/cuda-compile.sh runs this check")
	}
	host(t)
	type fam struct {
		name   string
		pg, dg *poot.Graph
		pc, dc interp.Consts
	}
	var fams []fam
	var mods []*Module
	prompt := []int32{1, 5, 9, 13}
	took := map[poot.DType]int{}
	for _, p := range synth.Presets() {
		if p.Name != "tiny" {
			continue
		}
		for _, dt := range synthTypes {
			file, ok := synthFile(t, p, dt, 3)
			if !ok {
				continue
			}
			took[dt]++
			c, err := load.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { c.Close() })
			mm, err := registry.FromGGUF(c.GGUF())
			if err != nil {
				t.Fatal(err)
			}
			f := fam{name: p.Family + "/" + dt.String()}
			f.pg, f.pc = refStep(t, c, mm, len(prompt), 16)
			f.dg, f.dc = refStep(t, c, mm, 1, 16)
			mods = append(mods, mustGenerate(t, f.pg, f.name), mustGenerate(t, f.dg, f.name))
			fams = append(fams, f)
		}
	}
	for _, dt := range synthTypes {
		if took[dt] == 0 {
			t.Errorf("no tiny preset can be stored as %v", dt)
		}
	}
	in := sharedHost{lib: hostLibrary(t, mods)}
	for _, f := range fams {
		t.Run(f.name, func(t *testing.T) {
			po, _ := interp.Compile(f.pg, f.pc)
			do, _ := interp.Compile(f.dg, f.dc)
			px, err := in.Compile(f.pg, f.pc)
			if err != nil {
				t.Fatal(err)
			}
			defer px.(*Exec).Close()
			dx, err := in.Compile(f.dg, f.dc)
			if err != nil {
				t.Fatal(err)
			}
			defer dx.(*Exec).Close()
			so, err := interp.NewState(f.pg)
			if err != nil {
				t.Fatal(err)
			}
			sc := so.Clone()
			step := func(what string, o, x interp.Executable, s interp.Slots) int32 {
				tol := 1e-5
				if hasLaunch(x.(*Exec).Module(), "gemm_tc_") {
					tol = gemmModelTol
				}
				ro, err := o.Run(s, so)
				if err != nil {
					t.Fatal(err)
				}
				rx, err := x.Run(s, sc)
				if err != nil {
					t.Fatalf("%s: %v", what, err)
				}
				if d := maxRelDiff(rx[0].F32(), ro[0].F32()); d > tol {
					t.Errorf("%s: logits differ by %.3g of their range, above %.3g", what, d, tol)
				}
				return argmaxF32(ro[0].F32())
			}
			next := step("prefill", po, px, stepSlots(t, prompt, 0))
			for i := range 2 {
				next = step("decode", do, dx, stepSlots(t, []int32{next}, len(prompt)+i))
			}
		})
	}
}

// synthTypes are the matrix types of the synthesized checkpoints the host
// harness and the NVRTC check run: F32, Q8_0, the K-quants and MXFP4.
var synthTypes = []poot.DType{poot.F32, poot.Q8_0, poot.Q4_K, poot.Q5_K, poot.Q6_K, poot.MXFP4}

// synthFile writes the tiny checkpoint of preset p with matrices of type
// dt; false when dt is a K-quant that none of the preset's row lengths
// (all under 256 or not multiples of it) can take.
func synthFile(t *testing.T, p synth.Preset, dt poot.DType, seed uint64) (string, bool) {
	t.Helper()
	m, err := synth.Model(p.Family, p.Config)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(t.TempDir(), p.Family+"-"+dt.String()+".gguf")
	err = synth.Write(m, file, synth.Options{Type: dt, Seed: seed, Scale: 0.02})
	if err != nil && dt.BlockElems() == 256 && errors.Is(err, synth.ErrSynth) {
		return "", false
	}
	if err != nil {
		t.Fatal(err)
	}
	return file, true
}
