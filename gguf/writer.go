package gguf

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/atomicfile"
)

// WriterTensor is one tensor for Write. Its element type is DType when that
// is valid; otherwise GGMLType is written as is, which lets tools copy
// tensors of types poot cannot compute with.
type WriterTensor struct {
	Name     string
	DType    poot.DType
	GGMLType GGMLType   // used only when DType is poot.Invalid
	Shape    poot.Shape // poot order, outermost first; written reversed
	// Data holds the tensor's bytes. When it is nil and Reader is not,
	// exactly the tensor's size is copied from Reader while writing, so a
	// large checkpoint need not be held in memory.
	Data   []byte
	Reader io.Reader
}

// ggmlType resolves the tensor's element type.
func (t WriterTensor) ggmlType() (GGMLType, error) {
	if t.DType == poot.Invalid {
		if !t.GGMLType.Known() {
			return 0, fmt.Errorf("unknown ggml type id %d", uint32(t.GGMLType))
		}
		return t.GGMLType, nil
	}
	g, ok := GGMLTypeOf(t.DType)
	if !ok {
		return 0, fmt.Errorf("dtype %v has no GGUF encoding", t.DType)
	}
	return g, nil
}

// WriteFile writes a GGUF file at path (see Write), atomically: the file is
// written under a temporary name in path's directory and renamed into place
// once complete, replacing what was there. A reader that has the old file
// mapped keeps it intact, and a failed write leaves path as it was.
func WriteFile(path string, kvs []KV, tensors []WriterTensor, alignment int) error {
	err := atomicfile.WriteFile(path, atomicfile.Replace, func(w io.Writer) error { return Write(w, kvs, tensors, alignment) })
	if err != nil && !strings.HasPrefix(err.Error(), "gguf:") {
		return fmt.Errorf("gguf: %w", err)
	}
	return err
}

// Write writes a GGUF version 3 file with the given metadata (in order) and
// tensors (in order, each at the next aligned offset). alignment 0 means the
// general.alignment entry of kvs if present, else DefaultAlignment; any other
// alignment must be a power of two, and a general.alignment entry is added
// when it differs from the default and kvs has none. Everything is validated
// before the first byte is written, except that a short Reader is only found
// while copying.
func Write(w io.Writer, kvs []KV, tensors []WriterTensor, alignment int) error {
	kvs, alignment, err := resolveAlignment(kvs, alignment)
	if err != nil {
		return err
	}
	seenKeys := make(map[string]bool, len(kvs))
	for _, kv := range kvs {
		if seenKeys[kv.Key] {
			return fmt.Errorf("gguf: write: duplicate key %q", kv.Key)
		}
		seenKeys[kv.Key] = true
	}

	type planned struct {
		typ    GGMLType
		dims   []uint64
		offset uint64
		size   int64
	}
	plan := make([]planned, len(tensors))
	seenNames := make(map[string]bool, len(tensors))
	var end uint64
	for i, t := range tensors {
		fail := func(format string, args ...any) error {
			return fmt.Errorf("gguf: write: tensor %q: %s", t.Name, fmt.Sprintf(format, args...))
		}
		if seenNames[t.Name] {
			return fail("duplicate name")
		}
		seenNames[t.Name] = true
		typ, err := t.ggmlType()
		if err != nil {
			return fail("%v", err)
		}
		if len(t.Shape) > MaxDims {
			return fail("rank %d exceeds %d", len(t.Shape), MaxDims)
		}
		n := t.Shape.Size()
		if n < 0 {
			return fail("invalid shape %v", t.Shape)
		}
		dims := make([]uint64, len(t.Shape))
		for j, d := range t.Shape {
			dims[len(dims)-1-j] = uint64(d)
		}
		info := ggmlInfos[typ]
		if len(dims) > 0 && dims[0]%info.blockElems != 0 {
			return fail("last axis %d is not a multiple of the %s block size %d", dims[0], typ, info.blockElems)
		}
		size := uint64(n) / info.blockElems * info.blockBytes
		if t.Data != nil && uint64(len(t.Data)) != size {
			return fail("%d data bytes, type %s%v needs %d", len(t.Data), typ, t.Shape, size)
		}
		if t.Data == nil && t.Reader == nil && size != 0 {
			return fail("neither Data nor Reader given")
		}
		offset := alignUp(end, uint64(alignment))
		plan[i] = planned{typ: typ, dims: dims, offset: offset, size: int64(size)}
		end = offset + size
	}

	// The header is built in memory: it holds the metadata (vocabularies
	// included), which is small next to the tensor data.
	var hdr []byte
	hdr = append(hdr, Magic...)
	hdr = littleEndian.AppendUint32(hdr, 3)
	hdr = littleEndian.AppendUint64(hdr, uint64(len(tensors)))
	hdr = littleEndian.AppendUint64(hdr, uint64(len(kvs)))
	for _, kv := range kvs {
		hdr = appendString(hdr, kv.Key)
		hdr = littleEndian.AppendUint32(hdr, uint32(kv.Value.typ))
		if hdr, err = appendValue(hdr, kv.Value, 0); err != nil {
			return fmt.Errorf("gguf: write: key %q: %w", kv.Key, err)
		}
	}
	for i, t := range tensors {
		p := plan[i]
		hdr = appendString(hdr, t.Name)
		hdr = littleEndian.AppendUint32(hdr, uint32(len(p.dims)))
		for _, d := range p.dims {
			hdr = littleEndian.AppendUint64(hdr, d)
		}
		hdr = littleEndian.AppendUint32(hdr, uint32(p.typ))
		hdr = littleEndian.AppendUint64(hdr, p.offset)
	}
	pad := alignUp(uint64(len(hdr)), uint64(alignment)) - uint64(len(hdr))
	hdr = append(hdr, make([]byte, pad)...)

	bw := bufio.NewWriterSize(w, 1<<20)
	if _, err := bw.Write(hdr); err != nil {
		return fmt.Errorf("gguf: write: %w", err)
	}
	var pos uint64
	zeros := make([]byte, alignment)
	for i, t := range tensors {
		p := plan[i]
		if _, err := bw.Write(zeros[:p.offset-pos]); err != nil {
			return fmt.Errorf("gguf: write: %w", err)
		}
		if t.Data != nil {
			_, err = bw.Write(t.Data)
		} else if p.size > 0 {
			var n int64
			n, err = io.CopyN(bw, t.Reader, p.size)
			if errors.Is(err, io.EOF) {
				err = fmt.Errorf("reader gave %d of %d bytes", n, p.size)
			}
		}
		if err != nil {
			return fmt.Errorf("gguf: write: tensor %q: %w", t.Name, err)
		}
		pos = p.offset + uint64(p.size)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("gguf: write: %w", err)
	}
	return nil
}

