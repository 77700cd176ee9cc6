package cli

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/rdu"
	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/lang"
	"github.com/pootlabs/poot/rdu/sim"
	"github.com/pootlabs/poot/tokenizer"

	// The streamed lowering is also an interpreter: --interp rdu.
	_ "github.com/pootlabs/poot/rdu/register"
)

// cmdLower lowers a model to a streamed bundle for a dataflow accelerator:
// one program per layer kind, the embedding and head programs, and the
// manifest binding every layer's tensors; certifies it against the oracle;
// writes it; and prints a summary.
func cmdLower(args []string, stdout, stderr io.Writer) error {
	fs := flags("lower", "lower --target rdu (--decode | --batched B | --prefill C) [--tp N] [--ctx N] -m MODEL --out DIR [--certify STEPS]", stdout)
	var model string
	fs.StringVar(&model, "m", "", "the model: a GGUF file or a safetensors directory")
	fs.StringVar(&model, "model", "", "same as -m")
	target := fs.String("target", "rdu", "the target: rdu (a reconfigurable dataflow unit, streamed one layer kind at a time)")
	decode := fs.Bool("decode", false, "the decode deployment: one token of one sequence a run, tok and pos runtime inputs, a KV cache of --ctx positions")
	batched := fs.Int("batched", 0, "the batched decode deployment: one token of each of B sequences a run, stacked as rows, every weight read once, a KV cache of --ctx positions a sequence")
	prefill := fs.Int("prefill", 0, "the prefill deployment: a chunk of C tokens of one sequence a run, over the decode deployment's caches")
	tp := fs.Int("tp", 0, "tensor parallelism over N chips (with --decode or --batched B): each layer kind one program over the chips, the embedding and head on the replicated spine")
	capacity := fs.Int("ctx", 0, "positions each KV cache holds (0: the model's context, at most 4096)")
	out := fs.String("out", "", "the bundle's directory (created)")
	certify := fs.Int("certify", 4, "positions to certify each kind over, and decode steps to certify the whole bundle over, against the oracle")
	if err := fs.parse(args); err != nil {
		return err
	}
	switch {
	case *target != "rdu":
		return usagef("--target %q: the only target is rdu", *target)
	case *tp < 0:
		return usagef("--tp %d: want 1 or more chips", *tp)
	case *tp != 0 && *prefill != 0:
		return usagef("--tp with --prefill: the tensor-parallel deployments are decode (--decode) and batched decode (--batched B)")
	case b2i(*decode)+b2i(*prefill != 0)+b2i(*batched != 0) != 1:
		return usagef("give one deployment: --decode, --batched B or --prefill C")
	case *prefill < 0:
		return usagef("--prefill %d: want a chunk of 1 or more tokens", *prefill)
	case *batched < 0:
		return usagef("--batched %d: want 1 or more sequences", *batched)
	case model == "":
		return usagef("no model: give -m MODEL (a GGUF file or a safetensors directory)")
	case *out == "":
		return usagef("no bundle directory: give --out DIR")
	case *certify < 1:
		return usagef("--certify %d: want 1 or more steps", *certify)
	}
	if err := checkCtx(*capacity); err != nil {
		return err
	}
	c, err := load.Open(model)
	if err != nil {
		return err
	}
	defer c.Close()
	m, err := registry.FromCheckpoint(c)
	if err != nil {
		return err
	}
	t0 := time.Now()
	var g *poot.Graph
	if *batched > 0 {
		g, err = traceBatch(m, *batched, *capacity)
	} else {
		g, err = traceStep(m, *prefill, false, *capacity)
	}
	if err != nil {
		return err
	}
	bg, consts, err := load.Bind(g, c, m.Weights().Resolver())
	if err != nil {
		return err
	}
	t1 := time.Now()
	deployment := rdu.Decode
	switch {
	case *prefill > 0:
		deployment = rdu.Prefill
	case *batched > 0:
		deployment = rdu.Batched
	}
	b, err := rdu.Lower(bg, rdu.Options{Locate: rdu.CheckpointLocator(c, m.Weights().Resolver()), Checkpoint: c.Path(), Consts: interp.ConstMap(consts), Deployment: deployment, TP: *tp})
	if err != nil {
		return err
	}
	t2 := time.Now()
	mach, err := sim.New(b, sim.Files{})
	if err != nil {
		return err
	}
	kinds, err := rdu.CertifyKinds(mach, bg, interp.ConstMap(consts), *certify, rdu.DefaultTolerance)
	if err != nil {
		return err
	}
	cert, err := rdu.CertifyMachine(mach, bg, interp.ConstMap(consts), *certify, rdu.DefaultTolerance)
	if err != nil {
		return err
	}
	t3 := time.Now()
	if err := b.Write(*out); err != nil {
		return err
	}
	t4 := time.Now()
	return writeSummary(stdout, b, *out, kinds, cert, []time.Duration{t1.Sub(t0), t2.Sub(t1), t3.Sub(t2), t4.Sub(t3)})
}

