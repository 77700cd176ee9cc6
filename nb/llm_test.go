package nb_test

import (
	"errors"
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
