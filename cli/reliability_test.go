package cli

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/pootlabs/poot/gguf"
)

// Flags are checked against their own help: each of these is a usage
// error (status 2) naming the flag.
func TestFlagsAgainstHelp(t *testing.T) {
	gen := func(extra ...string) []string {
		return append([]string{"generate", "-m", tinyModel, "-p", "Once", "-n", "1"}, extra...)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{gen("--top-p", "2"), "--top-p 2"},
		{gen("--top-p", "0"), "--top-p 0"},
		{gen("--temp", "-1"), "--temp -1"},
		{gen("--temp", "NaN"), "--temp NaN"},
		{gen("--top-k", "-5"), "--top-k -5"},
		{gen("--min-p", "1.5"), "--min-p 1.5"},
		{gen("--repeat-penalty", "0"), "--repeat-penalty 0"},
		{gen("--repeat-last-n", "-2"), "--repeat-last-n -2"},
		{gen("--ctx", "-5"), "--ctx -5"},
		{gen("--ctx", "100000000"), "--ctx 100000000"},
		{[]string{"logits", "-m", tinyModel, "--tokens", "1", "--ctx", "-1"}, "--ctx -1"},
		{[]string{"bench", "-m", tinyModel, "--threads", "100000000"}, "--threads 100000000"},
		{[]string{"bench", "-m", tinyModel, "--threads", "-1"}, "--threads -1"},
		{[]string{"trace", "-m", tinyModel, "--dot", "--plan"}, "--dot or --plan"},
		{[]string{"trace", "-m", tinyModel, "--prefill", "0"}, "--prefill 0"},
	} {
		_, stderr, status := runPoot(c.args...)
		if status != 2 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("poot %s: status %d, stderr %q; want a one-line usage error naming %q", strings.Join(c.args, " "), status, stderr, c.want)
		}
		if strings.Contains(stderr, "Capacity") || strings.Contains(stderr, "OptionError") {
			t.Errorf("poot %s: the error names an internal field: %q", strings.Join(c.args, " "), stderr)
		}
	}
}

// --help and poot help CMD print the command's usage on stdout.
func TestHelpOnStdout(t *testing.T) {
	for _, args := range [][]string{{"generate", "--help"}, {"help", "generate"}, {"synth", "-h"}, {"help", "bench"}} {
		stdout, stderr, status := runPoot(args...)
		if status != 0 || stderr != "" || !strings.HasPrefix(stdout, "Usage: poot "+strings.TrimPrefix(args[len(args)-1], "-h")) && !strings.HasPrefix(stdout, "Usage: poot "+args[0]) {
			t.Errorf("poot %s: status %d, stdout %.40q, stderr %q", strings.Join(args, " "), status, stdout, stderr)
		}
	}
	if stdout, _, _ := runPoot("help", "generate"); !strings.Contains(stdout, "--top-p") {
		t.Errorf("poot help generate prints %.60q, not generate's flags", stdout)
	}
	if stdout, _, status := runPoot("help"); status != 0 || !strings.Contains(stdout, "Commands:") {
		t.Errorf("poot help: status %d, %.40q", status, stdout)
	}
}

// failWriter fails every write, as /dev/full does.
type failWriter struct{}

func (failWriter) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// A command whose output cannot be written fails.
func TestWriteErrors(t *testing.T) {
	dir := t.TempDir()
	for _, args := range [][]string{
		{"generate", "-m", tinyModel, "-p", "Once", "-n", "3"},
		{"synth", "--family", "llama", "--out", filepath.Join(dir, "w.gguf")},
		{"bench", "-m", tinyModel, "--prompt", "2", "--gen", "2", "--reps", "1"},
		{"tokenize", "-m", tinyModel, "-p", "Once"},
		{"logits", "-m", tinyModel, "--tokens", "1,2"},
		{"inspect", "-m", tinyModel},
		{"trace", "-m", tinyModel},
		{"demo"},
	} {
		var stderr bytes.Buffer
		status := run(args, failWriter{}, &stderr)
		if status != 1 || !strings.Contains(stderr.String(), "no space left") {
			t.Errorf("poot %s > /dev/full: status %d, stderr %q", strings.Join(args, " "), status, stderr.String())
		}
	}
}

