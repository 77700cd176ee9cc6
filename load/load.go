// Package load opens checkpoints and binds a traced graph's constants to the
// tensors they store, as they are stored.
//
// One loader serves both containers: a GGUF file or a Hugging Face
// safetensors directory, memory-mapped, so that a bound constant is a view
// of the file, never a widened copy. Binding retypes each constant to its
// stored dtype: a contraction then reads the weight as stored (half
// precision or packed blocks), a gather converts only the rows it reads, and
// any other reader gets one explicit cast (see poot.Graph.RetypeConstants).
// The few layouts a graph cannot read in place (per-expert tensors that form
// one stack, transposed matrices, Hugging Face's rotary row order) are
// rearranged at load, still in the stored dtype.
//
// Package load does not know model families: a family's weight map says
// which stored tensor each constant comes from (Source). It does not
// tokenize or run anything either.
package load

import (
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/internal/mmap"
	"github.com/pootlabs/poot/safetensors"
	"github.com/pootlabs/poot/tensor"
)

// Format names a checkpoint container.
type Format string

// The containers.
const (
	GGUF        Format = "gguf"
	Safetensors Format = "safetensors"
)

// ErrFormat reports a path that is neither a GGUF file nor a safetensors
// model directory.
var ErrFormat = errors.New("not a GGUF file or a safetensors model directory")

// ErrNotRegular is wrapped by Open's error for a path (or a file of a
// model directory) that is a device, a FIFO, a socket or a directory where
// a file belongs: such paths are refused before they are read.
var ErrNotRegular = mmap.ErrNotRegular

// ErrFault is wrapped by the error of a read that faulted because a mapped
// file was truncated or rewritten while in use (see Bind and CheckData).
var ErrFault = mmap.ErrFault

// Checkpoint is an opened GGUF file or safetensors directory. Its tensors are
// views of memory-mapped files, valid until Close.
type Checkpoint struct {
	path     string
	gf       *gguf.File
	st       *safetensors.Dir
	resident bool
}

// Open opens path: a directory is read as a Hugging Face safetensors model
// directory, a regular file as GGUF. Anything else (a device such as
// /dev/zero, a FIFO, a socket, also through a symbolic link) is refused
// before it is read, with an *mmap.FileError; an empty file or one without
// the GGUF magic is an error wrapping ErrFormat; a malformed container is
// the container's own typed error, naming the file and the byte offset.
// The bytes are held as Auto says.
func Open(path string) (*Checkpoint, error) { return OpenWith(path, Auto) }

