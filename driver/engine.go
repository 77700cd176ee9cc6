package driver

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/internal/mmap"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/tensor"
	"github.com/pootlabs/poot/tokenizer"
)

// EngineOptions configure an Engine.
type EngineOptions struct {
	// Interp names the interpreter, as Options.Interp does.
	Interp string
	// Parallel is the most sequences decoded at once (the rows of the
	// widest decode step); zero means DefaultParallel.
	Parallel int
	// Capacity is each sequence's context: prompt plus generated tokens.
	// Zero means as in Options.
	Capacity int
	// PrefillChunk bounds one prefill step (rounded down to a power of
	// two); zero means DefaultPrefillChunk.
	PrefillChunk int
	// PageSize is the number of cache positions in a page; zero means
	// DefaultPageSize.
	PageSize int
	// Pages is the size of the shared page pool; zero means enough for
	// Parallel sequences at full capacity.
	Pages int
	// Queue is the most requests waiting for a row; zero means
	// 4*Parallel. A request beyond it is refused with ErrQueueFull.
	Queue int
	// Limits bound what tracing may record.
	Limits poot.Limits
	// KV is the dtype of the KV caches, as in Options.
	KV poot.DType
	// Residency says where the weights are read from, as in Options.
	Residency load.Residency
	// Progress, when set, is told as opening advances.
	Progress func(Progress)
}

// Defaults of EngineOptions.
const (
	DefaultParallel = 4
	DefaultPageSize = 16
)

var (
	// ErrQueueFull: the engine's queue of waiting requests is full.
	ErrQueueFull = errors.New("the request queue is full")
	// ErrCacheFull: the KV page pool has no page left for a sequence.
	ErrCacheFull = errors.New("KV cache exhausted")
	// ErrRowState: the model carries a state whose shape depends on the
	// step's rows, which steps of different widths cannot share (paged
	// caches and families.Step.SequenceState states can be shared).
	ErrRowState = errors.New("the model carries a state shaped by the step's rows, which the batched engine cannot share between steps")
)

// CacheError reports a sequence that needed Need more pages of the KV
// pool when Free of Pages were free.
type CacheError struct{ Need, Free, Pages int }

// Error formats the error on one line.
func (e *CacheError) Error() string {
	return fmt.Sprintf("KV cache exhausted: %d more pages needed, %d of %d free", e.Need, e.Free, e.Pages)
}

// Unwrap returns ErrCacheFull.
func (e *CacheError) Unwrap() error { return ErrCacheFull }

// Request is one generation for an Engine: the prompt as token ids (BOS
// included when wanted) and how to generate. NoBOS and ParseSpecial of
// GenerateOptions do not apply (the prompt is tokenized already).
type Request struct {
	Prompt []int32
	GenerateOptions
	// PresencePenalty is subtracted from the logit of every token generated
	// so far, FrequencyPenalty times the number of times it was generated
	// (the OpenAI penalties, over the generated tokens).
	PresencePenalty, FrequencyPenalty float64
	// Logprobs asks for each token's log-probability under the model, and
	// TopLogprobs for that many most likely alternatives.
	Logprobs    bool
	TopLogprobs int
}

// TokenLogprob is a token with its log-probability.
type TokenLogprob struct {
	Token   int32
	Logprob float64
}

// Piece is what one generated token produced: the text it completes
// (whole UTF-8 characters, held back while it could start a stop string;
// empty then) and, when asked for, its log-probabilities. The last piece
// of a generation may have Token -1: the text the decoder held back.
type Piece struct {
	Text    string
	Token   int32
	Logprob float64
	Top     []TokenLogprob
}

// Engine runs many sequences at once over one model: a scheduler
// goroutine admits requests between steps, prefills each in chunks
// interleaved with batched decode steps of all running sequences, and
// keeps every sequence's cache in pages of one shared pool (the families'
// paged layout). Sequences never see each other's positions: each row's
// slot map names its own pages only. A sequence's output depends on its
// request alone: prefill chunks are cut from the prompt's length, and a
// row of a batched step is computed as it would be alone.
type Engine struct {
	ckpt   *load.Checkpoint
	model  families.Model
	vocab  int
	tok    *tokenizer.Tokenizer
	tokErr error
	interp interp.Interpreter
	limits poot.Limits
	kv     poot.DType

	parallel, capacity, chunk, pageSize, pages, queueMax int
	scratch                                              int32 // the page rows of no sequence read and write

	steps map[families.StepShape]*step
	state *interp.State

	mu      sync.Mutex
	closed  bool
	queue   []*sequence
	free    []int32 // free pages
	running int
	wake    chan struct{}
	quit    chan struct{}
	done    chan struct{}
}