// resolveAlignment reconciles the alignment argument with a
// general.alignment entry, adding the entry when needed.
func resolveAlignment(kvs []KV, alignment int) ([]KV, int, error) {
	var have Value
	for _, kv := range kvs {
		if kv.Key == KeyAlignment {
			have = kv.Value
		}
	}
	if have.ok {
		a, ok := have.AsUint()
		if !ok || a == 0 || a&(a-1) != 0 || a > 1<<30 || have.typ != TypeUint32 {
			return nil, 0, fmt.Errorf("gguf: write: %s is %s (%s), want a uint32 power of two", KeyAlignment, have, have.typeName())
		}
		if alignment == 0 {
			alignment = int(a)
		} else if uint64(alignment) != a {
			return nil, 0, fmt.Errorf("gguf: write: alignment %d contradicts %s = %d", alignment, KeyAlignment, a)
		}
		return kvs, alignment, nil
	}
	if alignment == 0 {
		alignment = DefaultAlignment
	}
	if alignment < 0 || alignment&(alignment-1) != 0 || alignment > 1<<30 {
		return nil, 0, fmt.Errorf("gguf: write: alignment %d is not a power of two up to 2^30", alignment)
	}
	if alignment != DefaultAlignment {
		kvs = append(kvs[:len(kvs):len(kvs)], KV{Key: KeyAlignment, Value: ValueOf(uint32(alignment))})
	}
	return kvs, alignment, nil
}

func alignUp(n, a uint64) uint64 { return (n + a - 1) / a * a }

func appendString(b []byte, s string) []byte {
	b = littleEndian.AppendUint64(b, uint64(len(s)))
	return append(b, s...)
}

// appendValue encodes v without its type tag (the caller writes it).
func appendValue(b []byte, v Value, depth int) ([]byte, error) {
	if !v.ok || !v.typ.Valid() {
		return nil, errors.New("invalid (zero) Value")
	}
	switch v.typ {
	case TypeString:
		return appendString(b, v.str), nil
	case TypeArray:
		return appendArray(b, v, depth)
	}
	switch valueTypeSizes[v.typ] {
	case 1:
		return append(b, byte(v.bits)), nil
	case 2:
		return littleEndian.AppendUint16(b, uint16(v.bits)), nil
	case 4:
		return littleEndian.AppendUint32(b, uint32(v.bits)), nil
	}
	return littleEndian.AppendUint64(b, v.bits), nil
}

func appendArray(b []byte, v Value, depth int) ([]byte, error) {
	if depth >= maxArrayDepth {
		return nil, fmt.Errorf("arrays nested deeper than %d", maxArrayDepth)
	}
	b = littleEndian.AppendUint32(b, uint32(v.elem))
	b = littleEndian.AppendUint64(b, uint64(v.Len()))
	switch a := v.arr.(type) {
	case []uint8:
		b = append(b, a...)
	case []int8:
		for _, x := range a {
			b = append(b, byte(x))
		}
	case []bool:
		for _, x := range a {
			if x {
				b = append(b, 1)
			} else {
				b = append(b, 0)
			}
		}
	case []uint16:
		for _, x := range a {
			b = littleEndian.AppendUint16(b, x)
		}
	case []int16:
		for _, x := range a {
			b = littleEndian.AppendUint16(b, uint16(x))
		}
	case []uint32:
		for _, x := range a {
			b = littleEndian.AppendUint32(b, x)
		}
	case []int32:
		for _, x := range a {
			b = littleEndian.AppendUint32(b, uint32(x))
		}
	case []float32:
		for _, x := range a {
			b = littleEndian.AppendUint32(b, math.Float32bits(x))
		}
	case []uint64:
		for _, x := range a {
			b = littleEndian.AppendUint64(b, x)
		}
	case []int64:
		for _, x := range a {
			b = littleEndian.AppendUint64(b, uint64(x))
		}
	case []float64:
		for _, x := range a {
			b = littleEndian.AppendUint64(b, math.Float64bits(x))
		}
	case []string:
		for _, s := range a {
			b = appendString(b, s)
		}
	case []Value:
		for i, e := range a {
			if e.typ != TypeArray || !e.ok {
				return nil, fmt.Errorf("element %d of a nested array is not an array", i)
			}
			var err error
			if b, err = appendArray(b, e, depth+1); err != nil {
				return nil, err
			}
		}
	default:
		return nil, errors.New("array without elements")
	}
	return b, nil
}
