package driver_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/driver/synth"
)

func openEngine(t *testing.T, o driver.EngineOptions) *driver.Engine {
	t.Helper()
	e, err := driver.OpenEngine(tinyPath, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	return e
}

// result is what one request produced.
type result struct {
	toks []int32
	text string
	lps  []float64
	st   driver.Stats
}

func runReq(ctx context.Context, e *driver.Engine, r driver.Request) (result, error) {
	var res result
	st, err := e.Generate(ctx, r, func(p driver.Piece) {
		res.text += p.Text
		if p.Token >= 0 {
			res.lps = append(res.lps, p.Logprob)
		}
	})
	res.toks, res.st = st.Tokens, st
	return res, err
}

// request i of a varied set: prompts of different lengths (crossing chunk
// and page boundaries), greedy and seeded sampling, penalties.
func request(i int) driver.Request {
	prompt := []int32{1}
	for k := range 3 + 7*i%40 {
		prompt = append(prompt, int32(5+(i*31+k*17)%500))
	}
	r := driver.Request{Prompt: prompt, Logprobs: true, GenerateOptions: driver.GenerateOptions{MaxTokens: 6 + i%5, IgnoreEOS: true}}
	if i%2 == 1 {
		r.SamplerOptions = driver.SamplerOptions{Temperature: 0.9, TopP: 0.9, Seed: uint64(i)}
	}
	if i%3 == 2 {
		r.PresencePenalty, r.FrequencyPenalty = 0.5, 0.25
	}
	return r
}

// The engine's greedy tokens are the session's: paged, chunked and
// batched steps compute the same model.
func TestEngineMatchesSession(t *testing.T) {
	e := openEngine(t, driver.EngineOptions{Interp: "oracle", Parallel: 2, PrefillChunk: 4, PageSize: 4, Capacity: 64})
	s := open(t, driver.Options{Interp: "oracle", Capacity: 64})
	prompt := []int32{1, 40, 41, 42, 300, 301, 7, 8, 9, 10, 11}
	want, err := s.GenerateTokens(context.Background(), prompt, driver.GenerateOptions{MaxTokens: 10, IgnoreEOS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	got, err := runReq(context.Background(), e, driver.Request{Prompt: prompt, GenerateOptions: driver.GenerateOptions{MaxTokens: 10, IgnoreEOS: true}})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.toks, want.Tokens) || got.st.Stop != driver.StopBudget {
		t.Errorf("engine generated %v (%v), the session %v", got.toks, got.st.Stop, want.Tokens)
	}
}

// A request gives the same tokens and log-probabilities, bit for bit,
// alone and beside 15 others, on every interpreter that runs paged steps.
func TestEngineAloneEqualsBatched(t *testing.T) {
	for _, in := range []string{"oracle", "cpu"} {
		t.Run(in, func(t *testing.T) {
			if _, err := driver.NewInterpreter(in); err != nil {
				t.Skip(err)
			}
			e := openEngine(t, driver.EngineOptions{Interp: in, Parallel: 16, PrefillChunk: 8, PageSize: 4, Capacity: 64})
			const n = 16
			alone := make([]result, n)
			for i := range n {
				var err error
				if alone[i], err = runReq(context.Background(), e, request(i)); err != nil {
					t.Fatal(err)
				}
			}
			together := make([]result, n)
			errs := make([]error, n)
			var wg sync.WaitGroup
			for i := range n {
				wg.Go(func() { together[i], errs[i] = runReq(context.Background(), e, request(i)) })
			}
			wg.Wait()
			for i := range n {
				if errs[i] != nil {
					t.Fatalf("request %d: %v", i, errs[i])
				}
				a, b := alone[i], together[i]
				if !slices.Equal(a.toks, b.toks) || !slices.Equal(a.lps, b.lps) || a.text != b.text {
					t.Errorf("request %d alone: %v %v; beside 15 others: %v %v", i, a.toks, a.lps, b.toks, b.lps)
				}
				if len(a.toks) != request(i).MaxTokens {
					t.Errorf("request %d: %d tokens, want %d", i, len(a.toks), request(i).MaxTokens)
				}
			}
			waitIdle(t, e)
		})
	}
}

// waitIdle waits for the engine to have no sequence and every page free.
func waitIdle(t *testing.T, e *driver.Engine) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		running, waiting, free, pages := e.Load()
		if running == 0 && waiting == 0 && free == pages {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("engine not idle: %d running, %d waiting, %d of %d pages free", running, waiting, free, pages)
		}
		time.Sleep(time.Millisecond)
	}
}

