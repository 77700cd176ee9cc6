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
		if _, err := kernels.SetLevel(kernels.LevelGo); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}
