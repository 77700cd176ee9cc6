package cli

import (
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/pootlabs/poot/tokenizer"
)

// Prompts come from -p, -f FILE or stdin (-p -, -f -), byte for byte.
func TestPromptSources(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	withStdin := func(text string, args ...string) (string, string, int) {
		old := stdin
		stdin = strings.NewReader(text)
		defer func() { stdin = old }()
		return runPoot(args...)
	}
	plain := "Once upon a time"
	fromP, _, status := runPoot("tokenize", "-m", tinyModel, "-p", plain)
	if status != 0 {
		t.Fatal("tokenize -p failed")
	}
	for name, args := range map[string][]string{
		"-f FILE": {"tokenize", "-m", tinyModel, "-f", write("plain.txt", plain)},
		"-p -":    {"tokenize", "-m", tinyModel, "-p", "-"},
		"-f -":    {"tokenize", "-m", tinyModel, "-f", "-"},
	} {
		if out, errOut, status := withStdin(plain, args...); status != 0 || out != fromP {
			t.Errorf("tokenize %s: %q (status %d, %s), -p gave %q", name, out, status, errOut, fromP)
		}
	}

	// Control characters, a NUL byte, invalid UTF-8 and a final newline
	// reach the tokenizer as they are.
	hostile := "a\x00b\x01\x1b[0m\tc\r\n\xff end\n"
	out, errOut, status := runPoot("tokenize", "-m", tinyModel, "-f", write("hostile.txt", hostile), "--no-bos")
	if status != 0 {
		t.Fatalf("tokenize -f with control bytes: %s", errOut)
	}
	tok, done, err := openTokenizer(tinyModel)
	if err != nil {
		t.Fatal(err)
	}
	defer done()
	ids, err := tok.Encode(hostile, tokenizer.EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := joinTokens(ids) + "\n"; out != want {
		t.Errorf("tokenize -f: %q, the tokenizer gives %q", out, want)
	}

	// generate and logits read files too.
	gp, _, s1 := runPoot("generate", "-m", tinyModel, "-p", plain, "-n", "4", "--quiet", "--threads", "1")
	gf, _, s2 := runPoot("generate", "-m", tinyModel, "-f", write("g.txt", plain), "-n", "4", "--quiet")
	if s1 != 0 || s2 != 0 || gp != gf {
		t.Errorf("generate -p %q and -f %q differ", gp, gf)
	}
	lt, _, s1 := runPoot("logits", "-m", tinyModel, "--tokens", strings.TrimSpace(fromP), "--threads", "1")
	lp, errOut, s2 := withStdin(plain, "logits", "-m", tinyModel, "-p", "-")
	if s1 != 0 || s2 != 0 || lt != lp {
		t.Errorf("logits of -p - and of its --tokens differ (status %d %d, %s)", s1, s2, errOut)
	}

	for _, args := range [][]string{
		{"tokenize", "-m", tinyModel, "-p", "x", "-f", write("x.txt", "x")},
		{"logits", "-m", tinyModel, "--tokens", "1", "-p", "x"},
		{"generate", "-m", tinyModel, "-f", write("empty.txt", "")},
		{"generate", "-m", tinyModel, "-p", "x", "--threads", "-2"},
	} {
		if _, stderr, status := runPoot(args...); status != 2 {
			t.Errorf("%v: status %d (%s), want a usage error", args, status, stderr)
		}
	}
	_, stderr, status := runPoot("tokenize", "-m", tinyModel, "-f", filepath.Join(dir, "missing.txt"))
	oneLineError(t, stderr, status, "missing.txt")
}

func TestVersion(t *testing.T) {
	out, _, status := runPoot("--version")
	if status != 0 || !strings.HasPrefix(out, "poot ") || !strings.Contains(out, "go1.") {
		t.Errorf("--version: %d %q", status, out)
	}
}

// TestTokenizeBytesAgainstLlamaCpp: prompts read with -f keep every byte
// (NUL, control characters, invalid UTF-8) and tokenize to llama.cpp's ids
// on every reference vocabulary. testdata/tokenize-bytes.json holds
// llama.cpp's ids, from a small program against libllama kept outside the
// repository (llama_tokenize with add_special, without parse_special).
func TestTokenizeBytesAgainstLlamaCpp(t *testing.T) {
	dir := filepath.Join(refDir(t), "vocab")
	raw, err := os.ReadFile(filepath.Join("testdata", "tokenize-bytes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		Texts []string           `json:"texts_hex"`
		IDs   map[string][][]int `json:"ids"`
	}
	if err := json.Unmarshal(raw, &ref); err != nil {
		t.Fatal(err)
	}
	for vocab, rows := range ref.IDs {
		for i, h := range ref.Texts {
			text, err := hex.DecodeString(h)
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "prompt.txt")
			if err := os.WriteFile(path, text, 0o644); err != nil {
				t.Fatal(err)
			}
			out, errs, status := runPoot("tokenize", "-m", filepath.Join(dir, vocab), "-f", path)
			want := make([]string, len(rows[i]))
			for j, id := range rows[i] {
				want[j] = strconv.Itoa(id)
			}
			if status != 0 || strings.TrimSpace(out) != strings.Join(want, ",") {
				t.Errorf("%s, text %d %q: status %d, %q (stderr %q), llama.cpp %s", vocab, i, text, status, strings.TrimSpace(out), errs, strings.Join(want, ","))
			}
		}
	}
}
