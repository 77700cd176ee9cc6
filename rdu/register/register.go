// Package register makes the streamed lowering's simulator (package rdu)
// available to the driver as the interpreter "rdu". Import it for its
// effect:
//
//	import _ "github.com/pootlabs/poot/rdu/register"
//
// The registration lives here so that package rdu does not depend on the
// driver (and, through it, on the loaders, families and tokenizers).
package register

import (
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/rdu"
)

// Name is the interpreter name the streamed lowering registers under.
const Name = "rdu"

func init() {
	// The only failure is the name taken already by a program's own
	// interpreter, which then stays.
	_ = driver.RegisterInterpreter(Name, func() (interp.Interpreter, error) { return rdu.Interpreter{}, nil })
}
