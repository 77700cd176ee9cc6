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
		if len(b.Slices) > 0 {
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
	if len(b.Slices) == 0 {
		buf := make([]byte, b.Bytes)
		if err := readAt(fh, buf, b.Offset, b, path); err != nil {
			return nil, err
		}
		return buf, nil
	}
	var out []byte
	for i, sl := range b.Slices {
		if err := checkRuns(b, i); err != nil {
			return nil, err
		}
		buf := make([]byte, sl.Bytes*sl.Count)
		for r := range sl.Count {
			if err := readAt(fh, buf[r*sl.Bytes:(r+1)*sl.Bytes], b.Offset+sl.Offset+r*sl.Stride, b, path); err != nil {
				return nil, err
			}
		}
		out = append(out, buf...)
	}
	return out, nil
}

// readAt fills buf from the file at offset at.
func readAt(fh *os.File, buf []byte, at int64, b bundle.Binding, path string) error {
	if _, err := fh.ReadAt(buf, at); err != nil {
		if err == io.EOF {
			return fmt.Errorf("rdu/sim: %s: %s ends before bytes %d…%d of %s", b.Name, path, at, at+int64(len(buf)), b.Tensor)
		}
		return err
	}
	return nil
}

// checkRuns checks that slice i's byte runs lie inside its tensor.
func checkRuns(b bundle.Binding, i int) error {
	sl := b.Slices[i]
	if sl.Count < 1 || sl.Bytes < 1 || sl.Offset < 0 || sl.Stride < 0 || sl.Offset+(sl.Count-1)*sl.Stride+sl.Bytes > b.Bytes {
		return fmt.Errorf("rdu/sim: %s: a slice of %d runs of %d bytes every %d from %d outside %s's %d bytes", b.Name, sl.Count, sl.Bytes, sl.Stride, sl.Offset, b.Tensor, b.Bytes)
	}
	return nil
}

// runs gathers a binding's slices' byte runs, one slice after another,
// from a whole tensor's bytes.
func runs(b bundle.Binding, data []byte) ([]byte, error) {
	if len(b.Slices) == 0 {
		return data, nil
	}
	b.Bytes = int64(len(data))
	var out []byte
	for i, sl := range b.Slices {
		if err := checkRuns(b, i); err != nil {
			return nil, err
		}
		for r := range sl.Count {
			at := sl.Offset + r*sl.Stride
			out = append(out, data[at:at+sl.Bytes]...)
		}
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
// A chip's slices are decoded one by one and joined along the stored axis
// they cut.
func decode(b bundle.Binding, data []byte) ([]float32, error) {
	if len(b.Slices) == 0 {
		return decodeRuns(b, b.Shape, data)
	}
	shape, ok := b.StoredShape()
	if !ok {
		return nil, fmt.Errorf("rdu/sim: %s: slices that do not join into a part of %s%v", b.Name, b.DType, b.Shape)
	}
	cut := b.StoredCut()
	var parts [][]float32
	for _, sl := range b.Slices {
		n := sl.Bytes * sl.Count
		if n < 0 || n > int64(len(data)) {
			return nil, fmt.Errorf("rdu/sim: %s: %d bytes for its slices", b.Name, len(data))
		}
		part, err := decodeRuns(b, sl.Shape, data[:n])
		if err != nil {
			return nil, err
		}
		parts, data = append(parts, part), data[n:]
	}
	if len(data) != 0 {
		return nil, fmt.Errorf("rdu/sim: %s: %d bytes past its slices", b.Name, len(data))
	}
	var out []float32
	if cut == 0 || len(shape) == 1 {
		for _, p := range parts {
			out = append(out, p...)
		}
		return out, nil
	}
	for r := range shape[0] {
		for i, p := range parts {
			w := b.Slices[i].Shape[1]
			out = append(out, p[r*w:(r+1)*w]...)
		}
	}
	return out, nil
}

// decodeRuns decodes the bytes of a stored shape.
func decodeRuns(b bundle.Binding, shape poot.Shape, data []byte) ([]float32, error) {
	dt, err := poot.ParseDType(b.DType)
	if err != nil {
		return nil, fmt.Errorf("rdu/sim: %s: %w", b.Name, err)
	}
	if len(shape) == 0 {
		return nil, fmt.Errorf("rdu/sim: %s: no stored shape", b.Name)
	}
	n := shape.Size()
	last := shape[len(shape)-1]
	if last < 1 || n < 1 || n > 1<<31 {
		return nil, fmt.Errorf("rdu/sim: %s: stored shape %v", b.Name, shape)
	}
	rowBytes := dt.RowBytes(int64(last))
	rows := int(n) / last
	if rowBytes < 0 || int64(len(data)) != rowBytes*int64(rows) {
		return nil, fmt.Errorf("rdu/sim: %s: %d bytes for %s%v", b.Name, len(data), b.DType, shape)
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
