package driver

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/tokenizer"
)

// GenerateOptions configure one Generate call.
type GenerateOptions struct {
	SamplerOptions
	// MaxTokens is the token budget; zero or less means until the context
	// is full or generation ends otherwise.
	MaxTokens int
	// Stop lists strings that end generation; the text from the first stop
	// string on is not produced.
	Stop []string
	// IgnoreEOS keeps generating past end-of-generation tokens.
	IgnoreEOS bool
	// NoBOS leaves out the BOS token the vocabulary asks for at the start of
	// the context.
	NoBOS bool
	// ParseSpecial reads control tokens written in the prompt ("<s>").
	ParseSpecial bool
}

// StopReason says why generation ended.
type StopReason uint8

// The stop reasons.
const (
	StopBudget  StopReason = iota // MaxTokens tokens were generated
	StopEOS                       // an end-of-generation token was sampled
	StopString                    // a stop string was produced
	StopContext                   // the context is full
)

// String names the reason.
func (r StopReason) String() string {
	switch r {
	case StopBudget:
		return "budget"
	case StopEOS:
		return "eos"
	case StopString:
		return "stop string"
	case StopContext:
		return "context full"
	}
	return fmt.Sprintf("StopReason(%d)", r)
}

// Stats are the figures of one Generate call.
type Stats struct {
	PromptTokens    int
	PromptTime      time.Duration // the prefill
	GeneratedTokens int
	GenerateTime    time.Duration // from the end of the prefill to the last token
	Stop            StopReason
	Tokens          []int32 // the generated tokens, end-of-generation token excluded
}

// PromptTokensPerSecond is the prefill rate.
func (s Stats) PromptTokensPerSecond() float64 { return rate(s.PromptTokens, s.PromptTime) }

// GeneratedTokensPerSecond is the generation rate.
func (s Stats) GeneratedTokensPerSecond() float64 { return rate(s.GeneratedTokens, s.GenerateTime) }

