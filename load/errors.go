package load

import (
	"errors"
	"strings"

	"github.com/pootlabs/poot"
)

// Sentinels of binding errors; test with errors.Is.
var (
	// ErrUnmapped: the family's weight map has no entry for a constant.
	ErrUnmapped = errors.New("no stored tensor is mapped to this constant")
	// ErrMissing: the mapped tensor is not in the checkpoint.
	ErrMissing = errors.New("tensor not in the checkpoint")
	// ErrShape: the stored shape differs from the graph's.
	ErrShape = errors.New("shape mismatch")
	// ErrDType: the graph cannot read the stored dtype.
	ErrDType = errors.New("unreadable stored dtype")
)

// BindError says which constant failed to bind to which stored tensor, with
// both types where known.
type BindError struct {
	Const  string
	Tensor string
	Want   poot.TensorType // the graph's declared type
	Got    poot.TensorType // the stored type
	Err    error
}

// Error formats the error on one line.
func (e *BindError) Error() string {
	var sb strings.Builder
	sb.WriteString("load: bind")
	if e.Const != "" {
		sb.WriteString(" constant " + quote(e.Const))
		if e.Want.DType.Valid() {
			sb.WriteString(" " + e.Want.String())
		}
	}
	if e.Tensor != "" {
		sb.WriteString(" to tensor " + quote(e.Tensor))
		if e.Got.DType.Valid() {
			sb.WriteString(" " + e.Got.String())
		}
	}
	sb.WriteString(": ")
	sb.WriteString(e.Err.Error())
	return sb.String()
}

// Unwrap returns the cause.
func (e *BindError) Unwrap() error { return e.Err }

func quote(s string) string { return "\"" + s + "\"" }
