package cli

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/ops"
)

// inspection is what inspect prints.
type inspection struct {
	Path            string            `json:"path"`
	Format          string            `json:"format"`
	Architecture    string            `json:"architecture"`
	Family          string            `json:"family"`
	NoModel         string            `json:"no_model,omitempty"`
	FileSize        int64             `json:"file_size"`
	Parameters      int64             `json:"parameters"`
	Vocabulary      int               `json:"vocabulary,omitempty"`
	Hyperparameters map[string]any    `json:"hyperparameters"`
	Layers          []layerRun        `json:"layers,omitempty"`
	Tensors         []tensorRow       `json:"tensors"`
	Decode          *stepRow          `json:"decode_step,omitempty"`
	Check           *checkRow         `json:"check,omitempty"`
	Metadata        map[string]string `json:"metadata"`
}

// layerRun is a run of consecutive layers of one kind.
type layerRun struct {
	First, Last int
	Kind        string
}

// layerRuns groups a model's layer kinds (families.Layered) into runs of
// consecutive equal kinds; nil for a model that does not name them.
func layerRuns(m families.Model) []layerRun {
	lm, ok := m.(families.Layered)
	if !ok {
		return nil
	}
	var runs []layerRun
	for l, k := range lm.LayerKinds() {
		if n := len(runs); n > 0 && runs[n-1].Kind == k {
			runs[n-1].Last = l
			continue
		}
		runs = append(runs, layerRun{First: l, Last: l, Kind: k})
	}
	return runs
}

// checkRow is what inspect --check found.
type checkRow struct {
	Tensors int         `json:"tensors_scanned"`
	Bad     []badTensor `json:"bad_tensors"`
}

type badTensor struct {
	Name    string `json:"name"`
	Type    string `json:"type"`
	What    string `json:"values"`
	Checked int64  `json:"checked"`
	Bad     int64  `json:"non_finite"`
	First   int64  `json:"first"`
}

type tensorRow struct {
	Name string `json:"name"`
	Type string `json:"type"`
}

type stepRow struct {
	Interpreter string  `json:"interpreter"`
	Capacity    int     `json:"capacity"`
	Equations   int     `json:"equations"`
	Dispatches  int     `json:"dispatches"`
	TraceMS     float64 `json:"trace_ms"`
	BindMS      float64 `json:"bind_ms"`
	CompileMS   float64 `json:"compile_ms"`
}

func architecture(c *load.Checkpoint) string {
	if f := c.GGUF(); f != nil {
		a, _ := f.Architecture()
		return a
	}
	if as, ok := c.HFConfig()["architectures"].([]any); ok && len(as) > 0 {
		return fmt.Sprint(as[0])
	}
	return ""
}

// hyperparameters lists a model's settings: the standard decoder's fields,
// or the schema for other models.
func hyperparameters(m families.Model) map[string]any {
	sc := m.Schema()
	h := map[string]any{"vocab": sc.Vocab, "dim": sc.Dim, "layers": sc.Layers, "max_context": sc.MaxContext}
	d, ok := m.(*families.Decoder)
	if !ok {
		return h
	}
	h["heads"], h["kv_heads"], h["head_dim"], h["ffn"], h["norm_eps"] = d.Heads, d.KVHeads, d.HeadDim, d.FFN, d.Eps
	h["norm"] = map[families.NormKind]string{families.RMS: "rmsnorm", families.LayerNormKind: "layernorm"}[d.Norm]
	h["tied_output"] = d.Tied
	rope := map[string]any{"theta": d.Rope.Theta, "dims": d.Rope.Dims, "layout": ropeLayout(d.Rope.Layout), "freq_factors": d.Rope.FreqFactors}
	if d.Rope.Scaling != ops.ScaleNone {
		rope["scaling"], rope["factor"] = fmt.Sprint(d.Rope.Scaling), d.Rope.Factor
	}
	h["rope"] = rope
	if d.Windows != nil {
		h["windows"] = d.Windows
	}
	if d.MoE != nil {
		h["experts"], h["experts_used"], h["expert_ffn"] = d.MoE.Experts, d.MoE.Used, d.MoE.FFN
	}
	if d.LayerKVHeads != nil {
		h["layer_kv_heads"] = d.LayerKVHeads
	}
	for k, v := range map[string]bool{"qkv_bias": d.QKVBias, "out_bias": d.OutBias, "qk_norm": d.QKNorm, "post_norms": d.PostNorms,
		"norm_bias": d.NormBias, "fused_qkv": d.FusedQKV, "parallel": d.Parallel, "shared_norm": d.SharedNorm,
		"ungated_ffn": d.Ungated, "ffn_bias": d.FFNBias, "head_bias": d.HeadBias} {
		if v {
			h[k] = true
		}
	}
	if d.EmbedScale != 0 {
		h["embed_scale"] = d.EmbedScale
	}
	if d.AttnSoftCap != 0 || d.FinalSoftCap != 0 {
		h["attn_softcap"], h["final_softcap"] = d.AttnSoftCap, d.FinalSoftCap
	}
	h["activation"] = map[families.Activation]string{families.SiLU: "silu", families.GELUTanh: "gelu_tanh"}[d.Act]
	return h
}

