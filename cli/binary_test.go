package cli

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The built binary: exit statuses, one-line errors and no panic traces.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command")
	}
	bin := filepath.Join(t.TempDir(), "poot")
	build := exec.Command("go", "build", "-o", bin, "../cmd/poot")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	text := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(text, []byte("not a model"), 0o644); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		args   []string
		status int
		want   string
	}{
		{[]string{"demo"}, 0, ""},
		{[]string{"generate", "-m", tinyModel, "-p", "Once", "-n", "2"}, 0, "tokens/s"},
		{[]string{"generate", "--help"}, 0, "Usage: poot generate"},
		{[]string{"generate", "-m", filepath.Join(t.TempDir(), "missing.gguf"), "-p", "x"}, 1, "no such file"},
		{[]string{"logits", "-m", text, "--tokens", "1"}, 1, "not a GGUF file"},
		{[]string{"logits", "-m", tinyModel, "--tokens", "1,99999"}, 1, "out of range"},
		{[]string{"generate", "-m", tinyModel, "-p", "x", "--interp", "nope"}, 1, "unknown interpreter"},
		{[]string{"generate", "-m", tinyModel, "--ctx", "4", "-p", "Once upon a time, long ago"}, 1, "context overflow"},
		{[]string{"generate", "--bogus"}, 2, "bogus"},
		{[]string{}, 2, "Usage"},
	}
	for _, c := range cases {
		cmd := exec.Command(bin, c.args...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		status := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			status = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("%v: %v", c.args, err)
		}
		if status != c.status {
			t.Errorf("poot %s: status %d, want %d (stderr %q)", strings.Join(c.args, " "), status, c.status, stderr.String())
		}
		if s := stderr.String(); strings.Contains(s, "goroutine ") || strings.Contains(s, "panic:") {
			t.Errorf("poot %s: a panic trace: %s", strings.Join(c.args, " "), s)
		}
		if !strings.Contains(stdout.String()+stderr.String(), c.want) {
			t.Errorf("poot %s: output lacks %q: %q %q", strings.Join(c.args, " "), c.want, stdout.String(), stderr.String())
		}
		if c.status == 1 && strings.Count(stderr.String(), "\n") != 1 {
			t.Errorf("poot %s: want a one-line error, got %q", strings.Join(c.args, " "), stderr.String())
		}
	}
}
