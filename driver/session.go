package driver

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/internal/mmap"
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
	// KV is the dtype of the KV caches: F32 (zero means F32) or F16,
	// which halves their memory and the bytes attention reads (see
	// families.StepShape.KV).
	KV poot.DType
	// Residency says where the weights are read from (see load.Residency;
	// zero means load.Auto).
	Residency load.Residency
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
	// outs are the outputs of the step's last reusing run (see
	// Session.run), which an executable that writes into its caller's
	// tensors (intoRunner) overwrites on the next.
	outs []tensor.Tensor
}

// intoRunner is an executable that writes a step's outputs into tensors
// its caller keeps (the cpu interpreter's RunInto): a decode step that
// returned fresh logits (half a megabyte at a vocabulary of 128k) spent up
// to two milliseconds in page faults and the collector.
type intoRunner interface {
	RunInto(slots interp.Slots, state *interp.State, outs []tensor.Tensor) error
}

// Session is one opened model with its KV state. Its steps run one at a
// time: a method that runs the model holds the session while it does, so
// calls from several goroutines are serialised rather than interleaved
// (a conversation is still one sequence of calls, and the cache follows
// whichever call came last). Close may come from any goroutine, at any
// time, even from a Generate callback: it waits for the step that is
// running, and every later call returns ErrClosed.
type Session struct {
	// mu is held by every method that touches the checkpoint, the
	// compiled steps or the state; Close takes it to release them.
	mu     sync.Mutex
	closed bool

	ckpt     *load.Checkpoint
	model    families.Model
	schema   families.Schema
	tok      *tokenizer.Tokenizer
	tokErr   error
	interp   interp.Interpreter
	capacity int
	kv       poot.DType
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
	if err := checkKV(opts.KV); err != nil {
		return nil, err
	}
	progress("open", 0)
	ckpt, err := load.OpenWith(path, opts.Residency)
	if err != nil {
		return nil, err
	}
	s := &Session{ckpt: ckpt, interp: in, limits: opts.Limits, kv: opts.KV, steps: map[families.StepShape]*step{}}
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
	if s.tokErr == nil {
		if err := families.CheckVocab(s.schema.Vocab, s.tok.VocabSize()); err != nil {
			return nil, err
		}
	}
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
	return registry.FromCheckpoint(c)
}

// OpenTokenizer loads only the vocabulary at path: a GGUF file's, a
// safetensors directory's, or that of a directory holding tokenizer files
// only (tokenizer.json or tokenizer.json.gz, with tokenizer_config.json
// and config.json when present; no weights). done releases the checkpoint the vocabulary may
// still read.
func OpenTokenizer(path string) (t *tokenizer.Tokenizer, done func(), err error) {
	c, err := load.OpenWith(path, load.Mapped)
	if err != nil {
		for _, name := range []string{"tokenizer.json", "tokenizer.json.gz"} {
			if st, serr := os.Stat(filepath.Join(path, name)); serr == nil && st.Mode().IsRegular() {
				t, err := tokenizer.FromHFDir(path)
				return t, func() {}, err
			}
		}
		return nil, nil, err
	}
	if t, err = TokenizerOf(c); err != nil {
		c.Close()
		return nil, nil, err
	}
	return t, func() { c.Close() }, nil
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
	if dir.TokenizerJSON() == nil {
		return nil, fmt.Errorf("%w (no tokenizer.json in %s)", ErrNoTokenizer, dir.Path())
	}
	// The files the directory read when it opened: tokenizer.json,
	// tokenizer_config.json and config.json's end ids.
	return tokenizer.FromHFFiles(dir.TokenizerJSON(), dir.TokenizerConfigJSON(), dir.ConfigJSON())
}

// Close waits for a running step to finish, releases the compiled steps,
// the state and the checkpoint, and marks the session closed: every later
// call of a method with an error result returns ErrClosed (Close itself
// included), and the others return what they would for an empty session.
// It is safe to call from any goroutine.
func (s *Session) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return ErrClosed
	}
	s.closed = true
	for _, st := range s.steps {
		if c, ok := st.exe.(interface{ Close() }); ok {
			c.Close()
		}
	}
	s.steps, s.recent, s.state, s.history = nil, nil, nil, nil
	return s.ckpt.Close()
}

// lock takes the session for a method, or reports ErrClosed (and leaves
// it unlocked) when it has been closed.
func (s *Session) lock() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return ErrClosed
	}
	return nil
}

// Model returns the configured model.
func (s *Session) Model() families.Model { return s.model }

// Checkpoint returns the opened checkpoint (closed once the session is).
func (s *Session) Checkpoint() *load.Checkpoint { return s.ckpt }

// Tokenizer returns the model's tokenizer, or an error wrapping
// ErrNoTokenizer (or the tokenizer's load error), or ErrClosed.
func (s *Session) Tokenizer() (*tokenizer.Tokenizer, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.tok, s.tokErr
}

// Interpreter returns the session's interpreter.
func (s *Session) Interpreter() interp.Interpreter { return s.interp }

// Capacity returns the number of cache positions.
func (s *Session) Capacity() int { return s.capacity }

// KV is the dtype of the session's KV caches.
func (s *Session) KV() poot.DType { return cmp.Or(s.kv, poot.F32) }

// checkKV refuses a KV cache dtype other than F32, F16 and Q8_0.
func checkKV(d poot.DType) error {
	if err := families.CheckCacheDType(d); err != nil {
		return &OptionError{Option: "KV", Detail: err.Error()}
	}
	return nil
}

// Len returns the number of tokens in the cache (0 once closed).
func (s *Session) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.history)
}

