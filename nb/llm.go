package nb

import (
	"context"
	"fmt"
	"math"
	"strings"

	"github.com/pootlabs/poot/driver"
	// The cpu backend, registered as the interpreter "cpu" (the default).
	"github.com/pootlabs/poot/families"
	_ "github.com/pootlabs/poot/lower/cpu/register"
	"github.com/pootlabs/poot/tokenizer"
)

// LLM is a checkpoint opened for notebooks: a driver session behind plain
// strings and ints. It is not safe for concurrent use.
type LLM struct {
	s *driver.Session
}

// Open opens a checkpoint (a GGUF file or a safetensors directory) with the
// oracle and a context of up to 4096 tokens (the model's own, if smaller).
func Open(path string) (*LLM, error) { return OpenWith(path, "", 0) }

// OpenWith opens a checkpoint with the named interpreter ("oracle", "cpu";
// "" for the default) and a context of capacity tokens (0 for the default).
func OpenWith(path, interpreter string, capacity int) (*LLM, error) {
	s, err := driver.Open(path, driver.Options{Interp: interpreter, Capacity: capacity})
	if err != nil {
		return nil, err
	}
	return &LLM{s: s}, nil
}

func (m *LLM) session() (*driver.Session, error) {
	if m == nil || m.s == nil {
		return nil, ErrClosed
	}
	return m.s, nil
}

// Close releases the checkpoint; the LLM cannot be used afterwards.
func (m *LLM) Close() error {
	s, err := m.session()
	if err != nil {
		return err
	}
	m.s = nil
	return s.Close()
}

// Generate continues prompt by n tokens at most, greedily, from an empty
// context, and returns the text generated (which ends early at an
// end-of-generation token or a full context).
func (m *LLM) Generate(prompt string, n int) (string, error) {
	return m.Sample(prompt, n, 0, 0)
}

// Sample is Generate drawing each token at the given temperature (0 is
// greedy) from a random stream set by seed.
func (m *LLM) Sample(prompt string, n int, temperature float64, seed int) (string, error) {
	s, err := m.session()
	if err != nil {
		return "", err
	}
	if n < 1 {
		return "", &driver.OptionError{Option: "n", Detail: fmt.Sprintf("%d tokens: want at least 1", n)}
	}
	s.Reset()
	var sb strings.Builder
	opts := driver.GenerateOptions{MaxTokens: n}
	opts.Temperature, opts.Seed = temperature, uint64(seed)
	_, err = s.Generate(context.Background(), prompt, opts, func(piece string) { sb.WriteString(piece) })
	return sb.String(), err
}

func (m *LLM) tokenizer() (*tokenizer.Tokenizer, error) {
	s, err := m.session()
	if err != nil {
		return nil, err
	}
	return s.Tokenizer()
}

// Tokenize returns the token ids of text as a prompt starts: with the BOS
// token when the vocabulary asks for one.
func (m *LLM) Tokenize(text string) ([]int, error) {
	t, err := m.tokenizer()
	if err != nil {
		return nil, err
	}
	ids, err := t.Encode(text, tokenizer.EncodeOptions{AddBOS: t.AddBOS()})
	if err != nil {
		return nil, err
	}
	out := make([]int, len(ids))
	for i, id := range ids {
		out[i] = int(id)
	}
	return out, nil
}

// Detokenize returns the text of token ids.
func (m *LLM) Detokenize(ids []int) (string, error) {
	t, err := m.tokenizer()
	if err != nil {
		return "", err
	}
	ids32, err := toIDs(ids)
	if err != nil {
		return "", err
	}
	return t.Decode(ids32)
}

// Logits scores tokens from position 0 and returns the logits after the
// last one, one per vocabulary entry.
func (m *LLM) Logits(tokens []int) ([]float64, error) {
	s, err := m.session()
	if err != nil {
		return nil, err
	}
	ids, err := toIDs(tokens)
	if err != nil {
		return nil, err
	}
	rows, err := s.Logits(ids, false)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return nil, driver.ErrEmptyPrompt
	}
	out := make([]float64, len(rows[0]))
	for i, x := range rows[0] {
		out[i] = float64(x)
	}
	return out, nil
}

// VocabSize returns the number of token ids.
func (m *LLM) VocabSize() int {
	t, err := m.tokenizer()
	if err != nil {
		return 0
	}
	return t.VocabSize()
}

// Graph returns the text of the decode step's graph (one token), as
// Graph.String prints a notebook graph.
func (m *LLM) Graph() (string, error) {
	s, err := m.session()
	if err != nil {
		return "", err
	}
	_, g, err := s.Step(1, families.LastToken)
	if err != nil {
		return "", err
	}
	return g.String(), nil
}

func toIDs(ids []int) ([]int32, error) {
	out := make([]int32, len(ids))
	for i, id := range ids {
		if id < math.MinInt32 || id > math.MaxInt32 {
			return nil, &DataError{Name: "tokens", Detail: fmt.Sprintf("id %d at index %d is not an i32", id, i)}
		}
		out[i] = int32(id)
	}
	return out, nil
}
