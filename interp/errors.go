package interp

import (
	"errors"
	"strconv"
	"strings"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/hostexec"
)

// Sentinel errors. Every error of this package is an *Error that unwraps to
// one of these, so callers test the kind with errors.Is.
var (
	// ErrBinding: a constant, slot or state is missing, extra, or of the
	// wrong type or size.
	ErrBinding = errors.New("bad binding")
	// ErrIndexRange: a Gather, WriteRows or IndexedMatMul index lies
	// outside its table.
	ErrIndexRange = hostexec.ErrIndexRange
	// ErrSlotRange: a slot holds a value outside its declared range.
	ErrSlotRange = errors.New("slot value out of range")
	// ErrDivideByZero: an I32 division by zero.
	ErrDivideByZero = hostexec.ErrDivideByZero
	// ErrUnsupported: a graph or host the oracle cannot evaluate.
	ErrUnsupported = hostexec.ErrUnsupported
)

// Error is the typed error of an interpreter. Eqn, Op and Scope name the
// failing equation (Eqn is -1 when the error is about a binding, not an
// equation); Value names the constant, slot or state concerned, if any; Err
// wraps one of the sentinels with the detail.
type Error struct {
	Eqn   int
	Op    poot.Op
	Scope string
	Value string
	Err   error
}

// Error formats the error on one line: "interp: eqn 7 (gather) in
// layer.0/attn: index out of range: ...".
func (e *Error) Error() string {
	var sb strings.Builder
	sb.WriteString("interp: ")
	if e.Eqn >= 0 {
		sb.WriteString("eqn ")
		sb.WriteString(strconv.Itoa(e.Eqn))
		sb.WriteString(" (")
		sb.WriteString(e.Op.String())
		sb.WriteString(")")
		if e.Scope != "" {
			sb.WriteString(" in ")
			sb.WriteString(e.Scope)
		}
		sb.WriteString(": ")
	}
	if e.Value != "" {
		sb.WriteString(strconv.Quote(e.Value))
		sb.WriteString(": ")
	}
	if e.Err != nil {
		sb.WriteString(e.Err.Error())
	}
	return sb.String()
}

// Unwrap returns the wrapped error, which unwraps to a sentinel.
func (e *Error) Unwrap() error { return e.Err }

// bindingError reports a problem with the binding of the named value.
func bindingError(name string, err error) *Error {
	return &Error{Eqn: -1, Value: name, Err: err}
}
