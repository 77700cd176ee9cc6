// Command customfamily runs a model family defined outside poot (package
// examples/parallel) through the unchanged driver: it registers the
// family's row, writes a random-weight checkpoint, prints the decode step's
// graph summary, and generates.
//
//	go run ./examples/customfamily
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/pootlabs/poot/driver"
	// The cpu backend, registered as the interpreter "cpu" (the default).
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/examples/parallel"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	_ "github.com/pootlabs/poot/lower/cpu/register"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "customfamily:", err)
		os.Exit(1)
	}
}

func run() error {
	// One row makes the family findable from a checkpoint.
	registry.Shipped = append(registry.Shipped, parallel.Row)

	m := &parallel.Model{Vocab: 512, Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, MaxContext: 128, Eps: 1e-5, RopeTheta: 10000}
	dir, err := os.MkdirTemp("", "customfamily-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "parallel.gguf")
	if err := synth.Write(m, path, synth.Options{Seed: 1}); err != nil {
		return err
	}

	s, err := driver.Open(path, driver.Options{})
	if err != nil {
		return err
	}
	defer s.Close()
	_, g, err := s.Step(1, families.LastToken)
	if err != nil {
		return err
	}
	lines := strings.SplitN(g.String(), "\n", 2)
	fmt.Printf("family %q, decode step: %s\n", s.Model().Family(), lines[0])

	fmt.Print("Once upon a time")
	st, err := s.Generate(context.Background(), "Once upon a time", driver.GenerateOptions{
		SamplerOptions: driver.SamplerOptions{Temperature: 0.8, Seed: 1}, MaxTokens: 16, IgnoreEOS: true,
	}, func(piece string) { fmt.Print(piece) })
	if err != nil {
		return err
	}
	fmt.Printf("\n%s\n", st.Summary())
	return nil
}