// sequence is one request inside the engine. The scheduler owns toks,
// fed, pages, sampler and counts; events, finished and err are shared
// with the caller under mu.
type sequence struct {
	ctx     context.Context
	req     Request
	toks    []int32 // prompt, then generated tokens
	fed     int     // tokens in the cache
	pages   []int32
	sampler *Sampler
	counts  map[int32]int
	gen     int
	start   time.Time

	mu       sync.Mutex
	events   []Piece
	notify   chan struct{}
	finished bool
	stop     StopReason
	err      error
	prefill  time.Duration
}

// OpenEngine opens the checkpoint at path as Open does and starts the
// engine's scheduler. A model with per-row recurrent state is an error
// wrapping ErrRowState.
func OpenEngine(path string, o EngineOptions) (*Engine, error) {
	progress := func(stage string, done int) {
		if o.Progress != nil {
			o.Progress(Progress{Stage: stage, Done: done, Total: 5})
		}
	}
	for _, f := range []struct {
		name string
		v    int
	}{{"Parallel", o.Parallel}, {"Capacity", o.Capacity}, {"PrefillChunk", o.PrefillChunk}, {"PageSize", o.PageSize}, {"Pages", o.Pages}, {"Queue", o.Queue}} {
		if f.v < 0 {
			return nil, &OptionError{Option: f.name, Detail: fmt.Sprintf("%d is negative", f.v)}
		}
	}
	if err := checkKV(o.KV); err != nil {
		return nil, err
	}
	in, err := NewInterpreter(o.Interp)
	if err != nil {
		return nil, err
	}
	progress("open", 0)
	ckpt, err := load.OpenWith(path, o.Residency)
	if err != nil {
		return nil, err
	}
	e := &Engine{ckpt: ckpt, interp: in, limits: o.Limits, kv: o.KV, steps: map[families.StepShape]*step{},
		wake: make(chan struct{}, 1), quit: make(chan struct{}), done: make(chan struct{})}
	ok := false
	defer func() {
		if !ok {
			ckpt.Close()
		}
	}()
	if e.model, err = ModelOf(ckpt); err != nil {
		return nil, err
	}
	schema := e.model.Schema()
	e.vocab = schema.Vocab
	progress("tokenizer", 1)
	e.tok, e.tokErr = TokenizerOf(ckpt)
	if e.tokErr == nil {
		if err := families.CheckVocab(e.vocab, e.tok.VocabSize()); err != nil {
			return nil, err
		}
	}
	or := func(v, d int) int {
		if v == 0 {
			return d
		}
		return v
	}
	e.capacity = o.Capacity
	if e.capacity == 0 {
		e.capacity = DefaultCapacity
		if m := schema.MaxContext; m > 0 && m < e.capacity {
			e.capacity = m
		}
	}
	e.parallel = or(o.Parallel, DefaultParallel)
	e.chunk = 1 << (bitLen(min(or(o.PrefillChunk, DefaultPrefillChunk), e.capacity)) - 1)
	e.pageSize = min(or(o.PageSize, DefaultPageSize), e.capacity)
	perSeq := (e.capacity + e.pageSize - 1) / e.pageSize
	e.pages = or(o.Pages, e.parallel*perSeq)
	e.queueMax = or(o.Queue, 4*e.parallel)
	e.scratch = int32(e.pages) // one page past the pool's: rows without a sequence
	for p := range e.pages {
		e.free = append(e.free, int32(p))
	}
	progress("trace", 2)
	// The decode step and the one-token prefill share the state: a state
	// whose shape depends on the rows is an ErrRowState here, at open.
	for _, rows := range []int{e.parallel, 1} {
		if _, err := e.step(rows, 1); err != nil {
			return nil, err
		}
	}
	progress("ready", 5)
	ok = true
	go e.schedule()
	return e, nil
}

func bitLen(n int) int {
	b := 0
	for ; n > 0; n >>= 1 {
		b++
	}
	return b
}

