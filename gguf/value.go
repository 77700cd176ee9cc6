package gguf

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// ValueType is the type tag of a metadata value (gguf_metadata_value_type).
type ValueType uint32

// The metadata value types, numbered as in the file.
const (
	TypeUint8     ValueType = 0
	TypeInt8      ValueType = 1
	TypeUint16    ValueType = 2
	TypeInt16     ValueType = 3
	TypeUint32    ValueType = 4
	TypeInt32     ValueType = 5
	TypeFloat32   ValueType = 6
	TypeBool      ValueType = 7
	TypeString    ValueType = 8
	TypeArray     ValueType = 9
	TypeUint64    ValueType = 10
	TypeInt64     ValueType = 11
	TypeFloat64   ValueType = 12
	numValueTypes ValueType = 13
)

var valueTypeNames = [numValueTypes]string{
	"uint8", "int8", "uint16", "int16", "uint32", "int32", "float32",
	"bool", "string", "array", "uint64", "int64", "float64",
}

// valueTypeSizes gives the encoded size of fixed-size scalars; string and
// array entries hold the minimum encoded size (a length prefix, or a type and
// a length).
var valueTypeSizes = [numValueTypes]int{1, 1, 2, 2, 4, 4, 4, 1, 8, 12, 8, 8, 8}

// Valid reports whether t is one of the defined value types.
func (t ValueType) Valid() bool { return t < numValueTypes }

// String returns the type's name ("uint32", "array").
func (t ValueType) String() string {
	if t.Valid() {
		return valueTypeNames[t]
	}
	return "value_type(" + strconv.FormatUint(uint64(t), 10) + ")"
}

func (t ValueType) isInteger() bool {
	switch t {
	case TypeUint8, TypeInt8, TypeUint16, TypeInt16, TypeUint32, TypeInt32, TypeUint64, TypeInt64:
		return true
	}
	return false
}

func (t ValueType) isSigned() bool {
	return t == TypeInt8 || t == TypeInt16 || t == TypeInt32 || t == TypeInt64
}

// KV is one metadata entry. A file's entries keep the order they were
// written in.
type KV struct {
	Key   string
	Value Value
}

// Value is a metadata value: a number, a bool, a string, or an array of one
// of those (arrays may nest). The zero Value is an invalid placeholder that
// Write rejects. Values are immutable; arrays returned by AsArray and the
// File helpers share memory with the Value and must not be modified.
type Value struct {
	typ  ValueType
	elem ValueType // element type when typ == TypeArray
	bits uint64    // scalars: integers (signed ones sign-extended), float bits, bool 0/1
	str  string
	arr  any // arrays: a []T with T matching elem; []Value for nested arrays
	ok   bool
}

// Scalar is the set of Go types that map one to one onto GGUF scalar value
// types.
type Scalar interface {
	uint8 | int8 | uint16 | int16 | uint32 | int32 | float32 | bool | string | uint64 | int64 | float64
}

// ValueOf returns the Value holding v, typed by v's Go type (uint32 is
// TypeUint32, string is TypeString, and so on).
func ValueOf[T Scalar](v T) Value {
	switch x := any(v).(type) {
	case uint8:
		return Value{typ: TypeUint8, bits: uint64(x), ok: true}
	case int8:
		return Value{typ: TypeInt8, bits: uint64(int64(x)), ok: true}
	case uint16:
		return Value{typ: TypeUint16, bits: uint64(x), ok: true}
	case int16:
		return Value{typ: TypeInt16, bits: uint64(int64(x)), ok: true}
	case uint32:
		return Value{typ: TypeUint32, bits: uint64(x), ok: true}
	case int32:
		return Value{typ: TypeInt32, bits: uint64(int64(x)), ok: true}
	case float32:
		return Value{typ: TypeFloat32, bits: uint64(math.Float32bits(x)), ok: true}
	case bool:
		var b uint64
		if x {
			b = 1
		}
		return Value{typ: TypeBool, bits: b, ok: true}
	case string:
		return Value{typ: TypeString, str: x, ok: true}
	case uint64:
		return Value{typ: TypeUint64, bits: x, ok: true}
	case int64:
		return Value{typ: TypeInt64, bits: uint64(x), ok: true}
	case float64:
		return Value{typ: TypeFloat64, bits: math.Float64bits(x), ok: true}
	}
	return Value{} // unreachable: Scalar is closed
}

// ArrayOf returns an array Value holding a copy of vs; its element type
// follows T as in ValueOf.
func ArrayOf[T Scalar](vs []T) Value {
	elem := ValueOf(*new(T)).typ
	return Value{typ: TypeArray, elem: elem, arr: append([]T{}, vs...), ok: true}
}

// ArrayOfArrays returns an array whose elements are themselves arrays (the
// element arrays may have different element types). Write rejects it when an
// element is not an array.
func ArrayOfArrays(vs ...Value) Value {
	return Value{typ: TypeArray, elem: TypeArray, arr: append([]Value{}, vs...), ok: true}
}

