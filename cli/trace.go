package cli

import (
	"encoding/json"
	"io"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/cuda"
	// --interp cuda: the CUDA backend registers itself (listed as
	// unavailable, with the reason, where there is no GPU).
	_ "github.com/pootlabs/poot/cuda/register"
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/internal/mmap"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/lower/cpu"
	"github.com/pootlabs/poot/safetensors"
)

// modelSource resolves -m MODEL or --family F with --config FILE or
// --preset NAME to a configured model (no weights are bound).
func modelSource(model, family, config, preset string) (families.Model, func(), error) {
	switch {
	case model != "" && family != "":
		return nil, nil, usagef("give either -m MODEL or --family F, not both")
	case model != "":
		c, err := load.Open(model)
		if err != nil {
			return nil, nil, err
		}
		m, err := registry.FromCheckpoint(c)
		if err != nil {
			c.Close()
			return nil, nil, err
		}
		return m, func() { c.Close() }, nil
	case family == "":
		return nil, nil, usagef("no model: give -m MODEL, or --family F with --config FILE or --preset NAME")
	}
	var cfg map[string]any
	switch {
	case config != "" && preset != "":
		return nil, nil, usagef("give either --config FILE or --preset NAME, not both")
	case config != "":
		data, err := mmap.ReadFile(config, safetensors.MaxConfigSize)
		if err != nil {
			return nil, nil, err
		}
		if err := json.Unmarshal(data, &cfg); err != nil {
			return nil, nil, &fileError{config, err}
		}
	default:
		if preset == "" {
			preset = "tiny"
		}
		p, err := synth.FindPreset(family, preset)
		if err != nil {
			return nil, nil, err
		}
		cfg = p.Config
	}
	m, err := synth.Model(family, cfg)
	if err != nil {
		return nil, nil, err
	}
	return m, func() {}, nil
}

// fileError names the file a parse error is in.
type fileError struct {
	path string
	err  error
}

// Error names the file.
func (e *fileError) Error() string { return e.path + ": " + e.err.Error() }

// Unwrap returns the parse error.
func (e *fileError) Unwrap() error { return e.err }

// cmdTrace prints the decode step's graph (or a prefill step's with
// --prefill N) as text, or as Graphviz DOT with --dot.
func cmdTrace(args []string, stdout, stderr io.Writer) error {
	fs := flags("trace", "trace (-m MODEL | --family F [--config FILE | --preset NAME]) [--prefill N] [--all] [--ctx C] [--dot | --plan [--target cpu|cuda]]", stdout)
	var model, family, config, preset string
	fs.StringVar(&model, "m", "", "the model: a GGUF file or a safetensors directory")
	fs.StringVar(&model, "model", "", "same as -m")
	fs.StringVar(&family, "family", "", "a registered family: "+join(synth.Families()))
	fs.StringVar(&config, "config", "", "the family's Hugging Face config.json")
	fs.StringVar(&preset, "preset", "", "a synth preset of the family (default tiny)")
	prefill := fs.Int("prefill", 0, "trace a prefill step of N tokens instead of the decode step")
	all := fs.Bool("all", false, "return the logits of every token")
	capacity := fs.Int("ctx", 0, "cache capacity (0: the model's context, at most 4096)")
	dot := fs.Bool("dot", false, "print Graphviz DOT")
	unfold := fs.Bool("unfold", false, "show every primitive equation of each composite's body (composites print folded, one line or node with its attributes, by default)")
	plan := fs.Bool("plan", false, "print the backend's plan of the step (kernels, fused equations, arena offsets, bytes and flops) instead of the graph; with -m the weights are bound as stored first")
	target := fs.String("target", "cpu", "the backend whose plan --plan prints: cpu, or cuda (adds each kernel's CUDA launches: name, grid and block)")
	if err := fs.parse(args); err != nil {
		return err
	}
	switch {
	case *prefill < 0, *prefill == 0 && fs.given("prefill"):
		return usagef("--prefill %d: want 1 or more (leave it out for the decode step)", *prefill)
	case *dot && *plan:
		return usagef("give --dot or --plan, not both")
	}
	if err := checkCtx(*capacity); err != nil {
		return err
	}
	m, done, err := modelSource(model, family, config, preset)
	if err != nil {
		return err
	}
	defer done()
	g, err := traceStep(m, *prefill, *all, *capacity)
	if err != nil {
		return err
	}
	if *plan {
		if model != "" {
			c, err := load.Open(model)
			if err != nil {
				return err
			}
			defer c.Close()
			if g, _, err = load.Bind(g, c, m.Weights().Resolver()); err != nil {
				return err
			}
		}
		t := cpu.Target(false)
		switch *target {
		case "cpu":
		case "cuda":
			t = cuda.Target()
		default:
			return usagef("--target %q: want cpu or cuda", *target)
		}
		p, err := lower.Build(g, t, lower.Options{})
		if err != nil {
			return err
		}
		text := p.String()
		if *target == "cuda" {
			if text, err = cuda.PlanString(p); err != nil {
				return err
			}
		}
		_, err = io.WriteString(stdout, text)
		return err
	}
	po := poot.PrintOptions{Unfold: *unfold}
	if *dot {
		return g.DOT(stdout, "", po)
	}
	return g.Print(stdout, po)
}

// traceStep traces the decode step (prefill 0) or a prefill step.
func traceStep(m families.Model, prefill int, all bool, capacity int) (*poot.Graph, error) {
	if capacity == 0 {
		capacity = driver.DefaultCapacity
		if mc := m.Schema().MaxContext; mc > 0 && mc < capacity {
			capacity = mc
		}
	}
	spec := families.StepSpec{Program: families.Decode, Shape: families.StepShape{Rows: 1, New: 1, Capacity: capacity}}
	if prefill > 0 {
		spec.Program, spec.Shape.New = families.Prefill, prefill
	}
	if all {
		spec.Shape.Logits = families.AllTokens
	}
	return m.Trace(spec, poot.Limits{})
}

func join(s []string) string {
	out := ""
	for i, x := range s {
		if i > 0 {
			out += ", "
		}
		out += x
	}
	return out
}
