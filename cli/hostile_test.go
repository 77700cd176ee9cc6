package cli

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
)

// hostileWant says what each corpus case must fail with: a phrase of the
// one-line error. The commands that trace a model all run the cases whose
// problem is a number in the header; the others run generate (inspect
// --check for bad values, which generate does not scan).
var hostileWant = map[string]string{
	"alignment-3.gguf":         "general.alignment is 3",
	"arch-missing.gguf":        `"general.architecture" not found`,
	"arch-number.gguf":         "general.architecture",
	"arch-unknown.gguf":        "unknown architecture",
	"attn-q-shape.gguf":        `"blk.0.attn_q.weight": shape differs`,
	"attn-q-unknown-type.gguf": "poot does not support",
	"big-endian.gguf":          "big-endian",
	"dims-overflow.gguf":       "more than 2^62 elements",
	"duplicate-key.gguf":       "duplicate key",
	"duplicate-tensor.gguf":    "duplicate tensor name",
	"embd-rows-0.gguf":         "0 rows",
	"empty.gguf":               "empty",
	"eps-negative.gguf":        "epsilon",
	"experts-1e9.gguf":         "expert_count",
	"experts-8.gguf":           `"blk.0.ffn_gate_inp.weight" is missing`,
	"ffn-2e9.gguf":             `"blk.0.ffn_gate.weight": shape differs`,
	"head-dim-2e9.gguf":        "key length 2000000000",
	"heads-0.gguf":             "head_count",
	"heads-3.gguf":             `"blk.0.attn_q.weight": shape differs`,
	"key-length-huge.gguf":     "key length",
	"kv-count-huge.gguf":       "metadata count",
	"kv-heads-0.gguf":          "heads 2/0",
	"kv-heads-array.gguf":      "3 per-layer values for 2 layers",
	"layers-1e6.gguf":          "block_count",
	"layers-3.gguf":            `"blk.2.attn_norm.weight" is missing`,
	"layers-4e9.gguf":          "block_count",
	"magic-only.gguf":          "version needs 4 bytes",
	"nan-weights.gguf":         "blk.0.ffn_up.weight",
	"no-attn-q.gguf":           `"blk.1.attn_q.weight" is missing`,
	"no-token-embd.gguf":       `"token_embd.weight" is missing`,
	"no-tokenizer.gguf":        "no tokenizer",
	"not-gguf.gguf":            "not a GGUF file",
	"offset-huge.gguf":         "runs past the end",
	"offset-overlap.gguf":      "overlaps",
	"q8-inf-scale.gguf":        "extra.q8_0",
	"rope-dims-odd.gguf":       "3 rotary dims",
	"tensor-count-huge.gguf":   "tensor count",
	"truncated-data.gguf":      "runs past the end",
	"truncated-header.gguf":    "tensor count",
	"type-unknown.gguf":        "unknown ggml type id 9999",
	"version-1.gguf":           "version 1",
	"vocab-17-tokens.gguf":     "17 tokens",
	"vocab-3-tokens.gguf":      "3 tokens",
	"vocab-size-key.gguf":      "vocab_size",
	"width-2e9.gguf":           "embedding_length",

	"st-config-array":         "not a JSON object",
	"st-config-deep":          "not a JSON object",
	"st-config-garbage":       "not a JSON object",
	"st-dtype-unknown":        "is missing",
	"st-duplicate-tensor":     "duplicate tensor name",
	"st-empty-weights":        "shorter than the 8-byte header",
	"st-experts-1e9":          "num_local_experts",
	"st-header-garbage":       "header JSON",
	"st-header-huge":          "header length",
	"st-heads-0":              "num_attention_heads",
	"st-heads-3":              `"blk.0.attn_q.weight"`,
	"st-index-escape":         "not a plain file name",
	"st-index-missing-tensor": `"nonesuch"`,
	"st-layers-100":           `"blk.2.attn_norm.weight" (stored as "model.layers.2.input_layernorm.weight") is missing`,
	"st-layers-1e6":           "num_hidden_layers",
	"st-layers-float":         "num_hidden_layers",
	"st-no-embedding":         `"token_embd.weight" (stored as "model.embed_tokens.weight") is missing`,
	"st-no-weights":           "neither model.safetensors nor",
	"st-offsets-past":         "data_offsets",
	"st-overlap":              "overlaps",
	"st-shape-negative":       "not a valid extent",
	"st-shape-overflow":       "more than 2^62 elements",
	"st-tokenizer-3":          "3 tokens",
	"st-tokenizer-garbage":    "tokenizer.json",
	"st-tokenizer-huge-id":    "unnamed ids",
	"st-vocab-0":              "vocab_size",
	"st-vocab-1e9":            `"token_embd.weight"`,
	"st-width-2e9":            `"token_embd.weight"`,
}

