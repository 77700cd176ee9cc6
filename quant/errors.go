package quant

import (
	"errors"

	"github.com/pootlabs/poot"
)

// ErrUnsupported is returned (wrapped in an [*Error]) for a dtype this
// package cannot convert, such as I32, Bool or Invalid.
var ErrUnsupported = errors.New("unsupported dtype")

// ErrSize is returned (wrapped in an [*Error]) when a row is not a whole
// number of blocks or a buffer's length does not match the row's.
var ErrSize = errors.New("size mismatch")

// Error describes a failed row conversion: which operation, on which dtype,
// and what was wrong. It unwraps to [ErrUnsupported] or [ErrSize] so callers
// can test the kind with errors.Is and still print the detail.
type Error struct {
	Op     string     // "dequantize", "quantize" or "dot"
	DType  poot.DType // the element type of the stored row
	Err    error      // ErrUnsupported or ErrSize
	Detail string     // what exactly did not fit, for people
}

// Error formats the failure as "quant: dequantize q4_K: size mismatch: ...".
func (e *Error) Error() string {
	s := "quant: " + e.Op + " " + e.DType.String() + ": " + e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the sentinel ([ErrUnsupported] or [ErrSize]).
func (e *Error) Unwrap() error { return e.Err }
