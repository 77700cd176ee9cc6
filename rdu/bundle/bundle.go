// Package bundle holds what the streamed lowering writes and what a host
// (or poot's simulator) reads: the layer programs, the manifest that binds
// their names to the checkpoint's tensors, the caches and the host tables,
// and the tables' data. A bundle is a directory:
//
//	manifest.json   the manifest (Manifest)
//	embed.prog      the embedding program
//	kind0.prog …    one program per layer kind
//	head.prog       the head program
//	tables.bin      the host tables, float32 little-endian, at the offsets
//	                the manifest gives
//
// Package bundle knows nothing of graphs or of how a bundle is made; it
// reads and writes the format and checks that a manifest is consistent
// with itself.
package bundle

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/pootlabs/poot/rdu/lang"
)

// Format identifies the manifest's format.
const Format = "poot-rdu-bundle/2"

// ErrBundle is wrapped by the errors of a bundle that is not well formed.
var ErrBundle = errors.New("malformed bundle")

// Manifest says how the programs of a bundle run a model.
type Manifest struct {
	Format     string     `json:"format"`
	Deployment Deployment `json:"deployment"`
	// Checkpoint is the model the weights are read from, as the lowering
	// was told it (a path, or empty when the weights were given in memory).
	Checkpoint string `json:"checkpoint,omitempty"`
	// Inputs are the runtime inputs the host writes every step.
	Inputs []Input `json:"inputs"`
	// Embed and Head are the programs before and after the layers.
	Embed Program `json:"embed"`
	Head  Program `json:"head"`
	// Kinds lists the layer kinds in the order their first layer appears.
	Kinds []Kind `json:"kinds"`
	// Layers binds every layer, in order, to its kind.
	Layers []Layer `json:"layers"`
	// Tables are the host tables, in tables.bin.
	Tables []Table `json:"tables"`
	// Output names the logits the head leaves and Next the token it picks.
	Output string `json:"output"`
	Next   string `json:"next"`
	// Nexts name the token each sequence's row of the logits picks, in a
	// batched bundle.
	Nexts []string `json:"nexts,omitempty"`
	// LastOnly says the step the bundle was lowered from wants the logits of
	// its last token only.
	LastOnly bool `json:"last_only,omitempty"`
}

// Deployment describes the shape of the bundle's step.
type Deployment struct {
	// Kind is "decode" (one token of one sequence a run of the bundle),
	// "prefill" (a chunk of Tokens tokens of one sequence a run, as rows)
	// or "batched" (one token of each of Batch sequences a run, as rows).
	Kind string `json:"kind"`
	// Batch is the number of sequences of a batched bundle.
	Batch int `json:"batch,omitempty"`
	// Ctx is the number of positions each KV cache holds.
	Ctx int `json:"ctx"`
	// Tokens is the number of new tokens of the traced step the bundle was
	// lowered from: a decode bundle runs them one at a time, a prefill
	// bundle in one run.
	Tokens int `json:"tokens"`
	// TP is the number of chips of a tensor-parallel bundle (0 for one
	// chip's bundle): the embedding and the head run on the replicated
	// spine, each kind's program over the chips (Kind.Placement).
	TP int `json:"tp,omitempty"`
}

// Input is a runtime input: a scalar of the programs the host writes
// before each run.
type Input struct {
	Name    string `json:"name"`
	Meaning string `json:"meaning"`
}

// Program is one program file and the bindings of the names it declares
// (the embedding's and the head's; a kind's bindings are per layer).
type Program struct {
	Name     string             `json:"name"`
	File     string             `json:"file"`
	Bindings map[string]Binding `json:"bindings,omitempty"`
	// Input and Output name the hidden state read and left.
	Input  string `json:"input,omitempty"`
	Output string `json:"output"`
}

