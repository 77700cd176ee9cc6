package cuda

import (
	"errors"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unsafe"

	"github.com/ebitengine/purego"
	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
)

// TestMissingLibraries: with no driver or no NVRTC the backend says so
// with a typed error, and never crashes.
func TestMissingLibraries(t *testing.T) {
	_, err := OpenDriver(filepath.Join(t.TempDir(), "libcuda.so.1"))
	var ue *UnavailableError
	if !errors.Is(err, ErrNoDriver) || !errors.As(err, &ue) {
		t.Errorf("missing driver: %v", err)
	}
	if _, err := OpenNVRTC(filepath.Join(t.TempDir(), "libnvrtc.so")); !errors.Is(err, ErrNoNVRTC) {
		t.Errorf("missing NVRTC: %v", err)
	}
	_, err = Interpreter{Driver: filepath.Join(t.TempDir(), "none.so")}.Compile(nil, nil)
	if !errors.Is(err, ErrNoDriver) {
		t.Errorf("Compile without a driver: %v", err)
	}
	// A library that loads but lacks the driver API is no driver either.
	if _, err := OpenDriver("libc.so.6"); !errors.Is(err, ErrNoDriver) || !strings.Contains(err.Error(), "lacks cuInit") {
		t.Errorf("libc as the driver: %v", err)
	}
}

// fakeCUDA builds testdata/fakecuda.c into a shared library with the
// system C compiler.
func fakeCUDA(t *testing.T) string {
	t.Helper()
	cc := os.Getenv("CC")
	if cc == "" {
		cc = "gcc"
	}
	if _, err := exec.LookPath(cc); err != nil {
		t.Skipf("no C compiler (%s) to build the fake libcuda: %v; on Debian: apt-get install -y gcc", cc, err)
	}
	so := filepath.Join(t.TempDir(), "libfakecuda.so")
	out, err := exec.Command(cc, "-shared", "-fPIC", "-O1", "-o", so, filepath.Join("testdata", "fakecuda.c"), "-ldl").CombinedOutput()
	if err != nil {
		t.Fatalf("building the fake libcuda: %v\n%s", err, out)
	}
	return so
}

type fakeCounts struct{ launches, captures, graphs int32 }

func readCounts(t *testing.T, so string) fakeCounts {
	t.Helper()
	h, err := purego.Dlopen(so, purego.RTLD_NOW|purego.RTLD_GLOBAL)
	if err != nil {
		t.Fatal(err)
	}
	f, err := purego.Dlsym(h, "fake_counts")
	if err != nil {
		t.Fatal(err)
	}
	var c fakeCounts
	purego.SyscallN(f, uintptr(unsafe.Pointer(&c.launches)), uintptr(unsafe.Pointer(&c.captures)), uintptr(unsafe.Pointer(&c.graphs)))
	return c
}