// byNumber are the cases whose problem is one number in the header: every
// command that traces the model runs them.
var byNumber = []string{"layers-1e6.gguf", "layers-4e9.gguf", "layers-3.gguf", "width-2e9.gguf", "ffn-2e9.gguf",
	"experts-1e9.gguf", "st-layers-1e6", "st-layers-100", "st-vocab-1e9", "st-experts-1e9"}

// badValues are the cases only inspect --check catches.
var badValues = []string{"nan-weights.gguf", "q8-inf-scale.gguf"}

// hostileMemoryKB is the address-space limit each run gets: far below what
// a trace sized by a header number takes, far above what a tiny model needs.
const hostileMemoryKB = 2 << 20

// runLimited runs the binary under ulimit -v and a time limit.
func runLimited(t *testing.T, bin string, args ...string) (stdout, stderr string, status int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	script := "ulimit -v " + itoa(hostileMemoryKB) + ` && exec "$0" "$@"`
	cmd := exec.CommandContext(ctx, "bash", append([]string{"-c", script, bin}, args...)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Errorf("poot %s: still running after 20 s", strings.Join(args, " "))
		return out.String(), errb.String(), -1
	}
	status = 0
	if ee, ok := err.(*exec.ExitError); ok {
		status = ee.ExitCode()
	} else if err != nil {
		t.Fatalf("poot %s: %v", strings.Join(args, " "), err)
	}
	return out.String(), errb.String(), status
}

func itoa(n int) string {
	var b []byte
	for ; n > 0; n /= 10 {
		b = append([]byte{byte('0' + n%10)}, b...)
	}
	return string(b)
}

// checkFailure asserts a clean failure: non-zero status, one stderr line
// with the phrase, no trace of a panic or a runtime crash.
func checkFailure(t *testing.T, args []string, stdout, stderr string, status int, want string) {
	t.Helper()
	cmd := "poot " + strings.Join(args, " ")
	all := stdout + stderr
	for _, bad := range []string{"panic:", "fatal error:", "goroutine ", "SIGBUS", "SIGSEGV"} {
		if strings.Contains(all, bad) {
			t.Errorf("%s: output shows %q: %s", cmd, bad, all)
		}
	}
	if status == 0 {
		t.Errorf("%s: exit status 0, want a failure", cmd)
	}
	if strings.Count(stderr, "\n") != 1 || !strings.HasSuffix(stderr, "\n") {
		t.Errorf("%s: stderr is not one line: %q", cmd, stderr)
	}
	if !strings.Contains(stderr, want) {
		t.Errorf("%s: stderr %q does not name %q", cmd, stderr, want)
	}
}

