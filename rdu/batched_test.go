package rdu

import (
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/rdu/lang"
	"github.com/pootlabs/poot/rdu/sim"
	"github.com/pootlabs/poot/tensor"
)

// stepRows traces and binds a step of rows sequences of n new tokens each.
func (r *refModel) stepRows(t testing.TB, rows, n, ctx int, logits families.LogitsMode) (*poot.Graph, interp.ConstMap) {
	t.Helper()
	g, err := r.m.Trace(families.StepSpec{Program: families.Decode, Shape: families.StepShape{Rows: rows, New: n, Capacity: ctx, Logits: logits}}, poot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	bg, consts, err := load.Bind(g, r.c, r.m.Weights().Resolver())
	if err != nil {
		t.Fatal(err)
	}
	return bg, interp.ConstMap(consts)
}

// TestBatchedDeployment: a step of three sequences lowers to the batched
// deployment (the stacked rows, a cache a sequence, each sequence's
// position), certifies against the oracle on the step, binds sequence b's
// caches to its block of the step's caches, and runs each sequence's row
// exactly as the decode bundle runs that sequence alone, with the
// sequences at different positions in one run.
func TestBatchedDeployment(t *testing.T) {
	const rows, ctx = 3, 16
	for _, f := range tinyFamilies {
		t.Run(f, func(t *testing.T) {
			r := synthRef(t, f, poot.F32)
			for _, n := range []int{1, 2} {
				g, consts := r.stepRows(t, rows, n, ctx, families.AllTokens)
				b, err := Lower(g, Options{Locate: CheckpointLocator(r.c, r.m.Weights().Resolver()), Consts: consts, Deployment: Batched})
				if err != nil {
					t.Fatal(err)
				}
				man := b.Manifest
				if man.Deployment.Kind != Batched || man.Deployment.Batch != rows || len(man.Nexts) != rows {
					t.Fatalf("deployment %+v, nexts %v", man.Deployment, man.Nexts)
				}
				text := lang.Format(b.Programs["embed"]) + lang.Format(b.Programs["kind0"])
				for _, want := range []string{"Let toks be a 1 by 3 tensor of Int.", "rows toks of Emb.", "Let pos_s2 be 1.", "_s2 to ", "up to pos_s1"} {
					if !strings.Contains(text, want) {
						t.Errorf("the batched programs lack %q:\n%s", want, text)
					}
				}
				for _, l := range man.Layers {
					for name, bd := range l.Bindings {
						if bd.Source == "state" && strings.HasSuffix(name, "_s2") && bd.Row != 2*ctx {
							t.Errorf("layer %d: %s binds rows from %d of %s, want %d", l.Layer, name, bd.Row, bd.State, 2*ctx)
						}
					}
				}
				m, err := sim.New(b, sim.Files{})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := CertifyKinds(m, g, consts, 2, DefaultTolerance); err != nil {
					t.Fatal(err)
				}
				if _, err := CertifyMachine(m, g, consts, 3, DefaultTolerance); err != nil {
					t.Fatal(err)
				}
			}
			checkRowsAlone(t, r, rows, ctx)
		})
	}
}

// checkRowsAlone: sequence s has 2s tokens in its cache (run alone on the
// decode bundle, then lent to its block of the batched caches), and the
// batch runs two more tokens of every sequence: each row's logits are the
// decode bundle's for that sequence alone.
func checkRowsAlone(t *testing.T, r *refModel, rows, ctx int) {
	t.Helper()
	dg, dconsts := r.step(t, 1, ctx, families.LastToken)
	dm, err := sim.New(r.lower(t, dg, dconsts), sim.Files{})
	if err != nil {
		t.Fatal(err)
	}
	bg, bconsts := r.stepRows(t, rows, 1, ctx, families.LastToken)
	bb, err := Lower(bg, Options{Locate: CheckpointLocator(r.c, r.m.Weights().Resolver()), Consts: bconsts, Deployment: Batched})
	if err != nil {
		t.Fatal(err)
	}
	bm, err := sim.New(bb, sim.Files{})
	if err != nil {
		t.Fatal(err)
	}
	vocab := r.m.Schema().Vocab
	seq := func(s int) []int {
		out := make([]int, 2*s+2)
		for i := range out {
			out[i] = (i*37 + s*101 + 5) % vocab
		}
		return out
	}
	// want[s][k]: the decode bundle's logits for sequence s's token 2s+k.
	want := make([][][]float32, rows)
	for s := range rows {
		dm.Reset()
		for i, tok := range seq(s) {
			res, err := dm.Step(tok, i)
			if err != nil {
				t.Fatal(err)
			}
			if i >= 2*s {
				want[s] = append(want[s], res.Logits)
			}
			if i == 2*s-1 {
				for _, name := range dm.States() {
					alone, _ := dm.State(name)
					batch, ok := bm.State(name)
					if !ok {
						t.Fatalf("the batched bundle has no state %q", name)
					}
					copy(batch[s*len(alone):], alone)
				}
			}
		}
	}
	for k := range 2 {
		toks, pos := make([]int, rows), make([]int, rows)
		for s := range rows {
			toks[s], pos[s] = seq(s)[2*s+k], 2*s+k
		}
		res, err := bm.Run(toks, pos)
		if err != nil {
			t.Fatal(err)
		}
		for s := range rows {
			got := res.Logits[s*vocab : (s+1)*vocab]
			for i, w := range want[s][k] {
				if got[i] != w {
					t.Fatalf("token %d of sequence %d (position %d): logit %d is %v batched, %v alone", k, s, pos[s], i, got[i], w)
				}
			}
			if res.Nexts[s] != argmax32(got) {
				t.Errorf("sequence %d picks %d, its logits' largest is %d", s, res.Nexts[s], argmax32(got))
			}
		}
	}
}

func argmax32(v []float32) int {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return best
}

// TestInterpreterRunsBatches: the interpreter runs a step of two sequences
// of three tokens (the driver's layout law) as the batched deployment, a
// run per token of each sequence, with the caller's caches, and agrees
// with the oracle over two steps.
func TestInterpreterRunsBatches(t *testing.T) {
	for _, f := range []string{"llama", "gpt-oss"} {
		for _, mode := range []families.LogitsMode{families.AllTokens, families.LastToken} {
			r := synthRef(t, f, poot.F32)
			g, consts := r.stepRows(t, 2, 3, 16, mode)
			exe, err := Interpreter{}.Compile(g, consts)
			if err != nil {
				t.Fatal(err)
			}
			if k := exe.(*Executable).Bundle().Manifest.Deployment.Kind; k != Batched {
				t.Fatalf("%s: a step of two sequences runs as the %s deployment", f, k)
			}
			prog, err := interp.Compile(g, consts)
			if err != nil {
				t.Fatal(err)
			}
			st, ost := mustState(t, g), mustState(t, g)
			for step := range 2 {
				toks := []int32{int32(3 + step), 40, 7, 9, 11, int32(60 + step)}
				pos := []int32{int32(3 * step), int32(3*step + 1), int32(3*step + 2), int32(3*step + 4), int32(3*step + 5), int32(3*step + 6)}
				slots := interp.Slots{"token": mustI32(t, toks), "pos": mustI32(t, pos)}
				got, err := exe.Run(slots, st)
				if err != nil {
					t.Fatal(err)
				}
				want, err := prog.Run(slots, ost)
				if err != nil {
					t.Fatal(err)
				}
				g, w := got[0].F32(), want[0].F32()
				if len(g) != len(w) {
					t.Fatalf("%s: %d logits, the oracle %d", f, len(g), len(w))
				}
				for i := range w {
					if d := float64(g[i] - w[i]); d > 1e-5 || d < -1e-5 {
						t.Fatalf("%s, %v, step %d: logit %d is %v, the oracle %v", f, mode, step, i, g[i], w[i])
					}
				}
			}
		}
	}
}

func mustState(t *testing.T, g *poot.Graph) *interp.State {
	t.Helper()
	s, err := interp.NewState(g)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustI32(t *testing.T, v []int32) tensor.Tensor {
	t.Helper()
	x, err := tensor.FromI32(poot.Shape{len(v)}, v)
	if err != nil {
		t.Fatal(err)
	}
	return x
}
