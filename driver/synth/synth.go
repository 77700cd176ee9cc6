// Package synth writes random-weight checkpoints of any registered family:
// a GGUF file or a safetensors directory with the family's metadata, random
// weights in the chosen stored type and a built-in SentencePiece vocabulary,
// so that the result loads, tokenizes and runs like a real model. Presets
// name tiny test shapes and realistic benchmark shapes.
//
// Weights are generated, converted and quantized one row at a time while the
// file is written, so a billion-parameter checkpoint never sits in memory.
// The text such a model produces is noise; its use is tests, demos and
// benchmarks.
package synth

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/internal/atomicfile"
	"github.com/pootlabs/poot/ops"
	"github.com/pootlabs/poot/quant"
	"github.com/pootlabs/poot/safetensors"
	"github.com/pootlabs/poot/tokenizer"
)

// ErrExists is wrapped by Write's error for a path that exists when
// Options.Replace is not set.
var ErrExists = atomicfile.ErrExists

// ErrSynth is wrapped by every error of this package that is about the
// request (an unknown family or preset, a type the format cannot store).
var ErrSynth = errors.New("synth")

// FindPreset returns the preset of family called name.
func FindPreset(family, name string) (Preset, error) {
	var names []string
	for _, p := range Presets() {
		if p.Family == family {
			if p.Name == name {
				return p, nil
			}
			names = append(names, p.Name)
		}
	}
	if names == nil {
		return Preset{}, fmt.Errorf("%w: no presets for family %q (families with presets: %v)", ErrSynth, family, presetFamilies())
	}
	return Preset{}, fmt.Errorf("%w: family %q has no preset %q (presets: %v)", ErrSynth, family, name, names)
}

func presetFamilies() []string {
	var fs []string
	for _, p := range Presets() {
		if !slices.Contains(fs, p.Family) {
			fs = append(fs, p.Family)
		}
	}
	return fs
}

// Families lists the registered family names.
func Families() []string {
	var fs []string
	for _, r := range registry.Shipped {
		fs = append(fs, r.Family)
	}
	return fs
}

// Model configures a model of family from a config.json.
func Model(family string, cfg map[string]any) (families.Model, error) {
	for _, r := range registry.Shipped {
		if r.Family == family {
			if r.FromHF == nil {
				return nil, fmt.Errorf("%w: family %q reads no config.json", ErrSynth, family)
			}
			return r.FromHF(cfg)
		}
	}
	return nil, fmt.Errorf("%w: unknown family %q (registered: %v)", ErrSynth, family, Families())
}

// Options configure Write.
type Options struct {
	// Format is "gguf" (the default) or "safetensors".
	Format string
	// Type is the stored type of the matrices: F32 (the default), F16,
	// BF16, or a packed type for GGUF. Vectors stay F32, and a matrix whose
	// rows do not fill whole blocks of a packed type stays F32 (as
	// llama.cpp's quantizer falls back).
	Type poot.DType
	// Seed seeds the weights.
	Seed uint64
	// Scale is the standard deviation of the matrices' entries; 0 means
	// DefaultScale.
	Scale float64
	// Progress, when set, is told the bytes written so far of the total.
	Progress func(done, total int64)
	// Replace allows replacing a file or directory at the path; without
	// it an existing path is an error wrapping ErrExists.
	Replace bool
	// Context, when set, cancels the write: Write then returns its error
	// and leaves no file behind.
	Context context.Context
	// Fallback, when set, is told of each matrix that stays F32 because
	// its rows are not whole blocks of a packed Type, and why.
	Fallback func(tensor string, reason string)
}

// DefaultScale is the standard deviation of a synthesized matrix's
// entries unless asked otherwise: strong enough that a checkpoint is a
// reference that catches bugs. With N(0, 0.02) entries (the scale of small
// trained models) logits span only ±0.7 and attention is nearly uniform,
// so a wrong rotary layout or no rope at all moves them by about 1e-3 and
// every greedy token still matches; with N(0, 0.25) logits span several
// units and the same bugs move them by whole units.
const DefaultScale = 0.25

