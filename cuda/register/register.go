// Package register makes the CUDA backend (package cuda) available to the
// driver under the name "cuda". Import it for its effect:
//
//	import _ "github.com/pootlabs/poot/cuda/register"
//
// On a machine without a CUDA driver, a GPU or NVRTC, "cuda" is still
// listed, and choosing it returns the *cuda.UnavailableError naming what
// is missing. The registration lives here so that package cuda does not
// depend on the driver.
package register

import (
	"github.com/pootlabs/poot/cuda"
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/interp"
)

// Name is the interpreter name the CUDA backend registers under.
const Name = "cuda"

func init() {
	// The only failure is a name registered already; that one stays.
	_ = driver.RegisterInterpreter(Name, func() (interp.Interpreter, error) {
		if err := cuda.Available(); err != nil {
			return nil, err
		}
		return cuda.Interpreter{}, nil
	})
}