func ropeLayout(l ops.RopeLayout) string {
	if l == ops.RopeInterleaved {
		return "interleaved (NORM)"
	}
	return "neox"
}

// cmdInspect describes a checkpoint: architecture, family,
// hyperparameters, tensors with their stored types, and the decode step.
func cmdInspect(args []string, stdout, stderr io.Writer) error {
	fs := flags("inspect", "inspect -m MODEL [--json] [--check] [--interp NAME]", stdout)
	var model, interpName string
	var capacity int
	kv := modelFlags(fs, &model, &interpName, &capacity)
	asJSON := fs.Bool("json", false, "print JSON")
	threads := threadsFlag(fs)
	check := fs.Bool("check", false, "scan every tensor's data for NaN and infinite values (and packed blocks' scales), list each bad tensor, and fail if there is one")
	if err := fs.parse(args); err != nil {
		return err
	}
	restore, err := setThreads(*threads)
	if err != nil {
		return err
	}
	defer restore()
	if model == "" {
		return usagef("no model: give -m MODEL (a GGUF file or a safetensors directory)")
	}
	c, err := load.Open(model)
	if err != nil {
		return err
	}
	defer c.Close()
	in := inspection{Path: c.Path(), Format: string(c.Format()), Architecture: architecture(c), Metadata: metadata(c)}
	if in.FileSize, err = fileSize(model); err != nil {
		return err
	}
	if tok, err := driver.TokenizerOf(c); err == nil {
		in.Vocabulary = tok.VocabSize()
	}
	for _, name := range c.TensorNames() {
		tt, err := c.TensorType(name)
		typ := fmt.Sprint(tt)
		if err != nil {
			typ = "unreadable: " + err.Error()
		} else {
			n := int64(1)
			for _, d := range tt.Shape {
				n *= int64(d)
			}
			in.Parameters += n
		}
		in.Tensors = append(in.Tensors, tensorRow{name, typ})
	}
	// A GGUF file without an architecture (a vocabulary, a bag of
	// tensors), or of a known architecture without tensors (a vocabulary
	// file), is described as a file: there is no model to trace.
	f := c.GGUF()
	switch {
	case f != nil && !f.Has("general.architecture"):
		in.NoModel = "no general.architecture"
	case f != nil && f.NumTensors() == 0:
		if _, err := driver.ModelOf(c); errors.Is(err, families.ErrUnknownArchitecture) || errors.Is(err, families.ErrUnsupported) {
			return err
		}
		in.NoModel = "no tensors"
	default:
		s, err := openSession(model, interpName, capacity, kv, stderr)
		if err != nil {
			return err
		}
		defer s.Close()
		in.Family, in.Hyperparameters, in.Layers = s.Model().Family(), hyperparameters(s.Model()), layerRuns(s.Model())
		d := s.DecodeInfo()
		ms := func(x interface{ Seconds() float64 }) float64 { return x.Seconds() * 1e3 }
		in.Decode = &stepRow{Interpreter: s.Interpreter().Name(), Capacity: s.Capacity(), Equations: d.Equations,
			Dispatches: d.Dispatches, TraceMS: ms(d.TraceTime), BindMS: ms(d.BindTime), CompileMS: ms(d.CompileTime)}
	}
	if *check {
		cr, err := checkTensors(c, newBar(stderr))
		if err != nil {
			return err
		}
		in.Check = cr
	}
	if *asJSON {
		e := json.NewEncoder(stdout)
		e.SetIndent("", "  ")
		if err := e.Encode(in); err != nil {
			return err
		}
		return in.Check.err()
	}
	w := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintf(w, "path\t%s\nformat\t%s\narchitecture\t%s\n", in.Path, in.Format, in.Architecture)
	fmt.Fprintf(w, "file size\t%d bytes (%.1f MiB)\nparameters\t%d (%s)\n", in.FileSize, float64(in.FileSize)/(1<<20), in.Parameters, humanCount(in.Parameters))
	if in.Vocabulary > 0 {
		fmt.Fprintf(w, "vocabulary\t%d tokens\n", in.Vocabulary)
	}
	if in.NoModel != "" {
		fmt.Fprintf(w, "model\tnone (%s): the file's metadata and tensors only\n", in.NoModel)
	} else {
		hp, _ := json.Marshal(in.Hyperparameters)
		fmt.Fprintf(w, "family\t%s\nhyperparameters\t%s\n", in.Family, hp)
	}
	for _, r := range in.Layers {
		span := fmt.Sprintf("layer %d", r.First)
		if r.Last > r.First {
			span = fmt.Sprintf("layers %d-%d", r.First, r.Last)
		}
		fmt.Fprintf(w, "  %s\t%s\n", span, r.Kind)
	}
	if d := in.Decode; d != nil {
		fmt.Fprintf(w, "decode step\t%d equations, %d dispatches; traced in %.2f ms, bound in %.2f ms, compiled (%s, capacity %d) in %.2f ms\n",
			d.Equations, d.Dispatches, d.TraceMS, d.BindMS, d.Interpreter, d.Capacity, d.CompileMS)
	}
	fmt.Fprintf(w, "metadata\t%d keys\n", len(in.Metadata))
	for _, k := range slices.Sorted(maps.Keys(in.Metadata)) {
		fmt.Fprintf(w, "  %s\t%s\n", k, in.Metadata[k])
	}
	fmt.Fprintf(w, "tensors\t%d\n", len(in.Tensors))
	for _, t := range in.Tensors {
		fmt.Fprintf(w, "  %s\t%s\n", t.Name, t.Type)
	}
	if cr := in.Check; cr != nil {
		fmt.Fprintf(w, "check\t%d tensors scanned, %d with NaN or infinite values\n", cr.Tensors, len(cr.Bad))
		for _, b := range cr.Bad {
			fmt.Fprintf(w, "  %s\t%s: %d of %d %s are NaN or infinite (first at %d)\n", b.Name, b.Type, b.Bad, b.Checked, b.What, b.First)
		}
	}
	if err := w.Flush(); err != nil {
		return err
	}
	return in.Check.err()
}

