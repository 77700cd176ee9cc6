package rdu

import (
	"errors"
	"fmt"
	"path/filepath"

	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/safetensors"
)

// ErrLocate is wrapped by the error of a weight whose stored bytes are
// neither one range of one file nor whole tensors stacked: a tensor the
// loader transposes or reorders, which the manifest cannot bind as stored.
var ErrLocate = errors.New("the weight is not one byte range of the checkpoint")

// CheckpointLocator returns a Locator for the constants of a graph bound
// to c through resolve (nil: the constants are the stored tensors): the
// stored tensor, its file, and the byte range of its data, or of the rows
// a Source selects when they are contiguous, or the ranges of the tensors
// a Source stacks (per-expert matrices, one a tensor).
func CheckpointLocator(c *load.Checkpoint, resolve load.Resolver) Locator {
	if resolve == nil {
		resolve = load.Identity
	}
	var shards map[string]shardTensor
	find := func(name string) (Stored, error) {
		switch {
		case c.GGUF() != nil:
			f := c.GGUF()
			info, ok := f.Tensor(name)
			if !ok || info.Size < 0 {
				return Stored{}, fmt.Errorf("%w: no tensor %q of known size", ErrLocate, name)
			}
			return Stored{Tensor: name, File: c.Path(), Offset: f.DataOffset() + int64(info.Offset), Bytes: info.Size}, nil
		case c.Safetensors() != nil:
			if shards == nil {
				var err error
				if shards, err = indexShards(c.Safetensors()); err != nil {
					return Stored{}, err
				}
			}
			st, ok := shards[name]
			if !ok {
				return Stored{}, fmt.Errorf("%w: no tensor %q", ErrLocate, name)
			}
			return Stored{Tensor: name, File: st.file, Offset: st.begin, Bytes: st.end - st.begin}, nil
		}
		return Stored{}, fmt.Errorf("%w: an unknown container", ErrLocate)
	}
	return func(constant string) (Stored, error) {
		src, ok := resolve(constant)
		if !ok {
			return Stored{}, fmt.Errorf("%w: the checkpoint provides no %q", ErrLocate, constant)
		}
		if src.Transposed || src.RowOrder != nil || src.RowStep > 1 || len(src.Parts) > 0 && src.RowEnd > 0 {
			return Stored{}, fmt.Errorf("%w: %q is transposed or reordered at load from %q", ErrLocate, constant, src.Tensor)
		}
		if len(src.Parts) > 0 {
			s := Stored{Tensor: constant}
			for _, name := range src.Parts {
				p, err := find(name)
				if err != nil {
					return Stored{}, err
				}
				s.Parts = append(s.Parts, p)
				s.Bytes += p.Bytes
			}
			return s, nil
		}
		s, err := find(src.Tensor)
		if err != nil {
			return Stored{}, err
		}
		if src.RowEnd > 0 {
			t, err := c.TensorType(src.Tensor)
			if err != nil {
				return Stored{}, err
			}
			if len(t.Shape) > 2 || len(t.Shape) == 0 || t.DType.Packed() && len(t.Shape) == 1 {
				return Stored{}, fmt.Errorf("%w: rows of %q, %v", ErrLocate, src.Tensor, t)
			}
			rows := t.Shape[0]
			if src.RowStart < 0 || src.RowEnd > rows || src.RowStart >= src.RowEnd || s.Bytes%int64(rows) != 0 {
				return Stored{}, fmt.Errorf("%w: rows [%d, %d) of %q, %v", ErrLocate, src.RowStart, src.RowEnd, src.Tensor, t)
			}
			rb := s.Bytes / int64(rows)
			s.Offset += int64(src.RowStart) * rb
			s.Bytes = int64(src.RowEnd-src.RowStart) * rb
		}
		return s, nil
	}
}

type shardTensor struct {
	file       string
	begin, end int64
}

// indexShards finds, for every tensor of a safetensors directory, its shard
// and the absolute byte range of its data.
func indexShards(d *safetensors.Dir) (map[string]shardTensor, error) {
	out := map[string]shardTensor{}
	for _, name := range d.Shards() {
		path := filepath.Join(d.Path(), name)
		f, err := safetensors.Open(path)
		if err != nil {
			return nil, err
		}
		data := f.DataOffset()
		for _, t := range f.Tensors() {
			out[t.Name] = shardTensor{file: path, begin: data + t.Begin, end: data + t.End}
		}
		f.Close()
	}
	return out, nil
}
