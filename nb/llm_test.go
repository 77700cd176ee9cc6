package nb_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/nb"
)

// tinyCheckpoint writes the tiny random llama of package synth.
func tinyCheckpoint(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tiny.gguf")
	p, err := synth.FindPreset("llama", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model(p.Family, p.Config)
	if err != nil {
		t.Fatal(err)
	}
	if err := synth.Write(m, path, synth.Options{Type: poot.F32, Seed: 3}); err != nil {
		t.Fatal(err)
	}
	return path
}

// The LLM helpers give what the driver gives, in plain types.
func TestLLM(t *testing.T) {
	path := tinyCheckpoint(t)
	m, err := nb.OpenWith(path, "", 64)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	if m.VocabSize() != synth.TinyVocab {
		t.Errorf("vocabulary of %d", m.VocabSize())
	}
	ids, err := m.Tokenize("hello world")
	if err != nil || len(ids) < 2 {
		t.Fatalf("Tokenize = %v, %v", ids, err)
	}
	text, err := m.Detokenize(ids)
	if err != nil || !strings.Contains(text, "hello world") {
		t.Errorf("Detokenize = %q, %v", text, err)
	}
	logits, err := m.Logits(ids)
	if err != nil || len(logits) != synth.TinyVocab {
		t.Fatalf("Logits: %d, %v", len(logits), err)
	}
	s, err := driver.Open(path, driver.Options{Capacity: 64})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ids32 := make([]int32, len(ids))
	for i, id := range ids {
		ids32[i] = int32(id)
	}
	want, err := s.Logits(ids32, false)
	if err != nil {
		t.Fatal(err)
	}
	for i, x := range want[0] {
		if logits[i] != float64(x) {
			t.Fatalf("logit %d: %v, the driver gives %v", i, logits[i], x)
		}
	}
	a, err := m.Generate("hello", 4)
	if err != nil {
		t.Fatal(err)
	}
	b, err := m.Generate("hello", 4)
	if err != nil || a != b {
		t.Errorf("greedy generation differs between calls: %q, %q (%v)", a, b, err)
	}
	if _, err := m.Sample("hello", 3, 0.8, 7, nil); err != nil {
		t.Error(err)
	}
	if g, err := m.Graph(); err != nil || !strings.Contains(g, "outputs:") {
		t.Errorf("Graph: %v", err)
	}
	for _, bad := range []func() error{
		func() error { _, err := m.Generate("hello", 0); return err },
		func() error { _, err := m.Logits(nil); return err },
		func() error { _, err := m.Logits([]int{synth.TinyVocab}); return err },
		func() error { _, err := m.Detokenize([]int{-1}); return err },
		func() error { _, err := m.Logits([]int{1 << 40}); return err },
	} {
		if bad() == nil {
			t.Error("a bad call succeeds")
		}
	}
	if err := m.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := m.Generate("hello", 1); !errors.Is(err, nb.ErrClosed) {
		t.Errorf("after Close: %v", err)
	}
	if err := m.Close(); !errors.Is(err, nb.ErrClosed) {
		t.Errorf("Close twice: %v", err)
	}
	var none *nb.LLM
	if _, err := none.Tokenize("x"); !errors.Is(err, nb.ErrClosed) || none.VocabSize() != 0 {
		t.Errorf("nil LLM: %v", err)
	}
}

func TestOpenErrors(t *testing.T) {
	if _, err := nb.Open(filepath.Join(t.TempDir(), "missing.gguf")); err == nil {
		t.Error("opening a missing file succeeds")
	}
	path := filepath.Join(t.TempDir(), "junk.gguf")
	if err := os.WriteFile(path, []byte("not a checkpoint"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := nb.Open(path); err == nil {
		t.Error("opening junk succeeds")
	}
	if _, err := nb.OpenWith(tinyCheckpoint(t), "nope", 0); !errors.Is(err, driver.ErrUnknownInterpreter) {
		t.Errorf("unknown interpreter: %v", err)
	}
}

// Streaming, all-position logits, the next-token chart and the pictures
// of an LLM.
func TestLLMNotebook(t *testing.T) {
	m, err := nb.OpenWith(tinyCheckpoint(t), "", 64)
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	want, err := m.Generate("hello", 6)
	if err != nil {
		t.Fatal(err)
	}
	var pieces []string
	got, err := m.GenerateFunc("hello", 6, func(p string) bool { pieces = append(pieces, p); return true })
	if err != nil || got != want || strings.Join(pieces, "") != want || len(pieces) < 2 {
		t.Fatalf("GenerateFunc = %q (pieces %q), %v; Generate gives %q", got, pieces, err, want)
	}
	calls := 0
	first, err := m.GenerateFunc("hello", 6, func(string) bool { calls++; return false })
	if err != nil || calls != 1 || first != pieces[0] {
		t.Errorf("stopped at once: %q after %d calls, %v; want %q", first, calls, err, pieces[0])
	}
	ids, _ := m.Tokenize("hello world")
	all, err := m.LogitsAll(ids)
	if err != nil || fmt.Sprint(all.Shape) != fmt.Sprint([]int{len(ids), synth.TinyVocab}) || len(all.Data) != len(ids)*synth.TinyVocab {
		t.Fatalf("LogitsAll: %v, %v", all.Shape, err)
	}
	for n := 1; n <= len(ids); n++ {
		last, err := m.Logits(ids[:n])
		if err != nil {
			t.Fatal(err)
		}
		for j, x := range last {
			if d := x - all.Data[(n-1)*synth.TinyVocab+j]; d > 1e-4 || d < -1e-4 {
				t.Fatalf("row %d, logit %d: %v from LogitsAll, %v from Logits of the prefix", n-1, j, all.Data[(n-1)*synth.TinyVocab+j], x)
			}
		}
	}
	c, err := m.NextTokens("hello", 5)
	if err != nil || len(c.Values) != 5 || len(c.Labels) != 5 {
		t.Fatalf("NextTokens: %v, %v", c, err)
	}
	sum := 0.0
	for i, p := range c.Values {
		sum += p
		if p <= 0 || i > 0 && p > c.Values[i-1] {
			t.Errorf("probabilities %v are not positive and falling", c.Values)
		}
	}
	if sum > 1+1e-9 || !wellFormed(c.SVG()) {
		t.Errorf("probabilities sum to %v", sum)
	}
	if _, err := m.NextTokens("hello", 0); err == nil {
		t.Error("NextTokens(0) succeeds")
	}
	if !wellFormed(m.SVG()) || !strings.Contains(m.SVG(), ">layer.0</text>") || !strings.Contains(m.SVG(), ">attn/</text>") {
		t.Errorf("SVG of the LLM:\n%s", m.SVG())
	}
	if p, err := m.Picture(0); err != nil || !strings.Contains(p.Source, ">attention[") {
		t.Errorf("Picture(0): %v", err)
	}
	if s := m.String(); !strings.Contains(s, "llama") || !strings.Contains(s, "context of 64 tokens") {
		t.Errorf("String = %q", s)
	}
	m.Close()
	if _, err := m.LogitsAll(ids); !errors.Is(err, nb.ErrClosed) || m.String() != "nb.LLM (closed)" || !strings.Contains(m.SVG(), "closed") {
		t.Errorf("after Close: %v", err)
	}
}

// TestOpenVocab: a directory holding only tokenizer.json is a vocabulary
// for notebooks, tokenizing as the tokenizer package does.
func TestOpenVocab(t *testing.T) {
	gz, err := os.ReadFile(filepath.Join("..", "tokenizer", "testdata", "hf", "llama3", "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json.gz"), gz, 0o644); err != nil {
		t.Fatal(err)
	}
	v, err := nb.OpenVocab(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer v.Close()
	ids, err := v.Tokenize("Hello world")
	if err != nil || len(ids) == 0 {
		t.Fatalf("Tokenize: %v, %v", ids, err)
	}
	text, err := v.Detokenize(ids)
	if err != nil || !strings.Contains(text, "Hello world") {
		t.Fatalf("Detokenize: %q, %v", text, err)
	}
}
