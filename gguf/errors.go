package gguf

import (
	"errors"
	"fmt"
)

// FormatError reports a malformed file: Offset is the byte offset at which
// the problem was found (the start of the offending field). Path is the
// file's path when it came from Open.
type FormatError struct {
	Path   string
	Offset int64
	What   string
}

// Error formats the FormatError for people.
func (e *FormatError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("gguf: %s: malformed at byte %d: %s", e.Path, e.Offset, e.What)
	}
	return fmt.Sprintf("gguf: malformed file at byte %d: %s", e.Offset, e.What)
}

// Sentinel causes wrapped by KeyError and TensorError; test with errors.Is.
var (
	ErrKeyNotFound    = errors.New("key not found")
	ErrWrongType      = errors.New("wrong value type")
	ErrOutOfRange     = errors.New("value out of range")
	ErrTensorNotFound = errors.New("tensor not found")
	ErrClosed         = errors.New("file is closed")
)

// KeyError reports a failed metadata lookup: the key is missing
// (ErrKeyNotFound), has another type (ErrWrongType), or holds a number the
// requested Go type cannot represent (ErrOutOfRange).
type KeyError struct {
	Key  string
	Want string // the requested type, e.g. "string" or "unsigned integer"
	Got  string // the stored type, e.g. "array of int32"; empty when missing
	Err  error
}

// Error formats the KeyError for people.
func (e *KeyError) Error() string {
	switch {
	case errors.Is(e.Err, ErrKeyNotFound):
		return fmt.Sprintf("gguf: key %q not found", e.Key)
	case errors.Is(e.Err, ErrWrongType):
		return fmt.Sprintf("gguf: key %q holds %s, want %s", e.Key, e.Got, e.Want)
	}
	return fmt.Sprintf("gguf: key %q (%s): %v for %s", e.Key, e.Got, e.Err, e.Want)
}

// Unwrap returns the sentinel cause.
func (e *KeyError) Unwrap() error { return e.Err }

// TensorError reports a failed tensor lookup (ErrTensorNotFound, ErrClosed).
type TensorError struct {
	Name string
	Err  error
}

// Error formats the TensorError for people.
func (e *TensorError) Error() string { return fmt.Sprintf("gguf: tensor %q: %v", e.Name, e.Err) }

// Unwrap returns the cause.
func (e *TensorError) Unwrap() error { return e.Err }

// UnsupportedTypeError reports a tensor whose ggml type poot cannot compute
// with (or, for raw access, whose layout is unknown).
type UnsupportedTypeError struct {
	Tensor string
	Type   GGMLType
}

// Error formats the UnsupportedTypeError for people.
func (e *UnsupportedTypeError) Error() string {
	if !e.Type.Known() {
		return fmt.Sprintf("gguf: tensor %q has unknown ggml type id %d", e.Tensor, uint32(e.Type))
	}
	return fmt.Sprintf("gguf: tensor %q has ggml type %s (id %d), which poot does not support", e.Tensor, e.Type, uint32(e.Type))
}
