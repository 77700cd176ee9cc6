package parallel_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/pootlabs/poot/driver"
	// The cpu backend, registered as the interpreter "cpu" (the default).
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/examples/parallel"
	"github.com/pootlabs/poot/families/registry"
	_ "github.com/pootlabs/poot/lower/cpu/register"
)

// A new family runs through the unchanged driver: register its row, write
// a random-weight checkpoint, open it, check that decoding with the cache
// equals one prefill, and generate.
func Example() {
	registry.Shipped = append(registry.Shipped, parallel.Row)

	m := &parallel.Model{Vocab: 512, Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, MaxContext: 128, Eps: 1e-5, RopeTheta: 10000}
	dir, err := os.MkdirTemp("", "parallel-example-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "parallel.gguf")
	if err := synth.Write(m, path, synth.Options{Seed: 1}); err != nil {
		log.Fatal(err)
	}

	s, err := driver.Open(path, driver.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer s.Close()
	fmt.Println("family:", s.Model().Family())

	// Prefill of 6 tokens, every position, against prefill of 5 and a
	// decode step carrying the cache.
	toks := []int32{1, 10, 20, 30, 40, 50}
	all, err := s.Logits(toks, true)
	if err != nil {
		log.Fatal(err)
	}
	s.Reset() // Logits leaves its tokens in the cache
	st, err := s.GenerateTokens(context.Background(), toks[:5], driver.GenerateOptions{MaxTokens: 2, IgnoreEOS: true}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("greedy token after 5 equals prefill argmax:", st.Tokens[0] == argmax(all[4]))

	s.Reset()
	st, err = s.Generate(context.Background(), "Once upon a time", driver.GenerateOptions{MaxTokens: 8, IgnoreEOS: true}, nil)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("generated tokens:", st.GeneratedTokens)
	// Output:
	// family: parallel
	// greedy token after 5 equals prefill argmax: true
	// generated tokens: 8
}

func argmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}
