package gguf

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"math/bits"
	"slices"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/mmap"
)

// Magic is the first four bytes of every GGUF file.
const Magic = "GGUF"

// DefaultAlignment is the data alignment used when general.alignment is
// absent.
const DefaultAlignment = 32

// KeyAlignment is the metadata key that overrides DefaultAlignment.
const KeyAlignment = "general.alignment"

// KeyArchitecture is the metadata key naming the model family.
const KeyArchitecture = "general.architecture"

// MaxDims is the most dimensions a GGUF tensor may have (GGML_MAX_DIMS).
const MaxDims = 4

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name   string
	Dims   []uint64 // GGUF order: Dims[0] (ne0) is the contiguous axis
	Type   GGMLType
	Offset uint64 // from the start of the data section
	Size   int64  // bytes of data, or -1 when Type's layout is unknown
}

// Elements is the number of elements (the product of the dims).
func (t TensorInfo) Elements() int64 {
	n := int64(1)
	for _, d := range t.Dims {
		n *= int64(d) // validated by Parse not to overflow
	}
	return n
}

// Shape returns the dims in poot order, outermost first: GGUF [64, 32] is
// poot [32, 64].
func (t TensorInfo) Shape() poot.Shape {
	s := make(poot.Shape, len(t.Dims))
	for i, d := range t.Dims {
		s[len(s)-1-i] = int(d)
	}
	return s
}

// DType returns the poot element type of the tensor, or an
// *UnsupportedTypeError when poot has none for its ggml type.
func (t TensorInfo) DType() (poot.DType, error) {
	d, ok := t.Type.DType()
	if !ok {
		return poot.Invalid, &UnsupportedTypeError{Tensor: t.Name, Type: t.Type}
	}
	return d, nil
}

// TensorType returns the tensor's poot type (dtype and poot-order shape).
func (t TensorInfo) TensorType() (poot.TensorType, error) {
	d, err := t.DType()
	if err != nil {
		return poot.TensorType{}, err
	}
	return poot.TensorType{Shape: t.Shape(), DType: d}, nil
}

// File is a parsed GGUF file. Its metadata and tensor table are plain Go
// values; tensor data is a view into the underlying bytes (the memory map
// when the File came from Open). A File is safe for concurrent use, except
// that nothing may use it, or slices obtained from TensorData, after Close.
type File struct {
	version    uint32
	alignment  int
	dataOffset int64

	kvs         []KV
	kvIndex     map[string]int
	tensors     []TensorInfo
	tensorIndex map[string]int

	m *mmap.Map // the whole file: a memory map from Open, or Parse's bytes
}

// Open memory-maps and parses the GGUF file at path. The File owns the map;
// call Close to release it. A path that is not a regular file is refused
// (an *mmap.FileError); a malformed file is a *FormatError naming path.
// Parsing reads the mapping under mmap.Guard, so a file truncated meanwhile
// is an *mmap.FaultError, not a crash.
func Open(path string) (*File, error) {
	m, err := mmap.Open(path)
	if err != nil {
		return nil, fmt.Errorf("gguf: %w", err)
	}
	var f *File
	err = mmap.Guard("parsing "+path, func() (err error) {
		f, err = parse(m)
		return err
	})
	if err != nil {
		m.Close()
		var fe *FormatError
		if errors.As(err, &fe) {
			fe.Path = path
			return nil, fe
		}
		return nil, fmt.Errorf("gguf: %w", err)
	}
	return f, nil
}

// Close releases the memory map of a File from Open; for a File from Parse it
// only marks the File closed. Data slices obtained earlier become invalid.
// Closing twice is not an error.
func (f *File) Close() error {
	if f.m.Closed() {
		return nil
	}
	return f.m.Close()
}

// Resident copies the file's bytes out of its memory map into private
// memory backed by huge pages where the system has them, and drops the map
// (see load.Copied): decode streams weights faster from there. Tensor data
// obtained before must not be used afterwards. For a File from Parse it
// does nothing.
func (f *File) Resident() error {
	if err := f.m.Resident(); err != nil {
		return fmt.Errorf("gguf: %w", err)
	}
	return nil
}

// Size is the file's length in bytes.
func (f *File) Size() int64 { return int64(f.m.Len()) }

// Parse reads a GGUF file held in data. The File keeps data (tensor data are
// views into it), so data must not change while the File is in use.
func Parse(data []byte) (*File, error) { return parse(mmap.FromBytes(data)) }