// Kind is a layer kind: its program, its layers, and how many statements
// it has.
type Kind struct {
	Name   string `json:"name"`
	File   string `json:"file"`
	Layers []int  `json:"layers"`
	// Statements counts the program's statements, Declarations those of
	// them that declare a tensor or a scalar.
	Statements   int `json:"statements"`
	Declarations int `json:"declarations"`
	// Local lists the per-layer names of the program (those carrying its
	// first layer's index), which are renamed for each of its layers.
	Local []string `json:"local"`
	Input string   `json:"input"`
	// Output is the hidden state the kind's program leaves.
	Output string `json:"output"`
	// Placement gives, in a tensor-parallel bundle, the chip (from 0) of
	// every name a chip holds alone: its slices of the weights and caches
	// and what its statements bind. A name it does not list is on the
	// replicated spine, computed alike on every chip.
	Placement map[string]int `json:"placement,omitempty"`
	// AllReduce lists the all-reduces of a tensor-parallel kind, in
	// program order: each sums one partial a chip into a spine value.
	AllReduce []AllReduce `json:"all_reduce,omitempty"`
}

// AllReduce is one all-reduce: Out, on the spine, is the sum of Partials
// (one a chip, in chip order), written in the program as the folds Folds
// (Folds[i] is the sum of Partials[0…i+1]; the last is Out), or, over one
// chip, as Out bound to its partial scaled by 1.
type AllReduce struct {
	Out      string   `json:"out"`
	Partials []string `json:"partials"`
	Folds    []string `json:"folds"`
}

// Slice is one run of the part of a tensor or state one chip of a
// tensor-parallel bundle holds: the declared matrix's rows (Axis "rows")
// or columns ("cols") From … From+N-1 (counting from 0). A chip's part is
// the list of its slices (Binding.Slices), joined along their one axis in
// order: a fused projection's chip holds several runs of its columns (its
// heads' queries, keys and values), a tiled gated delta's chip several
// runs of value heads.
//
// A weight's slice says where the checkpoint holds the run: Count runs of
// Bytes bytes every Stride bytes from Offset bytes after the tensor's
// first byte, stored as Shape (poot order). A packed type is cut only at
// its block boundaries. A state's slice names the run alone (the state is
// not stored): the chip keeps those rows or columns of the state, in its
// own storage.
type Slice struct {
	Axis   string `json:"axis"`
	From   int    `json:"from"`
	N      int    `json:"n"`
	Shape  []int  `json:"shape,omitempty"`
	Offset int64  `json:"offset,omitempty"`
	Bytes  int64  `json:"bytes,omitempty"`
	Count  int64  `json:"count,omitempty"`
	Stride int64  `json:"stride,omitempty"`
}

// Layer binds one layer to its kind: every name the kind's program declares
// to this layer's tensor.
type Layer struct {
	Layer    int                `json:"layer"`
	Kind     string             `json:"kind"`
	Bindings map[string]Binding `json:"bindings"`
}

// The sources of a binding.
const (
	SourceWeight  = "weight"  // a checkpoint tensor
	SourceState   = "state"   // a carried state (a KV cache), zero at first
	SourceTable   = "table"   // a host table of tables.bin
	SourceInput   = "input"   // the hidden state the previous program left
	SourceRuntime = "runtime" // a runtime input
	SourceScratch = "scratch" // a tensor the program fills, zero at each run
)

// The storages of a weight.
const (
	StorageDense = "dense" // the host converts the stored tensor to Real
	StorageQ8_0  = "q8_0"  // the chip folds the int8 values and block scales
)