// Write writes a random-weight checkpoint of m at path: a GGUF file, or a
// safetensors directory holding config.json, the weights, tokenizer.json
// and tokenizer_config.json. The checkpoint is written under a temporary
// name beside path and renamed into place when complete: path never holds
// a partial checkpoint, and a reader with the old one mapped keeps it
// intact. A packed Type that no matrix of m can take (every row length is
// not a multiple of the type's block) is an ErrSynth error.
func Write(m families.Model, path string, o Options) error {
	if o.Type == poot.Invalid {
		o.Type = poot.F32
	}
	if o.Scale == 0 {
		o.Scale = DefaultScale
	}
	if !(o.Scale > 0) || o.Scale > 10 {
		return fmt.Errorf("%w: weight scale %v: want a standard deviation in (0, 10]", ErrSynth, o.Scale)
	}
	if !o.Type.Float() {
		return fmt.Errorf("%w: stored type %v is not a float type", ErrSynth, o.Type)
	}
	if o.Type.Packed() && !quant.Supported(o.Type) {
		return fmt.Errorf("%w: cannot quantize to %v", ErrSynth, o.Type)
	}
	if o.Context == nil {
		o.Context = context.Background()
	}
	if err := checkPacked(m, o); err != nil {
		return err
	}
	vocab, err := BuildVocabulary(m.Schema().Vocab)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrSynth, err)
	}
	switch o.Format {
	case "", "gguf":
		return writeGGUF(m, path, o, vocab)
	case "safetensors":
		if o.Type.Packed() {
			return fmt.Errorf("%w: safetensors stores no %v; use gguf", ErrSynth, o.Type)
		}
		return writeHF(m, path, o, vocab)
	}
	return fmt.Errorf("%w: unknown format %q (gguf or safetensors)", ErrSynth, o.Format)
}

// isMatrix says whether a tensor takes the requested stored type: weight
// matrices; vectors, norms and biases (gpt-oss's [experts, width] expert
// biases, which llama.cpp adds in F32 only) stay F32, as in llama.cpp's
// converter.
func isMatrix(spec families.TensorSpec) bool { return len(spec.Shape) >= 2 && spec.Role == "weight" }

// checkPacked reports the matrices whose rows are not whole blocks of a
// packed o.Type to o.Fallback, and refuses a type that none can take.
func checkPacked(m families.Model, o Options) error {
	if !o.Type.Packed() {
		return nil
	}
	specs, err := families.Tensors(m)
	if err != nil {
		return err
	}
	matrices, fell := 0, 0
	for _, spec := range specs {
		if !isMatrix(spec) {
			continue
		}
		matrices++
		if n := spec.Shape[len(spec.Shape)-1]; n%o.Type.BlockElems() != 0 {
			fell++
			if o.Fallback != nil {
				o.Fallback(spec.Name, fmt.Sprintf("rows of %d are not whole %v blocks of %d", n, o.Type, o.Type.BlockElems()))
			}
		}
	}
	if matrices > 0 && fell == matrices {
		return fmt.Errorf("%w: no matrix of this model can be stored as %v: every row length is not a multiple of its %d-element blocks (try q8_0 or q4_0, or a larger shape)",
			ErrSynth, o.Type, o.Type.BlockElems())
	}
	return nil
}

// tensorPlan is one tensor to write: its stored type and how to fill a row.
type tensorPlan struct {
	spec  families.TensorSpec
	dtype poot.DType
	fill  func(rng *rand.Rand, row []float32, r int)
	seed  uint64
}

// headName is the tensor whose rows give the logits: output.weight, or the
// token embedding when the head is tied to it. Its byte and control rows
// are silenced only in the first case: silencing a tied head would zero
// those tokens' embeddings too, and every logit after them.
func headName(specs []families.TensorSpec) string {
	for _, s := range specs {
		if s.Name == "output.weight" {
			return s.Name
		}
	}
	return "token_embd.weight"
}

