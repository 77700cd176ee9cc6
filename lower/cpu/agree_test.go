package cpu_test

import (
	"testing"

	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/pootest"
	"pgregory.net/rapid"
)

// configs are the interpreters held to the oracle on random graphs: every
// pass on, then each pass off in turn.
func configs() map[string]cpu.Interpreter {
	m := map[string]cpu.Interpreter{"all": {Exact: true, Threads: 2}}
	for _, p := range lower.Passes() {
		m["no_"+p] = cpu.Interpreter{Exact: true, Threads: 2, Options: lower.Options{Disabled: []string{p}}}
	}
	return m
}

func TestAgreeRandomGraphs(t *testing.T) {
	for name, in := range configs() {
		t.Run(name, func(t *testing.T) {
			rapid.Check(t, func(rt *rapid.T) {
				c := pootest.GenGraph().Draw(rt, "case")
				pootest.Agree(rt, interp.Oracle{}, in, c.Graph, c.Consts, c.Slots, c.State, pootest.Default)
			})
		})
	}
}
