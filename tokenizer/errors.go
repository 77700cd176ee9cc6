package tokenizer

import (
	"errors"
	"fmt"
)

// ErrUnsupported is wrapped by errors for vocabularies this package cannot
// tokenize: an unknown tokenizer model, pre-tokenizer or regular expression.
var ErrUnsupported = errors.New("unsupported")

// LoadError reports a vocabulary that could not be loaded: which source
// ("gguf", "tokenizer.json", "llama2.c"), which key or field, and why.
type LoadError struct {
	Source string // "gguf", "tokenizer.json" or "llama2.c"
	Key    string // the metadata key or JSON field at fault, if any
	Err    error
}

// Error implements error.
func (e *LoadError) Error() string {
	if e.Key == "" {
		return fmt.Sprintf("tokenizer: %s: %v", e.Source, e.Err)
	}
	return fmt.Sprintf("tokenizer: %s: %s: %v", e.Source, e.Key, e.Err)
}

// Unwrap returns the underlying error.
func (e *LoadError) Unwrap() error { return e.Err }

// TokenIDError reports a token id outside the vocabulary.
type TokenIDError struct {
	ID        int32
	VocabSize int
}

// Error implements error.
func (e *TokenIDError) Error() string {
	return fmt.Sprintf("tokenizer: token id %d out of range [0, %d)", e.ID, e.VocabSize)
}

// MissingTokenError reports that encoding needed a token the vocabulary does
// not have, such as a BOS token or a byte-fallback token.
type MissingTokenError struct {
	What string // "BOS", "EOS", or the byte-fallback token text such as "<0xE2>"
}

// Error implements error.
func (e *MissingTokenError) Error() string {
	return fmt.Sprintf("tokenizer: the vocabulary has no %s token", e.What)
}
