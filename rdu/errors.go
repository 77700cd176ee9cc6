package rdu

import (
	"errors"
	"fmt"

	"github.com/pootlabs/poot/interp"
)

// Sentinel causes of the lowering's errors; test with errors.Is.
var (
	// ErrStructure: the step does not have the shape of a streamed model
	// (no layer scopes, weights read outside every program, a layer
	// reading another layer's intermediates).
	ErrStructure = errors.New("not a streamed model")
	// ErrUnliftable: a statement the language has no form for.
	ErrUnliftable = errors.New("no statement of the language writes this")

	// The refusals of the layer-program language: features the language
	// cannot write, each its own cause.

	// ErrEpsilon: a normalisation epsilon that is not a positive number.
	ErrEpsilon = errors.New("an epsilon that is not a positive number")
	// ErrSoftCap: an attention or logit soft cap that is not a positive
	// number.
	ErrSoftCap = errors.New("a soft cap that is not a positive number")
	// ErrHyperConnections: a layer that reads more than one hidden stream
	// (hyper-connections in place of the norms).
	ErrHyperConnections = errors.New("hyper-connections in place of the norms")
	// ErrPerLayerEmbedding: a layer that reads the step's tokens (a
	// per-layer embedding).
	ErrPerLayerEmbedding = errors.New("a per-layer embedding")
	// ErrSparseAttention: an attention whose visible positions are chosen
	// from the data (a sparse indexer) rather than by the causal mask.
	ErrSparseAttention = errors.New("a sparse selection of the attended positions")
	// ErrOutputGate: an output gate on a fused projection or over values
	// unlike the keys in width.
	ErrOutputGate = errors.New("an output gate on a fused projection or over values unlike the keys in width")
	// ErrActivation: a gated activation other than SiLU or (tanh) GeLU.
	ErrActivation = errors.New("a gated activation other than SiLU or GeLU")
	// ErrExperts: an expert mixture other than top-k experts gated by a
	// SwiGLU (or gpt-oss's clamped SwiGLU), a routed scale that is not a
	// positive number, or shared experts gated other than by a SwiGLU.
	ErrExperts = errors.New("an expert mixture other than top-k experts gated by a SwiGLU")
	// ErrGroups: a group limit over a softmax of the kept logits, or one
	// that does not split the experts evenly or keeps fewer than it
	// chooses.
	ErrGroups = errors.New("a group limit the language cannot write")
)

// StructureError reports a step the lowering cannot cut into programs.
type StructureError struct{ Detail string }

// Error formats the error on one line.
func (e *StructureError) Error() string { return "rdu: not a streamed model: " + e.Detail }

// Unwrap returns ErrStructure.
func (e *StructureError) Unwrap() error { return ErrStructure }

// Is makes the error an interp.ErrUnsupported: the step is one the
// streamed lowering does not run, not a fault of the step.
func (e *StructureError) Is(target error) bool { return target == interp.ErrUnsupported }

// Reject is a program of the bundle that did not lower: which program,
// which statement (its index among the program's statements, counting from
// 0, and the name it would bind), and why. Err is ErrUnliftable or one of
// the refusals.
type Reject struct {
	Program   string // "embed", "head", or a kind's name with its layer ("kind1 (layer 3)")
	Statement int    // index of the statement that could not be written
	Binder    string // the name it would have bound, when known
	Detail    string
	Err       error
}

// Error formats the rejection on one line.
func (e *Reject) Error() string {
	b := ""
	if e.Binder != "" {
		b = fmt.Sprintf(" (%s)", e.Binder)
	}
	return fmt.Sprintf("rdu: program %s, statement %d%s: %v: %s", e.Program, e.Statement, b, e.Err, e.Detail)
}

// Unwrap returns the cause.
func (e *Reject) Unwrap() error { return e.Err }

// Is makes the error an interp.ErrUnsupported, as StructureError is.
func (e *Reject) Is(target error) bool { return target == interp.ErrUnsupported }

// ErrRecurrent is a recurrent mixer (a causal convolution, a gated delta
// rule) whose state a deployment cannot carry: a batched step's state
// that is not one block a sequence.
var ErrRecurrent = errors.New("a recurrent mixer in a deployment that does not carry its state")
