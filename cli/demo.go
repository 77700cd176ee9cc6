package cli

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/driver/synth"
)

// cmdDemo shows the whole idea with no files: synthesize a tiny model,
// trace its decode step, print part of the graph, run it, and generate.
func cmdDemo(args []string, stdout, stderr io.Writer) error {
	fs := flags("demo", "demo [--keep DIR] [--interp NAME]", stdout)
	keep := fs.String("keep", "", "write the model into DIR and keep it (default: a temporary directory)")
	interpName := fs.String("interp", driver.DefaultInterpreter, "the interpreter: "+join(driver.Interpreters()))
	if err := fs.parse(args); err != nil {
		return err
	}
	dir := *keep
	if dir == "" {
		tmp, err := os.MkdirTemp("", "poot-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	p := func(format string, args ...any) { fmt.Fprintf(stdout, format, args...) }

	// 1. A model: any registered family can be synthesized.
	preset, err := synth.FindPreset("llama", "tiny")
	if err != nil {
		return err
	}
	m, err := synth.Model(preset.Family, preset.Config)
	if err != nil {
		return err
	}
	path := filepath.Join(dir, "tiny-llama.gguf")
	if err := synth.Write(m, path, synth.Options{Type: poot.F32, Seed: 1}); err != nil {
		return err
	}
	p("1. synthesized a random-weight model: %s\n   %s (%s)\n\n", preset.Description, path, sizeOf(path))

	// 2. Tracing: the family's Go code records primitive equations.
	t0 := time.Now()
	g, err := traceStep(m, 0, false, 64)
	if err != nil {
		return err
	}
	p("2. traced the decode step in %v: the graph is plain data\n", time.Since(t0).Round(time.Microsecond))
	text := g.String()
	lines := strings.Split(text, "\n")
	p("   %s\n", lines[0])
	if i := slices.IndexFunc(lines, func(l string) bool { return strings.HasPrefix(l, "layer.0") }); i >= 0 {
		for _, l := range lines[i:min(i+10, len(lines))] {
			p("   %s\n", l)
		}
		p("   … (poot trace --family llama --preset tiny prints it all; --dot draws it)\n\n")
	}

	// 3. Running: bind the weights as stored, compile, run steps.
	s, err := driver.Open(path, driver.Options{Interp: *interpName, Capacity: 64})
	if err != nil {
		return err
	}
	defer s.Close()
	d := s.DecodeInfo()
	p("3. opened it with the %q interpreter: decode step %d equations, %d dispatches, compiled in %v\n",
		s.Interpreter().Name(), d.Equations, d.Dispatches, d.CompileTime.Round(time.Microsecond))
	const prompt = "Once upon a time"
	ids, err := s.Encode(prompt, driver.GenerateOptions{})
	if err != nil {
		return err
	}
	rows, err := s.Logits(ids, false)
	if err != nil {
		return err
	}
	tok, _ := s.Tokenizer()
	p("   %q is tokens %v; the most likely next tokens:", prompt, ids)
	for _, id := range topK(rows[0], 3) {
		p(" %q (%.3f)", tok.Piece(id), rows[0][id])
	}
	p("\n")
	// The same recorded graph under another interpreter.
	other := "oracle"
	if s.Interpreter().Name() == "oracle" {
		other = "cpu"
	}
	if o, err := driver.Open(path, driver.Options{Interp: other, Capacity: 64}); err == nil {
		orows, err := o.Logits(ids, false)
		o.Close()
		if err == nil {
			worst := 0.0
			for i, v := range orows[0] {
				worst = max(worst, math.Abs(float64(v-rows[0][i])))
			}
			p("   the same graph on the %q interpreter: max |Δlogit| = %.2g over %d logits\n", other, worst, len(orows[0]))
		}
	}
	p("\n")

	// 4. Generating: prefill, then decode steps carrying the KV cache.
	s.Reset()
	p("4. generating (greedy, repetition penalty 1.5; the weights are random, so is the text):\n   %s", prompt)
	st, err := s.Generate(context.Background(), prompt, driver.GenerateOptions{
		SamplerOptions: driver.SamplerOptions{RepeatPenalty: 1.5}, MaxTokens: 24, IgnoreEOS: true,
	}, func(piece string) { p("%s", piece) })
	if err != nil {
		return err
	}
	p("\n   %s\n\n", st.Summary())
	p("Next: poot generate -m MODEL.gguf -p \"Once upon a time\"   (see README.md)\n")
	return nil
}

// topK returns the ids of the k largest values, largest first.
func topK(v []float32, k int) []int32 {
	ids := make([]int32, len(v))
	for i := range ids {
		ids[i] = int32(i)
	}
	slices.SortStableFunc(ids, func(a, b int32) int {
		switch {
		case v[a] > v[b]:
			return -1
		case v[a] < v[b]:
			return 1
		}
		return 0
	})
	return ids[:min(k, len(ids))]
}
