package safetensors

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"slices"
	"strconv"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/mmap"
)

// MaxHeaderSize bounds the JSON header, as the reference implementation
// does; real headers are a few hundred kilobytes at most.
const MaxHeaderSize = 100 << 20

// MetadataKey is the header entry holding the free-form string metadata.
const MetadataKey = "__metadata__"

// TensorInfo describes one tensor of a file.
type TensorInfo struct {
	Name  string
	DType DType
	Shape poot.Shape // outermost first, as in poot
	// Begin and End delimit the tensor's bytes, relative to the start of the
	// data section (the header's data_offsets).
	Begin, End int64
}

// Elements is the number of elements (the product of the shape).
func (t TensorInfo) Elements() int64 { return t.Shape.Size() }

// TensorType returns the tensor's poot type, or an *UnsupportedDTypeError
// when poot has no such dtype.
func (t TensorInfo) TensorType() (poot.TensorType, error) {
	d, ok := t.DType.Poot()
	if !ok {
		return poot.TensorType{}, &UnsupportedDTypeError{Tensor: t.Name, DType: t.DType}
	}
	return poot.TensorType{Shape: t.Shape.Clone(), DType: d}, nil
}

// File is one parsed safetensors file. It is safe for concurrent use, except
// that nothing may use it, or data slices obtained from it, after Close.
type File struct {
	metadata   map[string]string
	tensors    []TensorInfo
	index      map[string]int
	dataOffset int64
	m          *mmap.Map // the whole file: a memory map from Open, or Parse's bytes
}

// Open memory-maps and parses the safetensors file at path. The File owns
// the map; call Close to release it. A path that is not a regular file is
// refused (an *mmap.FileError); a malformed file is a *FormatError naming
// path. Parsing reads the mapping under mmap.Guard, so a file truncated
// meanwhile is an *mmap.FaultError, not a crash.
func Open(path string) (*File, error) {
	m, err := mmap.Open(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
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
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	return f, nil
}

// Close releases the memory map of a File from Open; for a File from Parse
// it only marks the File closed. Closing twice is not an error.
func (f *File) Close() error {
	if f.m.Closed() {
		return nil
	}
	return f.m.Close()
}

// Resident copies the file's bytes out of its memory map into private
// memory, as gguf.File.Resident does; tensor data obtained before must not
// be used afterwards.
func (f *File) Resident() error {
	if err := f.m.Resident(); err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	return nil
}

type rawEntry struct {
	DType       string        `json:"dtype"`
	Shape       []json.Number `json:"shape"`
	DataOffsets []json.Number `json:"data_offsets"`
}

// Parse reads a safetensors file held in data. The File keeps data (tensor
// data are views into it), so data must not change while the File is used.
func Parse(data []byte) (*File, error) { return parse(mmap.FromBytes(data)) }

func parse(m *mmap.Map) (*File, error) {
	data := m.Bytes()
	if len(data) < 8 {
		return nil, &FormatError{Offset: 0, What: fmt.Sprintf("file is %d bytes, shorter than the 8-byte header length", len(data))}
	}
	n := binary.LittleEndian.Uint64(data)
	if n > MaxHeaderSize || n > uint64(len(data)-8) {
		return nil, &FormatError{Offset: 0, What: fmt.Sprintf("header length %d exceeds the file (%d bytes) or the %d-byte limit", n, len(data), MaxHeaderSize)}
	}
	header := data[8 : 8+n]
	f := &File{dataOffset: int64(8 + n), m: m, index: map[string]int{}}
	dataLen := int64(len(data)) - f.dataOffset

	// The header is walked token by token so that duplicate names, which
	// encoding/json would silently merge, are caught, and file order kept.
	dec := json.NewDecoder(bytes.NewReader(header))
	dec.UseNumber()
	at := func(off int64, format string, args ...any) error {
		return &FormatError{Offset: 8 + off, What: fmt.Sprintf(format, args...)}
	}
	jsonErr := func(err error) error {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return at(se.Offset, "header JSON: %v", err)
		}
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return at(int64(len(header)), "header JSON ends early")
		}
		return at(dec.InputOffset(), "header JSON: %v", err)
	}
	tok, err := dec.Token()
	if err != nil {
		return nil, jsonErr(err)
	}
	if tok != json.Delim('{') {
		return nil, at(0, "header is not a JSON object")
	}
	for dec.More() {
		keyOff := dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return nil, jsonErr(err)
		}
		name, _ := tok.(string)
		valOff := dec.InputOffset()
		if name == MetadataKey {
			if f.metadata != nil {
				return nil, at(keyOff, "duplicate %s", MetadataKey)
			}
			var md map[string]string
			if err := dec.Decode(&md); err != nil {
				return nil, at(valOff, "%s is not a map of strings: %v", MetadataKey, err)
			}
			if md == nil {
				md = map[string]string{}
			}
			f.metadata = md
			continue
		}
		if _, dup := f.index[name]; dup {
			return nil, at(keyOff, "duplicate tensor name %q", name)
		}
		var e rawEntry
		if err := dec.Decode(&e); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return nil, at(int64(len(header)), "header JSON ends early in tensor %q", name)
			}
			return nil, at(valOff, "tensor %q: %v", name, err)
		}
		t, err := checkEntry(name, e, dataLen)
		if err != nil {
			return nil, at(valOff, "%v", err)
		}
		f.index[name] = len(f.tensors)
		f.tensors = append(f.tensors, t)
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, jsonErr(err)
	}
	// Writers pad the header with spaces to align the data section.
	if rest := header[dec.InputOffset():]; len(bytes.TrimRight(rest, " \t\r\n")) != 0 {
		return nil, at(dec.InputOffset(), "unexpected bytes after the header object")
	}
	if err := checkOverlaps(f.tensors, f.dataOffset); err != nil {
		return nil, err
	}
	return f, nil
}

