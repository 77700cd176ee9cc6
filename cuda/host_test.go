package cuda

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/pootest"
	"github.com/pootlabs/poot/tensor"
)

var testCache string

func TestMain(m *testing.M) {
	d, err := os.MkdirTemp("", "poot-cuda-test")
	if err == nil {
		testCache = d
	}
	code := m.Run()
	os.RemoveAll(d)
	os.Exit(code)
}

// host returns the host harness, skipping when there is no C++ compiler.
func host(t testing.TB) HostInterpreter {
	t.Helper()
	cxx := os.Getenv("CXX")
	if cxx == "" {
		cxx = "g++"
	}
	if _, err := exec.LookPath(cxx); err != nil {
		t.Skipf("no C++ compiler (%s) for the host harness: %v; on Debian: apt-get install -y g++", cxx, err)
	}
	return HostInterpreter{CacheDir: testCache}
}

func TestHostSoftmaxRow(t *testing.T) {
	in := host(t)
	b := poot.NewBuilder[struct{}](poot.Limits{})
	x := b.SlotNamed("x", poot.T(poot.F32, 3, 40))
	m := b.ReduceMax(x, 1)
	e := b.Exp(b.Sub(x, b.Broadcast(m, 3, 40)))
	s := b.ReduceSum(e, 1)
	y := b.Div(e, b.Broadcast(s, 3, 40))
	g, err := b.Finish(poot.Out(y))
	if err != nil {
		t.Fatal(err)
	}
	data := make([]float32, 120)
	for i := range data {
		data[i] = float32(i%17) / 5
	}
	xt, _ := tensor.FromF32(poot.Shape{3, 40}, data)
	slots := interp.Slots{"x": xt}
	if err := pootest.Compare(interp.Oracle{}, in, g, nil, slots, nil, pootest.Default); err != nil {
		if errors.Is(err, ErrNoCompiler) {
			t.Skip(err)
		}
		t.Fatal(err)
	}
}

// sharedHost is the host harness over one library holding the kernels of
// many graphs, so that a test compiles once.
type sharedHost struct {
	lib  uintptr
	opts lower.Options
	gen  GenOptions
}

func (sharedHost) Name() string { return "cuda-host" }

func (s sharedHost) Compile(g *poot.Graph, consts interp.Consts) (interp.Executable, error) {
	return compile(&hostDevice{lib: s.lib, borrowed: true}, g, consts, s.opts, s.gen)
}

// hostLibrary compiles the kernels of every module into one library.
func hostLibrary(t testing.TB, mods []*Module) uintptr {
	t.Helper()
	all := &Module{}
	seen := map[string]bool{}
	for _, m := range mods {
		for _, k := range m.Kernels {
			if !seen[k.Name] {
				seen[k.Name] = true
				all.Kernels = append(all.Kernels, k)
			}
		}
	}
	d := &hostDevice{cxx: "g++", cache: testCache}
	if c := os.Getenv("CXX"); c != "" {
		d.cxx = c
	}
	lib, err := d.build(all)
	if err != nil {
		t.Fatal(err)
	}
	return lib
}

// randomGen keeps the random graphs' MatMuls of 16 rows or more on the
// f32 GEMV: their bf16 and f16 tensor-core results are held to their own
// bound (TestHostGemm), not to pootest.Default, and a random graph may
// pass a product through an operation that magnifies its error.
var randomGen = GenOptions{NoTensorCores: true}

// TestHostAgreesOnRandomGraphs holds the generated kernels, run by the
// host harness, to the oracle on random graphs of every primitive, with
// every planner pass on and each off in turn. Graphs the backend does not
// run (packed data it cannot read or move) are counted, and must stay a
// minority.
func TestHostAgreesOnRandomGraphs(t *testing.T) {
	host(t)
	type run struct {
		c    *pootest.GraphCase
		opts lower.Options
		name string
	}
	var runs []run
	var mods []*Module
	unsupported := 0
	configs := []lower.Options{{}}
	for _, p := range lower.Passes() {
		configs = append(configs, lower.Options{Disabled: []string{p}})
	}
	n := 160
	if testing.Short() {
		n = 40
	}
	for i := range n {
		c := pootest.GenGraph().Example(i)
		for ci, opts := range configs {
			if ci > 0 && i%4 != 0 {
				continue
			}
			plan, err := lower.Build(c.Graph, Target(), opts)
			var mod *Module
			if err == nil {
				mod, err = GenerateFor(plan, randomGen)
			}
			var le *lower.LegalizeError
			if errors.As(err, &le) || errors.Is(err, interp.ErrUnsupported) {
				unsupported++
				continue
			}
			if err != nil {
				t.Fatalf("case %d: %v", i, err)
			}
			mods = append(mods, mod)
			runs = append(runs, run{c, opts, fmt.Sprintf("case%d/%v", i, opts.Disabled)})
		}
	}
	if unsupported*4 > len(runs) {
		t.Errorf("%d graphs unsupported, %d run: too many", unsupported, len(runs))
	}
	lib := hostLibrary(t, mods)
	failed := 0
	for _, r := range runs {
		err := pootest.Compare(interp.Oracle{}, sharedHost{lib, r.opts, randomGen}, r.c.Graph, r.c.Consts, r.c.Slots, r.c.State, pootest.Default)
		if err != nil {
			failed++
			if failed <= 5 {
				t.Errorf("%s: %v\n%v", r.name, err, r.c.Graph)
			}
		}
	}
	t.Logf("%d graphs run, %d failed, %d unsupported", len(runs), failed, unsupported)
}
