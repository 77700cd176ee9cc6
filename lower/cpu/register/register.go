// Package register makes the CPU backend (package lower/cpu) available to
// the driver under the name "cpu", the driver's default interpreter.
// Import it for its effect, from a program's main package or a test:
//
//	import _ "github.com/pootlabs/poot/lower/cpu/register"
//
// The registration lives here rather than in lower/cpu so that the
// backend does not depend on the driver (and, through it, on the loaders,
// families and tokenizers): a program that runs graphs itself imports
// lower/cpu alone, one that runs models through the driver imports this.
package register

import (
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower/cpu"
)

// Name is the interpreter name the CPU backend registers under.
const Name = "cpu"

func init() {
	// The only failure is a name registered already, by a program that
	// put its own interpreter under "cpu"; that one stays.
	_ = driver.RegisterInterpreter(Name, func() (interp.Interpreter, error) { return cpu.Interpreter{}, nil })
}