// checkEntry validates one tensor entry against the data section length.
func checkEntry(name string, e rawEntry, dataLen int64) (TensorInfo, error) {
	t := TensorInfo{Name: name, DType: DType(e.DType)}
	if e.DType == "" {
		return t, fmt.Errorf("tensor %q has no dtype", name)
	}
	if e.Shape == nil {
		return t, fmt.Errorf("tensor %q has no shape", name)
	}
	t.Shape = make(poot.Shape, len(e.Shape))
	elems := uint64(1)
	for i, num := range e.Shape {
		d, err := strconv.ParseUint(string(num), 10, 63)
		if err != nil || d > math.MaxInt {
			return t, fmt.Errorf("tensor %q: shape entry %q is not a valid extent", name, string(num))
		}
		hi, lo := bits.Mul64(elems, d)
		if hi != 0 || lo > 1<<62 {
			return t, fmt.Errorf("tensor %q has more than 2^62 elements", name)
		}
		elems = lo
		t.Shape[i] = int(d)
	}
	if len(e.DataOffsets) != 2 {
		return t, fmt.Errorf("tensor %q: data_offsets has %d entries, want 2", name, len(e.DataOffsets))
	}
	var off [2]int64
	for i, num := range e.DataOffsets {
		v, err := strconv.ParseUint(string(num), 10, 63)
		if err != nil {
			return t, fmt.Errorf("tensor %q: data offset %q is not a valid offset", name, string(num))
		}
		off[i] = int64(v)
	}
	t.Begin, t.End = off[0], off[1]
	if t.Begin > t.End || t.End > dataLen {
		return t, fmt.Errorf("tensor %q: data_offsets [%d, %d] do not lie inside the %d-byte data section", name, t.Begin, t.End, dataLen)
	}
	if size := t.DType.Size(); size > 0 {
		hi, want := bits.Mul64(elems, uint64(size))
		if hi != 0 || want != uint64(t.End-t.Begin) {
			return t, fmt.Errorf("tensor %q: %d bytes, but %s%v needs %d", name, t.End-t.Begin, t.DType, t.Shape, want)
		}
	}
	return t, nil
}

func checkOverlaps(ts []TensorInfo, dataOffset int64) error {
	order := make([]int, 0, len(ts))
	for i, t := range ts {
		if t.End > t.Begin {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int {
		if c := ts[a].Begin - ts[b].Begin; c != 0 {
			if c < 0 {
				return -1
			}
			return 1
		}
		return 0
	})
	for k := 1; k < len(order); k++ {
		prev, cur := ts[order[k-1]], ts[order[k]]
		if prev.End > cur.Begin {
			return &FormatError{Offset: dataOffset + cur.Begin, What: fmt.Sprintf(
				"tensor %q [%d, %d) overlaps tensor %q [%d, %d)", cur.Name, cur.Begin, cur.End, prev.Name, prev.Begin, prev.End)}
		}
	}
	return nil
}

// Metadata returns the __metadata__ map (empty when absent). It is shared
// with the File and must not be modified.
func (f *File) Metadata() map[string]string {
	if f.metadata == nil {
		return map[string]string{}
	}
	return f.metadata
}

// DataOffset is the file offset at which the data section starts.
func (f *File) DataOffset() int64 { return f.dataOffset }

// Tensors returns the tensor descriptions in header order.
func (f *File) Tensors() []TensorInfo { return slices.Clone(f.tensors) }

// Tensor returns the description of the named tensor.
func (f *File) Tensor(name string) (TensorInfo, bool) {
	i, ok := f.index[name]
	if !ok {
		return TensorInfo{}, false
	}
	return f.tensors[i], true
}

// TensorData returns the named tensor's bytes as a view into the file (no
// copy). It fails with an *UnsupportedDTypeError for dtypes poot does not
// support; RawTensorData serves those.
func (f *File) TensorData(name string) ([]byte, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, &TensorError{Name: name, Err: ErrTensorNotFound}
	}
	if _, ok := t.DType.Poot(); !ok {
		return nil, &UnsupportedDTypeError{Tensor: name, DType: t.DType}
	}
	return f.RawTensorData(name)
}

// RawTensorData returns the named tensor's bytes whatever its dtype.
func (f *File) RawTensorData(name string) ([]byte, error) {
	t, ok := f.Tensor(name)
	if !ok {
		return nil, &TensorError{Name: name, Err: ErrTensorNotFound}
	}
	if f.m.Closed() {
		return nil, &TensorError{Name: name, Err: ErrClosed}
	}
	start, end := f.dataOffset+t.Begin, f.dataOffset+t.End
	return f.m.Bytes()[start:end:end], nil
}