// shape is the paged step shape of rows rows of n new tokens.
func (e *Engine) shape(rows, n int) families.StepShape {
	logits := families.LastToken
	return families.StepShape{Rows: rows, New: n, Capacity: e.capacity, Layout: families.Paged,
		PageSize: e.pageSize, Pages: e.pages + 1, Logits: logits, KV: e.kv}
}

// step returns the compiled step of rows rows of n new tokens.
func (e *Engine) step(rows, n int) (*step, error) {
	shape := e.shape(rows, n)
	if st, ok := e.steps[shape]; ok {
		return st, nil
	}
	program := families.Prefill
	if n == 1 {
		program = families.Decode
	}
	fail := func(stage string, err error) (*step, error) {
		return nil, &StepError{Program: program, Stage: stage, New: n, Err: err}
	}
	t0 := time.Now()
	g, err := e.model.Trace(families.StepSpec{Program: program, Shape: shape}, e.limits)
	if err != nil {
		return fail("trace", err)
	}
	t1 := time.Now()
	bg, consts, err := load.Bind(g, e.ckpt, e.model.Weights().Resolver())
	if err != nil {
		return fail("bind", err)
	}
	t2 := time.Now()
	var exe interp.Executable
	if err := mmap.Guard("compiling "+program, func() (err error) {
		exe, err = e.interp.Compile(bg, interp.ConstMap(consts))
		return err
	}); err != nil {
		return fail("compile", err)
	}
	if e.state == nil {
		if e.state, err = interp.NewState(bg); err != nil {
			return fail("compile", err)
		}
	}
	for _, id := range bg.Inputs(poot.State) {
		v := bg.Value(id)
		if t, ok := e.state.Tensors[v.Name]; !ok || !t.Type.Equal(v.Type) {
			return fail("compile", fmt.Errorf("%w (state %s)", ErrRowState, v.Name))
		}
	}
	st := &step{graph: bg, exe: exe, info: StepInfo{Program: program, Shape: shape, Equations: bg.NumEqns(),
		Dispatches: poot.DispatchCount(bg), TraceTime: t1.Sub(t0), BindTime: t2.Sub(t1), CompileTime: time.Since(t2)}}
	e.steps[shape] = st
	return st, nil
}

// Model returns the configured model.
func (e *Engine) Model() families.Model { return e.model }

// Checkpoint returns the opened checkpoint (closed once the engine is).
func (e *Engine) Checkpoint() *load.Checkpoint { return e.ckpt }

// Tokenizer returns the model's tokenizer, or the error of loading it.
func (e *Engine) Tokenizer() (*tokenizer.Tokenizer, error) { return e.tok, e.tokErr }

// Interpreter returns the engine's interpreter.
func (e *Engine) Interpreter() interp.Interpreter { return e.interp }

// Capacity returns each sequence's context in tokens.
func (e *Engine) Capacity() int { return e.capacity }

// Parallel returns the most sequences decoded at once.
func (e *Engine) Parallel() int { return e.parallel }

// Load reports the requests running and waiting, and the free pages of
// the pool of pages.
func (e *Engine) Load() (running, waiting, free, pages int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.running, len(e.queue), len(e.free), e.pages
}

// Close stops the scheduler after its current step, fails every running
// and waiting request with ErrClosed, and releases the model. Later calls
// of Generate return ErrClosed; Close itself then does too.
func (e *Engine) Close() error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return ErrClosed
	}
	e.closed = true
	e.mu.Unlock()
	close(e.quit)
	<-e.done
	for _, st := range e.steps {
		if c, ok := st.exe.(interface{ Close() }); ok {
			c.Close()
		}
	}
	return e.ckpt.Close()
}

func (e *Engine) pagesFor(positions int) int { return (positions + e.pageSize - 1) / e.pageSize }

