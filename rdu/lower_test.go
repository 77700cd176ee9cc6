package rdu

import (
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/lang"
	"github.com/pootlabs/poot/rdu/sim"
	"github.com/pootlabs/poot/tensor"
)

var tinyFamilies = []string{"llama", "gemma3", "llama4", "gpt-oss", "mixtral", "qwen3moe", "phi2", "stablelm", "gptneox", "falcon", "deepseek2"}

// synthRef writes family's tiny preset as a random-weight GGUF of matrices
// stored dt and opens it.
func synthRef(t testing.TB, family string, dt poot.DType) *refModel {
	t.Helper()
	p, err := synth.FindPreset(family, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model(p.Family, p.Config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), family+".gguf")
	if err := synth.Write(m, path, synth.Options{Type: dt, Seed: 5}); err != nil {
		t.Fatal(err)
	}
	c, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	mm, err := registry.FromCheckpoint(c)
	if err != nil {
		t.Fatal(err)
	}
	return &refModel{c: c, m: mm}
}

// TestTinyFamiliesCertify: the decode bundle of every family's tiny preset
// (random weights, F32 and Q8_0 matrices) composes, prints to text that
// parses back to its programs, and agrees with the oracle.
func TestTinyFamiliesCertify(t *testing.T) {
	for _, f := range tinyFamilies {
		for _, dt := range []poot.DType{poot.F32, poot.Q8_0} {
			t.Run(f+"/"+dt.String(), func(t *testing.T) {
				r := synthRef(t, f, dt)
				g, consts := r.step(t, 1, 24, families.LastToken)
				b := r.lower(t, g, consts)
				for _, name := range b.Names() {
					p := b.Programs[name]
					q, err := lang.Parse(lang.Format(p))
					if err != nil {
						t.Fatalf("%s: %v", name, err)
					}
					if !reflect.DeepEqual(p, q) {
						t.Errorf("%s does not survive printing", name)
					}
				}
				q8 := 0
				for _, l := range b.Manifest.Layers {
					for _, bd := range l.Bindings {
						if bd.Storage == bundle.StorageQ8_0 {
							q8++
							if bd.DType != "q8_0" || !bd.Transposed && len(bd.Shape) != 3 {
								t.Errorf("%s declared Q8_0: %+v", bd.Name, bd)
							}
						}
					}
				}
				if (q8 > 0) != (dt == poot.Q8_0) {
					t.Errorf("%d layer weights declared Q8_0 in a checkpoint of %v matrices", q8, dt)
				}
				cert, err := Certify(b, g, consts, sim.Files{}, 6, DefaultTolerance)
				if err != nil {
					t.Fatal(err)
				}
				t.Logf("%d kinds; max |Δlogit| %.3g of %.3g", len(b.Manifest.Kinds), cert.MaxDiff, cert.MaxLogit)
			})
		}
	}
}

// TestRenamingReproducesLayers: binding a kind's program to each of its
// layers through the manifest's renaming gives exactly the program lifted
// from that layer's own equations, and the manifest binds each of the
// layer's names to the layer's own tensors.
func TestRenamingReproducesLayers(t *testing.T) {
	for _, f := range tinyFamilies {
		for _, rows := range []int{1, 2} {
			t.Run(fmt.Sprintf("%s/rows%d", f, rows), func(t *testing.T) { checkRenaming(t, f, rows) })
		}
	}
}

