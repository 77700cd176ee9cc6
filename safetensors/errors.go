package safetensors

import (
	"errors"
	"fmt"
)

// FormatError reports a malformed file; Offset is the byte offset (from the
// start of the file) at which the problem was found, Path the file's path
// when it came from Open.
type FormatError struct {
	Offset int64
	What   string
	Path   string
}

// Error formats the FormatError for people.
func (e *FormatError) Error() string {
	if e.Path != "" {
		return fmt.Sprintf("safetensors: %s: malformed at byte %d: %s", e.Path, e.Offset, e.What)
	}
	return fmt.Sprintf("safetensors: malformed file at byte %d: %s", e.Offset, e.What)
}

// Sentinel causes wrapped by TensorError.
var (
	ErrTensorNotFound = errors.New("tensor not found")
	ErrClosed         = errors.New("file is closed")
)

// TensorError reports a failed tensor lookup.
type TensorError struct {
	Name string
	Err  error
}

// Error formats the TensorError for people.
func (e *TensorError) Error() string { return fmt.Sprintf("safetensors: tensor %q: %v", e.Name, e.Err) }

// Unwrap returns the cause.
func (e *TensorError) Unwrap() error { return e.Err }

// UnsupportedDTypeError reports a tensor whose dtype poot cannot compute
// with, or (for raw access) whose element size is unknown.
type UnsupportedDTypeError struct {
	Tensor string
	DType  DType
}

// Error formats the UnsupportedDTypeError for people.
func (e *UnsupportedDTypeError) Error() string {
	if e.DType.Size() == 0 {
		return fmt.Sprintf("safetensors: tensor %q has unknown dtype %q", e.Tensor, string(e.DType))
	}
	return fmt.Sprintf("safetensors: tensor %q has dtype %s, which poot does not support", e.Tensor, e.DType)
}
