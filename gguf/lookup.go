package gguf

import (
	"math"
)

// Get returns the value stored under key.
func (f *File) Get(key string) (Value, bool) {
	i, ok := f.kvIndex[key]
	if !ok {
		return Value{}, false
	}
	return f.kvs[i].Value, true
}

// Has reports whether key is present.
func (f *File) Has(key string) bool {
	_, ok := f.kvIndex[key]
	return ok
}

// lookup fetches key or returns a *KeyError with ErrKeyNotFound.
func (f *File) lookup(key, want string) (Value, error) {
	v, ok := f.Get(key)
	if !ok {
		return Value{}, &KeyError{Key: key, Want: want, Err: ErrKeyNotFound}
	}
	return v, nil
}

func wrongType(key, want string, v Value) error {
	return &KeyError{Key: key, Want: want, Got: v.typeName(), Err: ErrWrongType}
}

// String returns the string stored under key.
func (f *File) String(key string) (string, error) {
	v, err := f.lookup(key, "string")
	if err != nil {
		return "", err
	}
	s, ok := v.AsString()
	if !ok {
		return "", wrongType(key, "string", v)
	}
	return s, nil
}

// Architecture returns general.architecture, the model family name ("llama").
func (f *File) Architecture() (string, error) { return f.String(KeyArchitecture) }

// Uint returns an integer of any width stored under key; negative values are
// an ErrOutOfRange error.
func (f *File) Uint(key string) (uint64, error) {
	const want = "unsigned integer"
	v, err := f.lookup(key, want)
	if err != nil {
		return 0, err
	}
	if !v.typ.isInteger() {
		return 0, wrongType(key, want, v)
	}
	u, ok := v.AsUint()
	if !ok {
		return 0, &KeyError{Key: key, Want: want, Got: v.typeName(), Err: ErrOutOfRange}
	}
	return u, nil
}

// Int returns an integer of any width stored under key; uint64 values above
// math.MaxInt64 are an ErrOutOfRange error.
func (f *File) Int(key string) (int64, error) {
	const want = "integer"
	v, err := f.lookup(key, want)
	if err != nil {
		return 0, err
	}
	if !v.typ.isInteger() {
		return 0, wrongType(key, want, v)
	}
	i, ok := v.AsInt()
	if !ok {
		return 0, &KeyError{Key: key, Want: want, Got: v.typeName(), Err: ErrOutOfRange}
	}
	return i, nil
}

// Float returns a number stored under key as a float64. Floats of either
// width are accepted, and so are integers, which some converters write for
// values such as rope.freq_base.
func (f *File) Float(key string) (float64, error) {
	const want = "number"
	v, err := f.lookup(key, want)
	if err != nil {
		return 0, err
	}
	if x, ok := v.AsFloat(); ok {
		return x, nil
	}
	if i, ok := v.AsInt(); ok {
		return float64(i), nil
	}
	if u, ok := v.AsUint(); ok {
		return float64(u), nil
	}
	return 0, wrongType(key, want, v)
}

// Bool returns the bool stored under key.
func (f *File) Bool(key string) (bool, error) {
	v, err := f.lookup(key, "bool")
	if err != nil {
		return false, err
	}
	b, ok := v.AsBool()
	if !ok {
		return false, wrongType(key, "bool", v)
	}
	return b, nil
}

// Strings returns the array of strings stored under key. The slice is shared
// with the File and must not be modified.
func (f *File) Strings(key string) ([]string, error) {
	const want = "array of string"
	v, err := f.lookup(key, want)
	if err != nil {
		return nil, err
	}
	a, ok := v.arr.([]string)
	if !ok || v.typ != TypeArray {
		return nil, wrongType(key, want, v)
	}
	return a, nil
}

// Floats returns the array of float32 stored under key (token scores, for
// example). A float32 array is shared with the File and must not be
// modified; a float64 array is converted into a new slice.
func (f *File) Floats(key string) ([]float32, error) {
	const want = "array of float32"
	v, err := f.lookup(key, want)
	if err != nil {
		return nil, err
	}
	switch a := v.arr.(type) {
	case []float32:
		return a, nil
	case []float64:
		out := make([]float32, len(a))
		for i, x := range a {
			out[i] = float32(x)
		}
		return out, nil
	}
	return nil, wrongType(key, want, v)
}

// Ints returns the array of int32 stored under key (token types, for
// example). An int32 array is shared with the File and must not be modified;
// an array of another integer type is converted into a new slice, and a value
// that does not fit in int32 is an ErrOutOfRange error.
func (f *File) Ints(key string) ([]int32, error) {
	const want = "array of int32"
	v, err := f.lookup(key, want)
	if err != nil {
		return nil, err
	}
	if a, ok := v.arr.([]int32); ok {
		return a, nil
	}
	if v.typ != TypeArray || !v.elem.isInteger() {
		return nil, wrongType(key, want, v)
	}
	n := v.Len()
	out := make([]int32, n)
	for i := range n {
		e, _ := v.Index(i)
		x, ok := e.AsInt()
		if !ok || x < math.MinInt32 || x > math.MaxInt32 {
			return nil, &KeyError{Key: key, Want: want, Got: v.typeName(), Err: ErrOutOfRange}
		}
		out[i] = int32(x)
	}
	return out, nil
}
