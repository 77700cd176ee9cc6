package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// maxArrayDepth bounds the nesting of arrays in metadata; real files never
// nest more than once, and the bound keeps recursion shallow on hostile input.
const maxArrayDepth = 8

// prealloc caps the capacity reserved for n entries whose Go form is larger
// than their smallest encoding (strings, nested arrays, tensor infos): a
// hostile count that fits the file could otherwise reserve several times the
// file's size before the entries fail to parse. Past the cap, slices grow as
// entries are actually read.
func prealloc(n int) int { return min(n, 1<<12) }

// decoder reads little-endian fields from an untrusted buffer. Every read
// checks the remaining length first; no count is trusted before it has been
// compared with the bytes that could hold it.
type decoder struct {
	buf []byte
	off int
}

func (d *decoder) errAt(off int, format string, args ...any) error {
	return &FormatError{Offset: int64(off), What: fmt.Sprintf(format, args...)}
}

func (d *decoder) remaining() int { return len(d.buf) - d.off }

// take returns the next n bytes, or an error naming what was being read.
func (d *decoder) take(n int, what string) ([]byte, error) {
	if n < 0 || n > d.remaining() {
		return nil, d.errAt(d.off, "%s needs %d bytes, only %d remain", what, n, d.remaining())
	}
	b := d.buf[d.off : d.off+n : d.off+n]
	d.off += n
	return b, nil
}

func (d *decoder) u32(what string) (uint32, error) {
	b, err := d.take(4, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint32(b), nil
}

func (d *decoder) u64(what string) (uint64, error) {
	b, err := d.take(8, what)
	if err != nil {
		return 0, err
	}
	return binary.LittleEndian.Uint64(b), nil
}

// count reads a uint64 element count and checks that count elements of at
// least minSize bytes each fit in what remains.
func (d *decoder) count(minSize int, what string) (int, error) {
	start := d.off
	n, err := d.u64(what)
	if err != nil {
		return 0, err
	}
	if n > uint64(d.remaining()/minSize) {
		return 0, d.errAt(start, "%s is %d, but only %d bytes remain", what, n, d.remaining())
	}
	return int(n), nil
}

func (d *decoder) str(what string) (string, error) {
	start := d.off
	n, err := d.u64(what + " length")
	if err != nil {
		return "", err
	}
	if n > uint64(d.remaining()) {
		return "", d.errAt(start, "%s length %d exceeds the %d bytes that remain", what, n, d.remaining())
	}
	b, _ := d.take(int(n), what)
	return string(b), nil
}

func (d *decoder) valueType(what string) (ValueType, error) {
	start := d.off
	t, err := d.u32(what)
	if err != nil {
		return 0, err
	}
	if !ValueType(t).Valid() {
		return 0, d.errAt(start, "%s: unknown value type %d", what, t)
	}
	return ValueType(t), nil
}

// scalar decodes one fixed-size scalar of type t.
func (d *decoder) scalar(t ValueType) (Value, error) {
	start := d.off
	b, err := d.take(valueTypeSizes[t], t.String()+" value")
	if err != nil {
		return Value{}, err
	}
	v := Value{typ: t, ok: true}
	switch t {
	case TypeUint8:
		v.bits = uint64(b[0])
	case TypeInt8:
		v.bits = uint64(int64(int8(b[0])))
	case TypeUint16:
		v.bits = uint64(binary.LittleEndian.Uint16(b))
	case TypeInt16:
		v.bits = uint64(int64(int16(binary.LittleEndian.Uint16(b))))
	case TypeUint32, TypeFloat32:
		v.bits = uint64(binary.LittleEndian.Uint32(b))
	case TypeInt32:
		v.bits = uint64(int64(int32(binary.LittleEndian.Uint32(b))))
	case TypeBool:
		if b[0] > 1 {
			return Value{}, d.errAt(start, "bool value is %d, not 0 or 1", b[0])
		}
		v.bits = uint64(b[0])
	case TypeUint64, TypeInt64, TypeFloat64:
		v.bits = binary.LittleEndian.Uint64(b)
	}
	return v, nil
}

// value decodes a value of type t; depth counts enclosing arrays.
func (d *decoder) value(t ValueType, depth int) (Value, error) {
	switch t {
	case TypeString:
		s, err := d.str("string value")
		return Value{typ: TypeString, str: s, ok: true}, err
	case TypeArray:
		return d.array(depth)
	}
	return d.scalar(t)
}

func (d *decoder) array(depth int) (Value, error) {
	start := d.off
	if depth >= maxArrayDepth {
		return Value{}, d.errAt(start, "arrays nested deeper than %d", maxArrayDepth)
	}
	elem, err := d.valueType("array element type")
	if err != nil {
		return Value{}, err
	}
	n, err := d.count(valueTypeSizes[elem], "array length")
	if err != nil {
		return Value{}, err
	}
	v := Value{typ: TypeArray, elem: elem, ok: true}
	switch elem {
	case TypeString:
		a := make([]string, 0, prealloc(n))
		for range n {
			s, err := d.str("string element")
			if err != nil {
				return Value{}, err
			}
			a = append(a, s)
		}
		v.arr = a
		return v, nil
	case TypeArray:
		a := make([]Value, 0, prealloc(n))
		for range n {
			e, err := d.array(depth + 1)
			if err != nil {
				return Value{}, err
			}
			a = append(a, e)
		}
		v.arr = a
		return v, nil
	}
	// Fixed-size elements: count already guarantees the bytes are there.
	b, err := d.take(n*valueTypeSizes[elem], "array data")
	if err != nil {
		return Value{}, err
	}
	le := binary.LittleEndian
	switch elem {
	case TypeUint8:
		v.arr = append([]uint8{}, b...)
	case TypeInt8:
		a := make([]int8, n)
		for i := range a {
			a[i] = int8(b[i])
		}
		v.arr = a
	case TypeBool:
		a := make([]bool, n)
		for i := range a {
			if b[i] > 1 {
				return Value{}, d.errAt(start+12+i, "bool element %d is %d, not 0 or 1", i, b[i])
			}
			a[i] = b[i] == 1
		}
		v.arr = a
	case TypeUint16:
		v.arr = decodeArray(b, n, 2, func(p []byte) uint16 { return le.Uint16(p) })
	case TypeInt16:
		v.arr = decodeArray(b, n, 2, func(p []byte) int16 { return int16(le.Uint16(p)) })
	case TypeUint32:
		v.arr = decodeArray(b, n, 4, func(p []byte) uint32 { return le.Uint32(p) })
	case TypeInt32:
		v.arr = decodeArray(b, n, 4, func(p []byte) int32 { return int32(le.Uint32(p)) })
	case TypeFloat32:
		v.arr = decodeArray(b, n, 4, func(p []byte) float32 { return math.Float32frombits(le.Uint32(p)) })
	case TypeUint64:
		v.arr = decodeArray(b, n, 8, func(p []byte) uint64 { return le.Uint64(p) })
	case TypeInt64:
		v.arr = decodeArray(b, n, 8, func(p []byte) int64 { return int64(le.Uint64(p)) })
	case TypeFloat64:
		v.arr = decodeArray(b, n, 8, func(p []byte) float64 { return math.Float64frombits(le.Uint64(p)) })
	}
	return v, nil
}

// decodeArray decodes n little-endian elements of size bytes each from b,
// which holds exactly that many bytes.
func decodeArray[T any](b []byte, n, size int, elem func([]byte) T) []T {
	a := make([]T, n)
	for i := range a {
		a[i] = elem(b[size*i:])
	}
	return a
}