func rate(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// Summary formats the figures on one line.
func (s Stats) Summary() string {
	return fmt.Sprintf("prompt: %d tokens, %.1f tokens/s; generated: %d tokens, %.1f tokens/s; stop: %v",
		s.PromptTokens, s.PromptTokensPerSecond(), s.GeneratedTokens, s.GeneratedTokensPerSecond(), s.Stop)
}

// Generate tokenizes prompt, prefills it after the tokens already in the
// cache (so calls can continue a conversation; Reset starts afresh), and
// generates, calling onToken with each piece of text as it is complete
// (whole UTF-8 characters, never the text of a stop string). It stops on an
// end-of-generation token, the budget, a stop string or a full context
// (Stats.Stop says which), or when ctx is done (returning ctx.Err()).
// A prompt that does not fit is a *ContextError; logits that are NaN or
// infinite are a *NonFiniteError. The session is held while Generate
// runs, except while onToken runs: onToken may Close it (Generate then
// returns ErrClosed), and a Close from another goroutine takes effect
// between two tokens.
func (s *Session) Generate(ctx context.Context, prompt string, opts GenerateOptions, onToken func(piece string)) (Stats, error) {
	if err := s.lock(); err != nil {
		return Stats{}, err
	}
	defer s.mu.Unlock()
	ids, err := s.encode(prompt, opts)
	if err != nil {
		return Stats{}, err
	}
	return s.generate(ctx, ids, opts, onToken)
}

// Encode tokenizes a prompt as Generate does: with the BOS token the
// vocabulary asks for when the cache is empty (unless opts.NoBOS), special
// tokens parsed when opts.ParseSpecial. Tokens that would not fit after the
// cache's are a *ContextError.
func (s *Session) Encode(prompt string, opts GenerateOptions) ([]int32, error) {
	if err := s.lock(); err != nil {
		return nil, err
	}
	defer s.mu.Unlock()
	return s.encode(prompt, opts)
}

func (s *Session) encode(prompt string, opts GenerateOptions) ([]int32, error) {
	if s.tok == nil {
		return nil, s.tokErr
	}
	addBOS := s.tok.AddBOS() && !opts.NoBOS && len(s.history) == 0
	ids, err := s.tok.Encode(prompt, tokenizer.EncodeOptions{AddBOS: addBOS, ParseSpecial: opts.ParseSpecial})
	if err != nil {
		return nil, err
	}
	if len(ids) == 0 {
		return nil, ErrEmptyPrompt
	}
	if need := len(s.history) + len(ids); need > s.capacity {
		return nil, &ContextError{Need: need, Capacity: s.capacity}
	}
	return ids, nil
}

// GenerateTokens is Generate from token ids instead of text.
func (s *Session) GenerateTokens(ctx context.Context, ids []int32, opts GenerateOptions, onToken func(piece string)) (Stats, error) {
	if err := s.lock(); err != nil {
		return Stats{PromptTokens: len(ids)}, err
	}
	defer s.mu.Unlock()
	return s.generate(ctx, ids, opts, onToken)
}

// generate is GenerateTokens with the session held. It lets go of the
// session while onToken runs and reports ErrClosed when the session was
// closed meanwhile.
func (s *Session) generate(ctx context.Context, ids []int32, opts GenerateOptions, onToken func(piece string)) (Stats, error) {
	st := Stats{PromptTokens: len(ids)}
	if s.tok == nil {
		return st, s.tokErr
	}
	if err := opts.Check(); err != nil {
		return st, err
	}
	if len(ids) == 0 {
		return st, ErrEmptyPrompt
	}
	if need := len(s.history) + len(ids); need > s.capacity {
		return st, &ContextError{Need: need, Capacity: s.capacity}
	}
	deliver := func(string) error { return nil }
	if onToken != nil {
		deliver = func(piece string) error {
			s.mu.Unlock()
			onToken(piece)
			s.mu.Lock()
			if s.closed {
				return ErrClosed
			}
			return nil
		}
	}
	t0 := time.Now()
	rows, err := s.feed(ids, false)
	if err != nil {
		return st, err
	}
	logits := rows[0]
	st.PromptTime = time.Since(t0)
	t1 := time.Now()

	sampler := NewSampler(opts.SamplerOptions)
	dec := tokenizer.NewStreamDecoder(s.tok)
	stop := stopFilter{stops: opts.Stop}
	emit := func(text string) (bool, error) {
		out, hit := stop.push(text)
		if out != "" {
			if err := deliver(out); err != nil {
				return hit, err
			}
		}
		return hit, nil
	}
	finish := func(reason StopReason) (Stats, error) {
		st.Stop = reason
		st.GenerateTime = time.Since(t1)
		if reason != StopString {
			// The decoder and the stop filter are the session's no more:
			// what they hold goes out even if onToken closes the session.
			out, hit := stop.push(dec.Flush())
			if hit {
				reason = StopString
			}
			if !hit {
				out += stop.flush()
			}
			st.Stop = reason
			if out != "" {
				deliver(out)
			}
		}
		return st, nil
	}
	for {
		if err := ctx.Err(); err != nil {
			return st, err
		}
		if opts.MaxTokens > 0 && st.GeneratedTokens >= opts.MaxTokens {
			return finish(StopBudget)
		}
		id := sampler.Sample(logits, s.history)
		if !opts.IgnoreEOS && s.tok.IsEOG(id) {
			return finish(StopEOS)
		}
		st.GeneratedTokens++
		st.Tokens = append(st.Tokens, id)
		hit, err := emit(dec.Add(id))
		if err != nil {
			return st, err
		}
		if hit {
			return finish(StopString)
		}
		if opts.MaxTokens > 0 && st.GeneratedTokens >= opts.MaxTokens {
			return finish(StopBudget)
		}
		if len(s.history) >= s.capacity {
			return finish(StopContext)
		}
		out, err := s.run([]int32{id}, families.LastToken, true)
		if err != nil {
			return st, err
		}
		logits = out
	}
}

// stopFilter passes text through, holding back what could be the start of a
// stop string and cutting the text at the first stop string.
type stopFilter struct {
	stops   []string
	pending string
	stopped bool
}

// push adds text and returns what can be produced now, and whether a stop
// string was found (the text before it is returned, nothing after).
func (f *stopFilter) push(text string) (string, bool) {
	if f.stopped {
		return "", true
	}
	f.pending += text
	cut := -1
	for _, s := range f.stops {
		if s == "" {
			continue
		}
		if i := strings.Index(f.pending, s); i >= 0 && (cut < 0 || i < cut) {
			cut = i
		}
	}
	if cut >= 0 {
		out := f.pending[:cut]
		f.pending, f.stopped = "", true
		return out, true
	}
	hold := 0
	for _, s := range f.stops {
		for k := min(len(s)-1, len(f.pending)); k > hold; k-- {
			if strings.HasSuffix(f.pending, s[:k]) {
				hold = k
				break
			}
		}
	}
	out := f.pending[:len(f.pending)-hold]
	f.pending = f.pending[len(f.pending)-hold:]
	return out, false
}

// flush returns the text held back.
func (f *stopFilter) flush() string {
	out := f.pending
	f.pending = ""
	return out
}
