package driver_test

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/interp"
)

var tinyPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "poot-driver-test-")
	if err != nil {
		panic(err)
	}
	tinyPath = filepath.Join(dir, "tiny.gguf")
	p, err := synth.FindPreset("llama", "tiny")
	if err != nil {
		panic(err)
	}
	mod, err := synth.Model(p.Family, p.Config)
	if err != nil {
		panic(err)
	}
	if err := synth.Write(mod, tinyPath, synth.Options{Type: poot.F32, Seed: 11}); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func open(t *testing.T, o driver.Options) *driver.Session {
	t.Helper()
	s, err := driver.Open(tinyPath, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func maxDiff(a, b []float32) float64 {
	d := 0.0
	for i := range a {
		d = max(d, math.Abs(float64(a[i]-b[i])))
	}
	return d
}

func argmax(v []float32) int32 {
	best := 0
	for i, x := range v {
		if x > v[best] {
			best = i
		}
	}
	return int32(best)
}

var someTokens = []int32{1, 40, 300, 7, 99, 250, 3, 511, 12, 64, 128}

// logitRange is the spread of a row of logits, max - min.
func logitRange(v []float32) float64 {
	lo, hi := slices.Min(v), slices.Max(v)
	return float64(hi - lo)
}

// Prefill in chunks of 3 equals one prefill, at every position, within
// 1e-5 of the logits' range (the F32 bound of every interpreter check:
// the CPU kernels add over K in another order for 3 rows than for 11).
func TestChunkedPrefill(t *testing.T) {
	whole, err := open(t, driver.Options{Capacity: 32}).Logits(someTokens, true)
	if err != nil {
		t.Fatal(err)
	}
	chunked, err := open(t, driver.Options{Capacity: 32, PrefillChunk: 3}).Logits(someTokens, true)
	if err != nil {
		t.Fatal(err)
	}
	if len(whole) != len(someTokens) || len(chunked) != len(someTokens) {
		t.Fatalf("%d and %d rows for %d tokens", len(whole), len(chunked), len(someTokens))
	}
	for i := range whole {
		if d := maxDiff(whole[i], chunked[i]) / logitRange(whole[i]); d > 1e-5 {
			t.Errorf("position %d: chunked prefill differs by %.3g of the logit range", i, d)
		}
	}
	last, err := open(t, driver.Options{Capacity: 32, PrefillChunk: 4}).Logits(someTokens, false)
	if err != nil {
		t.Fatal(err)
	}
	if len(last) != 1 || maxDiff(last[0], whole[len(whole)-1])/logitRange(last[0]) > 1e-5 {
		t.Errorf("last-only logits differ from the last row")
	}
}

// Greedy generation (prefill, then decode steps carrying the cache) picks
// the argmax of one all-position prefill over the same tokens.
func TestGenerateMatchesPrefill(t *testing.T) {
	s := open(t, driver.Options{Capacity: 40})
	st, err := s.GenerateTokens(context.Background(), someTokens[:4], driver.GenerateOptions{MaxTokens: 12, IgnoreEOS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.GeneratedTokens != 12 || len(st.Tokens) != 12 || st.Stop != driver.StopBudget {
		t.Fatalf("stats %+v", st)
	}
	if s.Len() != 4+11 {
		t.Errorf("cache holds %d tokens, want 15 (the last token is not fed)", s.Len())
	}
	all := append(append([]int32{}, someTokens[:4]...), st.Tokens[:11]...)
	rows, err := open(t, driver.Options{Capacity: 40}).Logits(all, true)
	if err != nil {
		t.Fatal(err)
	}
	for i, tok := range st.Tokens {
		if want := argmax(rows[3+i]); tok != want {
			t.Errorf("token %d: generated %d, prefill argmax %d", i, tok, want)
		}
	}
}

func TestContext(t *testing.T) {
	s := open(t, driver.Options{Capacity: 8})
	_, err := s.Logits(someTokens, false)
	var ce *driver.ContextError
	if !errors.As(err, &ce) || ce.Need != len(someTokens) || ce.Capacity != 8 || !errors.Is(err, driver.ErrContext) {
		t.Errorf("Logits over capacity: %v", err)
	}
	if _, err := s.Generate(context.Background(), strings.Repeat("Once upon a time ", 5), driver.GenerateOptions{}, nil); !errors.As(err, &ce) {
		t.Errorf("Generate over capacity: %v", err)
	}
	// Generation stops when the cache is full: 5 prompt tokens, then
	// tokens until the 8 positions are used, and one more from the last
	// logits.
	s.Reset()
	st, err := s.GenerateTokens(context.Background(), someTokens[:5], driver.GenerateOptions{IgnoreEOS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Stop != driver.StopContext || st.GeneratedTokens != 4 {
		t.Errorf("stop %v after %d tokens, want context full after 4", st.Stop, st.GeneratedTokens)
	}
}

func TestStopStringsAndContinuation(t *testing.T) {
	s := open(t, driver.Options{Capacity: 64})
	var text strings.Builder
	opts := driver.GenerateOptions{MaxTokens: 16, IgnoreEOS: true}
	if _, err := s.Generate(context.Background(), "Once upon a time", opts, func(p string) { text.WriteString(p) }); err != nil {
		t.Fatal(err)
	}
	full := text.String()
	if len(full) < 6 {
		t.Skipf("too little text to cut: %q", full)
	}
	stop := full[3:6]
	want := full[:strings.Index(full, stop)]
	s.Reset()
	text.Reset()
	opts.Stop = []string{stop}
	st, err := s.Generate(context.Background(), "Once upon a time", opts, func(p string) { text.WriteString(p) })
	if err != nil {
		t.Fatal(err)
	}
	if text.String() != want || st.Stop != driver.StopString {
		t.Errorf("with stop %q: %q (%v), want %q", stop, text.String(), st.Stop, want)
	}
	// A second call continues after the cache's tokens, without BOS.
	n := s.Len()
	st, err = s.Generate(context.Background(), " and then", driver.GenerateOptions{MaxTokens: 2, IgnoreEOS: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := s.History()
	if len(h) != n+st.PromptTokens+1 || h[n] == 1 {
		t.Errorf("continuation: cache %d tokens after %d, prompt %d; first new token %d", len(h), n, st.PromptTokens, h[n])
	}
	s.Reset()
	if s.Len() != 0 {
		t.Errorf("Reset left %d tokens", s.Len())
	}
}

func TestCancel(t *testing.T) {
	s := open(t, driver.Options{Capacity: 64})
	ctx, cancel := context.WithCancel(context.Background())
	n := 0
	_, err := s.Generate(ctx, "Once", driver.GenerateOptions{IgnoreEOS: true}, func(string) {
		if n++; n == 3 {
			cancel()
		}
	})
	if !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled generation: %v", err)
	}
}

func TestTokenRange(t *testing.T) {
	s := open(t, driver.Options{Capacity: 16})
	var te *driver.TokenError
	for _, bad := range [][]int32{{1, 512}, {-1}} {
		if _, err := s.Logits(bad, true); !errors.As(err, &te) || !errors.Is(err, driver.ErrTokenRange) {
			t.Errorf("tokens %v: %v", bad, err)
		}
	}
	if _, err := s.Logits(nil, true); !errors.Is(err, driver.ErrEmptyPrompt) {
		t.Errorf("no tokens: %v", err)
	}
}

// counting wraps the oracle, counting compiles: a stand-in for a backend
// registered by another package.
type counting struct{ compiles *int }

func (c counting) Name() string { return "counting" }
func (c counting) Compile(g *poot.Graph, consts interp.Consts) (interp.Executable, error) {
	*c.compiles++
	return interp.Oracle{}.Compile(g, consts)
}

// countingCompiles is what the registered "counting" interpreter counts;
// it is registered once per process, so that the test can run again
// (go test -count).
var (
	countingCompiles int
	registerCounting = sync.OnceValue(func() error {
		return driver.RegisterInterpreter("counting", func() (interp.Interpreter, error) { return counting{&countingCompiles}, nil })
	})
)

func TestInterpreterRegistry(t *testing.T) {
	if err := registerCounting(); err != nil {
		t.Fatal(err)
	}
	countingCompiles = 0
	compiles := &countingCompiles
	if err := driver.RegisterInterpreter("counting", func() (interp.Interpreter, error) { return counting{compiles}, nil }); err == nil {
		t.Error("a name was registered twice")
	}
	if names := driver.Interpreters(); !slices.Contains(names, "counting") || !slices.Contains(names, "oracle") || !slices.Contains(names, "cpu") || !slices.IsSorted(names) {
		t.Errorf("Interpreters() = %v", names)
	}
	s := open(t, driver.Options{Interp: "counting", Capacity: 32, PrefillChunk: 4})
	a, err := s.Logits(someTokens, true)
	if err != nil {
		t.Fatal(err)
	}
	// Decode (1), prefill of 4 every position (1), and the tail of 3 (1);
	// the same shapes again compile nothing.
	if *compiles != 3 {
		t.Errorf("%d compiles, want 3", *compiles)
	}
	b, err := s.Logits(someTokens, true)
	if err != nil || *compiles != 3 {
		t.Errorf("second run: %v, %d compiles", err, *compiles)
	}
	for i := range a {
		if maxDiff(a[i], b[i]) != 0 {
			t.Fatalf("Reset did not give the same logits at position %d", i)
		}
	}
	// Prefill steps beyond MaxPrefillSteps are dropped and made again.
	s = open(t, driver.Options{Interp: "counting", Capacity: 32})
	for n := 2; n <= 2+driver.MaxPrefillSteps; n++ {
		if _, err := s.Logits(someTokens[:n], false); err != nil {
			t.Fatal(err)
		}
	}
	before := *compiles
	if _, err := s.Logits(someTokens[:2], false); err != nil || *compiles != before+1 {
		t.Errorf("the least recently used prefill step was kept: %v, %d compiles after %d", err, *compiles, before)
	}
	if _, err := s.Logits(someTokens[:2+driver.MaxPrefillSteps], false); err != nil || *compiles != before+1 {
		t.Errorf("a recent prefill step was recompiled: %v, %d compiles", err, *compiles)
	}
	_, err = driver.Open(tinyPath, driver.Options{Interp: "warp"})
	var ie *driver.InterpreterError
	if !errors.As(err, &ie) || !errors.Is(err, driver.ErrUnknownInterpreter) || !strings.Contains(err.Error(), "oracle") {
		t.Errorf("unknown interpreter: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "x.txt")
	os.WriteFile(text, []byte("hello"), 0o644)
	for _, c := range []struct {
		path string
		o    driver.Options
	}{
		{filepath.Join(dir, "missing.gguf"), driver.Options{}},
		{text, driver.Options{}},
		{tinyPath, driver.Options{Capacity: -1}},
		{tinyPath, driver.Options{Capacity: 100000}}, // beyond the model's context
		{tinyPath, driver.Options{KV: poot.Q4_0}},
	} {
		if s, err := driver.Open(c.path, c.o); err == nil {
			s.Close()
			t.Errorf("Open(%s, %+v) succeeded", c.path, c.o)
		}
	}
}

// TestHalfKVSession: a session with F16 or Q8_0 caches declares them so,
// and generates the reference model's greedy text as the F32 session does
// (stories260K's 48 greedy tokens come out the same over all three); Q4_0
// caches are an OptionError.
func TestHalfKVSession(t *testing.T) {
	path := "../../shared/refmodels/stories260K-f32.gguf"
	if _, err := os.Stat(path); err != nil {
		t.Skip("../shared/refmodels is absent")
	}
	var texts []string
	for _, kv := range []poot.DType{poot.F32, poot.F16, poot.Q8_0} {
		s, err := driver.Open(path, driver.Options{KV: kv})
		if err != nil {
			t.Fatal(err)
		}
		defer s.Close()
		if s.KV() != kv {
			t.Errorf("KV %v, want %v", s.KV(), kv)
		}
		_, g, err := s.Step(1, families.LastToken)
		if err != nil {
			t.Fatal(err)
		}
		for _, st := range g.States() {
			if d := g.Type(st.In).DType; d != kv {
				t.Errorf("state %q is %v in a session of %v caches", g.Value(st.In).Name, d, kv)
			}
		}
		var text strings.Builder
		if _, err := s.Generate(context.Background(), "Once upon a time", driver.GenerateOptions{MaxTokens: 48}, func(p string) { text.WriteString(p) }); err != nil {
			t.Fatal(err)
		}
		texts = append(texts, text.String())
	}
	if texts[0] != texts[1] || texts[0] != texts[2] {
		t.Errorf("F16 caches: %q, Q8_0: %q, F32: %q", texts[1], texts[2], texts[0])
	}
	var oe *driver.OptionError
	if _, err := driver.Open(path, driver.Options{KV: poot.Q4_0}); !errors.As(err, &oe) {
		t.Errorf("Q4_0 caches: %v, want an OptionError", err)
	}
}

// The reference model, when ../shared is there: greedy text and stats.
func TestStories260K(t *testing.T) {
	path := "../../shared/refmodels/stories260K-f32.gguf"
	if _, err := os.Stat(path); err != nil {
		t.Skip("../shared/refmodels is absent")
	}
	s, err := driver.Open(path, driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var text strings.Builder
	st, err := s.Generate(context.Background(), "Once upon a time", driver.GenerateOptions{MaxTokens: 64}, func(p string) { text.WriteString(p) })
	if err != nil {
		t.Fatal(err)
	}
	const want = ", there was a little girl named Lily. She loved to play outside in the park. One day, she saw a big, red ball. She wanted to play with it, but it was too high.\nLily's mom said"
	if text.String() != want {
		t.Errorf("text %q, want %q", text.String(), want)
	}
	t.Logf("%s", st.Summary())
}
