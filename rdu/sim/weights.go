package sim

import (
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/quant"
	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/tensor"
)

// Weights reads a weight's stored bytes as its binding says.
type Weights interface {
	Read(b bundle.Binding) ([]byte, error)
}

// Files reads weights from the checkpoint files the manifest names, at
// the byte ranges it gives; a relative file name is taken from Dir.
type Files struct{ Dir string }

// Read reads b's byte range of b's file, or its parts' ranges, stacked.
func (f Files) Read(b bundle.Binding) ([]byte, error) {
	if len(b.Parts) > 0 {
		if b.Slice != nil {
			return nil, fmt.Errorf("rdu/sim: %s (%s): a slice of a stacked tensor", b.Name, b.Tensor)
		}
		var out []byte
		for _, p := range b.Parts {
			data, err := f.Read(bundle.Binding{Name: b.Name, Tensor: p.Tensor, File: p.File, Offset: p.Offset, Bytes: p.Bytes})
			if err != nil {
				return nil, err
			}
			out = append(out, data...)
		}
		if int64(len(out)) != b.Bytes {
			return nil, fmt.Errorf("rdu/sim: %s: parts of %d bytes for %s of %d", b.Name, len(out), b.Tensor, b.Bytes)
		}
		return out, nil
	}
	if b.File == "" || b.Bytes <= 0 {
		return nil, fmt.Errorf("rdu/sim: %s (%s) has no byte range in a checkpoint file", b.Name, b.Tensor)
	}
	path := b.File
	if !filepath.IsAbs(path) && f.Dir != "" {
		path = filepath.Join(f.Dir, path)
	}
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	off, n, count, stride := b.Offset, b.Bytes, int64(1), int64(0)
	if sl := b.Slice; sl != nil {
		if err := checkRuns(b); err != nil {
			return nil, err
		}
		off, n, count, stride = b.Offset+sl.Offset, sl.Bytes, sl.Count, sl.Stride
	}
	buf := make([]byte, n*count)
	for i := range count {
		at := off + i*stride
		if _, err := fh.ReadAt(buf[i*n:(i+1)*n], at); err != nil {
			if err == io.EOF {
				return nil, fmt.Errorf("rdu/sim: %s: %s ends before bytes %d…%d of %s", b.Name, path, at, at+n, b.Tensor)
			}
			return nil, err
		}
	}
	return buf, nil
}

// checkRuns checks that a slice's byte runs lie inside its tensor.
func checkRuns(b bundle.Binding) error {
	sl := b.Slice
	if sl.Count < 1 || sl.Bytes < 1 || sl.Offset < 0 || sl.Stride < 0 || sl.Offset+(sl.Count-1)*sl.Stride+sl.Bytes > b.Bytes {
		return fmt.Errorf("rdu/sim: %s: a slice of %d runs of %d bytes every %d from %d outside %s's %d bytes", b.Name, sl.Count, sl.Bytes, sl.Stride, sl.Offset, b.Tensor, b.Bytes)
	}
	return nil
}

// runs gathers a slice's byte runs from a whole tensor's bytes.
func runs(b bundle.Binding, data []byte) ([]byte, error) {
	if b.Slice == nil {
		return data, nil
	}
	b.Bytes = int64(len(data))
	if err := checkRuns(b); err != nil {
		return nil, err
	}
	sl := b.Slice
	out := make([]byte, 0, sl.Bytes*sl.Count)
	for i := range sl.Count {
		at := sl.Offset + i*sl.Stride
		out = append(out, data[at:at+sl.Bytes]...)
	}
	return out, nil
}

// Consts are weights given in memory, by the graph constant's name.
type Consts interface {
	Lookup(name string) (tensor.Tensor, bool)
}

// InMemory reads weights from constants in memory (an interpreter's).
type InMemory struct{ Consts Consts }

// Read returns the constant b binds.
func (m InMemory) Read(b bundle.Binding) ([]byte, error) {
	t, ok := m.Consts.Lookup(b.Const)
	if !ok {
		return nil, fmt.Errorf("rdu/sim: %s: no constant %q", b.Name, b.Const)
	}
	if t.Type.DType.String() != b.DType || !t.Type.Shape.Equal(poot.Shape(b.Shape)) {
		return nil, fmt.Errorf("rdu/sim: %s: constant %q is %v, the manifest says %s%v", b.Name, b.Const, t.Type, b.DType, b.Shape)
	}
	return runs(b, t.Data)
}

// decode turns a weight's stored bytes into Real values, in the stored
// order, row by row (a packed format's blocks run along the last axis).
func decode(b bundle.Binding, data []byte) ([]float32, error) {
	dt, err := poot.ParseDType(b.DType)
	if err != nil {
		return nil, fmt.Errorf("rdu/sim: %s: %w", b.Name, err)
	}
	if b.Slice != nil {
		b.Shape = b.Slice.Shape
	}
	if len(b.Shape) == 0 {
		return nil, fmt.Errorf("rdu/sim: %s: no stored shape", b.Name)
	}
	shape := poot.Shape(b.Shape)
	n := shape.Size()
	last := b.Shape[len(b.Shape)-1]
	if last < 1 || n < 1 || n > 1<<31 {
		return nil, fmt.Errorf("rdu/sim: %s: stored shape %v", b.Name, b.Shape)
	}
	rowBytes := dt.RowBytes(int64(last))
	rows := int(n) / last
	if rowBytes < 0 || int64(len(data)) != rowBytes*int64(rows) {
		return nil, fmt.Errorf("rdu/sim: %s: %d bytes for %s%v", b.Name, len(data), b.DType, b.Shape)
	}
	out := make([]float32, n)
	for r := range rows {
		src := data[int64(r)*rowBytes : int64(r+1)*rowBytes]
		if err := quant.DequantizeRow(dt, out[r*last:(r+1)*last], src); err != nil {
			return nil, fmt.Errorf("rdu/sim: %s: %w", b.Name, err)
		}
	}
	return out, nil
}