// silence zeroes the head rows of the byte and control tokens, so that a
// random model's logits for them are exactly 0 while real pieces spread
// around it: greedy decoding of a random model then spells with pieces, not
// stray bytes (the weights' statistics are otherwise unchanged).
func silence(p tensorPlan, v *Vocabulary) tensorPlan {
	fill := p.fill
	p.fill = func(rng *rand.Rand, row []float32, r int) {
		fill(rng, row, r)
		if r < len(v.Types) && (v.Types[r] == typeByte || v.Types[r] == typeControl) {
			clear(row)
		}
	}
	return p
}

func plan(spec families.TensorSpec, o Options, normOffset bool, fixed []float32) tensorPlan {
	p := tensorPlan{spec: spec, dtype: poot.F32}
	h := fnv.New64a()
	h.Write([]byte(spec.Name))
	p.seed = h.Sum64()
	n := spec.Shape[len(spec.Shape)-1]
	if isMatrix(spec) {
		switch {
		case !o.Type.Packed():
			p.dtype = o.Type
		case n%o.Type.BlockElems() == 0:
			p.dtype = o.Type
		}
	}
	switch {
	case fixed != nil:
		p.fill = func(_ *rand.Rand, row []float32, r int) { copy(row, fixed[r*len(row):]) }
	case spec.Role == "norm" && normOffset:
		p.fill = func(rng *rand.Rand, row []float32, _ int) {
			for i := range row {
				row[i] = float32(0.1 * rng.NormFloat64())
			}
		}
	case spec.Role == "norm":
		p.fill = func(rng *rand.Rand, row []float32, _ int) {
			for i := range row {
				row[i] = float32(1 + 0.1*rng.NormFloat64())
			}
		}
	case spec.Role == "sinks":
		// Attention sinks are logits beside the scores: N(0, 1) makes
		// them matter.
		p.fill = func(rng *rand.Rand, row []float32, _ int) {
			for i := range row {
				row[i] = float32(rng.NormFloat64())
			}
		}
	case spec.Role == "decay":
		// Decay rates are negative (A = -exp(A_log)), spread over about
		// a decade so that some heads forget fast and some slowly.
		p.fill = func(rng *rand.Rand, row []float32, _ int) {
			for i := range row {
				row[i] = float32(-math.Exp(0.5 * rng.NormFloat64()))
			}
		}
	default:
		scale := o.Scale
		if spec.Role == "bias" {
			scale = max(scale, 0.1) // biases that move the result
		}
		p.fill = func(rng *rand.Rand, row []float32, _ int) {
			for i := range row {
				row[i] = float32(scale * rng.NormFloat64())
			}
		}
	}
	return p
}

// bytes is the stored size of the tensor (or of one part of an expert stack
// when parts > 1).
func (p tensorPlan) bytes(parts int) int64 {
	n := p.spec.Shape[len(p.spec.Shape)-1]
	rows := int(p.spec.Shape.Size()) / n / parts
	return int64(rows) * p.dtype.RowBytes(int64(n))
}

// rowReader streams a tensor's rows (part of parts), generated and
// converted to the stored type a batch at a time, the rows of a batch in
// parallel. Each row has its own random stream, seeded by the seed, the
// tensor and the row, so the bytes do not depend on the number of workers.
type rowReader struct {
	p           tensorPlan
	seed        uint64
	n           int // row length
	rowBytes    int
	buf         []byte
	off         int
	next, end   int
	done, total *int64
	progress    func(done, total int64)
	ctx         context.Context
}

// batchRows is the number of rows made at a time.
const batchRows = 64

func (p tensorPlan) reader(o Options, part, parts int, done, total *int64) *rowReader {
	n := p.spec.Shape[len(p.spec.Shape)-1]
	rows := int(p.spec.Shape.Size()) / n / parts
	return &rowReader{
		p: p, seed: o.Seed, n: n, rowBytes: int(p.dtype.RowBytes(int64(n))),
		next: part * rows, end: (part + 1) * rows, done: done, total: total, progress: o.Progress, ctx: o.Context,
	}
}