// checkTensors scans every stored tensor, as llama.cpp's --check-tensors
// does. A tensor whose dtype poot cannot read is skipped (inspect lists it
// as unreadable already).
func checkTensors(c *load.Checkpoint, b *bar) (*checkRow, error) {
	cr := &checkRow{Bad: []badTensor{}}
	names := c.TensorNames()
	defer b.clear()
	for i, name := range names {
		b.draw("check", float64(i)/float64(len(names)))
		if _, err := c.TensorType(name); err != nil {
			continue
		}
		r, err := c.CheckData(name)
		if err != nil {
			return nil, err
		}
		cr.Tensors++
		if r.Bad > 0 {
			cr.Bad = append(cr.Bad, badTensor{Name: name, Type: r.DType.String(), What: r.What, Checked: r.Checked, Bad: r.Bad, First: r.First})
		}
	}
	return cr, nil
}

// err is the check's verdict: an error when a tensor holds non-finite
// values.
func (cr *checkRow) err() error {
	if cr == nil || len(cr.Bad) == 0 {
		return nil
	}
	return fmt.Errorf("%d of %d tensors hold NaN or infinite values, the first %s (%s)", len(cr.Bad), cr.Tensors, cr.Bad[0].Name, cr.Bad[0].What)
}

// metadata lists a checkpoint's metadata for people: a GGUF file's keys
// (long arrays elided), or a safetensors directory's config.json.
func metadata(c *load.Checkpoint) map[string]string {
	md := map[string]string{}
	if f := c.GGUF(); f != nil {
		for _, kv := range f.KVs() {
			v := kv.Value.String()
			if len(v) > 256 { // a chat template, say
				v = fmt.Sprintf("%s… (%d bytes)", strings.ToValidUTF8(v[:200], ""), len(v))
			}
			md[kv.Key] = v
		}
		return md
	}
	for k, v := range c.HFConfig() {
		js, _ := json.Marshal(v)
		md[k] = string(js)
	}
	return md
}

// fileSize is the size of a checkpoint: the file, or every file of a
// directory.
func fileSize(path string) (int64, error) {
	var total int64
	err := filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type().IsRegular() {
			fi, err := d.Info()
			if err != nil {
				return err
			}
			total += fi.Size()
		}
		return nil
	})
	return total, err
}

// humanCount writes a count as 1.2K, 3.4M, 5.6B.
func humanCount(n int64) string {
	for _, u := range []struct {
		div  float64
		name string
	}{{1e12, "T"}, {1e9, "B"}, {1e6, "M"}, {1e3, "K"}} {
		if float64(n) >= u.div {
			return fmt.Sprintf("%.1f%s", float64(n)/u.div, u.name)
		}
	}
	return fmt.Sprint(n)
}