// OpenWith is Open with the weights held as r says.
func OpenWith(path string, r Residency) (*Checkpoint, error) {
	c, err := open(path)
	if err != nil {
		return nil, err
	}
	if err := c.hold(r); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func open(path string) (*Checkpoint, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	if fi.IsDir() {
		d, err := safetensors.OpenDir(path)
		if err != nil {
			return nil, err
		}
		return &Checkpoint{path: path, st: d}, nil
	}
	magic, err := mmap.ReadHead(path, len(gguf.Magic))
	switch {
	case err != nil:
		return nil, fmt.Errorf("load: %w", err)
	case len(magic) == 0:
		return nil, fmt.Errorf("load: %s: %w (the file is empty)", path, ErrFormat)
	case string(magic) != gguf.Magic:
		return nil, fmt.Errorf("load: %s: %w", path, ErrFormat)
	}
	g, err := gguf.Open(path)
	if err != nil {
		return nil, err
	}
	return &Checkpoint{path: path, gf: g}, nil
}

// FromGGUF wraps a parsed GGUF file (from gguf.Parse, say) as a
// checkpoint; path is only for messages. Close closes f.
func FromGGUF(f *gguf.File, path string) *Checkpoint { return &Checkpoint{path: path, gf: f} }

// Close releases the memory maps. Tensors obtained from the checkpoint must
// not be used afterwards.
func (c *Checkpoint) Close() error {
	if c.gf != nil {
		return c.gf.Close()
	}
	return c.st.Close()
}

// Path is the path the checkpoint was opened from.
func (c *Checkpoint) Path() string { return c.path }

// Format says which container the checkpoint is.
func (c *Checkpoint) Format() Format {
	if c.gf != nil {
		return GGUF
	}
	return Safetensors
}

// GGUF returns the GGUF file, or nil for a safetensors directory.
func (c *Checkpoint) GGUF() *gguf.File { return c.gf }

// Safetensors returns the safetensors directory, or nil for a GGUF file.
func (c *Checkpoint) Safetensors() *safetensors.Dir { return c.st }

// HFConfig returns the parsed config.json of a safetensors directory, or nil.
func (c *Checkpoint) HFConfig() map[string]any {
	if c.st == nil {
		return nil
	}
	return c.st.Config()
}

// TensorNames lists the stored tensors in file order.
func (c *Checkpoint) TensorNames() []string {
	var names []string
	if c.gf != nil {
		for _, t := range c.gf.Tensors() {
			names = append(names, t.Name)
		}
		return names
	}
	for _, t := range c.st.Tensors() {
		names = append(names, t.Name)
	}
	return names
}

// NumTensors is the number of stored tensors.
func (c *Checkpoint) NumTensors() int {
	if c.gf != nil {
		return c.gf.NumTensors()
	}
	return c.st.NumTensors()
}

// TensorShape returns a stored tensor's shape in poot order, whatever its
// dtype, and whether the checkpoint stores the tensor.
func (c *Checkpoint) TensorShape(name string) (poot.Shape, bool) {
	if c.gf != nil {
		info, ok := c.gf.Tensor(name)
		return info.Shape(), ok
	}
	info, ok := c.st.Tensor(name)
	return info.Shape.Clone(), ok
}

// TensorType returns a stored tensor's type with its shape in poot order
// (outermost first: a weight is [out_features, in_features]).
func (c *Checkpoint) TensorType(name string) (poot.TensorType, error) {
	if c.gf != nil {
		info, ok := c.gf.Tensor(name)
		if !ok {
			return poot.TensorType{}, &BindError{Tensor: name, Err: ErrMissing}
		}
		return info.TensorType()
	}
	info, ok := c.st.Tensor(name)
	if !ok {
		return poot.TensorType{}, &BindError{Tensor: name, Err: ErrMissing}
	}
	return info.TensorType()
}

// Tensor returns a stored tensor as a view of the mapped file.
func (c *Checkpoint) Tensor(name string) (tensor.Tensor, error) {
	t, err := c.TensorType(name)
	if err != nil {
		return tensor.Tensor{}, err
	}
	var data []byte
	if c.gf != nil {
		data, err = c.gf.TensorData(name)
	} else {
		data, err = c.st.TensorData(name)
	}
	if err != nil {
		return tensor.Tensor{}, err
	}
	return tensor.View(t, data)
}

// Source says where a graph constant's data are stored. Exactly one of
// Tensor and Parts is set.
type Source struct {
	// Tensor is the stored tensor's name.
	Tensor string
	// RowStart and RowEnd, when RowEnd > 0, select rows [RowStart, RowEnd)
	// of each matrix of Tensor (axis -2, after Transposed): how a fused QKV
	// projection is split (a zero-copy view for a plain matrix), or the
	// gate half of a stack of fused expert projections. RowStep, when
	// above 1, keeps every RowStep-th row from RowStart (gate and up
	// projections fused with interleaved rows, as gpt-oss stores them).
	RowStart, RowEnd, RowStep int
	// Columns makes the row range select along the last axis instead: a
	// stack of fused bias vectors [E, 2F] cut into [E, F] halves or
	// interleaved columns.
	Columns bool
	// Squeeze says the stored tensor has unit axes the constant lacks
	// (PyTorch's Conv1d filters [C, 1, K] for a [C, K] constant): the same
	// elements in the same order, bound as a view.
	Squeeze bool
	// Parts, instead of Tensor, lists tensors of one shape and dtype that
	// are stacked along a new leading axis (per-expert matrices stored one
	// tensor an expert). The stack is copied once, in the stored dtype.
	Parts []string
	// Transposed says the stored matrices are [in, out] (the last two
	// axes; a stack of experts [E, in, out] is transposed expert by
	// expert); they are transposed at load (plain dtypes only).
	Transposed bool
	// RowOrder, when set, reorders the rows at load: row i of the constant
	// is stored row RowOrder[i] (Hugging Face's rotary layout of Q and K).
	RowOrder []int
}

// Resolver maps a graph constant's name to where its data are stored, and
// reports false for a constant the checkpoint does not provide.
type Resolver func(constant string) (Source, bool)

// Identity resolves every constant to the stored tensor of the same name
// (GGUF files store the canonical names).
func Identity(name string) (Source, bool) { return Source{Tensor: name}, true }

// Names adapts a name mapping to a Resolver.
func Names(names func(string) (string, bool)) Resolver {
	return func(c string) (Source, bool) {
		s, ok := names(c)
		return Source{Tensor: s}, ok
	}
}

// Bind binds every constant of g to its stored tensor through resolve (nil
// means Identity). It returns the graph retyped to read the stored dtypes
// (see poot.Graph.RetypeConstants) and the tensors by constant name. A
// constant the resolver does not know, a missing tensor, a shape mismatch or
// a stored dtype the graph cannot read is a *BindError naming the constant,
// the tensor and both types.
func Bind(g *poot.Graph, c *Checkpoint, resolve Resolver) (*poot.Graph, map[string]tensor.Tensor, error) {
	if resolve == nil {
		resolve = Identity
	}
	consts := make(map[string]tensor.Tensor)
	dtypes := make(map[string]poot.DType)
	for _, id := range g.Inputs(poot.Const) {
		v := g.Value(id)
		src, ok := resolve(v.Name)
		if !ok {
			return nil, nil, &BindError{Const: v.Name, Want: v.Type, Err: ErrUnmapped}
		}
		// Stacking, transposing and reordering copy mapped bytes: a file
		// truncated meanwhile faults here, which Guard makes an error.
		var t tensor.Tensor
		err := mmap.Guard("binding "+v.Name+" from "+c.path, func() (err error) {
			t, err = c.materialize(src)
			return err
		})
		if err != nil {
			var be *BindError
			if errors.As(err, &be) {
				be.Const, be.Want = v.Name, v.Type
				return nil, nil, be
			}
			return nil, nil, &BindError{Const: v.Name, Tensor: src.name(), Want: v.Type, Err: err}
		}
		if src.Squeeze && !t.Type.Shape.Equal(v.Type.Shape) && Squeezed(t.Type.Shape).Equal(Squeezed(v.Type.Shape)) {
			if t, err = tensor.View(poot.TensorType{Shape: v.Type.Shape.Clone(), DType: t.Type.DType}, t.Data); err != nil {
				return nil, nil, &BindError{Const: v.Name, Tensor: src.name(), Want: v.Type, Err: err}
			}
		}
		if !t.Type.Shape.Equal(v.Type.Shape) {
			return nil, nil, &BindError{Const: v.Name, Tensor: src.name(), Want: v.Type, Got: t.Type, Err: ErrShape}
		}
		consts[v.Name] = t
		if t.Type.DType != v.Type.DType {
			dtypes[v.Name] = t.Type.DType
		}
	}
	bound, err := g.RetypeConstants(dtypes)
	if err != nil {
		return nil, nil, &BindError{Err: fmt.Errorf("%w: %w", ErrDType, err)}
	}
	return bound, consts, nil
}

func (s Source) name() string {
	if s.Tensor != "" || len(s.Parts) == 0 {
		return s.Tensor
	}
	return s.Parts[0] + "…"
}

// materialize produces the tensor a Source describes: a view where the
// layout allows, otherwise one copy in the stored dtype.
func (c *Checkpoint) materialize(src Source) (tensor.Tensor, error) {
	var t tensor.Tensor
	var err error
	switch {
	case len(src.Parts) > 0 && src.Tensor != "":
		return t, fmt.Errorf("source names both a tensor and parts")
	case len(src.Parts) > 0:
		t, err = c.stack(src.Parts)
	default:
		t, err = c.Tensor(src.Tensor)
	}
	if err != nil {
		return t, err
	}
	if src.Transposed {
		if t, err = transpose(t); err != nil {
			return t, &BindError{Tensor: src.name(), Got: t.Type, Err: err}
		}
	}
	if src.RowEnd > 0 {
		slice := sliceRows
		if src.Columns {
			slice = sliceColumns
		}
		if t, err = slice(t, src.RowStart, src.RowEnd, src.RowStep); err != nil {
			return t, &BindError{Tensor: src.name(), Got: t.Type, Err: err}
		}
	}
	if src.RowOrder != nil {
		if t, err = reorderRows(t, src.RowOrder); err != nil {
			return t, &BindError{Tensor: src.name(), Got: t.Type, Err: err}
		}
	}
	return t, nil
}

func (c *Checkpoint) stack(parts []string) (tensor.Tensor, error) {
	var first tensor.Tensor
	var data []byte
	for i, p := range parts {
		t, err := c.Tensor(p)
		if err != nil {
			return t, err
		}
		if i == 0 {
			first = t
			data = make([]byte, 0, len(t.Data)*len(parts))
		} else if !t.Type.Equal(first.Type) {
			return t, &BindError{Tensor: p, Want: first.Type, Got: t.Type, Err: ErrShape}
		}
		data = append(data, t.Data...)
	}
	shape := append(poot.Shape{len(parts)}, first.Type.Shape...)
	return tensor.View(poot.TensorType{Shape: shape, DType: first.Type.DType}, data)
}

// rowBytes is the size of one row (one index of the leading axis).
func rowBytes(t tensor.Tensor) int {
	if len(t.Type.Shape) == 0 || t.Type.Shape[0] == 0 {
		return 0
	}
	return len(t.Data) / t.Type.Shape[0]
}

// sliceRows keeps rows start, start+step, … below end of each matrix of t
// (axis -2; axis 0 of a vector): a view of a matrix or a vector when the
// rows are contiguous, a copy otherwise.
func sliceRows(t tensor.Tensor, start, end, step int) (tensor.Tensor, error) {
	sh := t.Type.Shape
	axis := max(len(sh)-2, 0)
	step = max(step, 1)
	if len(sh) == 0 || start < 0 || start >= end || end > sh[axis] {
		return t, fmt.Errorf("%w: rows [%d, %d) of %v", ErrShape, start, end, t.Type)
	}
	n := (end - start + step - 1) / step
	shape := slices.Clone(sh)
	shape[axis] = n
	typ := poot.TensorType{Shape: shape, DType: t.Type.DType}
	mats := 1
	for _, d := range sh[:axis] {
		mats *= d
	}
	matBytes := len(t.Data) / mats
	rb := matBytes / sh[axis]
	if mats == 1 && step == 1 {
		return tensor.View(typ, t.Data[start*rb:end*rb])
	}
	data := make([]byte, 0, mats*n*rb)
	for m := range mats {
		for r := start; r < end; r += step {
			data = append(data, t.Data[m*matBytes+r*rb:m*matBytes+(r+1)*rb]...)
		}
	}
	return tensor.View(typ, data)
}

// Squeezed returns s without its axes of extent 1.
func Squeezed(s poot.Shape) poot.Shape {
	out := poot.Shape{}
	for _, d := range s {
		if d != 1 {
			out = append(out, d)
		}
	}
	return out
}

// sliceColumns keeps columns start, start+step, … below end of t's last
// axis (a copy).
func sliceColumns(t tensor.Tensor, start, end, step int) (tensor.Tensor, error) {
	sh := t.Type.Shape
	step = max(step, 1)
	if len(sh) == 0 || start < 0 || start >= end || end > sh[len(sh)-1] || t.Type.DType.Packed() {
		return t, fmt.Errorf("%w: columns [%d, %d) of %v", ErrShape, start, end, t.Type)
	}
	c := sh[len(sh)-1]
	n := (end - start + step - 1) / step
	es := t.Type.DType.BlockBytes()
	shape := slices.Clone(sh)
	shape[len(sh)-1] = n
	data := make([]byte, 0, len(t.Data)/c*n)
	for r := range len(t.Data) / (c * es) {
		for j := start; j < end; j += step {
			data = append(data, t.Data[(r*c+j)*es:(r*c+j+1)*es]...)
		}
	}
	return tensor.View(poot.TensorType{Shape: shape, DType: t.Type.DType}, data)
}

func reorderRows(t tensor.Tensor, order []int) (tensor.Tensor, error) {
	if len(t.Type.Shape) == 0 || len(order) != t.Type.Shape[0] {
		return t, fmt.Errorf("%w: row order of %d for %v", ErrShape, len(order), t.Type)
	}
	rb := rowBytes(t)
	data := make([]byte, len(t.Data))
	for i, r := range order {
		if r < 0 || r >= len(order) {
			return t, fmt.Errorf("%w: row %d out of range", ErrShape, r)
		}
		copy(data[i*rb:(i+1)*rb], t.Data[r*rb:(r+1)*rb])
	}
	return tensor.View(t.Type, data)
}

// transpose swaps the last two axes of t (each matrix of a stack).
func transpose(t tensor.Tensor) (tensor.Tensor, error) {
	sh := t.Type.Shape
	if len(sh) < 2 || t.Type.DType.Packed() {
		return t, fmt.Errorf("%w: cannot transpose %v at load", ErrDType, t.Type)
	}
	r, c := sh[len(sh)-2], sh[len(sh)-1]
	es := t.Type.DType.BlockBytes()
	data := make([]byte, len(t.Data))
	mat := r * c * es
	for m := 0; m < len(t.Data)/max(mat, 1); m++ {
		src, dst := t.Data[m*mat:(m+1)*mat], data[m*mat:(m+1)*mat]
		for i := range r {
			for j := range c {
				copy(dst[(j*r+i)*es:(j*r+i+1)*es], src[(i*c+j)*es:(i*c+j+1)*es])
			}
		}
	}
	shape := slices.Clone(sh)
	shape[len(sh)-2], shape[len(sh)-1] = c, r
	return tensor.View(poot.TensorType{Shape: shape, DType: t.Type.DType}, data)
}
