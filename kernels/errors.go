package kernels

import (
	"errors"
	"fmt"
)

// ErrUnsupported is returned (wrapped in an [*Error]) for a weight dtype
// with no product kernel, such as I32 or Q8_K.
var ErrUnsupported = errors.New("unsupported dtype")

// ErrSize is returned (wrapped in an [*Error]) when a slice is too short, a
// shape is inconsistent or a row range falls outside the product.
var ErrSize = errors.New("size mismatch")

// Error describes a rejected kernel call: which kernel and what did not fit.
// It unwraps to [ErrUnsupported] or [ErrSize], so callers test the kind with
// errors.Is and still print the detail. Every such error is a bug in the
// caller's planning, never a property of the data.
type Error struct {
	Op     string // the kernel: "MatMulRows", "Prepare", "AttendHeads", ...
	Err    error  // ErrUnsupported or ErrSize
	Detail string // what exactly did not fit, for people
}

// Error formats the failure as "kernels: Prepare: size mismatch: ...".
func (e *Error) Error() string {
	s := "kernels: " + e.Op + ": " + e.Err.Error()
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the sentinel ([ErrUnsupported] or [ErrSize]).
func (e *Error) Unwrap() error { return e.Err }

func sizeError(op, format string, args ...any) error {
	return &Error{Op: op, Err: ErrSize, Detail: fmt.Sprintf(format, args...)}
}

// errShort reports a slice shorter than a kernel needs.
func errShort(op, what string, have, want int) error {
	return sizeError(op, "%s has %d elements, want at least %d", what, have, want)
}
