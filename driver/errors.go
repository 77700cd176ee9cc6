package driver

import (
	"errors"
	"fmt"
	"strings"
)

// Sentinel causes of the driver's errors; test with errors.Is.
var (
	// ErrUnknownInterpreter: no interpreter is registered under the name.
	ErrUnknownInterpreter = errors.New("unknown interpreter")
	// ErrContext: the tokens do not fit in the session's context.
	ErrContext = errors.New("context overflow")
	// ErrTokenRange: a token id lies outside the vocabulary.
	ErrTokenRange = errors.New("token id out of range")
	// ErrNoTokenizer: the checkpoint carries no vocabulary.
	ErrNoTokenizer = errors.New("the checkpoint has no tokenizer")
	// ErrEmptyPrompt: there is no token to start from.
	ErrEmptyPrompt = errors.New("empty prompt")
	// ErrOptions: an option has an unusable value.
	ErrOptions = errors.New("bad option")
	// ErrClosed: the session has been closed.
	ErrClosed = errors.New("session closed")
	// ErrNonFinite: a step produced NaN or infinite logits.
	ErrNonFinite = errors.New("non-finite logits")
)

// InterpreterError reports an interpreter name that is not registered;
// Hint, when set, says how to register it.
type InterpreterError struct {
	Name  string
	Known []string
	Hint  string
}

// Error formats the error on one line, listing the registered names.
func (e *InterpreterError) Error() string {
	msg := fmt.Sprintf("unknown interpreter %q (registered: %s)", e.Name, strings.Join(e.Known, ", "))
	if e.Hint != "" {
		msg += ": " + e.Hint
	}
	return msg
}

// Unwrap returns ErrUnknownInterpreter.
func (e *InterpreterError) Unwrap() error { return ErrUnknownInterpreter }

// ContextError reports tokens that do not fit in the context: Need positions
// are needed and Capacity are available.
type ContextError struct {
	Need     int
	Capacity int
}

// Error formats the error on one line.
func (e *ContextError) Error() string {
	return fmt.Sprintf("context overflow: %d tokens do not fit in a context of %d", e.Need, e.Capacity)
}

// Unwrap returns ErrContext.
func (e *ContextError) Unwrap() error { return ErrContext }

// TokenError reports a token id outside the vocabulary, at position Index
// of the tokens given.
type TokenError struct {
	Index int
	ID    int32
	Vocab int
}

// Error formats the error on one line.
func (e *TokenError) Error() string {
	return fmt.Sprintf("token %d (at index %d) is out of range: the vocabulary has %d tokens [0, %d)", e.ID, e.Index, e.Vocab, e.Vocab)
}

// Unwrap returns ErrTokenRange.
func (e *TokenError) Unwrap() error { return ErrTokenRange }

// OptionError reports an option with an unusable value.
type OptionError struct {
	Option string
	Detail string
}

// Error formats the error on one line.
func (e *OptionError) Error() string { return fmt.Sprintf("option %s: %s", e.Option, e.Detail) }

// Unwrap returns ErrOptions.
func (e *OptionError) Unwrap() error { return ErrOptions }

// StepError wraps a failure to trace, bind, compile or run one step, naming
// the program ("prefill", "decode"), the stage and the step's token count.
type StepError struct {
	Program string
	Stage   string // "trace", "bind", "compile" or "run"
	New     int
	Err     error
}

// Error formats the error on one line.
func (e *StepError) Error() string {
	noun := "tokens"
	if e.New == 1 {
		noun = "token"
	}
	return fmt.Sprintf("%s step of %d %s: %s: %v", e.Program, e.New, noun, e.Stage, e.Err)
}

// Unwrap returns the cause.
func (e *StepError) Unwrap() error { return e.Err }

// NonFiniteError reports a step whose logits hold a NaN or an infinity,
// as a checkpoint with non-finite weights (or an overflow) produces: no
// token can be sampled from them. Position is the context position of the
// token whose logits they are (0-based), Token the vocabulary index of
// the first non-finite logit and Value that logit; Count of Vocab logits
// of the row are non-finite. The session's cache is emptied.
type NonFiniteError struct {
	Program  string // "prefill" or "decode"
	Position int
	Token    int
	Value    float32
	Count    int
	Vocab    int
}

// Error formats the error on one line.
func (e *NonFiniteError) Error() string {
	return fmt.Sprintf("%s step: the logits at position %d are not finite: logit %d is %v (%d of %d non-finite); the weights or the arithmetic produced NaN or infinity",
		e.Program, e.Position, e.Token, e.Value, e.Count, e.Vocab)
}

// Unwrap returns ErrNonFinite.
func (e *NonFiniteError) Unwrap() error { return ErrNonFinite }