// Type is the value's type tag.
func (v Value) Type() ValueType { return v.typ }

// ElemType is the element type of an array, and is meaningless for scalars.
func (v Value) ElemType() ValueType { return v.elem }

// IsValid reports whether v holds a value (the zero Value does not).
func (v Value) IsValid() bool { return v.ok }

// Len is the number of elements of an array, and 0 for scalars.
func (v Value) Len() int {
	switch a := v.arr.(type) {
	case []uint8:
		return len(a)
	case []int8:
		return len(a)
	case []uint16:
		return len(a)
	case []int16:
		return len(a)
	case []uint32:
		return len(a)
	case []int32:
		return len(a)
	case []float32:
		return len(a)
	case []bool:
		return len(a)
	case []string:
		return len(a)
	case []uint64:
		return len(a)
	case []int64:
		return len(a)
	case []float64:
		return len(a)
	case []Value:
		return len(a)
	}
	return 0
}

// Index returns element i of an array as a Value, and false when v is not an
// array or i is out of range.
func (v Value) Index(i int) (Value, bool) {
	if v.typ != TypeArray || i < 0 || i >= v.Len() {
		return Value{}, false
	}
	switch a := v.arr.(type) {
	case []uint8:
		return ValueOf(a[i]), true
	case []int8:
		return ValueOf(a[i]), true
	case []uint16:
		return ValueOf(a[i]), true
	case []int16:
		return ValueOf(a[i]), true
	case []uint32:
		return ValueOf(a[i]), true
	case []int32:
		return ValueOf(a[i]), true
	case []float32:
		return ValueOf(a[i]), true
	case []bool:
		return ValueOf(a[i]), true
	case []string:
		return ValueOf(a[i]), true
	case []uint64:
		return ValueOf(a[i]), true
	case []int64:
		return ValueOf(a[i]), true
	case []float64:
		return ValueOf(a[i]), true
	case []Value:
		return a[i], true
	}
	return Value{}, false
}

// AsArray returns the elements of an array as a typed Go slice ([]uint32,
// []string, … or []Value for nested arrays), shared with v, and false for
// scalars.
func (v Value) AsArray() (any, bool) {
	if v.typ != TypeArray {
		return nil, false
	}
	return v.arr, true
}

// AsUint returns an integer value of any width as a uint64, and false when v
// is not an integer or is negative.
func (v Value) AsUint() (uint64, bool) {
	if !v.typ.isInteger() || (v.typ.isSigned() && int64(v.bits) < 0) {
		return 0, false
	}
	return v.bits, true
}

// AsInt returns an integer value of any width as an int64, and false when v
// is not an integer or does not fit.
func (v Value) AsInt() (int64, bool) {
	if !v.typ.isInteger() || (!v.typ.isSigned() && v.bits > math.MaxInt64) {
		return 0, false
	}
	return int64(v.bits), true
}

// AsFloat returns a float32 or float64 value as a float64, and false for
// every other type.
func (v Value) AsFloat() (float64, bool) {
	switch v.typ {
	case TypeFloat32:
		return float64(math.Float32frombits(uint32(v.bits))), true
	case TypeFloat64:
		return math.Float64frombits(v.bits), true
	}
	return 0, false
}

// AsBool returns a bool value, and false as its second result for every
// other type.
func (v Value) AsBool() (bool, bool) {
	if v.typ != TypeBool {
		return false, false
	}
	return v.bits != 0, true
}

// AsString returns a string value, and false for every other type.
func (v Value) AsString() (string, bool) {
	if v.typ != TypeString {
		return "", false
	}
	return v.str, true
}

// typeName describes v's type for error messages: "uint32", "array of string".
func (v Value) typeName() string {
	if v.typ == TypeArray {
		return "array of " + v.elem.String()
	}
	return v.typ.String()
}

// String formats the value for people: scalars as Go would print them,
// strings quoted, arrays as [a b c] with long arrays elided.
func (v Value) String() string {
	if !v.ok {
		return "<invalid>"
	}
	switch v.typ {
	case TypeString:
		return strconv.Quote(v.str)
	case TypeBool:
		return strconv.FormatBool(v.bits != 0)
	case TypeFloat32, TypeFloat64:
		f, _ := v.AsFloat()
		return strconv.FormatFloat(f, 'g', -1, 64)
	case TypeArray:
		const show = 8
		var sb strings.Builder
		sb.WriteByte('[')
		n := v.Len()
		for i := 0; i < n && i < show; i++ {
			if i > 0 {
				sb.WriteByte(' ')
			}
			e, _ := v.Index(i)
			sb.WriteString(e.String())
		}
		if n > show {
			fmt.Fprintf(&sb, " … (%d elements)", n)
		}
		sb.WriteByte(']')
		return sb.String()
	}
	if v.typ.isSigned() {
		return strconv.FormatInt(int64(v.bits), 10)
	}
	return strconv.FormatUint(v.bits, 10)
}