// checkRenaming is TestRenamingReproducesLayers for a step of rows
// sequences (the batched deployment when there are several).
func checkRenaming(t *testing.T, f string, rows int) {
	p, err := synth.FindPreset(f, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	mod, err := synth.Model(p.Family, p.Config)
	if err != nil {
		t.Fatal(err)
	}
	g, err := mod.Trace(families.StepSpec{Program: families.Decode, Shape: families.StepShape{Rows: rows, New: 1, Capacity: 16}}, poot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	opts, batch := Options{}, 0
	if rows > 1 {
		opts.Deployment, batch = Batched, rows
	}
	b, err := Lower(g, opts)
	if err != nil {
		t.Fatal(err)
	}
	v, err := analyse(g)
	if err != nil {
		t.Fatal(err)
	}
	flow, err := v.flow()
	if err != nil {
		t.Fatal(err)
	}
	// One lowering numbers the shared tables as Lower does: the
	// kinds' first layers first, in order.
	low := &lowering{v: v, ctx: 16, batch: batch, rotations: map[[32]byte][2]*table{}, positional: map[[32]byte]*table{}, tokenDep: map[poot.ValueID]bool{}, cacheIndex: map[[32]byte]int{}}
	for _, k := range b.Manifest.Kinds {
		if _, err := low.lift(k.Name, v.layers[k.Layers[0]], k.Layers[0], flow.out[1+k.Layers[0]]); err != nil {
			t.Fatal(err)
		}
	}
	for _, k := range b.Manifest.Kinds {
		local := map[string]bool{}
		for _, n := range k.Local {
			local[n] = true
		}
		l0 := k.Layers[0]
		for _, l := range k.Layers {
			own, err := low.lift(k.Name, v.layers[l], l, flow.out[1+l])
			if err != nil {
				t.Fatal(err)
			}
			rebound := lang.Rename(b.Programs[k.Name], func(n string) string { return rebind(n, l0, l, local) })
			if got, want := lang.Format(rebound), lang.Format(own.prog); got != want {
				t.Errorf("%s rebound to layer %d:\n%s\nlayer %d's own program:\n%s", k.Name, l, got, l, want)
			}
			for name, bd := range b.Manifest.Layers[l].Bindings {
				d, ok := own.decls[bd.Name]
				if !ok {
					t.Errorf("layer %d: %s binds %s, which its program does not declare", l, name, bd.Name)
					continue
				}
				switch bd.Source {
				case bundle.SourceWeight:
					if c := g.Value(d.value).Name; c != bd.Const {
						t.Errorf("layer %d: %s (%s) binds %q, its program reads %q", l, name, bd.Name, bd.Const, c)
					}
				case bundle.SourceState:
					if s := g.Value(d.value).Name; s != bd.State || d.row != bd.Row {
						t.Errorf("layer %d: %s binds state %q from row %d, its program reads %q from row %d", l, name, bd.State, bd.Row, s, d.row)
					}
				}
			}
		}
	}
}

// TestPrefillLowersToTheDecodeBundle: a step of several new tokens lowers
// to the programs the decode step lowers to (the bundle runs its tokens one
// at a time), marks whether the step wants the last token's logits only,
// and certifies against the oracle on that step.
func TestPrefillLowersToTheDecodeBundle(t *testing.T) {
	r := openRef(t, "tiny-gemma3-f32.gguf")
	dg, consts := r.step(t, 1, 32, families.LastToken)
	decode := r.lower(t, dg, consts)
	for _, mode := range []families.LogitsMode{families.LastToken, families.AllTokens} {
		g, consts := r.step(t, 4, 32, mode)
		b := r.lower(t, g, consts)
		for _, name := range decode.Names() {
			if got, want := lang.Format(b.Programs[name]), lang.Format(decode.Programs[name]); got != want {
				t.Errorf("logits %v: program %s differs from the decode step's:\n%s\n%s", mode, name, got, want)
			}
		}
		if b.Manifest.LastOnly != (mode == families.LastToken) {
			t.Errorf("logits %v: last only %v", mode, b.Manifest.LastOnly)
		}
		if b.Manifest.Deployment.Tokens != 4 {
			t.Errorf("tokens %d", b.Manifest.Deployment.Tokens)
		}
		cert, err := Certify(b, g, consts, sim.Files{}, 3, DefaultTolerance)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("logits %v: %d steps of 4 tokens, max |Δlogit| %.3g", mode, cert.Steps, cert.MaxDiff)
	}
}

// TestCertifyCatchesAWrongBundle: certification fails when a statement of
// a kind's program is changed (a rope turned the other way, an epsilon
// changed), so agreeing is not an accident.
func TestCertifyCatchesAWrongBundle(t *testing.T) {
	r := openRef(t, "tiny-llama-f32.gguf")
	g, consts := r.step(t, 1, 16, families.LastToken)
	for _, mutate := range []func(lang.Expr) (lang.Expr, bool){
		func(e lang.Expr) (lang.Expr, bool) {
			if x, ok := e.(lang.Rope); ok {
				x.Interleaved = !x.Interleaved
				return x, true
			}
			return e, false
		},
		func(e lang.Expr) (lang.Expr, bool) {
			if x, ok := e.(lang.RMSNorm); ok {
				x.Epsilon = 0.5
				return x, true
			}
			return e, false
		},
		func(e lang.Expr) (lang.Expr, bool) {
			if x, ok := e.(lang.Attention); ok {
				x.Window = 2
				return x, true
			}
			return e, false
		},
	} {
		b := r.lower(t, g, consts)
		p := b.Programs["kind0"]
		changed := false
		for i, s := range p.Stmts {
			if l, ok := s.(lang.Let); ok && !changed {
				l.Expr, changed = mutate(l.Expr)
				p.Stmts[i] = l
			}
		}
		if !changed {
			t.Fatal("nothing to change")
		}
		if _, err := Certify(b, g, consts, sim.Files{}, 6, DefaultTolerance); !errors.Is(err, ErrCertify) {
			t.Errorf("a changed bundle certified: %v", err)
		}
	}
}

// TestManifestBindsEveryLayer: every layer's bindings name its own
// tensors, with the byte ranges of the GGUF file, and its own caches.
func TestManifestBindsEveryLayer(t *testing.T) {
	r := openRef(t, "tiny-gemma3-f32.gguf")
	g, consts := r.step(t, 1, 16, families.LastToken)
	b := r.lower(t, g, consts)
	f := r.c.GGUF()
	for _, l := range b.Manifest.Layers {
		seen := map[string]bool{}
		for name, bd := range l.Bindings {
			if seen[bd.Name] {
				t.Errorf("layer %d binds %s twice", l.Layer, bd.Name)
			}
			seen[bd.Name] = true
			switch bd.Source {
			case bundle.SourceWeight:
				info, ok := f.Tensor(bd.Tensor)
				if !ok || bd.Offset != f.DataOffset()+int64(info.Offset) || bd.Bytes != info.Size || bd.File != r.c.Path() {
					t.Errorf("layer %d: %s: %+v", l.Layer, name, bd)
				}
				if want := fmt.Sprintf("blk.%d.", l.Layer); len(bd.Tensor) < len(want) || bd.Tensor[:len(want)] != want {
					t.Errorf("layer %d binds %s to %q", l.Layer, name, bd.Tensor)
				}
			case bundle.SourceState:
				if bd.State != "cache.k."+strconv.Itoa(l.Layer) && bd.State != "cache.v."+strconv.Itoa(l.Layer) {
					t.Errorf("layer %d binds %s to state %q", l.Layer, name, bd.State)
				}
			}
		}
	}
	dir := t.TempDir()
	if err := b.Write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := bundle.Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(back.Manifest, b.Manifest) || !reflect.DeepEqual(back.Programs, b.Programs) || !reflect.DeepEqual(back.Tables, b.Tables) {
		t.Error("the bundle read back differs from the one written")
	}
	if _, err := Certify(back, g, consts, sim.Files{}, 4, DefaultTolerance); err != nil {
		t.Error(err)
	}
}

// TestCertifyKinds: each kind's program, run alone, agrees with its first
// layer's equations on the oracle; a kind changed does not.
func TestCertifyKinds(t *testing.T) {
	for _, f := range []string{"tiny-gemma3-f32.gguf", "tiny-llama-f16.gguf", "stories260K-q8_0.gguf"} {
		r := openRef(t, f)
		for _, n := range []int{1, 3} {
			g, consts := r.step(t, n, 24, families.LastToken)
			b := r.lower(t, g, consts)
			m, err := sim.New(b, sim.Files{})
			if err != nil {
				t.Fatal(err)
			}
			certs, err := CertifyKinds(m, g, consts, 5, DefaultTolerance)
			if err != nil {
				t.Fatalf("%s, %d tokens: %v", f, n, err)
			}
			if len(certs) != len(b.Manifest.Kinds) {
				t.Fatalf("%d certificates for %d kinds", len(certs), len(b.Manifest.Kinds))
			}
			for _, c := range certs {
				t.Logf("%s, %d tokens: %s (layer %d): %d steps, max |Δ| %.3g of %.3g", f, n, c.Kind, c.Layer, c.Steps, c.MaxDiff, c.MaxAbs)
			}
		}
	}
	r := openRef(t, "tiny-gemma3-f32.gguf")
	g, consts := r.step(t, 1, 24, families.LastToken)
	b := r.lower(t, g, consts)
	p := b.Programs["kind1"]
	for i, s := range p.Stmts {
		if l, ok := s.(lang.Let); ok {
			if a, ok := l.Expr.(lang.Attention); ok {
				a.Window = 3
				l.Expr = a
				p.Stmts[i] = l
			}
		}
	}
	m, err := sim.New(b, sim.Files{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CertifyKinds(m, g, consts, 6, DefaultTolerance); !errors.Is(err, ErrCertify) {
		t.Errorf("a global kind given a window certified: %v", err)
	}
}

// TestPrefillDeployment: a chunk of tokens lowers to the prefill
// deployment (stacked rows, causal attention from the chunk's first
// position, the caches written in rows), which certifies against the
// oracle on the prefill step, by kind and whole; and a decode bundle
// continues from the caches it leaves exactly as the oracle does.
func TestPrefillDeployment(t *testing.T) {
	for _, f := range []string{"tiny-gemma3-f32.gguf", "tiny-llama-f32.gguf", "stories260K-q8_0.gguf"} {
		for _, mode := range []families.LogitsMode{families.LastToken, families.AllTokens} {
			r := openRef(t, f)
			b, err := checkPrefill(t, r, f, mode)
			if err != nil {
				t.Fatal(err)
			}
			text := lang.Format(b.Programs["embed"]) + lang.Format(b.Programs["kind0"])
			for _, want := range []string{"Let toks be a 1 by 5 tensor of Int.", "rows toks of Emb.", "Let X be a 5 by", "causal attention of", "from pos_s0", "Set rows from pos_s0 of Kc0 to"} {
				if !strings.Contains(text, want) {
					t.Errorf("%s: the prefill programs lack %q:\n%s", f, want, text)
				}
			}
		}
	}
}

// checkPrefill lowers a chunk of 5 tokens of r as the prefill deployment
// and certifies it against the oracle, by kind and whole; with the last
// logits only, it also checks that a decode bundle continues from the
// caches it leaves exactly as the oracle does. A chunk the lowering
// refuses is returned as the error.
func checkPrefill(t *testing.T, r *refModel, f string, mode families.LogitsMode) (*bundle.Bundle, error) {
	t.Helper()
	const chunk, ctx = 5, 32
	g, consts := r.step(t, chunk, ctx, mode)
	b, err := Lower(g, Options{Locate: CheckpointLocator(r.c, r.m.Weights().Resolver()), Consts: consts, Deployment: Prefill})
	if err != nil {
		return nil, err
	}
	m, cert := certifyAll(t, b, g, consts, 3, 3)
	t.Logf("%s, logits %v: %d chunks of %d, max |Δlogit| %.3g", f, mode, cert.Steps, chunk, cert.MaxDiff)
	if mode == families.AllTokens {
		return b, nil
	}
	// A decode bundle continues from the prefill bundle's caches.
	dg, dconsts := r.step(t, 1, ctx, families.LastToken)
	db := r.lower(t, dg, dconsts)
	dm, err := sim.New(db, sim.Files{})
	if err != nil {
		t.Fatal(err)
	}
	m.Reset()
	toks := []int{1, 15, 27, 100, 200}
	if _, err := m.Run(toks, []int{0, 1, 2, 3, 4}); err != nil {
		t.Fatal(err)
	}
	for _, name := range m.States() {
		data, _ := m.State(name)
		if err := dm.UseState(name, data); err != nil {
			t.Fatal(err)
		}
	}
	want := oracleLogits(t, r, ctx, append(toks, 300))
	res, err := dm.Step(300, chunk)
	if err != nil {
		t.Fatal(err)
	}
	for i := range want {
		if d := float64(res.Logits[i] - want[i]); d > 1e-5*max(1, math.Abs(float64(want[i]))) || -d > 1e-5*max(1, math.Abs(float64(want[i]))) {
			t.Fatalf("%s: decoding after the prefill bundle: logit %d is %v, the oracle %v", f, i, res.Logits[i], want[i])
		}
	}
	return b, nil
}

// certifyAll loads b on the simulator and certifies it against the
// oracle on g: each kind over kindSteps runs, then the whole bundle over
// steps runs.
func certifyAll(t *testing.T, b *bundle.Bundle, g *poot.Graph, consts interp.ConstMap, kindSteps, steps int) (*sim.Machine, Certificate) {
	t.Helper()
	m, err := sim.New(b, sim.Files{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := CertifyKinds(m, g, consts, kindSteps, DefaultTolerance); err != nil {
		t.Fatal(err)
	}
	cert, err := CertifyMachine(m, g, consts, steps, DefaultTolerance)
	if err != nil {
		t.Fatal(err)
	}
	return m, cert
}

// oracleLogits runs toks through the oracle token by token and returns the
// last logits.
func oracleLogits(t *testing.T, r *refModel, ctx int, toks []int) []float32 {
	t.Helper()
	g, consts := r.step(t, 1, ctx, families.LastToken)
	prog, err := interp.Compile(g, consts)
	if err != nil {
		t.Fatal(err)
	}
	st, err := interp.NewState(g)
	if err != nil {
		t.Fatal(err)
	}
	var out []float32
	for i, tok := range toks {
		tt, _ := tensor.FromI32(poot.Shape{1}, []int32{int32(tok)})
		pt, _ := tensor.FromI32(poot.Shape{1}, []int32{int32(i)})
		res, err := prog.Run(interp.Slots{"token": tt, "pos": pt}, st)
		if err != nil {
			t.Fatal(err)
		}
		out = res[0].F32()
	}
	return out
}

// TestInterpreterDeployments: the interpreter runs a chunk as the prefill
// deployment (Llama 4's temperature, a table of the positions, read at the
// chunk's positions poss), and falls back to the decode deployment run
// token by token for a chunk whose prefill programs the language cannot
// write (a learned position embedding, GPT-2's, gathered at the chunk's
// positions), agreeing with the oracle either way.
func TestInterpreterDeployments(t *testing.T) {
	check := func(name string, g *poot.Graph, consts interp.ConstMap, want string) *bundle.Bundle {
		exe, err := Interpreter{}.Compile(g, consts)
		if err != nil {
			t.Fatal(err)
		}
		e := exe.(*Executable)
		if got := e.Bundle().Manifest.Deployment.Kind; got != want {
			t.Errorf("%s: a chunk of 4 runs as the %s deployment, want %s", name, got, want)
		}
		if e.Certificate().Steps < 1 {
			t.Errorf("%s: certified over %d runs", name, e.Certificate().Steps)
		}
		return e.Bundle()
	}
	for _, f := range []string{"llama", "llama4", "qwen3next", "qwen35", "deepseek2"} {
		r := synthRef(t, f, poot.F32)
		g, consts := r.step(t, 4, 16, families.AllTokens)
		b := check(f, g, consts, Prefill)
		text := ""
		for _, k := range b.Manifest.Kinds {
			text += lang.Format(b.Programs[k.Name])
		}
		if f == "llama4" && !strings.Contains(text, "rows poss of Tab0.") {
			t.Errorf("llama4's prefill program reads no rows of its temperature table at the chunk's positions:\n%s", text)
		}
	}
	b := poot.NewBuilder[toyBrand](poot.Limits{})
	m := &toy{b: b, step: families.NewStep(b, families.StepShape{Rows: 1, New: 4, Capacity: toyCtx}, toyVocab)}
	var x toyT
	b.Scope("embed", func() {
		x = b.Add(b.Gather(m.w("token_embd.weight", toyVocab, toyDim), m.step.Tokens), b.Gather(m.w("position_embd.weight", toyCtx, toyDim), m.step.Pos))
	})
	b.Scope("layer.0", func() { x = plain(m, 0, x) })
	var logits toyT
	b.Scope("head", func() { logits = ops.Linear(b, x, m.w("output.weight", toyVocab, toyDim), toyT{}) })
	g, err := m.step.Finish(logits)
	if err != nil {
		t.Fatal(err)
	}
	check("learned positions", g, randomConsts(t, g), Decode)
}

// TestSafetensorsByteRanges: a Hugging Face checkpoint's weights are bound
// by their shards' byte ranges, which the simulator reads to certify.
func TestSafetensorsByteRanges(t *testing.T) {
	r := hfModel(t, "gemma3", poot.BF16, 2)
	g, consts := r.step(t, 1, 16, families.LastToken)
	b := r.lower(t, g, consts)
	for _, l := range b.Manifest.Layers {
		for _, bd := range l.Bindings {
			if bd.Source == bundle.SourceWeight && (bd.File == "" || filepath.Ext(bd.File) != ".safetensors" || bd.Bytes == 0) {
				t.Errorf("layer %d: %s bound to %+v", l.Layer, bd.Name, bd)
			}
		}
	}
	if _, err := Certify(b, g, consts, sim.Files{}, 4, DefaultTolerance); err != nil {
		t.Fatal(err)
	}
}

// hfModel synthesizes family's tiny preset as a Hugging Face safetensors
// directory of dtype typ and opens it as a reference model (closed when
// the test ends).
func hfModel(t *testing.T, family string, typ poot.DType, seed uint64) *refModel {
	t.Helper()
	p, err := synth.FindPreset(family, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model(p.Family, p.Config)
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "hf")
	if err := synth.Write(m, dir, synth.Options{Format: "safetensors", Type: typ, Seed: seed}); err != nil {
		t.Fatal(err)
	}
	c, err := load.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	mm, err := registry.FromCheckpoint(c)
	if err != nil {
		t.Fatal(err)
	}
	return &refModel{c: c, m: mm}
}