// traceBatch traces the decode step of rows sequences, one new token each.
func traceBatch(m families.Model, rows, capacity int) (*poot.Graph, error) {
	if capacity == 0 {
		capacity = driver.DefaultCapacity
		if mc := m.Schema().MaxContext; mc > 0 && mc < capacity {
			capacity = mc
		}
	}
	return m.Trace(families.StepSpec{Program: families.Decode, Shape: families.StepShape{Rows: rows, New: 1, Capacity: capacity}}, poot.Limits{})
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// writeSummary prints what the issue asks a lowering to say: the kinds and
// their layers and statements, the bytes of weights and caches a chip
// holds, and the certificate.
func writeSummary(w io.Writer, b *bundle.Bundle, dir string, kinds []rdu.KindCertificate, cert rdu.Certificate, times []time.Duration) error {
	m := &b.Manifest
	var sb strings.Builder
	fmt.Fprintf(&sb, "bundle: %s (%s deployment, %d layers, ctx %d)\n", dir, m.Deployment.Kind, len(m.Layers), m.Deployment.Ctx)
	if m.Deployment.Kind == rdu.Batched {
		fmt.Fprintf(&sb, "sequences: %d a run, each with its own caches\n", m.Deployment.Batch)
	}
	if m.Deployment.TP > 0 {
		fmt.Fprintf(&sb, "tensor-parallel over %d chips: embedding and head on the replicated spine, %d all-reduces a layer\n", m.Deployment.TP, len(m.Kinds[0].AllReduce))
	}
	fmt.Fprintf(&sb, "kinds: %d\n", len(m.Kinds))
	for _, k := range m.Kinds {
		fmt.Fprintf(&sb, "  %-7s %2d layers %-24s %d statements (%d declarations)\n", k.Name, len(k.Layers), layerList(k.Layers), k.Statements, k.Declarations)
	}
	weights := map[string]bool{}
	var q8, dense int64
	add := func(bs map[string]bundle.Binding) {
		for _, bd := range bs {
			key := bd.Const + "\x00" + bd.File
			if bd.Source != bundle.SourceWeight || weights[key] {
				continue
			}
			weights[key] = true
			if bd.Storage == bundle.StorageQ8_0 {
				q8 += bd.Bytes
			} else {
				dense += bd.Bytes
			}
		}
	}
	add(m.Embed.Bindings)
	add(m.Head.Bindings)
	types := map[string]*lang.Typed{}
	states := map[string]bool{}
	var kv int64
	for _, l := range m.Layers {
		add(l.Bindings)
		if types[l.Kind] == nil {
			t, err := lang.Check(b.Programs[l.Kind])
			if err != nil {
				return err
			}
			types[l.Kind] = t
		}
		for name, bd := range l.Bindings {
			if key := fmt.Sprint(bd.State, "@", bd.Row, bd.Slices); bd.Source == bundle.SourceState && !states[key] {
				states[key] = true
				t := types[l.Kind].Types[name]
				kv += 4 * int64(t.Rows) * int64(t.Cols)
			}
		}
	}
	var tables int64
	for _, t := range m.Tables {
		tables += 4 * int64(t.Rows) * int64(t.Cols)
	}
	if tp := m.Deployment.TP; tp > 0 {
		w, kvc := rdu.ChipBytes(b)
		for c := range tp {
			fmt.Fprintf(&sb, "chip %d: weights %s, KV cache at ctx %d %s\n", c, bytesText(w[c]), m.Deployment.Ctx, bytesText(kvc[c]))
		}
	}
	scope := "per chip (1 chip)"
	if m.Deployment.TP > 0 {
		scope = fmt.Sprintf("over the %d chips, each tensor once", m.Deployment.TP)
	}
	fmt.Fprintf(&sb, "weights %s: %s (%s read dense, %s folded from Q8_0 on the chip)\n", scope, bytesText(dense+q8), bytesText(dense), bytesText(q8))
	kvScope := "per chip"
	if m.Deployment.TP > 0 {
		kvScope = fmt.Sprintf("over the %d chips", m.Deployment.TP)
	}
	fmt.Fprintf(&sb, "KV cache %s at ctx %d: %s\n", kvScope, m.Deployment.Ctx, bytesText(kv))
	fmt.Fprintf(&sb, "host tables: %d, %s\n", len(m.Tables), bytesText(tables))
	fmt.Fprintf(&sb, "certified: yes\n")
	for _, k := range kinds {
		fmt.Fprintf(&sb, "  %-7s alone against layer %d's equations on the oracle, %d positions: max |Δ| %.3g (largest value %.3g)\n", k.Kind, k.Layer, k.Steps, k.MaxDiff, k.MaxAbs)
	}
	fmt.Fprintf(&sb, "  bundle  %d runs of %d tokens against the oracle: max |Δlogit| %.3g (largest logit %.3g, tolerance %g relative)\n",
		cert.Steps, m.Deployment.Tokens, cert.MaxDiff, cert.MaxLogit, cert.Tolerance)
	fmt.Fprintf(&sb, "time: trace and bind %v, lower %v, certify %v, write %v\n", round(times[0]), round(times[1]), round(times[2]), round(times[3]))
	_, err := io.WriteString(w, sb.String())
	return err
}

func layerList(ls []int) string {
	var parts []string
	for i := 0; i < len(ls); {
		j := i
		for j+1 < len(ls) && ls[j+1] == ls[j]+1 {
			j++
		}
		if j > i {
			parts = append(parts, fmt.Sprintf("%d-%d", ls[i], ls[j]))
		} else {
			parts = append(parts, fmt.Sprint(ls[i]))
		}
		i = j + 1
	}
	return "(" + strings.Join(parts, ", ") + ")"
}

func bytesText(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GiB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%d B", n)
}

func round(d time.Duration) time.Duration {
	if d > time.Second {
		return d.Round(time.Millisecond)
	}
	return d.Round(time.Microsecond)
}

// cmdRunBundle generates text greedily with the simulator from a bundle
// poot lower wrote: the model gives the tokenizer, the manifest the
// weights. It prints the prompt followed by the generated text and a
// newline, as generate does.
func cmdRunBundle(args []string, stdout, stderr io.Writer) error {
	fs := flags("run-bundle", "run-bundle DIR -m MODEL -p PROMPT [-n N] [--ignore-eos] (or -b DIR)", stdout)
	var dir, model, prompt, first string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		first, args = args[0], args[1:]
	}
	fs.StringVar(&dir, "b", first, "the bundle's directory (written by poot lower)")
	fs.StringVar(&dir, "bundle", first, "same as -b")
	fs.StringVar(&model, "m", "", "the model the bundle was lowered from, for its tokenizer")
	fs.StringVar(&model, "model", "", "same as -m")
	fs.StringVar(&prompt, "p", "", "the prompt")
	fs.StringVar(&prompt, "prompt", "", "same as -p")
	n := fs.Int("n", 32, "the most tokens to generate")
	ignoreEOS := fs.Bool("ignore-eos", false, "keep generating past end-of-generation tokens")
	if err := fs.parse(args); err != nil {
		return err
	}
	switch {
	case dir == "":
		return usagef("no bundle: give its directory (poot run-bundle DIR … or -b DIR)")
	case model == "":
		return usagef("no model: give -m MODEL (for its tokenizer)")
	case *n < 0:
		return usagef("-n %d: want 0 or more", *n)
	}
	b, err := bundle.Read(dir)
	if err != nil {
		return err
	}
	if k := b.Manifest.Deployment.Kind; k != rdu.Decode {
		return fmt.Errorf("run-bundle: %s holds a %s bundle; run-bundle runs a decode bundle (poot lower --decode)", dir, k)
	}
	c, err := load.Open(model)
	if err != nil {
		return err
	}
	defer c.Close()
	tok, err := driver.TokenizerOf(c)
	if err != nil {
		return err
	}
	ids, err := tok.Encode(prompt, tokenizer.EncodeOptions{AddBOS: tok.AddBOS()})
	if err != nil {
		return err
	}
	if len(ids) == 0 {
		return driver.ErrEmptyPrompt
	}
	if need := len(ids) + *n; need > b.Manifest.Deployment.Ctx {
		return &driver.ContextError{Need: need, Capacity: b.Manifest.Deployment.Ctx}
	}
	m, err := sim.New(b, sim.Files{})
	if err != nil {
		return err
	}
	var res sim.Result
	for i, id := range ids {
		if res, err = m.Step(int(id), i); err != nil {
			return err
		}
	}
	var sb strings.Builder
	sb.WriteString(prompt)
	dec := tokenizer.NewStreamDecoder(tok)
	for i := range *n {
		id := int32(res.Next)
		if !*ignoreEOS && tok.IsEOG(id) {
			break
		}
		sb.WriteString(dec.Add(id))
		if i+1 < *n {
			if res, err = m.Step(res.Next, len(ids)+i); err != nil {
				return err
			}
		}
	}
	sb.WriteString(dec.Flush())
	if err := dec.Err(); err != nil {
		return err
	}
	sb.WriteByte('\n')
	_, err = io.WriteString(stdout, sb.String())
	return err
}
