package cli

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/pootlabs/poot/rdu/bundle"
	"github.com/pootlabs/poot/rdu/sim"
)

// TestLowerWritesACertifiedBundle: poot lower writes a bundle that reads
// back and runs, and prints its kinds, statements, bytes and certificate.
func TestLowerWritesACertifiedBundle(t *testing.T) {
	dir := refDir(t)
	out := filepath.Join(t.TempDir(), "bundle")
	stdout, errOut, status := runPoot("lower", "--target", "rdu", "--decode", "--ctx", "32", "-m", filepath.Join(dir, "tiny-gemma3-f32.gguf"), "--out", out)
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	for _, want := range []string{"kinds: 2", "kind0    2 layers (0-1)", "kind1    1 layers (2)", "statements", "weights per chip", "KV cache per chip at ctx 32: 24.0 KiB", "certified: yes"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	b, err := bundle.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	m, err := sim.New(b, sim.Files{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := m.Step(1, 0); err != nil {
		t.Fatal(err)
	}
}

// TestLowerRefusals: the deployments this version does not write, another
// target, or no deployment are one-line errors.
func TestLowerRefusals(t *testing.T) {
	dir := refDir(t)
	model := filepath.Join(dir, "tiny-llama-f32.gguf")
	out := filepath.Join(t.TempDir(), "b")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"lower", "--target", "rdu", "-m", model, "--out", out}, "--decode"},
		{[]string{"lower", "--target", "rdu", "--decode", "--prefill", "4", "-m", model, "--out", out}, "one deployment"},
		{[]string{"lower", "--target", "tpu", "--decode", "-m", model, "--out", out}, "rdu"},
		{[]string{"lower", "--target", "rdu", "--prefill", "4", "--tp", "2", "-m", model, "--out", out}, "tensor-parallel"},
		{[]string{"lower", "--target", "rdu", "--decode", "--tp", "3", "-m", model, "--out", out}, "do not split over 3 chips"},
		{[]string{"lower", "--target", "rdu", "--batched", "4", "--decode", "-m", model, "--out", out}, "one deployment"},
		{[]string{"lower", "--target", "rdu", "--batched", "-2", "-m", model, "--out", out}, "1 or more sequences"},
		{[]string{"lower", "--target", "rdu", "--decode", "-m", model}, "--out"},
	} {
		_, errOut, status := runPoot(c.args...)
		oneLineError(t, errOut, status, c.want)
	}
}

// TestGenerateOnRDU: poot generate --interp rdu prints what the oracle
// prints (the prompt runs through a prefill bundle, the rest through the
// decode bundle).
func TestGenerateOnRDU(t *testing.T) {
	dir := refDir(t)
	args := []string{"generate", "-m", filepath.Join(dir, "stories260K-q8_0.gguf"), "-p", "Once upon a time", "-n", "12", "--ctx", "64"}
	want, errOut, status := runPoot(append(args, "--interp", "oracle")...)
	if status != 0 {
		t.Fatalf("oracle: status %d: %s", status, errOut)
	}
	got, errOut, status := runPoot(append(args, "--interp", "rdu")...)
	if status != 0 {
		t.Fatalf("rdu: status %d: %s", status, errOut)
	}
	if got != want {
		t.Errorf("rdu printed %q, the oracle %q", got, want)
	}
}

// TestRunBundle: the text run-bundle generates from a bundle (its
// directory given as the first argument) is what generate prints on the
// oracle.
func TestRunBundle(t *testing.T) {
	dir := refDir(t)
	model := filepath.Join(dir, "stories260K-q8_0.gguf")
	out := filepath.Join(t.TempDir(), "bundle")
	if _, errOut, status := runPoot("lower", "--target", "rdu", "--decode", "--ctx", "64", "-m", model, "--out", out); status != 0 {
		t.Fatalf("lower: status %d: %s", status, errOut)
	}
	got, errOut, status := runPoot("run-bundle", out, "-m", model, "-p", "Once upon a time", "-n", "20")
	if status != 0 {
		t.Fatalf("run-bundle: status %d: %s", status, errOut)
	}
	want, errOut, status := runPoot("generate", "-m", model, "-p", "Once upon a time", "-n", "20", "--ctx", "64", "--interp", "oracle")
	if status != 0 {
		t.Fatalf("generate: status %d: %s", status, errOut)
	}
	if got != want {
		t.Errorf("run-bundle printed %q, generate %q", got, want)
	}
}

// TestLowerBatched: poot lower --batched writes a certified batched
// bundle, a cache a sequence; run-bundle refuses it, naming the decode
// bundle it runs.
func TestLowerBatched(t *testing.T) {
	dir := refDir(t)
	model := filepath.Join(dir, "tiny-llama-f32.gguf")
	out := filepath.Join(t.TempDir(), "bundle")
	stdout, errOut, status := runPoot("lower", "--target", "rdu", "--batched", "3", "--ctx", "32", "-m", model, "--out", out)
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	for _, want := range []string{"batched deployment", "sequences: 3", "KV cache per chip at ctx 32: 48.0 KiB", "certified: yes"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	b, err := bundle.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if d := b.Manifest.Deployment; d.Kind != "batched" || d.Batch != 3 {
		t.Errorf("deployment %+v", d)
	}
	_, errOut, status = runPoot("run-bundle", "-b", out, "-m", model, "-p", "Once")
	oneLineError(t, errOut, status, "--decode")
}

// TestLowerPrefill: poot lower --prefill writes a certified prefill bundle.
func TestLowerPrefill(t *testing.T) {
	dir := refDir(t)
	out := filepath.Join(t.TempDir(), "bundle")
	stdout, errOut, status := runPoot("lower", "--target", "rdu", "--prefill", "6", "--ctx", "32", "-m", filepath.Join(dir, "tiny-llama-f32.gguf"), "--out", out)
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	for _, want := range []string{"prefill deployment", "runs of 6 tokens", "certified: yes"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	b, err := bundle.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if b.Manifest.Deployment.Kind != "prefill" || b.Manifest.Deployment.Tokens != 6 {
		t.Errorf("deployment %+v", b.Manifest.Deployment)
	}
}

// TestLowerTensorParallel: poot lower --tp 2 writes a bundle over two
// chips, certifies it, and says what each chip holds.
func TestLowerTensorParallel(t *testing.T) {
	dir := refDir(t)
	out := filepath.Join(t.TempDir(), "b")
	stdout, errOut, status := runPoot("lower", "--target", "rdu", "--decode", "--tp", "2", "--ctx", "32", "-m", filepath.Join(dir, "tiny-llama-f32.gguf"), "--out", out)
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	for _, want := range []string{"tensor-parallel over 2 chips", "2 all-reduces a layer", "chip 0: weights", "chip 1: weights", "certified: yes"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("the summary lacks %q:\n%s", want, stdout)
		}
	}
	t.Log(stdout)
}