// Generate runs req and calls onPiece (from the calling goroutine) with
// each token's piece as it comes. It returns when generation ends (Stats
// says why), when ctx is done (ctx.Err(); the sequence's pages are freed
// at the next step), or with an error: ErrQueueFull when the queue is
// full, a *ContextError for a prompt beyond the capacity, a *CacheError
// when the pool runs dry, a *NonFiniteError, a *StepError, ErrClosed.
func (e *Engine) Generate(ctx context.Context, req Request, onPiece func(Piece)) (Stats, error) {
	st := Stats{PromptTokens: len(req.Prompt)}
	switch {
	case e.tok == nil:
		return st, e.tokErr
	case len(req.Prompt) == 0:
		return st, ErrEmptyPrompt
	case len(req.Prompt) > e.capacity:
		return st, &ContextError{Need: len(req.Prompt), Capacity: e.capacity}
	case e.pagesFor(len(req.Prompt)) > e.pages:
		return st, &CacheError{Need: e.pagesFor(len(req.Prompt)), Free: 0, Pages: e.pages}
	case req.TopLogprobs < 0 || req.TopLogprobs > e.vocab:
		return st, &OptionError{Option: "top_logprobs", Detail: fmt.Sprintf("%d: want 0 to %d", req.TopLogprobs, e.vocab)}
	}
	if err := req.Check(); err != nil {
		return st, err
	}
	for i, id := range req.Prompt {
		if id < 0 || int(id) >= e.vocab {
			return st, &TokenError{Index: i, ID: id, Vocab: e.vocab}
		}
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // the scheduler frees a sequence whose context ends
	s := &sequence{ctx: ctx, req: req, toks: slices.Clone(req.Prompt), sampler: NewSampler(req.SamplerOptions),
		counts: map[int32]int{}, notify: make(chan struct{}, 1)}
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		return st, ErrClosed
	case len(e.queue) >= e.queueMax:
		e.mu.Unlock()
		return st, ErrQueueFull
	}
	e.queue = append(e.queue, s)
	e.mu.Unlock()
	select {
	case e.wake <- struct{}{}:
	default:
	}

	dec := tokenizer.NewStreamDecoder(e.tok)
	stop := stopFilter{stops: req.Stop}
	deliver := func(p Piece) {
		if onPiece != nil && (p.Text != "" || p.Token >= 0) {
			onPiece(p)
		}
	}
	for {
		select {
		case <-s.notify:
		case <-ctx.Done():
			e.unqueue(s)
			return st, ctx.Err()
		}
		s.mu.Lock()
		events, finished, reason, err := s.events, s.finished, s.stop, s.err
		s.events = nil
		st.PromptTime = s.prefill
		s.mu.Unlock()
		for _, p := range events {
			st.GeneratedTokens++
			st.Tokens = append(st.Tokens, p.Token)
			var hit bool
			p.Text, hit = stop.push(dec.Add(p.Token))
			deliver(p)
			if hit {
				st.Stop = StopString
				st.GenerateTime = time.Since(s.start) - st.PromptTime
				return st, nil
			}
		}
		if !finished {
			continue
		}
		if err != nil {
			return st, err
		}
		out, hit := stop.push(dec.Flush())
		if !hit {
			out += stop.flush()
		} else {
			reason = StopString
		}
		deliver(Piece{Text: out, Token: -1})
		st.Stop = reason
		st.GenerateTime = time.Since(s.start) - st.PromptTime
		return st, nil
	}
}

// unqueue takes s off the queue when it is still waiting there.
func (e *Engine) unqueue(s *sequence) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if i := slices.Index(e.queue, s); i >= 0 {
		e.queue = slices.Delete(e.queue, i, i+1)
	}
}

// schedule is the engine's loop: admit, drop the cancelled, run one
// prefill chunk, run one decode step of every sequence that has a token to
// feed; sleep when there is nothing to do.
func (e *Engine) schedule() {
	defer close(e.done)
	var active []*sequence
	for {
		select {
		case <-e.quit:
			e.mu.Lock()
			for _, s := range append(active, e.queue...) {
				e.finish(s, 0, ErrClosed)
			}
			e.queue = nil
			e.mu.Unlock()
			return
		default:
		}
		e.mu.Lock()
		for len(active) < e.parallel && len(e.queue) > 0 {
			s := e.queue[0]
			need := e.pagesFor(len(s.toks))
			if need > len(e.free) {
				if len(active) == 0 {
					e.queue = e.queue[1:]
					e.finish(s, 0, &CacheError{Need: need, Free: len(e.free), Pages: e.pages})
					continue
				}
				break // wait for a running sequence to give pages back
			}
			e.queue = e.queue[1:]
			s.pages = e.take(need)
			s.start = time.Now()
			active = append(active, s)
		}
		kept := active[:0]
		for _, s := range active {
			if err := s.ctx.Err(); err != nil {
				e.finish(s, 0, err)
			} else if !s.isFinished() {
				kept = append(kept, s)
			}
		}
		clear(active[len(kept):])
		active = kept
		e.running = len(active)
		e.mu.Unlock()
		if len(active) == 0 {
			select {
			case <-e.wake:
			case <-e.quit:
			}
			continue
		}
		if i := slices.IndexFunc(active, func(s *sequence) bool { return s.fed < len(s.req.Prompt) }); i >= 0 {
			e.prefill(active[i])
		}
		var rows []*sequence
		for _, s := range active {
			if !s.isFinished() && s.fed >= len(s.req.Prompt) && s.fed == len(s.toks)-1 {
				rows = append(rows, s)
			}
		}
		if len(rows) > 0 {
			e.decode(rows)
		}
	}
}

