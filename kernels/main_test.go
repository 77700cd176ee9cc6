package kernels_test

import (
	"flag"
	"os"
	"testing"

	"github.com/pootlabs/poot/kernels"
)

var portable = flag.Bool("kernels.go", false, "run benchmarks (and tests) on the portable Go kernels only")

func TestMain(m *testing.M) {
	flag.Parse()
	if *portable {
		kernels.SetAsm(false)
	}
	os.Exit(m.Run())
}