func parse(m *mmap.Map) (*File, error) {
	data := m.Bytes()
	d := &decoder{buf: data}
	magic, err := d.take(4, "magic")
	if err != nil {
		return nil, err
	}
	if string(magic) != Magic {
		return nil, d.errAt(0, "magic is %q, not %q", magic, Magic)
	}
	version, err := d.u32("version")
	if err != nil {
		return nil, err
	}
	switch {
	case version == 2 || version == 3:
	case version == 1:
		return nil, d.errAt(4, "GGUF version 1 is not supported")
	case bits.ReverseBytes32(version) == 2 || bits.ReverseBytes32(version) == 3:
		return nil, d.errAt(4, "big-endian GGUF is not supported")
	default:
		return nil, d.errAt(4, "unknown GGUF version %d", version)
	}
	// A tensor info takes at least 8 (name length) + 4 (n_dims) + 4 (type) +
	// 8 (offset) bytes; a key/value at least 8 (key length) + 4 (type) + 1.
	nTensors, err := d.count(24, "tensor count")
	if err != nil {
		return nil, err
	}
	nKV, err := d.count(13, "metadata count")
	if err != nil {
		return nil, err
	}

	f := &File{version: version, alignment: DefaultAlignment, m: m}
	f.kvs = make([]KV, 0, prealloc(nKV))
	f.kvIndex = make(map[string]int, prealloc(nKV))
	for range nKV {
		start := d.off
		key, err := d.str("key")
		if err != nil {
			return nil, err
		}
		if _, dup := f.kvIndex[key]; dup {
			return nil, d.errAt(start, "duplicate key %q", key)
		}
		t, err := d.valueType("value type of " + key)
		if err != nil {
			return nil, err
		}
		v, err := d.value(t, 0)
		if err != nil {
			return nil, err
		}
		if key == KeyAlignment {
			a, ok := v.AsUint()
			if !ok || a == 0 || a&(a-1) != 0 || a > 1<<30 {
				return nil, d.errAt(start, "%s is %s, want a power of two up to 2^30", KeyAlignment, v)
			}
			f.alignment = int(a)
		}
		f.kvIndex[key] = len(f.kvs)
		f.kvs = append(f.kvs, KV{Key: key, Value: v})
	}

	f.tensors = make([]TensorInfo, 0, prealloc(nTensors))
	f.tensorIndex = make(map[string]int, prealloc(nTensors))
	infoStarts := make([]int, 0, prealloc(nTensors))
	for range nTensors {
		start := d.off
		t, err := d.tensorInfo()
		if err != nil {
			return nil, err
		}
		if _, dup := f.tensorIndex[t.Name]; dup {
			return nil, d.errAt(start, "duplicate tensor name %q", t.Name)
		}
		f.tensorIndex[t.Name] = len(f.tensors)
		f.tensors = append(f.tensors, t)
		infoStarts = append(infoStarts, start)
	}

	// The data section starts at the next multiple of the alignment. A file
	// whose tensors are all empty may end before it.
	dataOff := (int64(d.off) + int64(f.alignment) - 1) / int64(f.alignment) * int64(f.alignment)
	f.dataOffset = dataOff
	dataLen := int64(0)
	if dataOff < int64(len(data)) {
		dataLen = int64(len(data)) - dataOff
	}
	for i, t := range f.tensors {
		if t.Offset%uint64(f.alignment) != 0 {
			return nil, d.errAt(infoStarts[i], "tensor %q offset %d is not a multiple of the alignment %d", t.Name, t.Offset, f.alignment)
		}
		if t.Size < 0 {
			continue
		}
		if t.Offset > uint64(dataLen) || uint64(t.Size) > uint64(dataLen)-t.Offset {
			return nil, d.errAt(infoStarts[i], "tensor %q data [%d, +%d) runs past the end of the data section (%d bytes at file offset %d)",
				t.Name, t.Offset, t.Size, dataLen, dataOff)
		}
	}
	if err := checkOverlaps(f.tensors, infoStarts, dataOff); err != nil {
		return nil, err
	}
	return f, nil
}