// synth refuses to overwrite without --force, says which matrices stay
// f32 under a packed type, and refuses a type no matrix can take.
func TestSynthClaims(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "m.gguf")
	if _, stderr, status := runPoot("synth", "--family", "llama", "--out", out); status != 0 {
		t.Fatalf("synth: %s", stderr)
	}
	if _, stderr, status := runPoot("synth", "--family", "llama", "--out", out); status != 1 || !strings.Contains(stderr, "--force") {
		t.Errorf("synth over an existing file: status %d, %q", status, stderr)
	}
	if _, stderr, status := runPoot("synth", "--family", "llama", "--out", out, "--force", "--seed", "2"); status != 0 {
		t.Errorf("synth --force: %s", stderr)
	}
	if _, stderr, status := runPoot("synth", "--family", "llama", "--type", "q4_k", "--out", filepath.Join(dir, "q.gguf")); status != 1 || !strings.Contains(stderr, "q4_K") {
		t.Errorf("synth --type q4_k on rows of 64: status %d, %q", status, stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "q.gguf")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused synth left a file")
	}
	cfg := filepath.Join(dir, "wide.json")
	os.WriteFile(cfg, []byte(`{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":256,"num_hidden_layers":1,
		"num_attention_heads":4,"intermediate_size":128,"vocab_size":512,"rms_norm_eps":1e-5}`), 0o644)
	stdout, stderr, status := runPoot("synth", "--family", "llama", "--config", cfg, "--type", "q4_k", "--out", filepath.Join(dir, "w.gguf"))
	if status != 0 || !strings.Contains(stderr, "blk.0.ffn_down.weight") || !strings.Contains(stdout, "1 matrices f32") {
		t.Errorf("synth with some f32 fallbacks: status %d, stdout %q, stderr %q", status, stdout, stderr)
	}
	st := filepath.Join(dir, "mixtral")
	if _, stderr, status := runPoot("synth", "--family", "mixtral", "--format", "safetensors", "--out", st); status != 0 {
		t.Errorf("synth --family mixtral --format safetensors: %s", stderr)
	}
	if _, stderr, status := runPoot("generate", "-m", st, "-p", "Once", "-n", "2"); status != 0 {
		t.Errorf("generate on the mixtral directory: %s", stderr)
	}
	es, _ := os.ReadDir(dir)
	for _, e := range es {
		if strings.Contains(e.Name(), ".tmp-") {
			t.Errorf("a temporary is left: %s", e.Name())
		}
	}
}

// Errors read without doubled prefixes.
func TestNoDoubledPrefixes(t *testing.T) {
	bad := filepath.Join(t.TempDir(), "bad.bin")
	os.WriteFile(bad, []byte("GGUF\x03\x00\x00\x00"), 0o644)
	_, stderr, _ := runPoot("generate", "-m", bad, "-p", "x")
	_, stderr2, _ := runPoot("synth", "--family", "llama", "--type", "q4_k", "--out", filepath.Join(t.TempDir(), "q.gguf"))
	for _, s := range []string{stderr, stderr2} {
		for _, p := range []string{"gguf:", "synth:", "load:"} {
			if strings.Count(s, p) > 1 {
				t.Errorf("%q repeats %q", s, p)
			}
		}
	}
}

// inspect --check lists a tensor with NaN values and fails.
func TestInspectCheck(t *testing.T) {
	stdout, stderr, status := runPoot("inspect", "--check", "-m", filepath.Join(hostileDir, "nan-weights.gguf"))
	if status != 1 || !strings.Contains(stdout, "blk.0.ffn_up.weight") || !strings.Contains(stderr, "NaN or infinite") {
		t.Errorf("inspect --check on NaN weights: status %d, stderr %q", status, stderr)
	}
	stdout, _, status = runPoot("inspect", "--check", "--json", "-m", filepath.Join(hostileDir, "q8-inf-scale.gguf"))
	if status != 1 || !strings.Contains(stdout, `"extra.q8_0"`) || !strings.Contains(stdout, "block scales d") {
		t.Errorf("inspect --check --json on an Inf q8_0 scale: status %d, %q", status, stdout)
	}
	if _, stderr, status := runPoot("inspect", "--check", "-m", tinyModel); status != 0 {
		t.Errorf("inspect --check on a clean model: %s", stderr)
	}
}

// inspect --check scans MXFP4 block scales: a synthesized MXFP4 model is
// clean, and one exponent byte set to 0xff (the Microscaling spec's NaN,
// which llama.cpp's --check-tensors rejects) is reported with its tensor
// and block.
func TestInspectCheckMXFP4(t *testing.T) {
	path := filepath.Join(t.TempDir(), "oss-mxfp4.gguf")
	if _, stderr, status := runPoot("synth", "--family", "gpt-oss", "--type", "mxfp4", "--out", path); status != 0 {
		t.Fatalf("synth: %s", stderr)
	}
	if stdout, stderr, status := runPoot("inspect", "--check", "-m", path); status != 0 || !strings.Contains(stdout, "mxfp4") {
		t.Fatalf("inspect --check on a clean MXFP4 model: status %d, %s\n%s", status, stderr, stdout)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Parse(data)
	if err != nil {
		t.Fatal(err)
	}
	const name = "blk.1.ffn_down_exps.weight"
	ti, ok := f.Tensor(name)
	if !ok || ti.Type != gguf.GGMLTypeMXFP4 {
		t.Fatalf("%s: %+v, want an MXFP4 tensor", name, ti)
	}
	data[f.DataOffset()+int64(ti.Offset)+3*17] = 0xff // block 3's exponent
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, stderr, status := runPoot("inspect", "--check", "-m", path)
	if status != 1 || !strings.Contains(stdout, name) || !strings.Contains(stdout, "E8M0") || !strings.Contains(stdout, "first at 3") || !strings.Contains(stderr, "NaN or infinite") {
		t.Errorf("inspect --check on an 0xff MXFP4 scale: status %d, stderr %q\n%s", status, stderr, stdout)
	}
}
