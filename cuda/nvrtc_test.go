package cuda

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/pootest"
)

// modelModules generates the modules of a checkpoint's prefills of 8
// tokens (GEMV) and 20 (tensor-core GEMM) and its decode step.
func modelModules(t *testing.T, path string) []*Module {
	t.Helper()
	c, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := registry.FromCheckpoint(c)
	if err != nil {
		t.Fatal(err)
	}
	var mods []*Module
	for _, n := range []int{8, 20, 1} {
		g, _ := refStep(t, c, m, n, 64)
		mods = append(mods, mustGenerate(t, g, path))
	}
	return mods
}

func mustGenerate(t *testing.T, g *poot.Graph, what string) *Module {
	t.Helper()
	plan, err := lower.Build(g, Target(), lower.Options{})
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	mod, err := Generate(plan)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	return mod
}

// TestNVRTCCompile compiles every kernel the planner emits for the
// reference models, for the tiny synthesized model of every family (its
// matrices stored as each of synthTypes that its shapes take), for the
// GEMV, tensor-core GEMM and decoding cast of every weight dtype the
// target reads (weightCases, gemmCases), for fused attention one-pass and
// split-K over F32 and F16 caches (flashCases) and for random graphs, to CUBIN
// for sm_80 and sm_90 with a real NVRTC (which runs ptxas, checking the
// mma.sync inline PTX); and the reference models' prefills generated for
// sm_75, which keep the GEMV, for sm_75. It runs when POOT_NVRTC names the
// library, as scripts/cuda-compile.sh arranges.
func TestNVRTCCompile(t *testing.T) {
	path := os.Getenv("POOT_NVRTC")
	if path == "" {
		t.Skip("POOT_NVRTC is not set: scripts/cuda-compile.sh installs NVRTC and runs this check")
	}
	nv, err := OpenNVRTC(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("NVRTC %d.%d", nv.Major, nv.Minor)
	var mods []*Module
	dir := refDir(t)
	for _, name := range refModels {
		mods = append(mods, modelModules(t, filepath.Join(dir, name))...)
	}
	families := map[string]bool{}
	for _, p := range synth.Presets() {
		if p.Name != "tiny" {
			continue
		}
		families[p.Family] = true
		for _, dt := range synthTypes {
			file, ok := synthFile(t, p, dt, 1)
			if !ok {
				continue
			}
			mods = append(mods, modelModules(t, file)...)
		}
	}
	mods = append(mods, flashModules(t)...)
	for _, c := range append(weightCases(t), gemmCases(t)...) {
		mods = append(mods, mustGenerate(t, c.g, c.String()))
	}
	for i := range 200 {
		c := pootest.GenGraph().Example(i)
		plan, err := lower.Build(c.Graph, Target(), lower.Options{})
		if err != nil {
			continue
		}
		if mod, err := Generate(plan); err == nil {
			mods = append(mods, mod)
		}
	}
	all := &Module{}
	for _, m := range mods {
		all.Kernels = append(all.Kernels, m.Kernels...)
	}
	all = dedupe(all)
	t.Logf("%d modules, %d distinct kernels, %d families synthesized", len(mods), len(all.Kernels), len(families))
	for _, arch := range []string{"sm_80", "sm_90"} {
		start := time.Now()
		img, err := nv.Compile(prelude+all.Source(), []string{"--gpu-architecture=" + arch})
		if err != nil {
			t.Fatalf("%s: %v", arch, err)
		}
		if !bytes.HasPrefix(img, []byte("\x7fELF")) {
			t.Errorf("%s: the image is not a CUBIN (%d bytes)", arch, len(img))
		}
		t.Logf("%s: %d kernels compiled to %d bytes of CUBIN in %v", arch, len(all.Kernels), len(img), time.Since(start).Round(time.Millisecond))
	}
	// The GEMMs' PTX holds the tensor-core instructions themselves.
	gemms := &Module{}
	for _, c := range gemmCases(t) {
		gemms.Kernels = append(gemms.Kernels, mustGenerate(t, c.g, c.String()).Kernels...)
	}
	ptx, err := nv.Compile(prelude+dedupe(gemms).Source(), []string{"--gpu-architecture=compute_80"})
	if err != nil {
		t.Fatalf("compute_80: %v", err)
	}
	for _, ins := range []string{"mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32", "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"} {
		if !bytes.Contains(ptx, []byte(ins)) {
			t.Errorf("the GEMMs' PTX has no %s", ins)
		}
	}
	old := &Module{}
	for _, name := range refModels {
		c, err := load.Open(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		m, err := registry.FromCheckpoint(c)
		if err != nil {
			t.Fatal(err)
		}
		g, _ := refStep(t, c, m, 20, 64)
		c.Close()
		plan, err := lower.Build(g, Target(), lower.Options{})
		if err != nil {
			t.Fatal(err)
		}
		mod, err := GenerateFor(plan, GenOptions{SM: 75})
		if err != nil {
			t.Fatalf("%s for sm_75: %v", name, err)
		}
		if hasLaunch(mod, "gemm_tc_") {
			t.Errorf("%s for sm_75: the module launches a tensor-core GEMM", name)
		}
		old.Kernels = append(old.Kernels, mod.Kernels...)
	}
	old = dedupe(old)
	if _, err := nv.Compile(prelude+old.Source(), []string{"--gpu-architecture=sm_75"}); err != nil {
		t.Errorf("sm_75: %v", err)
	}
}
