package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/synth"
)

// tinyModel is a synthesized tiny llama GGUF shared by the tests.
var tinyModel string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "poot-cmd-test-")
	if err != nil {
		panic(err)
	}
	tinyModel = filepath.Join(dir, "tiny.gguf")
	if err := writeTiny(tinyModel); err != nil {
		os.RemoveAll(dir)
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// runPoot runs the command line in-process.
func runPoot(args ...string) (stdout, stderr string, status int) {
	var o, e bytes.Buffer
	status = run(args, &o, &e)
	return o.String(), e.String(), status
}

// refDir returns ../shared/refmodels, skipping the test when it is absent.
func refDir(t *testing.T) string {
	t.Helper()
	for _, d := range []string{"../../shared/refmodels"} {
		if _, err := os.Stat(filepath.Join(d, "stories260K-f32.gguf")); err == nil {
			return d
		}
	}
	t.Skip("../shared/refmodels is absent: skipping the reference-model checks")
	return ""
}

// oneLineError checks a failure: non-zero status, one line on stderr
// mentioning want, no panic.
func oneLineError(t *testing.T, stderr string, status int, want ...string) {
	t.Helper()
	if status == 0 {
		t.Errorf("exit status 0, want non-zero (stderr %q)", stderr)
	}
	if n := strings.Count(stderr, "\n"); n != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("stderr has %d lines, want one: %q", n, stderr)
	}
	if strings.Contains(stderr, "panic") || strings.Contains(stderr, "goroutine") {
		t.Errorf("stderr shows a panic: %q", stderr)
	}
	for _, w := range want {
		if !strings.Contains(strings.ToLower(stderr), strings.ToLower(w)) {
			t.Errorf("stderr %q does not mention %q", stderr, w)
		}
	}
}

func writeTiny(path string) error {
	p, err := synth.FindPreset("llama", "tiny")
	if err != nil {
		return err
	}
	m, err := synth.Model(p.Family, p.Config)
	if err != nil {
		return err
	}
	return synth.Write(m, path, synth.Options{Type: poot.F32, Seed: 3})
}
