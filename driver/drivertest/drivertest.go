// Package drivertest checks checkpoints end to end through the driver
// against reference outputs, on every interpreter: what a user of poot
// gets. It is for tests; family packages use it from external test
// packages (package X_test), since the driver imports every family.
package drivertest

import (
	"context"
	"testing"

	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/families/familytest"
	_ "github.com/pootlabs/poot/lower/cpu/register" // the cpu interpreter
)

// CheckReference opens the checkpoint at path through the driver on each
// interpreter (the oracle and the cpu backend when none are named) and
// compares with ref: the logits of one all-token prefill of ref's tokens
// within tol at every position, and the greedy tokens of a generation from
// ref's prompt (prefill, then one decode step a token), which must all
// match. It is what a user of poot gets, checked against llama.cpp.
func CheckReference(t *testing.T, path string, ref *familytest.Ref, tol float64, interps ...string) {
	t.Helper()
	if len(interps) == 0 {
		interps = []string{"oracle", "cpu"}
	}
	toks := ref.Tokens()
	for _, in := range interps {
		s, err := driver.Open(path, driver.Options{Interp: in, Capacity: 2 * len(toks)})
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		rows, err := s.Logits(toks[:len(ref.Logits)], true)
		if err != nil {
			s.Close()
			t.Fatalf("%s: %v", in, err)
		}
		worst := 0.0
		for i, row := range rows {
			worst = max(worst, familytest.MaxDiff(row, ref.Logits[i]))
		}
		if !(worst <= tol) {
			t.Errorf("%s: max |Δlogit| %.3g over %d positions, tolerance %g", in, worst, len(rows), tol)
		}
		s.Reset()
		st, err := s.GenerateTokens(context.Background(), ref.Prompt, driver.GenerateOptions{MaxTokens: len(ref.Generated), IgnoreEOS: true}, nil)
		s.Close()
		if err != nil {
			t.Fatalf("%s: generate: %v", in, err)
		}
		match := 0
		for match < len(st.Tokens) && match < len(ref.Generated) && st.Tokens[match] == ref.Generated[match] {
			match++
		}
		if match != len(ref.Generated) {
			t.Errorf("%s: greedy tokens %v, llama.cpp %v (first %d match)", in, st.Tokens, ref.Generated, match)
		}
		t.Logf("%s: max |Δlogit| %.3g over %d positions, %d/%d greedy tokens match", in, worst, len(rows), match, len(ref.Generated))
	}
}
