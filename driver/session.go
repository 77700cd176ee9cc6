package driver

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/tensor"
	"github.com/pootlabs/poot/tokenizer"
)

// Options configure a session.
type Options struct {
	// Interp names the interpreter (see Interpreters); empty means
	// DefaultInterpreter.
	Interp string
	// Capacity is the number of cache positions: the longest prompt plus
	// generation the session can hold. Zero means the model's declared
	// context, at most DefaultCapacity (DefaultCapacity when it declares
	// none).
	Capacity int
	// PrefillChunk is the largest number of prompt tokens one prefill step
	// takes; longer prompts are prefilled in chunks. Zero means
	// DefaultPrefillChunk.
	PrefillChunk int
	// Limits bound what tracing may record (zero fields: no limit).
	Limits poot.Limits
	// Progress, when set, is told as opening advances.
	Progress func(Progress)
}

// Progress reports how far opening a session has got: Stage is one of
// "open", "tokenizer", "trace", "bind", "compile", "ready"; Done of Total
// stages are finished.
type Progress struct {
	Stage       string
	Done, Total int
}

// MaxPrefillSteps is how many compiled prefill steps (one per distinct
// chunk length and logits mode) a session keeps; the least recently used
// is dropped beyond it, bounding the interpreters' buffers.
const MaxPrefillSteps = 4

// Defaults of Options.
const (
	DefaultCapacity     = 4096
	DefaultPrefillChunk = 64
)

// StepInfo describes one traced, bound and compiled step.
type StepInfo struct {
	Program     string
	Shape       families.StepShape
	Equations   int
	Dispatches  int
	TraceTime   time.Duration
	BindTime    time.Duration
	CompileTime time.Duration
}

type step struct {
	info  StepInfo
	graph *poot.Graph // bound: constants retyped to their stored dtypes
	exe   interp.Executable
}

// Session is one opened model with its KV state. It is not safe for
// concurrent use.
type Session struct {
	ckpt     *load.Checkpoint
	model    families.Model
	schema   families.Schema
	tok      *tokenizer.Tokenizer
	tokErr   error
	interp   interp.Interpreter
	capacity int
	chunk    int
	limits   poot.Limits

	steps   map[families.StepShape]*step
	recent  []families.StepShape // prefill shapes, least recently used first
	state   *interp.State
	history []int32 // the tokens in the cache, in position order
}

// Open opens the checkpoint at path, configures its model through the family
// registry, loads its tokenizer, and traces, binds and compiles the decode
// step. Prefill steps are made on first use, one per chunk length; the
// session keeps the decode step and the MaxPrefillSteps most recently used
// prefill steps compiled.
func Open(path string, opts Options) (*Session, error) {
	progress := func(stage string, done int) {
		if opts.Progress != nil {
			opts.Progress(Progress{Stage: stage, Done: done, Total: 5})
		}
	}
	in, err := NewInterpreter(opts.Interp)
	if err != nil {
		return nil, err
	}
	if opts.PrefillChunk < 0 {
		return nil, &OptionError{Option: "PrefillChunk", Detail: fmt.Sprintf("%d is negative", opts.PrefillChunk)}
	}
	if opts.Capacity < 0 {
		return nil, &OptionError{Option: "Capacity", Detail: fmt.Sprintf("%d is negative", opts.Capacity)}
	}
	progress("open", 0)
	ckpt, err := load.Open(path)
	if err != nil {
		return nil, err
	}
	s := &Session{ckpt: ckpt, interp: in, limits: opts.Limits, steps: map[families.StepShape]*step{}}
	ok := false
	defer func() {
		if !ok {
			ckpt.Close()
		}
	}()
	if s.model, err = ModelOf(ckpt); err != nil {
		return nil, err
	}
	s.schema = s.model.Schema()
	progress("tokenizer", 1)
	s.tok, s.tokErr = TokenizerOf(ckpt)
	s.capacity = opts.Capacity
	if s.capacity == 0 {
		s.capacity = DefaultCapacity
		if m := s.schema.MaxContext; m > 0 && m < s.capacity {
			s.capacity = m
		}
	}
	s.chunk = opts.PrefillChunk
	if s.chunk == 0 {
		s.chunk = DefaultPrefillChunk
	}
	s.chunk = min(s.chunk, s.capacity)
	progress("trace", 2)
	if _, err := s.step(1, families.LastToken, func(stage string) {
		progress(stage, map[string]int{"bind": 3, "compile": 4}[stage])
	}); err != nil {
		return nil, err
	}
	progress("ready", 5)
	ok = true
	return s, nil
}

