package driver_test

import (
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
)

// TestClosedSession: once closed, with its steps compiled (the decode step
// at Open, a prefill step by Logits), every method with an error result
// returns ErrClosed instead of reading the released checkpoint (which
// crashed the process), and the accessors give an empty session.
func TestClosedSession(t *testing.T) {
	for _, in := range []string{"oracle", "cpu"} {
		t.Run(in, func(t *testing.T) {
			s, err := driver.Open(tinyPath, driver.Options{Interp: in, Capacity: 32})
			if err != nil {
				t.Fatal(err)
			}
			if _, err := s.Logits(someTokens[:4], false); err != nil {
				t.Fatal(err)
			}
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
			ctx := context.Background()
			gen := driver.GenerateOptions{MaxTokens: 2, IgnoreEOS: true}
			calls := map[string]func() error{
				"Close":  s.Close,
				"Logits": func() error { _, err := s.Logits(someTokens[:4], false); return err },
				"Generate": func() error {
					_, err := s.Generate(ctx, "Once", gen, nil)
					return err
				},
				"GenerateTokens": func() error { _, err := s.GenerateTokens(ctx, someTokens[:1], gen, nil); return err },
				"Encode":         func() error { _, err := s.Encode("Once", gen); return err },
				"Step":           func() error { _, _, err := s.Step(4, 0); return err },
				"Tokenizer":      func() error { _, err := s.Tokenizer(); return err },
				"CheckTokens":    func() error { return s.CheckTokens(someTokens) },
			}
			for name, call := range calls {
				if err := call(); !errors.Is(err, driver.ErrClosed) {
					t.Errorf("%s after Close: %v, want ErrClosed", name, err)
				}
			}
			s.Reset()
			if s.Len() != 0 || len(s.History()) != 0 || s.DecodeInfo().Equations != 0 {
				t.Error("a closed session still reports a cache or steps")
			}
		})
	}
}

// TestCloseDuringGenerate closes the session from the token callback and,
// concurrently, from other goroutines: Generate stops with ErrClosed and
// nothing reads the released checkpoint (go test -race checks the rest).
func TestCloseDuringGenerate(t *testing.T) {
	s, err := driver.Open(tinyPath, driver.Options{Capacity: 32})
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	pieces := 0
	_, err = s.Generate(context.Background(), "Once upon", driver.GenerateOptions{MaxTokens: 20, IgnoreEOS: true}, func(string) {
		pieces++
		if pieces == 2 {
			for range 3 {
				wg.Go(func() { s.Close() })
			}
			wg.Wait()
		}
	})
	if !errors.Is(err, driver.ErrClosed) {
		t.Errorf("Generate closed from its callback: %v, want ErrClosed", err)
	}
	if pieces != 2 {
		t.Errorf("%d pieces after Close, want 2", pieces)
	}

	// Close racing a running Generate from another goroutine.
	s2, err := driver.Open(tinyPath, driver.Options{Capacity: 32})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{})
	var once sync.Once
	done := make(chan error)
	go func() {
		_, err := s2.Generate(context.Background(), "Once upon", driver.GenerateOptions{MaxTokens: 25, IgnoreEOS: true}, func(string) { once.Do(func() { close(started) }) })
		done <- err
	}()
	<-started
	if err := s2.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := <-done; err != nil && !errors.Is(err, driver.ErrClosed) {
		t.Errorf("Generate while closing: %v", err)
	}
}

// poisoned copies the tiny model with the F32 tensor name's first element
// (all of them when all) set to v.
func poisoned(t *testing.T, name string, v float32, all bool) string {
	t.Helper()
	data, err := os.ReadFile(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	ti, ok := f.Tensor(name)
	if !ok {
		t.Fatalf("no tensor %s", name)
	}
	start := f.DataOffset() + int64(ti.Offset)
	n := ti.Size / 4
	if !all {
		n = 1
	}
	for i := range n {
		binary.LittleEndian.PutUint32(data[start+4*i:], math.Float32bits(v))
	}
	path := filepath.Join(t.TempDir(), "poisoned.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestNonFiniteLogits: a checkpoint whose output matrix is NaN (or one
// NaN query weight, which the fused attention once dropped) is a
// *NonFiniteError naming the step and position, from Logits and from
// Generate, on every interpreter, instead of text sampled from garbage.
func TestNonFiniteLogits(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		tensor string
		v      float32
		all    bool
	}{
		{"output.weight", nan, true},
		{"blk.0.attn_q.weight", nan, false},
		{"blk.0.attn_k.weight", nan, false},
		{"output.weight", float32(math.Inf(1)), false},
	} {
		path := poisoned(t, c.tensor, c.v, c.all)
		for _, in := range []string{"oracle", "cpu"} {
			t.Run(c.tensor+"/"+in, func(t *testing.T) {
				s, err := driver.Open(path, driver.Options{Interp: in, Capacity: 32})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				_, err = s.Logits(someTokens[:3], true)
				var ne *driver.NonFiniteError
				if !errors.As(err, &ne) || !errors.Is(err, driver.ErrNonFinite) {
					t.Fatalf("Logits: %v, want a *NonFiniteError", err)
				}
				if ne.Program != "prefill" || ne.Position < 0 || ne.Position > 2 || ne.Count < 1 {
					t.Errorf("Logits: %+v", ne)
				}
				if s.Len() != 0 {
					t.Errorf("the cache holds %d tokens after the error", s.Len())
				}
				text := ""
				st, err := s.Generate(context.Background(), "Once", driver.GenerateOptions{MaxTokens: 8, IgnoreEOS: true}, func(p string) { text += p })
				if !errors.As(err, &ne) || st.GeneratedTokens != 0 || text != "" {
					t.Errorf("Generate: %v, %d tokens, text %q", err, st.GeneratedTokens, text)
				}
			})
		}
	}
}

// TestTruncatedUnderneath truncates the checkpoint while a session has it
// mapped: the next step reads weights from pages that no longer exist,
// which raises SIGBUS on the goroutine that touches them (the caller's or
// one of the cpu backend's workers). That must come back from the step as
// an error wrapping load.ErrFault, never kill the process.
func TestTruncatedUnderneath(t *testing.T) {
	data, err := os.ReadFile(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	for _, in := range []string{"oracle", "cpu"} {
		t.Run(in, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "m.gguf")
			if err := os.WriteFile(path, data, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := driver.Open(path, driver.Options{Interp: in, Capacity: 32})
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			if _, err := s.Logits(someTokens[:4], false); err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(path, 4096); err != nil {
				t.Fatal(err)
			}
			for range 2 {
				_, err = s.Logits(someTokens[:4], false)
				if !errors.Is(err, load.ErrFault) {
					t.Fatalf("a step over a truncated checkpoint: %v, want an error wrapping load.ErrFault", err)
				}
			}
		})
	}
}