// tensorInfo decodes one entry of the tensor table and validates what can be
// checked locally: dims, type geometry and the byte size.
func (d *decoder) tensorInfo() (TensorInfo, error) {
	start := d.off
	name, err := d.str("tensor name")
	if err != nil {
		return TensorInfo{}, err
	}
	nDims, err := d.u32("dimension count of " + name)
	if err != nil {
		return TensorInfo{}, err
	}
	if nDims > MaxDims {
		return TensorInfo{}, d.errAt(d.off-4, "tensor %q has %d dimensions, at most %d allowed", name, nDims, MaxDims)
	}
	dims := make([]uint64, nDims)
	elems := uint64(1)
	for i := range dims {
		if dims[i], err = d.u64("dimension of " + name); err != nil {
			return TensorInfo{}, err
		}
		if dims[i] > math.MaxInt {
			return TensorInfo{}, d.errAt(d.off-8, "tensor %q dimension %d is %d, too large", name, i, dims[i])
		}
		hi, lo := bits.Mul64(elems, dims[i])
		if hi != 0 || lo > 1<<62 {
			return TensorInfo{}, d.errAt(d.off-8, "tensor %q has more than 2^62 elements", name)
		}
		elems = lo
	}
	typ, err := d.u32("type of " + name)
	if err != nil {
		return TensorInfo{}, err
	}
	offset, err := d.u64("data offset of " + name)
	if err != nil {
		return TensorInfo{}, err
	}
	t := TensorInfo{Name: name, Dims: dims, Type: GGMLType(typ), Offset: offset, Size: -1}
	if info, ok := ggmlInfos[t.Type]; ok {
		ne0 := uint64(1)
		if len(dims) > 0 {
			ne0 = dims[0]
		}
		if ne0%info.blockElems != 0 {
			return TensorInfo{}, d.errAt(start, "tensor %q: first dimension %d is not a multiple of the %s block size %d", name, ne0, t.Type, info.blockElems)
		}
		hi, size := bits.Mul64(elems/info.blockElems, info.blockBytes)
		if hi != 0 || size > math.MaxInt64 {
			return TensorInfo{}, d.errAt(start, "tensor %q is too large", name)
		}
		t.Size = int64(size)
	}
	return t, nil
}

// checkOverlaps rejects tensors whose non-empty data ranges intersect.
func checkOverlaps(ts []TensorInfo, infoStarts []int, dataOff int64) error {
	order := make([]int, 0, len(ts))
	for i, t := range ts {
		if t.Size > 0 {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		switch {
		case ts[a].Offset < ts[b].Offset:
			return -1
		case ts[a].Offset > ts[b].Offset:
			return 1
		}
		return 0
	})
	for k := 1; k < len(order); k++ {
		prev, cur := ts[order[k-1]], ts[order[k]]
		if prev.Offset+uint64(prev.Size) > cur.Offset {
			return &FormatError{Offset: int64(infoStarts[order[k]]), What: fmt.Sprintf(
				"tensor %q data at %d overlaps tensor %q data at %d (+%d)", cur.Name, cur.Offset, prev.Name, prev.Offset, prev.Size)}
		}
	}
	return nil
}

// Version is the file's GGUF version (2 or 3).
func (f *File) Version() uint32 { return f.version }

// Alignment is the data alignment in bytes (general.alignment, default 32).
func (f *File) Alignment() int { return f.alignment }

// DataOffset is the file offset at which the data section starts.
func (f *File) DataOffset() int64 { return f.dataOffset }

// KVs returns the metadata entries in file order.
func (f *File) KVs() []KV { return slices.Clone(f.kvs) }

// NumTensors is the number of entries in the tensor table.
func (f *File) NumTensors() int { return len(f.tensors) }

// Tensors returns the tensor table in file order.
func (f *File) Tensors() []TensorInfo { return slices.Clone(f.tensors) }

// Tensor returns the description of the named tensor.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.tensorIndex[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.tensors[i], true
}

// TensorData returns the named tensor's bytes as a view into the file (no
// copy). It fails with an *UnsupportedTypeError for ggml types poot does not
// support; RawTensorData serves those.
func (f *File) TensorData(name string) ([]byte, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, &TensorError{Name: name, Err: ErrTensorNotFound}
	}
	if _, err := t.DType(); err != nil {
		return nil, err
	}
	return f.RawTensorData(name)
}

// RawTensorData returns the named tensor's bytes for any ggml type whose
// layout is known, including types poot cannot compute with.
func (f *File) RawTensorData(name string) ([]byte, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, &TensorError{Name: name, Err: ErrTensorNotFound}
	}
	if f.m.Closed() {
		return nil, &TensorError{Name: name, Err: ErrClosed}
	}
	if t.Size < 0 {
		return nil, &UnsupportedTypeError{Tensor: name, Type: t.Type}
	}
	start := f.dataOffset + int64(t.Offset)
	end := start + t.Size
	return f.m.Bytes()[start:end:end], nil
}

// littleEndian is shared by the writer.
var littleEndian = binary.LittleEndian