// fill makes the next batch of rows.
func (r *rowReader) fill() error {
	k := min(batchRows, r.end-r.next)
	r.buf = slices.Grow(r.buf[:0], k*r.rowBytes)[:k*r.rowBytes]
	r.off = 0
	workers := min(runtime.GOMAXPROCS(0), k)
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			row := make([]float32, r.n)
			for i := w; i < k; i += workers {
				rr := r.next + i
				rng := rand.New(rand.NewPCG(r.seed, r.p.seed^uint64(rr)*0x9e3779b97f4a7c15))
				r.p.fill(rng, row, rr)
				if err := encodeRow(r.p.dtype, r.buf[i*r.rowBytes:(i+1)*r.rowBytes], row); err != nil && errs[w] == nil {
					errs[w] = err
				}
			}
		}()
	}
	wg.Wait()
	r.next += k
	return errors.Join(errs...)
}

// Read fills b with the next stored bytes, making rows as needed.
func (r *rowReader) Read(b []byte) (int, error) {
	if r.off == len(r.buf) {
		if r.next == r.end {
			return 0, io.EOF
		}
		if err := r.ctx.Err(); err != nil {
			return 0, err
		}
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	n := copy(b, r.buf[r.off:])
	r.off += n
	*r.done += int64(n)
	if r.progress != nil && r.off == len(r.buf) {
		r.progress(*r.done, *r.total)
	}
	return n, nil
}

func encodeRow(d poot.DType, dst []byte, src []float32) error {
	switch d {
	case poot.F32:
		for i, x := range src {
			bits := math.Float32bits(x)
			dst[4*i], dst[4*i+1], dst[4*i+2], dst[4*i+3] = byte(bits), byte(bits>>8), byte(bits>>16), byte(bits>>24)
		}
		return nil
	case poot.F16:
		quant.F32RowToF16(dst, src)
		return nil
	case poot.BF16:
		quant.F32RowToBF16(dst, src)
		return nil
	}
	return quant.QuantizeRow(d, dst, src)
}

// fusedTensors makes the stored tensors that views of canonical tensors
// read (fused projections): each view's values are generated whole, as its
// rows would be streamed, and fused in memory, so a fused tensor costs its
// size in memory while it is written.
func fusedTensors(w families.WeightMap, views []families.TensorSpec, plans map[string]tensorPlan, o Options) ([]safetensors.WriterTensor, error) {
	if len(views) == 0 {
		return nil, nil
	}
	get := func(name string) ([]float32, error) {
		p := plans[name]
		p.dtype = poot.F32
		var done, total int64
		raw, err := io.ReadAll(p.reader(o, 0, 1, &done, &total))
		if err != nil {
			return nil, err
		}
		out := make([]float32, len(raw)/4)
		for i := range out {
			out[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		return out, nil
	}
	fused, err := w.Fuse(views, get)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrSynth, err)
	}
	dt := plans[views[0].Name].dtype
	st, _ := safetensors.DTypeOf(dt)
	var ts []safetensors.WriterTensor
	for _, f := range fused {
		n := f.Shape[len(f.Shape)-1]
		rb := int(dt.RowBytes(int64(n)))
		data := make([]byte, len(f.Data)/n*rb)
		for r := range len(f.Data) / n {
			if err := encodeRow(dt, data[r*rb:(r+1)*rb], f.Data[r*n:(r+1)*n]); err != nil {
				return nil, err
			}
		}
		ts = append(ts, safetensors.WriterTensor{Name: f.Name, DType: st, Shape: f.Shape, Data: data})
	}
	return ts, nil
}

// ggufModel returns the decoder to describe as GGUF and the fixed values of
// tensors the GGUF form adds: Llama 3 rope scaling becomes a rope_freqs
// table, norms stored as offsets from one are folded.
func ggufModel(m families.Model) (families.Model, map[string][]float32, error) {
	d, ok := m.(*families.Decoder)
	if !ok {
		return m, nil, nil
	}
	g := *d
	if g.GGUF.Architecture == "" {
		// Hugging Face configs of the llama family leave the GGUF style
		// unset; GGUF calls the architecture as the model type does.
		arch := g.HF.ModelType
		if arch == "" {
			arch = g.Name
		}
		g.GGUF.Architecture = arch
	}
	g.NormPlusOne = false
	fixed := map[string][]float32{}
	if g.Rope.Scaling == ops.ScaleLlama3 {
		scaled, err := g.Rope.InvFreq()
		if err != nil {
			return nil, nil, err
		}
		plain := g.Rope.RopeConfig
		plain.Scaling, plain.Factor = ops.ScaleNone, 0
		base, err := plain.InvFreq()
		if err != nil {
			return nil, nil, err
		}
		f := make([]float32, len(base))
		for i := range f {
			f[i] = float32(base[i] / scaled[i])
		}
		g.Rope.RopeConfig = plain
		g.Rope.FreqFactors = true
		fixed["rope_freqs.weight"] = f
	}
	return &g, fixed, nil
}

func tokenizerKVs(v *Vocabulary) []gguf.KV {
	return []gguf.KV{
		{Key: tokenizer.KeyModel, Value: gguf.ValueOf("llama")},
		{Key: tokenizer.KeyTokens, Value: gguf.ArrayOf(v.Tokens)},
		{Key: tokenizer.KeyScores, Value: gguf.ArrayOf(v.Scores)},
		{Key: tokenizer.KeyTokenType, Value: gguf.ArrayOf(v.Types)},
		{Key: tokenizer.KeyBOS, Value: gguf.ValueOf(uint32(1))},
		{Key: tokenizer.KeyEOS, Value: gguf.ValueOf(uint32(2))},
		{Key: tokenizer.KeyUnknown, Value: gguf.ValueOf(uint32(0))},
		{Key: tokenizer.KeyAddBOS, Value: gguf.ValueOf(true)},
		{Key: tokenizer.KeyAddEOS, Value: gguf.ValueOf(false)},
	}
}

func writeGGUF(m families.Model, path string, o Options, v *Vocabulary) error {
	gm, fixed, err := ggufModel(m)
	if err != nil {
		return err
	}
	gw, ok := gm.(families.GGUFWriter)
	if !ok {
		return fmt.Errorf("%w: family %q cannot describe itself as GGUF", ErrSynth, m.Family())
	}
	kvs, err := gw.GGUFMetadata()
	if err != nil {
		return err
	}
	// The name says where the file came from, not the family: llama.cpp
	// reads some names as promises about the vocabulary ("phi3" makes it
	// require an <|endoftext|> token).
	kvs = append(kvs, gguf.KV{Key: "general.name", Value: gguf.ValueOf("poot synth")})
	kvs = append(kvs, tokenizerKVs(v)...)
	specs, err := families.Tensors(gm)
	if err != nil {
		return err
	}
	var done, total int64
	var ts []gguf.WriterTensor
	head := headName(specs)
	for _, spec := range specs {
		p := plan(spec, o, false, fixed[spec.Name])
		if spec.Name == head && head != "token_embd.weight" {
			p = silence(p, v)
		}
		total += p.bytes(1)
		ts = append(ts, gguf.WriterTensor{Name: spec.Name, DType: p.dtype, Shape: spec.Shape.Clone(),
			Reader: p.reader(o, 0, 1, &done, &total)})
	}
	return atomicfile.WriteFile(path, writeMode(o), func(w io.Writer) error { return gguf.Write(w, kvs, ts, 0) })
}

func writeMode(o Options) atomicfile.Mode {
	if o.Replace {
		return atomicfile.Replace
	}
	return atomicfile.NoReplace
}

func writeHF(m families.Model, dir string, o Options, v *Vocabulary) error {
	hw, ok := m.(families.HFWriter)
	if !ok {
		return fmt.Errorf("%w: family %q cannot describe itself as a Hugging Face checkpoint", ErrSynth, m.Family())
	}
	cfg, err := hw.HFConfig()
	if err != nil {
		return err
	}
	cfg["bos_token_id"], cfg["eos_token_id"] = 1, 2
	js, err := json.MarshalIndent(cfg, "", "  ")
	if err != nil {
		return err
	}
	normOffset := false
	if d, ok := m.(*families.Decoder); ok {
		normOffset = d.NormPlusOne
	}
	w := m.Weights().In(families.Safetensors)
	specs, err := families.Tensors(m)
	if err != nil {
		return err
	}
	var done, total int64
	var ts []safetensors.WriterTensor
	head := headName(specs)
	plans := map[string]tensorPlan{}
	var views []families.TensorSpec
	for _, spec := range specs {
		p := plan(spec, o, normOffset, nil)
		if spec.Name == head && head != "token_embd.weight" {
			p = silence(p, v)
		}
		st, _ := safetensors.DTypeOf(p.dtype)
		if _, ok := w.View(spec.Name); ok {
			// Part of a fused tensor: made whole below.
			plans[spec.Name] = p
			views = append(views, spec)
			continue
		}
		if parts := w.Parts(spec.Name); parts != nil {
			total += p.bytes(1)
			for e, name := range parts {
				ts = append(ts, safetensors.WriterTensor{Name: name, DType: st, Shape: spec.Shape[1:].Clone(),
					Reader: p.reader(o, e, len(parts), &done, &total)})
			}
			continue
		}
		name, ok := w.Stored(spec.Name)
		if !ok {
			return fmt.Errorf("%w: no Hugging Face name for %q", ErrSynth, spec.Name)
		}
		total += p.bytes(1)
		ts = append(ts, safetensors.WriterTensor{Name: name, DType: st, Shape: spec.Shape.Clone(),
			Reader: p.reader(o, 0, 1, &done, &total)})
	}
	fused, err := fusedTensors(w, views, plans, o)
	if err != nil {
		return err
	}
	ts = append(ts, fused...)
	tj, tc, err := hfTokenizer(v)
	if err != nil {
		return err
	}
	return safetensors.DirContents{Config: js, Tensors: ts, Replace: o.Replace,
		Files: map[string][]byte{safetensors.TokenizerFile: tj, safetensors.TokenizerConfigFile: tc}}.Write(dir)
}

// hfTokenizer writes the vocabulary as a Hugging Face tokenizer.json of the
// Llama 2 kind (BPE with byte fallback, spaces as "▁") and its
// tokenizer_config.json.
func hfTokenizer(v *Vocabulary) (tokenizerJSON, configJSON []byte, err error) {
	vocab := map[string]int{}
	var added []map[string]any
	for i, t := range v.Tokens {
		vocab[t] = i
		if v.Types[i] == typeControl || v.Types[i] == typeUnknown {
			added = append(added, map[string]any{"id": i, "content": t, "special": true,
				"single_word": false, "lstrip": false, "rstrip": false, "normalized": false})
		}
	}
	tj := map[string]any{
		"version":      "1.0",
		"added_tokens": added,
		"normalizer": map[string]any{"type": "Sequence", "normalizers": []any{
			map[string]any{"type": "Prepend", "prepend": "▁"},
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": " "}, "content": "▁"},
		}},
		"pre_tokenizer": nil,
		"decoder": map[string]any{"type": "Sequence", "decoders": []any{
			map[string]any{"type": "Replace", "pattern": map[string]any{"String": "▁"}, "content": " "},
			map[string]any{"type": "ByteFallback"},
			map[string]any{"type": "Fuse"},
			map[string]any{"type": "Strip", "content": " ", "start": 1, "stop": 0},
		}},
		"model": map[string]any{"type": "BPE", "vocab": vocab, "merges": v.Merges, "byte_fallback": true,
			"unk_token": "<unk>", "fuse_unk": true, "dropout": nil},
	}
	if tokenizerJSON, err = json.Marshal(tj); err != nil {
		return nil, nil, err
	}
	configJSON, err = json.MarshalIndent(map[string]any{"bos_token": "<s>", "eos_token": "</s>", "unk_token": "<unk>",
		"add_bos_token": true, "add_eos_token": false}, "", "  ")
	return tokenizerJSON, configJSON, err
}