// History returns a copy of the tokens in the cache, in position order
// (none once closed).
func (s *Session) History() []int32 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]int32(nil), s.history...)
}

// Reset empties the cache; on a closed session it does nothing.
func (s *Session) Reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.reset()
}

func (s *Session) reset() {
	s.history = s.history[:0]
	if s.state != nil {
		// The values are about to be cleared: a device holding them
		// only has to let go.
		s.state.Discard()
		for _, t := range s.state.Tensors {
			clear(t.Data)
		}
	}
}

// DecodeInfo describes the decode step (one token, last logits); it is
// the zero StepInfo once the session is closed.
func (s *Session) DecodeInfo() StepInfo {
	if s.lock() != nil {
		return StepInfo{}
	}
	defer s.mu.Unlock()
	st, _ := s.step(1, families.LastToken, nil)
	if st == nil {
		return StepInfo{}
	}
	return st.info
}

// Step returns the description of the step of n new tokens with the given
// logits mode, making it if needed.
func (s *Session) Step(n int, logits families.LogitsMode) (StepInfo, *poot.Graph, error) {
	if err := s.lock(); err != nil {
		return StepInfo{}, nil, err
	}
	defer s.mu.Unlock()
	st, err := s.step(n, logits, nil)
	if err != nil {
		return StepInfo{}, nil, err
	}
	return st.info, st.graph, nil
}

// step returns the compiled step of n new tokens, tracing, binding and
// compiling it on first use.
func (s *Session) step(n int, logits families.LogitsMode, stage func(string)) (*step, error) {
	shape := families.StepShape{Rows: 1, New: n, Capacity: s.capacity, Logits: logits, KV: s.kv}
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
	// Compiling may read (repack, convert) weights that live in the
	// checkpoint's mapping; a fault there is an error, not a crash.
	var exe interp.Executable
	err = mmap.Guard("compiling "+st.info.Program, func() (err error) {
		exe, err = s.interp.Compile(bg, interp.ConstMap(consts))
		return err
	})
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
	if err := s.lock(); err != nil {
		return err
	}
	defer s.mu.Unlock()
	return s.checkTokens(tokens)
}

func (s *Session) checkTokens(tokens []int32) error {
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
	if err := s.checkTokens(tokens); err != nil {
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
		out, err := s.run(chunk, m, false)
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

// run runs one step over chunk at the next positions and returns its
// logits. With reuse the logits may be the step's own buffer, valid until
// the next reusing run of the same step: for a caller that is done with
// them by then (generation's decode loop).
func (s *Session) run(chunk []int32, mode families.LogitsMode, reuse bool) ([]float32, error) {
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
	// The interpreters read weights straight from the checkpoint's mapping;
	// a fault there (the file truncated or rewritten underneath) comes back
	// as an error wrapping load.ErrFault, from this goroutine or from the
	// backend's workers, which hand their panics to this one.
	var out []tensor.Tensor
	slots := interp.Slots{"token": tok, "pos": pt}
	err = mmap.Guard("running "+st.info.Program, func() (err error) {
		if r, ok := st.exe.(intoRunner); ok && reuse && st.outs != nil {
			out = st.outs
			return r.RunInto(slots, s.state, out)
		}
		out, err = st.exe.Run(slots, s.state)
		if err == nil && reuse {
			st.outs = out
		}
		return err
	})
	if err != nil {
		// An interpreter that writes caches in place (cpu) may have
		// written some rows before a fault inside the graph; empty the
		// cache rather than continue from a state the history does not
		// describe.
		s.reset()
		return nil, &StepError{Program: st.info.Program, Stage: "run", New: len(chunk), Err: err}
	}
	if len(out) == 0 {
		return nil, &StepError{Program: st.info.Program, Stage: "run", New: len(chunk), Err: errors.New("the step has no outputs")}
	}
	logits := out[0].F32()
	if err := checkFinite(st.info.Program, logits, s.schema.Vocab, len(s.history)+len(chunk)); err != nil {
		// The cache now holds what the broken arithmetic wrote; empty it
		// so that nothing later attends to it.
		s.reset()
		return nil, err
	}
	s.history = append(s.history, chunk...)
	return logits, nil
}

// checkFinite returns a *NonFiniteError for the first row of logits
// (vocab wide, the last of them at position end-1) holding a NaN or an
// infinity: no token can be chosen from such a row, and an argmax would
// silently pick one anyway.
func checkFinite(program string, logits []float32, vocab, end int) error {
	if vocab <= 0 {
		return nil
	}
	rows := len(logits) / vocab
	for r := range rows {
		row := logits[r*vocab : (r+1)*vocab]
		first, count := -1, 0
		for i, v := range row {
			if v-v != 0 { // NaN or ±Inf
				if first < 0 {
					first = i
				}
				count++
			}
		}
		if first >= 0 {
			return &NonFiniteError{Program: program, Position: end - rows + r, Token: first, Value: row[first], Count: count, Vocab: vocab}
		}
	}
	return nil
}

// Logits scores tokens from position 0 in an emptied cache and returns the
// logits after each token when all is set, otherwise after the last one
// only. The ids are used as given (no BOS is added). Afterwards the cache
// holds the tokens, so Generate-style decoding could continue from them.
func (s *Session) Logits(tokens []int32, all bool) ([][]float32, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	if len(tokens) == 0 {
		return nil, ErrEmptyPrompt
	}
	s.reset()
	rows, err := s.feed(tokens, all)
	if err != nil {
		s.reset()
		return nil, err
	}
	out := make([][]float32, len(rows))
	for i, r := range rows {
		out[i] = append([]float32(nil), r...)
	}
	return out, nil
}
