package register_test

import (
	"errors"
	"slices"
	"testing"

	"github.com/pootlabs/poot/cuda"
	"github.com/pootlabs/poot/cuda/register"
	"github.com/pootlabs/poot/driver"
)

// TestRegistered: "cuda" is listed; choosing it gives the backend where a
// GPU, its driver and NVRTC are present, and otherwise the typed error
// naming what is missing, without a crash.
func TestRegistered(t *testing.T) {
	if !slices.Contains(driver.Interpreters(), register.Name) {
		t.Fatalf("%q is not among %v", register.Name, driver.Interpreters())
	}
	in, err := driver.NewInterpreter(register.Name)
	avail := cuda.Available()
	switch {
	case avail == nil && err == nil:
		if _, ok := in.(cuda.Interpreter); !ok {
			t.Errorf("the cuda interpreter is %T", in)
		}
	case avail != nil:
		var ue *cuda.UnavailableError
		if !errors.As(err, &ue) || !(errors.Is(err, cuda.ErrNoDriver) || errors.Is(err, cuda.ErrNoDevice) || errors.Is(err, cuda.ErrNoNVRTC)) {
			t.Errorf("without a GPU: %v", err)
		}
		t.Logf("cuda unavailable here: %v", err)
	default:
		t.Errorf("available, but NewInterpreter fails: %v", err)
	}
}