// Binding says what one declared name is for one program instance.
type Binding struct {
	// Name is the name this layer's own program gives the tensor (the
	// kind program's name, renamed for the layer).
	Name   string `json:"name"`
	Source string `json:"source"`
	// Weights: the checkpoint tensor, its stored dtype and shape (poot
	// order, outermost first), where its bytes are, and how the chip reads
	// it. Const is the graph constant it binds. Transposed says the
	// declared matrix is the stored one transposed (a weight stored
	// [out, in], declared in by out).
	Tensor     string `json:"tensor,omitempty"`
	Const      string `json:"const,omitempty"`
	DType      string `json:"dtype,omitempty"`
	Shape      []int  `json:"shape,omitempty"`
	File       string `json:"file,omitempty"`
	Offset     int64  `json:"offset,omitempty"`
	Bytes      int64  `json:"bytes,omitempty"`
	Storage    string `json:"storage,omitempty"`
	Transposed bool   `json:"transposed,omitempty"`
	// State is the carried state's name (the graph's state input); Row is
	// the first of the state's rows the declared tensor is (in a batched
	// bundle, sequence b's cache is the b-th block of ctx rows).
	State string `json:"state,omitempty"`
	Row   int    `json:"row,omitempty"`
	// Recurrent marks a recurrent mixer's state (a convolution's window,
	// a gated delta rule's matrices): not a cache of ctx positions, but
	// the whole state, which its statement reads and rewrites every run.
	Recurrent bool `json:"recurrent,omitempty"`
	// Slices are the runs of the tensor or state a chip of a
	// tensor-parallel bundle holds, joined along their axis in order (none:
	// all of it). A state's Row counts rows of the chip's own storage.
	Slices []Slice `json:"slices,omitempty"`
	// Parts, for a tensor stacked from tensors of one shape and dtype
	// (per-expert matrices stored one a tensor), are those tensors in
	// order; Bytes is their sum, and File and Offset are unset.
	Parts []Part `json:"parts,omitempty"`
	// Heads, when set, says the declared matrix is cut head by head from
	// the stored tensor (a latent attention's per-head products); the
	// host fills it dense.
	Heads *HeadCut `json:"heads,omitempty"`
	// Table is the host table's name.
	Table string `json:"table,omitempty"`
	// From is the program whose output an input is.
	From string `json:"from,omitempty"`
}

// SliceAxis is the axis of a binding's slices, and N the rows or columns
// they hold together; an error when they are not runs of one axis.
func (b Binding) SliceAxis() (axis string, n int, err error) {
	for i, s := range b.Slices {
		if s.Axis != "rows" && s.Axis != "cols" || s.From < 0 || s.N < 1 || i > 0 && s.Axis != axis {
			return "", 0, fmt.Errorf("%w: %s: slice %d of %s, rows or columns %d…%d", ErrBundle, b.Name, i, s.Axis, s.From, s.From+s.N-1)
		}
		axis, n = s.Axis, n+s.N
	}
	return axis, n, nil
}

// StoredCut is the stored axis (poot order) a weight's slices cut: its
// rows when they are the declared matrix's columns of a transposed weight
// or its rows of one stored as declared, else its last axis.
func (b Binding) StoredCut() int {
	if len(b.Shape) == 2 && len(b.Slices) > 0 && (b.Slices[0].Axis == "cols") == b.Transposed {
		return 0
	}
	return len(b.Shape) - 1
}

// StoredShape is the stored shape (poot order) of the part of a weight a
// binding reads: the tensor's, or its slices' shapes joined along the
// stored axis they cut. ok is false when the slices' shapes do not join
// into a part of the tensor.
func (b Binding) StoredShape() (shape []int, ok bool) {
	if len(b.Slices) == 0 {
		return b.Shape, true
	}
	cut := b.StoredCut()
	shape = slices.Clone(b.Shape)
	if cut < 0 {
		return nil, false
	}
	shape[cut] = 0
	for _, s := range b.Slices {
		if len(s.Shape) != len(b.Shape) {
			return nil, false
		}
		for a := range s.Shape {
			if a != cut && s.Shape[a] != b.Shape[a] {
				return nil, false
			}
		}
		shape[cut] += s.Shape[cut]
	}
	return shape, shape[cut] <= b.Shape[cut]
}

// Part is one stored tensor of a stacked weight: its name, file and byte
// range.
type Part struct {
	Tensor string `json:"tensor"`
	File   string `json:"file"`
	Offset int64  `json:"offset"`
	Bytes  int64  `json:"bytes"`
}

// HeadCut says how a declared matrix is cut from a stored tensor read as
// Heads blocks of Rows by Cols (a latent attention's kv_b: a block a
// head): head h's piece is rows From … From+N-1 of its block (counting
// from 0), transposed when Transposed, and the pieces are stacked head
// after head, Heads·N by Cols (Heads·Cols by N transposed).
type HeadCut struct {
	Heads      int  `json:"heads"`
	Rows       int  `json:"rows"`
	Cols       int  `json:"cols"`
	From       int  `json:"from,omitempty"`
	N          int  `json:"n"`
	Transposed bool `json:"transposed,omitempty"`
}

// Declared is the shape of the declared matrix.
func (c HeadCut) Declared() (rows, cols int) {
	if c.Transposed {
		return c.Heads * c.Cols, c.N
	}
	return c.Heads * c.N, c.Cols
}

