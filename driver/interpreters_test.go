package driver

import (
	"errors"
	"strings"
	"testing"
)

// TestDefaultNeedsRegistration: the driver itself registers only the
// oracle; without the CPU backend's registration the default interpreter
// is an error that names the package to import.
func TestDefaultNeedsRegistration(t *testing.T) {
	interpMu.Lock()
	saved, had := interpReg[DefaultInterpreter]
	delete(interpReg, DefaultInterpreter)
	interpMu.Unlock()
	defer func() {
		if had {
			interpMu.Lock()
			interpReg[DefaultInterpreter] = saved
			interpMu.Unlock()
		}
	}()
	_, err := NewInterpreter("")
	var ie *InterpreterError
	if !errors.As(err, &ie) || !strings.Contains(err.Error(), cpuRegistration) {
		t.Errorf("default interpreter unregistered: %v", err)
	}
	if in, err := NewInterpreter("oracle"); err != nil || in.Name() != "oracle" {
		t.Errorf("oracle: %v, %v", in, err)
	}
}
