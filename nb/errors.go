package nb

import (
	"errors"
	"fmt"
)

// Sentinel errors of the package; test with errors.Is. Errors recorded by a
// Graph are *poot.Error values whose Kind is one of these or one of poot's
// own (poot.ErrType for shapes, poot.ErrName for names).
var (
	// ErrNilGraph: a method was called on a nil or zero Graph.
	ErrNilGraph = errors.New("nb: nil graph (use nb.New or nb.Trace)")
	// ErrValue: an operand is the zero Value where one is required, or a
	// Value from an earlier trace.
	ErrValue = errors.New("invalid value")
	// ErrData: the data given to Run do not fit the graph.
	ErrData = errors.New("bad data")
	// ErrModel: a Model is nil, or its Forward panicked or returned an error.
	ErrModel = errors.New("model failed")
	// ErrClosed: an LLM was used after Close (or is nil).
	ErrClosed = errors.New("nb: the model is closed")
	// errPending marks a trace that stopped at a shape only data can give.
	errPending = errors.New("shape waits for data")
)

// DataError reports data for the named input or weight that Run cannot
// bind.
type DataError struct {
	Name   string
	Detail string
}

// Error formats the error on one line.
func (e *DataError) Error() string { return fmt.Sprintf("nb: data for %q: %s", e.Name, e.Detail) }

// Unwrap returns ErrData.
func (e *DataError) Unwrap() error { return ErrData }