// Valid reports whether the cut lies inside its blocks.
func (c HeadCut) Valid() bool {
	return c.Heads > 0 && c.Rows > 0 && c.Cols > 0 && c.N > 0 && c.From >= 0 && c.From+c.N <= c.Rows
}

// Cut returns the declared matrix, row-major, from the stored tensor's
// values (Heads·Rows·Cols of them, row-major).
func (c HeadCut) Cut(stored []float32) ([]float32, error) {
	if !c.Valid() || len(stored) != c.Heads*c.Rows*c.Cols {
		return nil, fmt.Errorf("%w: a cut of rows %d…%d of %d heads of %d by %d from %d values", ErrBundle, c.From, c.From+c.N-1, c.Heads, c.Rows, c.Cols, len(stored))
	}
	out := make([]float32, 0, c.Heads*c.N*c.Cols)
	for h := range c.Heads {
		block := stored[(h*c.Rows+c.From)*c.Cols : (h*c.Rows+c.From+c.N)*c.Cols]
		if !c.Transposed {
			out = append(out, block...)
			continue
		}
		for j := range c.Cols {
			for i := range c.N {
				out = append(out, block[i*c.Cols+j])
			}
		}
	}
	return out, nil
}

// Table is one host table: Rows by Cols float32 values at Offset in
// tables.bin. Row p of a position table holds the value for the token at
// position p (counting from 1, as the programs do).
type Table struct {
	Name    string `json:"name"`
	Rows    int    `json:"rows"`
	Cols    int    `json:"cols"`
	Offset  int64  `json:"offset"`
	Meaning string `json:"meaning"`
}

// Bundle is a manifest, its programs by name, and its tables' data.
type Bundle struct {
	Manifest Manifest
	Programs map[string]*lang.Program
	Tables   []byte
}

// Program returns the program of the given name.
func (b *Bundle) Program(name string) (*lang.Program, error) {
	p, ok := b.Programs[name]
	if !ok {
		return nil, fmt.Errorf("%w: no program %q", ErrBundle, name)
	}
	return p, nil
}

// Names lists the programs in running order: the embedding, the kinds, the
// head.
func (b *Bundle) Names() []string {
	out := []string{b.Manifest.Embed.Name}
	for _, k := range b.Manifest.Kinds {
		out = append(out, k.Name)
	}
	return append(out, b.Manifest.Head.Name)
}

// Write writes the bundle into dir, creating it: WritePrograms, then
// WriteManifest.
func (b *Bundle) Write(dir string) error {
	if err := b.WritePrograms(dir); err != nil {
		return err
	}
	return b.WriteManifest(dir)
}

// WritePrograms writes the bundle's program files and host tables into
// dir, creating it: the part of a bundle whose size does not grow with
// depth.
func (b *Bundle) WritePrograms(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	m := b.Manifest
	files := map[string]string{m.Embed.Name: m.Embed.File, m.Head.Name: m.Head.File}
	for _, k := range m.Kinds {
		files[k.Name] = k.File
	}
	for name, file := range files {
		if file == "" || filepath.Base(file) != file {
			return fmt.Errorf("%w: program %q has file %q, not a file of the bundle", ErrBundle, name, file)
		}
		p, err := b.Program(name)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, file), []byte(lang.Format(p)), 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "tables.bin"), b.Tables, 0o644)
}

// WriteManifest writes manifest.json into dir, which must exist: the
// part of a bundle that binds every layer.
func (b *Bundle) WriteManifest(dir string) error {
	js, err := json.MarshalIndent(b.Manifest, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "manifest.json"), append(js, '\n'), 0o644)
}