func (s *sequence) isFinished() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.finished
}

// take hands out n free pages (e.mu held).
func (e *Engine) take(n int) []int32 {
	p := slices.Clone(e.free[len(e.free)-n:])
	e.free = e.free[:len(e.free)-n]
	return p
}

// finish ends s with reason or err, gives its pages back (zeroing them
// after an error, which may have written non-finite values there) and
// wakes its caller (e.mu held).
func (e *Engine) finish(s *sequence, reason StopReason, err error) {
	if err != nil && !errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrClosed) {
		for _, p := range s.pages {
			e.zeroPage(p)
		}
	}
	e.free = append(e.free, s.pages...)
	s.pages = nil
	s.mu.Lock()
	if !s.finished {
		s.finished, s.stop, s.err = true, reason, err
	}
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
}

// zeroPage clears page p of every cache state.
func (e *Engine) zeroPage(p int32) {
	// A device holding the caches brings them home first; if it cannot,
	// they are lost, and every page is cleared.
	if err := e.state.Sync(); err != nil {
		for _, t := range e.state.Tensors {
			clear(t.Data)
		}
		return
	}
	for _, t := range e.state.Tensors {
		// Caches hold page-size rows a page, sequence states one.
		page := len(t.Data) / (e.pages + 1)
		clear(t.Data[int(p)*page : (int(p)+1)*page])
	}
}

// end finishes s from the scheduler goroutine.
func (e *Engine) end(s *sequence, reason StopReason, err error) {
	e.mu.Lock()
	e.finish(s, reason, err)
	e.mu.Unlock()
}

// slotRow is the pool row of s's position p, or a scratch row past the
// pages s holds.
func (e *Engine) slotRow(s *sequence, p int) int32 {
	if s == nil || p/e.pageSize >= len(s.pages) {
		return e.scratch * int32(e.pageSize)
	}
	return s.pages[p/e.pageSize]*int32(e.pageSize) + int32(p%e.pageSize)
}

// run runs one step of rows (nil rows are padding) feeding n tokens each
// from their fed position on, and returns the logits of each row's last
// token.
func (e *Engine) run(rows []*sequence, n int) ([]float32, error) {
	st, err := e.step(len(rows), n)
	if err != nil {
		return nil, err
	}
	tok := make([]int32, len(rows)*n)
	pos := make([]int32, len(rows)*n)
	write := make([]int32, len(rows)*n)
	slot := make([]int32, len(rows)*e.capacity)
	for r, s := range rows {
		for p := range e.capacity {
			slot[r*e.capacity+p] = e.slotRow(s, p)
		}
		for i := range n {
			write[r*n+i] = e.scratch * int32(e.pageSize)
			if s != nil {
				tok[r*n+i], pos[r*n+i] = s.toks[s.fed+i], int32(s.fed+i)
				write[r*n+i] = e.slotRow(s, s.fed+i)
			}
		}
	}
	slots := interp.Slots{}
	for name, v := range map[string][]int32{"token": tok, "pos": pos, "write_map": write} {
		if slots[name], err = tensor.FromI32(poot.Shape{len(v)}, v); err != nil {
			return nil, err
		}
	}
	if slots["slot_map"], err = tensor.FromI32(poot.Shape{len(rows), e.capacity}, slot); err != nil {
		return nil, err
	}
	var out []tensor.Tensor
	err = mmap.Guard("running "+st.info.Program, func() (err error) {
		out, err = st.exe.Run(slots, e.state)
		return err
	})
	if err == nil && len(out) == 0 {
		err = errors.New("the step has no outputs")
	}
	if err != nil {
		return nil, &StepError{Program: st.info.Program, Stage: "run", New: n, Err: err}
	}
	return out[0].F32(), nil
}

