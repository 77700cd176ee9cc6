package driver

import (
	"fmt"
	"slices"
	"sync"

	"github.com/pootlabs/poot/interp"
)

// InterpreterFactory makes a fresh interpreter. It is called once per session.
type InterpreterFactory func() (interp.Interpreter, error)

// The registry holds the oracle from the start; every other interpreter
// is registered by its own package (the CPU backend by lower/cpu/register),
// so that the driver depends on no backend and a backend not on the
// driver.
var (
	interpMu  sync.Mutex
	interpReg = map[string]InterpreterFactory{
		"oracle": func() (interp.Interpreter, error) { return interp.Oracle{}, nil },
	}
)

// DefaultInterpreter is the interpreter a session uses when Options.Interp
// is empty: the planner's CPU backend, which agrees with the oracle on every
// reference model (package lower/cpu states the tolerances) and is an order
// of magnitude faster. It is registered by importing
// github.com/pootlabs/poot/lower/cpu/register; without that import the
// default is an *InterpreterError that says so. "oracle" is always there.
const DefaultInterpreter = "cpu"

// cpuRegistration is the package that registers DefaultInterpreter, for
// the error that reports it missing.
const cpuRegistration = "github.com/pootlabs/poot/lower/cpu/register"

// RegisterInterpreter makes an interpreter available under name, so that
// Options.Interp (and the poot command's --interp) can choose it. A backend
// package calls it from its init function. Registering a name twice is an
// error.
func RegisterInterpreter(name string, f InterpreterFactory) error {
	interpMu.Lock()
	defer interpMu.Unlock()
	if name == "" || f == nil {
		return &OptionError{Option: "interpreter", Detail: "a registration needs a name and a factory"}
	}
	if _, ok := interpReg[name]; ok {
		return &OptionError{Option: "interpreter", Detail: fmt.Sprintf("%q is registered already", name)}
	}
	interpReg[name] = f
	return nil
}

// Interpreters lists the registered interpreter names in sorted order.
func Interpreters() []string {
	interpMu.Lock()
	defer interpMu.Unlock()
	names := make([]string, 0, len(interpReg))
	for n := range interpReg {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}

// NewInterpreter makes the interpreter registered under name; an unknown
// name is an *InterpreterError.
func NewInterpreter(name string) (interp.Interpreter, error) {
	if name == "" {
		name = DefaultInterpreter
	}
	interpMu.Lock()
	f, ok := interpReg[name]
	interpMu.Unlock()
	if !ok {
		e := &InterpreterError{Name: name, Known: Interpreters()}
		if name == DefaultInterpreter {
			e.Hint = "import _ \"" + cpuRegistration + "\" to register it"
		}
		return nil, e
	}
	return f()
}
