package drivertest

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	_ "github.com/pootlabs/poot/rdu/register" // the streamed lowering's simulator
)

// Family is what CheckFamily checks: a checkpoint of the family and,
// optionally, llama.cpp's outputs for it.
type Family struct {
	// Row registers the family for the check when it is not registered
	// already (a family written outside poot); the zero Row adds nothing.
	Row families.Row
	// Checkpoint is a GGUF file or a safetensors directory.
	Checkpoint string
	// Ref is llama.cpp's run on the checkpoint (familytest.ReadRef); nil
	// holds every interpreter to the oracle instead, on Tokens.
	Ref *familytest.Ref
	// Tol bounds |Δlogit| against Ref (or the oracle) at every position;
	// 0 means a thousandth of the reference's logit range
	// (Ref.Relative(1e-3)), or 1e-4 against the oracle.
	Tol float64
	// Tokens are the tokens of the layout laws and, without a Ref, of the
	// agreement check; nil means Ref's tokens, or eight fixed ids below
	// the vocabulary's size.
	Tokens []int32
	// Interps names the interpreters to check; nil means every one the
	// driver has registered (the oracle, the cpu backend, the streamed
	// lowering, and any other the test binary imports).
	Interps []string
}

// CheckFamily is the one call a family's test makes. On every
// interpreter, in a subtest named after it, it checks:
//
//   - the step laws (familytest.CheckLayoutsOn): a prefill followed by a
//     decode equals one longer prefill, chunked prefills give every
//     position one prefill gives, a paged cache equals a contiguous one,
//     and rows batched in one step equal each row run alone, even at
//     different positions;
//   - the reference, through the driver as a user runs it: the logits of
//     one prefill of Ref's tokens at every position within Tol, and the
//     greedy tokens of a generation from Ref's prompt (prefill, then one
//     decode step a token), which must all match up to the first position
//     where the reference's two best logits lie within 2·Tol (a near tie
//     either side may win). Without a Ref, the logits of the oracle stand
//     in for llama.cpp's.
//
// An interpreter that refuses the family (an error that is
// interp.ErrUnsupported: the streamed lowering has no statement for some
// mixer, say) is skipped with the refusal logged; the oracle and the cpu
// backend must run every family.
func CheckFamily(t *testing.T, f Family) {
	t.Helper()
	if f.Row.Family != "" {
		registry.Register(f.Row)
	}
	c, err := load.Open(f.Checkpoint)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m, err := registry.FromCheckpoint(c)
	if err != nil {
		t.Fatal(err)
	}
	ref, tol := f.Ref, f.Tol
	toks := f.Tokens
	if toks == nil && ref != nil {
		toks = ref.Tokens()
	}
	if toks == nil {
		vocab := int32(m.Schema().Vocab)
		for i := range int32(8) {
			toks = append(toks, (1+37*i)%vocab)
		}
	}
	if ref == nil {
		// The oracle's run is the reference.
		logits, err := logitsOn(f.Checkpoint, "oracle", toks)
		if err != nil {
			t.Fatalf("oracle: %v", err)
		}
		ref = &familytest.Ref{Model: f.Checkpoint, Prompt: toks, Logits: toF64(logits)}
		if tol == 0 {
			tol = 1e-4
		}
	}
	if tol == 0 {
		tol = ref.Relative(1e-3)
	}
	names := f.Interps
	if names == nil {
		names = driver.Interpreters()
	}
	capacity := 2 * (len(toks) + 8)
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			in, err := driver.NewInterpreter(name)
			if err != nil {
				t.Fatal(err)
			}
			refuse := func(t *testing.T, err error) {
				t.Helper()
				if errors.Is(err, interp.ErrUnsupported) && !familytest.MustRun(in) {
					t.Skipf("%s refuses the family: %v", name, err)
				}
				t.Fatal(err)
			}
			t.Run("reference", func(t *testing.T) {
				rows, err := logitsOn(f.Checkpoint, name, ref.Tokens()[:len(ref.Logits)])
				if err != nil {
					refuse(t, err)
				}
				worst := 0.0
				for i, row := range rows {
					worst = max(worst, familytest.MaxDiff(row, ref.Logits[i]))
				}
				if !(worst <= tol) {
					t.Errorf("max |Δlogit| %.3g over %d positions, tolerance %.3g", worst, len(rows), tol)
				}
				if len(ref.Generated) > 0 {
					got, err := greedy(f.Checkpoint, name, ref.Prompt, len(ref.Generated))
					if err != nil {
						refuse(t, err)
					}
					match := 0
					for match < len(got) && match < len(ref.Generated) && got[match] == ref.Generated[match] {
						match++
					}
					if row := len(ref.Prompt) - 1 + match; match != len(ref.Generated) && row < len(ref.Logits) && margin(ref.Logits[row]) <= 2*tol {
						// The reference's two best tokens lie within the
						// tolerance: either may win without a bug.
						t.Logf("greedy tokens agree up to a near tie at token %d (the reference's top two %.3g apart)", match, margin(ref.Logits[row]))
					} else if match != len(ref.Generated) {
						t.Errorf("greedy tokens %v, reference %v (first %d match)", got, ref.Generated, match)
					}
				}
				t.Logf("max |Δlogit| %.3g over %d positions (tolerance %.3g)", worst, len(rows), tol)
			})
			t.Run("layouts", func(t *testing.T) {
				familytest.CheckLayoutsOn(t, in, m, familytest.LoadBinder(c, m.Weights()), toks, capacity, 1e-5*max(1, ref.Relative(1)))
			})
		})
	}
}

// logitsOn opens path on the interpreter and returns the logits of one
// prefill of toks at every position.
func logitsOn(path, in string, toks []int32) ([][]float32, error) {
	s, err := driver.Open(path, driver.Options{Interp: in, Capacity: 2 * len(toks)})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	return s.Logits(toks, true)
}

// greedy generates n tokens greedily from prompt.
func greedy(path, in string, prompt []int32, n int) ([]int32, error) {
	s, err := driver.Open(path, driver.Options{Interp: in, Capacity: 2 * (len(prompt) + n)})
	if err != nil {
		return nil, err
	}
	defer s.Close()
	st, err := s.GenerateTokens(context.Background(), prompt, driver.GenerateOptions{MaxTokens: n, IgnoreEOS: true}, nil)
	if err != nil {
		return nil, err
	}
	return st.Tokens, nil
}

// margin is the gap between the two largest values of row.
func margin(row []float64) float64 {
	a, b := math.Inf(-1), math.Inf(-1)
	for _, v := range row {
		if v > a {
			a, b = v, a
		} else if v > b {
			b = v
		}
	}
	return a - b
}

func toF64(rows [][]float32) [][]float64 {
	out := make([][]float64, len(rows))
	for i, r := range rows {
		out[i] = make([]float64, len(r))
		for j, v := range r {
			out[i][j] = float64(v)
		}
	}
	return out
}

// Synth writes a preset of package synth (family, preset name) with the
// options o to a temporary path of the test, a GGUF file or (Format
// "safetensors") a Hugging Face directory, and returns the path.
func Synth(t testing.TB, family, preset string, o synth.Options) string {
	t.Helper()
	p, err := synth.FindPreset(family, preset)
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model(family, p.Config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "model.gguf")
	if o.Format == "safetensors" {
		path = filepath.Join(t.TempDir(), "hf")
	}
	if err := synth.Write(m, path, o); err != nil {
		t.Fatal(err)
	}
	return path
}
