package nb

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sort"
	"strconv"
	"strings"

	"github.com/pootlabs/poot"

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

// String describes the model: family, layers, width, vocabulary and
// context.
func (m *LLM) String() string {
	s, err := m.session()
	if err != nil {
		return "nb.LLM (closed)"
	}
	sc := s.Model().Schema()
	return fmt.Sprintf("nb.LLM: %s, %d layers of width %d, vocabulary of %d, context of %d tokens",
		s.Model().Family(), sc.Layers, sc.Dim, sc.Vocab, s.Capacity())
}

// Generate continues prompt by n tokens at most, greedily, from an empty
// context, and returns the text generated (which ends early at an
// end-of-generation token or a full context).
func (m *LLM) Generate(prompt string, n int) (string, error) {
	return m.Sample(prompt, n, 0, 0, nil)
}

// GenerateFunc is Generate handing each piece of text to each as soon as
// it is decoded (to print it while the rest is generated); generation stops
// early when each returns false. It returns the text generated.
func (m *LLM) GenerateFunc(prompt string, n int, each func(piece string) bool) (string, error) {
	return m.Sample(prompt, n, 0, 0, each)
}

// Sample is GenerateFunc drawing each token at the given temperature (0 is
// greedy) from a random stream set by seed; each may be nil.
func (m *LLM) Sample(prompt string, n int, temperature float64, seed int, each func(piece string) bool) (string, error) {
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
	ctx, stop := context.WithCancel(context.Background())
	defer stop()
	_, err = s.Generate(ctx, prompt, opts, func(piece string) {
		if ctx.Err() != nil {
			return // pieces flushed after each asked to stop
		}
		sb.WriteString(piece)
		if each != nil && !each(piece) {
			stop()
		}
	})
	if errors.Is(err, context.Canceled) && ctx.Err() != nil {
		err = nil
	}
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
	return tokenize(t, text)
}

// Detokenize returns the text of token ids.
func (m *LLM) Detokenize(ids []int) (string, error) {
	t, err := m.tokenizer()
	if err != nil {
		return "", err
	}
	return detokenize(t, ids)
}

// Vocab is a vocabulary opened on its own, without a model: a GGUF file's,
// or a directory's tokenizer.json (with tokenizer_config.json and
// config.json when present; no weights needed).
type Vocab struct {
	t    *tokenizer.Tokenizer
	done func()
}

// OpenVocab opens the vocabulary at path.
func OpenVocab(path string) (*Vocab, error) {
	t, done, err := driver.OpenTokenizer(path)
	if err != nil {
		return nil, err
	}
	return &Vocab{t: t, done: done}, nil
}

// Close releases the file the vocabulary was read from.
func (v *Vocab) Close() error {
	if v == nil || v.t == nil {
		return ErrClosed
	}
	v.done()
	v.t = nil
	return nil
}

// Tokenize returns the token ids of text as a prompt starts.
func (v *Vocab) Tokenize(text string) ([]int, error) {
	if v == nil || v.t == nil {
		return nil, ErrClosed
	}
	return tokenize(v.t, text)
}

// Detokenize returns the text of token ids.
func (v *Vocab) Detokenize(ids []int) (string, error) {
	if v == nil || v.t == nil {
		return "", ErrClosed
	}
	return detokenize(v.t, ids)
}

func tokenize(t *tokenizer.Tokenizer, text string) ([]int, error) {
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

func detokenize(t *tokenizer.Tokenizer, ids []int) (string, error) {
	ids32, err := toIDs(ids)
	if err != nil {
		return "", err
	}
	return t.Decode(ids32)
}

// Logits scores tokens from position 0 and returns the logits after the
// last one, one per vocabulary entry.
func (m *LLM) Logits(tokens []int) ([]float64, error) {
	all, err := m.logits(tokens, false)
	if err != nil {
		return nil, err
	}
	return all.Data, nil
}

// LogitsAll scores tokens from position 0 and returns the logits after
// every one: a Tensor [len(tokens), vocabulary], row i scoring the token
// after tokens[i].
func (m *LLM) LogitsAll(tokens []int) (Tensor, error) { return m.logits(tokens, true) }

func (m *LLM) logits(tokens []int, all bool) (Tensor, error) {
	s, err := m.session()
	if err != nil {
		return Tensor{}, err
	}
	ids, err := toIDs(tokens)
	if err != nil {
		return Tensor{}, err
	}
	rows, err := s.Logits(ids, all)
	if err != nil {
		return Tensor{}, err
	}
	if len(rows) == 0 {
		return Tensor{}, driver.ErrEmptyPrompt
	}
	t := Tensor{Shape: []int{len(rows), len(rows[0])}, DType: "f32", Data: make([]float64, 0, len(rows)*len(rows[0]))}
	for _, r := range rows {
		for _, x := range r {
			t.Data = append(t.Data, float64(x))
		}
	}
	if !all {
		t.Shape = t.Shape[1:]
	}
	return t, nil
}

// NextTokens charts the k likeliest tokens to follow prompt (tokenized as
// Tokenize does) with their probabilities, likeliest first.
func (m *LLM) NextTokens(prompt string, k int) (Chart, error) {
	if k < 1 {
		return Chart{}, &driver.OptionError{Option: "k", Detail: fmt.Sprintf("%d tokens: want at least 1", k)}
	}
	ids, err := m.Tokenize(prompt)
	if err != nil {
		return Chart{}, err
	}
	logits, err := m.Logits(ids)
	if err != nil {
		return Chart{}, err
	}
	top := math.Inf(-1)
	for _, x := range logits {
		top = math.Max(top, x)
	}
	sum := 0.0
	probs := make([]float64, len(logits))
	for i, x := range logits {
		probs[i] = math.Exp(x - top)
		sum += probs[i]
	}
	order := make([]int, len(probs))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return probs[order[a]] > probs[order[b]] })
	c := Chart{Title: fmt.Sprintf("next token after %q", prompt)}
	for _, id := range order[:min(k, len(order))] {
		piece, err := m.Detokenize([]int{id})
		if err != nil {
			return Chart{}, err
		}
		c.Labels = append(c.Labels, strconv.Quote(piece))
		c.Values = append(c.Values, probs[id]/sum)
	}
	return c, nil
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
	g, err := m.decodeGraph()
	if err != nil {
		return "", err
	}
	return g.String(), nil
}

func (m *LLM) decodeGraph() (*poot.Graph, error) {
	s, err := m.session()
	if err != nil {
		return nil, err
	}
	_, g, err := s.Step(1, families.LastToken)
	return g, err
}

// Picture draws the decode step's graph as Graph.Picture does, with the
// scopes nested deeper than depth folded (0 folds none).
func (m *LLM) Picture(depth int) (Picture, error) {
	g, err := m.decodeGraph()
	if err != nil {
		return Picture{}, err
	}
	return drawGraph(g, depth), nil
}

// SVG draws the decode step with each layer's attention and feed-forward
// folded (Picture(2)), or the error; it makes a notebook show an LLM as a
// picture.
func (m *LLM) SVG() string {
	p, err := m.Picture(2)
	if err != nil {
		return textPicture("error: " + err.Error()).Source
	}
	return p.Source
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