// TestFakeDriver runs a reference model's prefill and decode steps through
// the driver bindings against a fake libcuda whose launches run the
// host-harness build of the same kernels: every driver call the GPU path
// makes (allocation, copies, module load, an 11-argument cuLaunchKernel
// with its kernelParams, stream capture and graph replay) crosses the
// purego ABI, and the logits must match the oracle's.
func TestFakeDriver(t *testing.T) {
	so := fakeCUDA(t)
	host(t)
	d, err := OpenDriver(so)
	if err != nil {
		t.Fatal(err)
	}
	if d.Name != "fake device 0" || d.Major != 9 || d.Minor != 0 || d.Version != 12040 || d.Arch() != "--gpu-architecture=sm_90" {
		t.Errorf("device %q sm_%d%d driver %d", d.Name, d.Major, d.Minor, d.Version)
	}
	r := openRef(t, "tiny-llama-f32.gguf")
	c, m := r.ckpt, r.model
	prompt := []int32{1, 5, 9, 13, 2}
	pg, pc := refStep(t, c, m, len(prompt), 16)
	dg, dc := refStep(t, c, m, 1, 16)
	var mods []*Module
	for _, g := range []*poot.Graph{pg, dg} {
		plan, err := lower.Build(g, Target(), lower.Options{})
		if err != nil {
			t.Fatal(err)
		}
		mod, err := Generate(plan)
		if err != nil {
			t.Fatal(err)
		}
		mods = append(mods, mod)
	}
	all := &Module{}
	for _, m := range mods {
		all.Kernels = append(all.Kernels, m.Kernels...)
	}
	kernels, err := (&hostDevice{cxx: "g++", cache: testCache}).library(dedupe(all))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("FAKE_CUDA_KERNELS", kernels)
	for _, noGraph := range []bool{false, true} {
		in := Interpreter{Driver: so, NVRTC: so, CacheDir: t.TempDir(), NoGraph: noGraph}
		before := readCounts(t, so)
		px, err := in.CompileExec(pg, pc)
		if err != nil {
			t.Fatal(err)
		}
		dx, err := in.CompileExec(dg, dc)
		if err != nil {
			t.Fatal(err)
		}
		po, _ := interp.Compile(pg, pc)
		do, _ := interp.Compile(dg, dc)
		so0, err := interp.NewState(pg)
		if err != nil {
			t.Fatal(err)
		}
		sc := so0.Clone()
		check := func(what string, o, x interp.Executable, s interp.Slots) int32 {
			ro, err := o.Run(s, so0)
			if err != nil {
				t.Fatal(err)
			}
			rx, err := x.Run(s, sc)
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if d := maxRelDiff(rx[0].F32(), ro[0].F32()); d > refTol {
				t.Errorf("%s (graphs %v): logits differ by %.3g of their range", what, !noGraph, d)
			}
			return argmaxF32(ro[0].F32())
		}
		next := check("prefill", po, px, stepSlots(t, prompt, 0))
		for i := range 3 {
			next = check("decode", do, dx, stepSlots(t, []int32{next}, len(prompt)+i))
		}
		after := readCounts(t, so)
		wantLaunches := int32(len(px.Module().Launches) + 3*len(dx.Module().Launches))
		got := fakeCounts{after.launches - before.launches, after.captures - before.captures, after.graphs - before.graphs}
		want := fakeCounts{wantLaunches, 2, 4}
		if noGraph {
			want.captures, want.graphs = 0, 0
		}
		if got != want {
			t.Errorf("graphs %v: %d launches, %d captures, %d graph launches; want %d, %d, %d", !noGraph,
				got.launches, got.captures, got.graphs, want.launches, want.captures, want.graphs)
		}
		px.Close()
		dx.Close()
	}
}

func argmaxF32(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

// dedupe drops repeated kernels.
func dedupe(m *Module) *Module {
	seen := map[string]bool{}
	out := &Module{}
	for _, k := range m.Kernels {
		if !seen[k.Name] {
			seen[k.Name] = true
			out.Kernels = append(out.Kernels, k)
		}
	}
	return out
}

// TestCopyBandwidthFake times copies against the fake libcuda, whose
// events always report 1.5 ms: 2 MiB moved (read and written) in 1.5 ms.
func TestCopyBandwidthFake(t *testing.T) {
	d, err := OpenDriver(fakeCUDA(t))
	if err != nil {
		t.Fatal(err)
	}
	bw, err := d.copyBandwidth(1<<20, 3)
	if err != nil {
		t.Fatal(err)
	}
	if want := 2 * float64(1<<20) / 1.5e-3 / 1e9; math.Abs(bw-want) > 1e-9*want {
		t.Errorf("copy bandwidth %g GB/s, want %g", bw, want)
	}
}

// TestProfileFake adds launch times up by kernel kind against the fake
// libcuda, whose events always report 1.5 ms between two records.
func TestProfileFake(t *testing.T) {
	d, err := OpenDriver(fakeCUDA(t))
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv("POOT_CUDA_PROFILE", "1")
	dev, err := newGPUDevice(d, nil, t.TempDir(), false)
	if err != nil {
		t.Fatal(err)
	}
	if dev.prof == nil || !dev.noGraph {
		t.Fatal("POOT_CUDA_PROFILE set, but the device neither profiles nor turns graphs off")
	}
	for range 2 {
		for _, k := range []string{"gemv_f16_0a1b", "gemv_f16_2c3d", "rows_4e5f"} {
			if err := dev.prof.mark(dev, k); err != nil {
				t.Fatal(err)
			}
		}
		if err := dev.prof.end(dev); err != nil {
			t.Fatal(err)
		}
	}
	var sb strings.Builder
	dev.prof.report(&sb)
	got := sb.String()
	for _, want := range []string{"2 steps of 3 launches, 4.500 ms a step", "gemv_f16                         2 launches a step     3.000 ms a step  66.7%", "rows                             1 launches a step     1.500 ms a step  33.3%"} {
		if !strings.Contains(got, want) {
			t.Errorf("report lacks %q:\n%s", want, got)
		}
	}
	dev.close()
}