// ModelOf configures the model of an opened checkpoint through the family
// registry: general.architecture of a GGUF file, the architectures of a
// config.json.
func ModelOf(c *load.Checkpoint) (families.Model, error) {
	if f := c.GGUF(); f != nil {
		return registry.FromGGUF(f)
	}
	cfg := c.HFConfig()
	if cfg == nil {
		return nil, fmt.Errorf("%s: no config.json", c.Path())
	}
	return registry.FromHF(cfg)
}

// TokenizerOf loads the vocabulary of an opened checkpoint: the GGUF
// metadata, or a safetensors directory's tokenizer.json (with
// tokenizer_config.json when present). A checkpoint without one is an error
// wrapping ErrNoTokenizer.
func TokenizerOf(c *load.Checkpoint) (*tokenizer.Tokenizer, error) {
	if f := c.GGUF(); f != nil {
		if !f.Has(tokenizer.KeyTokens) {
			return nil, fmt.Errorf("%w (no %s key)", ErrNoTokenizer, tokenizer.KeyTokens)
		}
		return tokenizer.FromGGUF(f)
	}
	dir := c.Safetensors()
	if dir == nil {
		return nil, ErrNoTokenizer
	}
	js := dir.TokenizerJSON()
	if js == nil {
		return nil, fmt.Errorf("%w (no tokenizer.json in %s)", ErrNoTokenizer, dir.Path())
	}
	var cfgs []tokenizer.HFConfig
	if data, err := os.ReadFile(filepath.Join(dir.Path(), "tokenizer_config.json")); err == nil {
		cfg, err := tokenizer.ParseHFConfig(data)
		if err != nil {
			return nil, err
		}
		cfgs = append(cfgs, cfg)
	}
	return tokenizer.FromHFJSON(js, cfgs...)
}

// Close releases the checkpoint. The session must not be used afterwards.
func (s *Session) Close() error { return s.ckpt.Close() }

// Model returns the configured model.
func (s *Session) Model() families.Model { return s.model }

// Checkpoint returns the opened checkpoint.
func (s *Session) Checkpoint() *load.Checkpoint { return s.ckpt }

// Tokenizer returns the model's tokenizer, or an error wrapping
// ErrNoTokenizer (or the tokenizer's load error).
func (s *Session) Tokenizer() (*tokenizer.Tokenizer, error) { return s.tok, s.tokErr }

// Interpreter returns the session's interpreter.
func (s *Session) Interpreter() interp.Interpreter { return s.interp }

// Capacity returns the number of cache positions.
func (s *Session) Capacity() int { return s.capacity }

// Len returns the number of tokens in the cache.
func (s *Session) Len() int { return len(s.history) }

// History returns a copy of the tokens in the cache, in position order.
func (s *Session) History() []int32 { return append([]int32(nil), s.history...) }

// Reset empties the cache.
func (s *Session) Reset() {
	s.history = s.history[:0]
	if s.state != nil {
		for _, t := range s.state.Tensors {
			clear(t.Data)
		}
	}
}

// DecodeInfo describes the decode step (one token, last logits).
func (s *Session) DecodeInfo() StepInfo {
	st, _ := s.step(1, families.LastToken, nil)
	if st == nil {
		return StepInfo{}
	}
	return st.info
}

// Step returns the description of the step of n new tokens with the given
// logits mode, making it if needed.
func (s *Session) Step(n int, logits families.LogitsMode) (StepInfo, *poot.Graph, error) {
	st, err := s.step(n, logits, nil)
	if err != nil {
		return StepInfo{}, nil, err
	}
	return st.info, st.graph, nil
}

// step returns the compiled step of n new tokens, tracing, binding and
// compiling it on first use.
func (s *Session) step(n int, logits families.LogitsMode, stage func(string)) (*step, error) {
	shape := families.StepShape{Rows: 1, New: n, Capacity: s.capacity, Logits: logits}
	if st, ok := s.steps[shape]; ok {
		s.touch(shape)
		return st, nil
	}
	program := families.Prefill
	if n == 1 && logits == families.LastToken {
		program = families.Decode
	}
	fail := func(stage string, err error) (*step, error) {
		return nil, &StepError{Program: program, Stage: stage, New: n, Err: err}
	}
	st := &step{info: StepInfo{Program: program, Shape: shape}}
	t0 := time.Now()
	g, err := s.model.Trace(families.StepSpec{Program: program, Shape: shape}, s.limits)
	if err != nil {
		return fail("trace", err)
	}
	t1 := time.Now()
	if stage != nil {
		stage("bind")
	}
	bg, consts, err := load.Bind(g, s.ckpt, s.model.Weights().Resolver())
	if err != nil {
		return fail("bind", err)
	}
	t2 := time.Now()
	if stage != nil {
		stage("compile")
	}
	exe, err := s.interp.Compile(bg, interp.ConstMap(consts))
	if err != nil {
		return fail("compile", err)
	}
	t3 := time.Now()
	if s.state == nil {
		if s.state, err = interp.NewState(bg); err != nil {
			return fail("compile", err)
		}
	}
	st.graph, st.exe = bg, exe
	st.info.Equations = bg.NumEqns()
	st.info.Dispatches = poot.DispatchCount(bg)
	st.info.TraceTime, st.info.BindTime, st.info.CompileTime = t1.Sub(t0), t2.Sub(t1), t3.Sub(t2)
	s.steps[shape] = st
	s.touch(shape)
	return st, nil
}