// Every hostile input fails cleanly under a memory and a time limit: the
// committed corpus, plus paths that cannot be committed (a FIFO, links to
// /dev/zero, directories where files belong).
func TestHostileInputs(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the command and runs it on every hostile input")
	}
	if runtime.GOOS != "linux" {
		t.Skip("ulimit -v and FIFOs as on Linux")
	}
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("no bash")
	}
	bin := filepath.Join(t.TempDir(), "poot")
	build := exec.Command("go", "build", "-o", bin, "../cmd/poot")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	entries, err := os.ReadDir(hostileDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		path := filepath.Join(hostileDir, name)
		if strings.HasSuffix(name, "valid.gguf") || name == "st-valid" {
			args := []string{"generate", "-m", path, "-p", "hi", "-n", "2"}
			if _, stderr, status := runLimited(t, bin, args...); status != 0 {
				t.Errorf("the valid control %s fails: %s", name, stderr)
			}
			continue
		}
		want, ok := hostileWant[name]
		if !ok {
			t.Errorf("corpus case %s has no expected error", name)
			continue
		}
		args := []string{"generate", "-m", path, "-p", "hi", "-n", "2"}
		for _, v := range badValues {
			if v == name {
				args = []string{"inspect", "--check", "-m", path}
			}
		}
		stdout, stderr, status := runLimited(t, bin, args...)
		if len(args) > 0 && args[0] == "inspect" {
			// inspect --check lists the tensors on stdout and fails with one line.
			stdout = ""
		}
		checkFailure(t, args, stdout, stderr, status, want)
	}
	for _, name := range byNumber {
		path := filepath.Join(hostileDir, name)
		for _, args := range [][]string{
			{"logits", "-m", path, "--tokens", "1,2"},
			{"inspect", "-m", path},
			{"trace", "-m", path},
			{"trace", "-m", path, "--plan"},
			{"bench", "-m", path, "--prompt", "2", "--gen", "2", "--reps", "1"},
		} {
			stdout, stderr, status := runLimited(t, bin, args...)
			checkFailure(t, args, stdout, stderr, status, hostileWant[name])
		}
	}
	for name, c := range specialPaths(t) {
		stdout, stderr, status := runLimited(t, bin, "generate", "-m", c.path, "-p", "hi", "-n", "2")
		checkFailure(t, []string{"generate (" + name + ")"}, stdout, stderr, status, c.want)
	}
}

type specialPath struct{ path, want string }

// specialPaths makes the inputs a repository cannot hold.
func specialPaths(t *testing.T) map[string]specialPath {
	dir := t.TempDir()
	valid, err := filepath.Abs(filepath.Join(hostileDir, "st-valid"))
	if err != nil {
		t.Fatal(err)
	}
	// stDir copies the valid safetensors directory with one file replaced
	// by what make puts at its path.
	stDir := func(name, file string, make func(path string) error) string {
		d := filepath.Join(dir, name)
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, f := range []string{"config.json", "model.safetensors", "tokenizer.json"} {
			if err := os.Symlink(filepath.Join(valid, f), filepath.Join(d, f)); err != nil {
				t.Fatal(err)
			}
		}
		os.Remove(filepath.Join(d, file))
		if err := make(filepath.Join(d, file)); err != nil {
			t.Fatal(err)
		}
		return d
	}
	zero := func(p string) error { return os.Symlink("/dev/zero", p) }
	fifo := func(p string) error { return syscall.Mkfifo(p, 0o644) }
	mkdir := func(p string) error { return os.Mkdir(p, 0o755) }
	paths := map[string]specialPath{
		"model is a FIFO":                      {filepath.Join(dir, "fifo.gguf"), "not a regular file (a FIFO)"},
		"model links to /dev/zero":             {filepath.Join(dir, "zero.gguf"), "not a regular file (a device)"},
		"model is an empty directory":          {filepath.Join(dir, "empty"), "config.json"},
		"config.json links to /dev/zero":       {stDir("st-config-zero", "config.json", zero), "config.json: not a regular file"},
		"config.json is a directory":           {stDir("st-config-dir", "config.json", mkdir), "config.json: not a regular file"},
		"tokenizer.json links to /dev/zero":    {stDir("st-tok-zero", "tokenizer.json", zero), "tokenizer.json: not a regular file"},
		"tokenizer_config.json is /dev/zero":   {stDir("st-tokcfg-zero", "tokenizer_config.json", zero), "tokenizer_config.json: not a regular file"},
		"generation_config.json is a FIFO":     {stDir("st-gencfg-fifo", "generation_config.json", fifo), "generation_config.json: not a regular file"},
		"model.safetensors is a FIFO":          {stDir("st-weights-fifo", "model.safetensors", fifo), "model.safetensors: not a regular file"},
		"model.safetensors links to /dev/zero": {stDir("st-weights-zero", "model.safetensors", zero), "model.safetensors: not a regular file"},
	}
	if err := fifo(paths["model is a FIFO"].path); err != nil {
		t.Fatal(err)
	}
	if err := zero(paths["model links to /dev/zero"].path); err != nil {
		t.Fatal(err)
	}
	if err := mkdir(paths["model is an empty directory"].path); err != nil {
		t.Fatal(err)
	}
	return paths
}