// Read reads a bundle from dir and checks it (Check).
func Read(dir string) (*Bundle, error) {
	js, err := os.ReadFile(filepath.Join(dir, "manifest.json"))
	if err != nil {
		return nil, err
	}
	b := &Bundle{Programs: map[string]*lang.Program{}}
	if err := json.Unmarshal(js, &b.Manifest); err != nil {
		return nil, fmt.Errorf("%w: manifest.json: %w", ErrBundle, err)
	}
	m := &b.Manifest
	files := [][2]string{{m.Embed.Name, m.Embed.File}, {m.Head.Name, m.Head.File}}
	for _, k := range m.Kinds {
		files = append(files, [2]string{k.Name, k.File})
	}
	for _, f := range files {
		if f[1] == "" || filepath.Base(f[1]) != f[1] {
			return nil, fmt.Errorf("%w: program %q has file %q, not a file of the bundle", ErrBundle, f[0], f[1])
		}
		src, err := os.ReadFile(filepath.Join(dir, f[1]))
		if err != nil {
			return nil, err
		}
		p, err := lang.Parse(string(src))
		if err != nil {
			return nil, fmt.Errorf("%s: %w", f[1], err)
		}
		if p.Name != f[0] {
			return nil, fmt.Errorf("%w: %s holds program %q, the manifest says %q", ErrBundle, f[1], p.Name, f[0])
		}
		b.Programs[f[0]] = p
	}
	if b.Tables, err = os.ReadFile(filepath.Join(dir, "tables.bin")); err != nil {
		return nil, err
	}
	return b, b.Check()
}

// Check checks the manifest against itself and the programs: the format,
// every layer bound to a kind that lists it, and every table inside
// tables.bin.
func (b *Bundle) Check() error {
	m := &b.Manifest
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s", ErrBundle, fmt.Sprintf(format, args...))
	}
	if m.Format != Format {
		return bad("format %q, want %q", m.Format, Format)
	}
	switch d := m.Deployment; {
	case d.Kind != "decode" && d.Kind != "prefill" && d.Kind != "batched":
		return bad("deployment %q (this version runs decode, prefill and batched bundles)", d.Kind)
	case (d.Kind == "batched") != (d.Batch > 0) || d.Batch < 0:
		return bad("a %s deployment of %d sequences", d.Kind, d.Batch)
	}
	if d := m.Deployment; d.TP < 0 || d.TP > 0 && d.Kind == "prefill" {
		return bad("a %s deployment over %d chips", d.Kind, d.TP)
	}
	if m.Deployment.Tokens < 1 || m.Deployment.Tokens > m.Deployment.Ctx {
		return bad("%d tokens a step in a context of %d", m.Deployment.Tokens, m.Deployment.Ctx)
	}
	if m.Deployment.Ctx < 1 {
		return bad("a context of %d positions", m.Deployment.Ctx)
	}
	kinds := map[string]*Kind{}
	for i := range m.Kinds {
		k := &m.Kinds[i]
		if _, ok := kinds[k.Name]; ok {
			return bad("kind %q listed twice", k.Name)
		}
		kinds[k.Name] = k
	}
	for _, name := range b.Names() {
		if _, err := b.Program(name); err != nil {
			return err
		}
	}
	if len(m.Layers) == 0 {
		return bad("no layers")
	}
	for i, l := range m.Layers {
		k, ok := kinds[l.Kind]
		if l.Layer != i || !ok || !slices.Contains(k.Layers, i) {
			return bad("layer entry %d (layer %d) is bound to kind %q, which does not list it", i, l.Layer, l.Kind)
		}
	}
	for _, k := range m.Kinds {
		for _, l := range k.Layers {
			if l < 0 || l >= len(m.Layers) || m.Layers[l].Kind != k.Name {
				return bad("kind %q lists layer %d, which is not bound to it", k.Name, l)
			}
		}
	}
	for _, t := range m.Tables {
		if t.Rows < 1 || t.Cols < 1 || t.Offset < 0 || t.Offset+4*int64(t.Rows)*int64(t.Cols) > int64(len(b.Tables)) {
			return bad("table %q (%d by %d at %d) is not inside tables.bin (%d bytes)", t.Name, t.Rows, t.Cols, t.Offset, len(b.Tables))
		}
	}
	return nil
}

// Rows is the number of rows of a program's hidden state: the chunk's
// tokens in a prefill bundle, the sequences in a batched bundle, one in a
// decode bundle.
func (m *Manifest) Rows() int {
	switch m.Deployment.Kind {
	case "prefill":
		return m.Deployment.Tokens
	case "batched":
		return m.Deployment.Batch
	}
	return 1
}

// Table returns the table called name.
func (m *Manifest) Table(name string) (Table, bool) {
	for _, t := range m.Tables {
		if t.Name == name {
			return t, true
		}
	}
	return Table{}, false
}