// prefill feeds s's next prompt chunk: DefaultPrefillChunk-sized chunks
// (the engine's chunk) and then the rest in falling powers of two, so that
// the chunks, and with them the arithmetic, depend on the prompt alone.
func (e *Engine) prefill(s *sequence) {
	rest := len(s.req.Prompt) - s.fed
	n := min(e.chunk, 1<<(bitLen(rest)-1))
	logits, err := e.run([]*sequence{s}, n)
	if err != nil {
		e.end(s, 0, err)
		return
	}
	s.fed += n
	if s.fed == len(s.req.Prompt) {
		s.mu.Lock()
		s.prefill = time.Since(s.start)
		s.mu.Unlock()
		e.sample(s, logits)
	}
}

// decode feeds each row's last sampled token in one step and samples the
// next. The step's width is the smallest power of two (at most Parallel)
// that holds the rows.
func (e *Engine) decode(rows []*sequence) {
	width := e.parallel
	padded := append(slices.Clone(rows), make([]*sequence, width-len(rows))...)
	logits, err := e.run(padded, 1)
	if err != nil {
		for _, s := range rows {
			e.end(s, 0, err)
		}
		return
	}
	for r, s := range rows {
		s.fed++
		e.sample(s, logits[r*e.vocab:(r+1)*e.vocab])
	}
}

// sample checks the logits after s's last fed token, draws the next token,
// hands it to the caller and decides whether s goes on.
func (e *Engine) sample(s *sequence, logits []float32) {
	if err := checkFinite(families.Decode, logits, e.vocab, s.fed); err != nil {
		e.end(s, 0, err)
		return
	}
	req := s.req
	l := logits
	if (req.PresencePenalty != 0 || req.FrequencyPenalty != 0) && len(s.counts) > 0 {
		l = slices.Clone(logits)
		for id, c := range s.counts {
			l[id] -= float32(req.PresencePenalty + req.FrequencyPenalty*float64(c))
		}
	}
	id := s.sampler.Sample(l, s.toks)
	if !req.IgnoreEOS && e.tok.IsEOG(id) {
		e.end(s, StopEOS, nil)
		return
	}
	p := Piece{Token: id}
	if req.Logprobs || req.TopLogprobs > 0 {
		p.Logprob, p.Top = logprobs(logits, id, req.TopLogprobs)
	}
	s.toks = append(s.toks, id)
	s.counts[id]++
	s.gen++
	s.mu.Lock()
	s.events = append(s.events, p)
	s.mu.Unlock()
	select {
	case s.notify <- struct{}{}:
	default:
	}
	switch {
	case req.MaxTokens > 0 && s.gen >= req.MaxTokens:
		e.end(s, StopBudget, nil)
	case s.fed >= e.capacity:
		e.end(s, StopContext, nil)
	case s.fed%e.pageSize == 0 && s.fed/e.pageSize >= len(s.pages):
		e.mu.Lock()
		if len(e.free) == 0 {
			e.finish(s, 0, &CacheError{Need: 1, Free: 0, Pages: e.pages})
		} else {
			s.pages = append(s.pages, e.take(1)...)
		}
		e.mu.Unlock()
	}
}

// logprobs returns the log-probability of token id under the softmax of
// logits, and the top most likely tokens (the lower id first on ties).
func logprobs(logits []float32, id int32, top int) (float64, []TokenLogprob) {
	m := math.Inf(-1)
	for _, v := range logits {
		m = max(m, float64(v))
	}
	sum := 0.0
	for _, v := range logits {
		sum += math.Exp(float64(v) - m)
	}
	lse := m + math.Log(sum)
	var best []TokenLogprob
	if top > 0 {
		idx := make([]int32, len(logits))
		for i := range idx {
			idx[i] = int32(i)
		}
		sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
		for _, i := range idx[:top] {
			best = append(best, TokenLogprob{Token: i, Logprob: float64(logits[i]) - lse})
		}
	}
	return float64(logits[id]) - lse, best
}
