package register_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/rdu"
	"github.com/pootlabs/poot/rdu/register"
)

// TestRegistered: importing the package puts the streamed lowering in the
// driver's registry under its name.
func TestRegistered(t *testing.T) {
	in, err := driver.NewInterpreter(register.Name)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := in.(rdu.Interpreter); !ok || in.Name() != "rdu" {
		t.Errorf("the %q interpreter is %T named %q", register.Name, in, in.Name())
	}
}

// TestSessionAgreesWithTheOracle: a driver session on the rdu interpreter
// scores a prompt (prefill chunks run token by token through the decode
// bundle) and generates greedily exactly as a session on the oracle does.
func TestSessionAgreesWithTheOracle(t *testing.T) {
	path := filepath.Join("..", "..", "..", "shared", "refmodels", "tiny-gemma3-f32.gguf")
	if _, err := os.Stat(path); err != nil {
		t.Skipf("reference model not found: %v", err)
	}
	open := func(name string) *driver.Session {
		s, err := driver.Open(path, driver.Options{Interp: name, Capacity: 48, PrefillChunk: 5})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { s.Close() })
		return s
	}
	ref, sim := open("oracle"), open(register.Name)
	prompt := []int32{1, 15, 27, 100, 200, 300, 400, 500}
	want, err := ref.Logits(prompt, true)
	if err != nil {
		t.Fatal(err)
	}
	got, err := sim.Logits(prompt, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d rows of logits, the oracle %d", len(got), len(want))
	}
	for i := range want {
		for j := range want[i] {
			if d := got[i][j] - want[i][j]; d > 1e-5 || d < -1e-5 {
				t.Fatalf("position %d, logit %d: %v, the oracle %v", i, j, got[i][j], want[i][j])
			}
		}
	}
	gen := func(s *driver.Session) []int32 {
		var ids []int32
		opts := driver.GenerateOptions{MaxTokens: 8, IgnoreEOS: true}
		if _, err := s.GenerateTokens(context.Background(), prompt, opts, func(string) {}); err != nil {
			t.Fatal(err)
		}
		ids = s.History()
		return ids
	}
	a, b := gen(ref), gen(sim)
	if len(a) != len(b) {
		t.Fatalf("%d tokens, the oracle %d", len(b), len(a))
	}
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("token %d: %d, the oracle %d", i, b[i], a[i])
		}
	}
}