// touch marks a prefill shape as just used and drops the least recently used
// prefill steps beyond MaxPrefillSteps.
func (s *Session) touch(shape families.StepShape) {
	if shape.New == 1 && shape.Logits == families.LastToken {
		return // the decode step stays
	}
	if i := slices.Index(s.recent, shape); i >= 0 {
		s.recent = slices.Delete(s.recent, i, i+1)
	}
	s.recent = append(s.recent, shape)
	for len(s.recent) > MaxPrefillSteps {
		delete(s.steps, s.recent[0])
		s.recent = s.recent[1:]
	}
}

// CheckTokens validates token ids against the vocabulary.
func (s *Session) CheckTokens(tokens []int32) error {
	for i, id := range tokens {
		if id < 0 || int(id) >= s.schema.Vocab {
			return &TokenError{Index: i, ID: id, Vocab: s.schema.Vocab}
		}
	}
	return nil
}

// feed runs tokens through the model at the positions after the cache's,
// in chunks of at most the prefill chunk, and returns the logits: of the
// last token, or of every token when all is set (rows of the vocabulary's
// width). On error the cache holds the chunks that succeeded.
func (s *Session) feed(tokens []int32, all bool) ([][]float32, error) {
	if err := s.CheckTokens(tokens); err != nil {
		return nil, err
	}
	if need := len(s.history) + len(tokens); need > s.capacity {
		return nil, &ContextError{Need: need, Capacity: s.capacity}
	}
	mode := families.LastToken
	if all {
		mode = families.AllTokens
	}
	var rows [][]float32
	for start := 0; start < len(tokens); start += s.chunk {
		chunk := tokens[start:min(start+s.chunk, len(tokens))]
		last := start+len(chunk) == len(tokens)
		m := mode
		if !last && !all {
			m = families.LastToken
		}
		out, err := s.run(chunk, m)
		if err != nil {
			return nil, err
		}
		if !last && !all {
			continue
		}
		v := s.schema.Vocab
		for r := range len(out) / v {
			rows = append(rows, out[r*v:(r+1)*v])
		}
	}
	return rows, nil
}

// run runs one step over chunk at the next positions and returns its logits.
func (s *Session) run(chunk []int32, mode families.LogitsMode) ([]float32, error) {
	st, err := s.step(len(chunk), mode, nil)
	if err != nil {
		return nil, err
	}
	pos := make([]int32, len(chunk))
	for i := range pos {
		pos[i] = int32(len(s.history) + i)
	}
	tok, err := tensor.FromI32(poot.Shape{len(chunk)}, chunk)
	if err != nil {
		return nil, err
	}
	pt, err := tensor.FromI32(poot.Shape{len(chunk)}, pos)
	if err != nil {
		return nil, err
	}
	out, err := st.exe.Run(interp.Slots{"token": tok, "pos": pt}, s.state)
	if err != nil {
		// An interpreter that writes caches in place (cpu) may have
		// written some rows before a fault inside the graph; empty the
		// cache rather than continue from a state the history does not
		// describe.
		s.Reset()
		return nil, &StepError{Program: st.info.Program, Stage: "run", New: len(chunk), Err: err}
	}
	if len(out) == 0 {
		return nil, &StepError{Program: st.info.Program, Stage: "run", New: len(chunk), Err: errors.New("the step has no outputs")}
	}
	s.history = append(s.history, chunk...)
	return out[0].F32(), nil
}

// Logits scores tokens from position 0 in an emptied cache and returns the
// logits after each token when all is set, otherwise after the last one
// only. The ids are used as given (no BOS is added). Afterwards the cache
// holds the tokens, so Generate-style decoding could continue from them.
func (s *Session) Logits(tokens []int32, all bool) ([][]float32, error) {
	if len(tokens) == 0 {
		return nil, ErrEmptyPrompt
	}
	s.Reset()
	rows, err := s.feed(tokens, all)
	if err != nil {
		s.Reset()
		return nil, err
	}
	out := make([][]float32, len(rows))
	for i, r := range rows {
		out[i] = append([]float32(nil), r...)
	}
	return out, nil
}
