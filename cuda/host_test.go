package cuda

import (
	"errors"
	"os"
	"os/exec"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
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
