package register_test

import (
	"testing"

	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/lower/cpu/register"
)

// TestRegistered: importing the package puts the CPU backend in the
// driver's registry under its name, the driver's default.
func TestRegistered(t *testing.T) {
	if register.Name != driver.DefaultInterpreter {
		t.Errorf("registered as %q, the default is %q", register.Name, driver.DefaultInterpreter)
	}
	in, err := driver.NewInterpreter("")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := in.(cpu.Interpreter); !ok {
		t.Errorf("the default interpreter is %T", in)
	}
}