func TestEngineCancelFreesPages(t *testing.T) {
	e := openEngine(t, driver.EngineOptions{Interp: "oracle", Parallel: 2, PageSize: 4, Capacity: 64})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := e.Generate(ctx, driver.Request{Prompt: []int32{1, 2, 3}, GenerateOptions: driver.GenerateOptions{IgnoreEOS: true}}, func(p driver.Piece) {
		if n++; n == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	waitIdle(t, e)
}

func TestEngineStopsAndErrors(t *testing.T) {
	e := openEngine(t, driver.EngineOptions{Interp: "oracle", Parallel: 1, Queue: 1, PageSize: 4, Capacity: 16, Pages: 3})
	ctx := context.Background()
	prompt := []int32{1, 9, 10, 11, 12, 13}
	full, err := runReq(ctx, e, driver.Request{Prompt: prompt, GenerateOptions: driver.GenerateOptions{MaxTokens: 4, IgnoreEOS: true}})
	if err != nil {
		t.Fatal(err)
	}
	// A stop string cuts the text where it starts.
	if len(full.text) > 2 {
		stop := full.text[1:3]
		got, err := runReq(ctx, e, driver.Request{Prompt: prompt, GenerateOptions: driver.GenerateOptions{MaxTokens: 4, IgnoreEOS: true, Stop: []string{stop}}})
		if err != nil || got.st.Stop != driver.StopString || got.text != full.text[:1] {
			t.Errorf("stop %q: %q (%v, %v), want %q", stop, got.text, got.st.Stop, err, full.text[:1])
		}
	}
	// The pool holds 12 positions: a sequence that grows past them fails
	// with a CacheError, and one that cannot start at all is refused.
	_, err = runReq(ctx, e, driver.Request{Prompt: prompt, GenerateOptions: driver.GenerateOptions{IgnoreEOS: true}})
	var ce *driver.CacheError
	if !errors.As(err, &ce) {
		t.Errorf("growing past the pool: %v, want a *CacheError", err)
	}
	long := slices.Repeat([]int32{7}, 14)
	if _, err := runReq(ctx, e, driver.Request{Prompt: long}); !errors.As(err, &ce) {
		t.Errorf("a prompt beyond the pool: %v, want a *CacheError", err)
	}
	var cx *driver.ContextError
	if _, err := runReq(ctx, e, driver.Request{Prompt: slices.Repeat([]int32{7}, 17)}); !errors.As(err, &cx) {
		t.Errorf("a prompt beyond the context: %v, want a *ContextError", err)
	}
	var te *driver.TokenError
	if _, err := runReq(ctx, e, driver.Request{Prompt: []int32{1, 9999}}); !errors.As(err, &te) {
		t.Errorf("a token beyond the vocabulary: %v, want a *TokenError", err)
	}
	testQueueFull(t)
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := e.Generate(ctx, driver.Request{Prompt: []int32{1}}, nil); !errors.Is(err, driver.ErrClosed) {
		t.Errorf("after Close: %v, want ErrClosed", err)
	}
}

// One running request and one waiting fill a queue of one: a third is
// refused with ErrQueueFull.
func testQueueFull(t *testing.T) {
	e := openEngine(t, driver.EngineOptions{Interp: "oracle", Parallel: 1, Queue: 1, Capacity: 256})
	ctx, cancel := context.WithCancel(context.Background())
	started := make(chan struct{}, 1)
	var wg sync.WaitGroup
	wg.Go(func() {
		e.Generate(ctx, driver.Request{Prompt: []int32{1}, GenerateOptions: driver.GenerateOptions{IgnoreEOS: true}}, func(driver.Piece) {
			select {
			case started <- struct{}{}:
			default:
			}
		})
	})
	<-started
	wg.Go(func() {
		e.Generate(ctx, driver.Request{Prompt: []int32{1}, GenerateOptions: driver.GenerateOptions{MaxTokens: 1}}, nil)
	})
	deadline := time.Now().Add(30 * time.Second)
	for _, waiting, _, _ := e.Load(); waiting == 0 && time.Now().Before(deadline); _, waiting, _, _ = e.Load() {
		time.Sleep(time.Millisecond)
	}
	if _, err := e.Generate(ctx, driver.Request{Prompt: []int32{1}}, nil); !errors.Is(err, driver.ErrQueueFull) {
		t.Errorf("a third request: %v, want ErrQueueFull", err)
	}
	cancel()
	wg.Wait()
	waitIdle(t, e)
}

// A model with recurrent sequence state (qwen3next: its states live at
// each sequence's first page) runs in the engine, alone as beside others.
func TestEngineSequenceState(t *testing.T) {
	p, err := synth.FindPreset("qwen3next", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model(p.Family, p.Config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "next.gguf")
	if err := synth.Write(m, path, synth.Options{Type: poot.F32, Seed: 1}); err != nil {
		t.Fatal(err)
	}
	e, err := driver.OpenEngine(path, driver.EngineOptions{Interp: "oracle", Parallel: 3, PrefillChunk: 4, PageSize: 4, Capacity: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var alone [3]result
	for i := range alone {
		if alone[i], err = runReq(context.Background(), e, request(i)); err != nil {
			t.Fatal(err)
		}
	}
	var wg sync.WaitGroup
	for i := range alone {
		wg.Go(func() {
			got, err := runReq(context.Background(), e, request(i))
			if err != nil || !slices.Equal(got.toks, alone[i].toks) {
				t.Errorf("request %d beside others: %v (%v), alone %v", i, got.toks, err, alone[i].toks)
			}
		})
	}
	wg.Wait()
}

func ExampleEngine() {
	e, err := driver.OpenEngine(tinyPath, driver.EngineOptions{Interp: "oracle", Parallel: 4, Capacity: 32})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer e.Close()
	st, err := e.Generate(context.Background(), driver.Request{Prompt: []int32{1, 2, 3}, GenerateOptions: driver.GenerateOptions{MaxTokens: 5, IgnoreEOS: true}}, nil)
	fmt.Println(len(st.Tokens), st.Stop, err)
	// Output: 5 budget <nil>
}

// The engine's paged steps over Q8_0 caches (pages of quantized rows,
// gathered for each sequence) give the greedy tokens of a session over
// Q8_0 caches, on the oracle and on the cpu backend.
func TestEngineQ8Caches(t *testing.T) {
	prompt := []int32{1, 40, 41, 42, 300, 301, 7, 8, 9, 10, 11}
	opts := driver.GenerateOptions{MaxTokens: 10, IgnoreEOS: true}
	for _, in := range []string{"oracle", "cpu"} {
		e := openEngine(t, driver.EngineOptions{Interp: in, Parallel: 2, PrefillChunk: 4, PageSize: 4, Capacity: 64, KV: poot.Q8_0})
		s := open(t, driver.Options{Interp: in, Capacity: 64, KV: poot.Q8_0})
		want, err := s.GenerateTokens(context.Background(), prompt, opts, nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := runReq(context.Background(), e, driver.Request{Prompt: prompt, GenerateOptions: opts})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got.toks, want.Tokens) {
			t.Errorf("%s: engine generated %v, the session %v", in, got.toks, want.Tokens)
		}
	}
}
