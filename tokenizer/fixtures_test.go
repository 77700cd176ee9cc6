package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pootlabs/poot/gguf"
)

// refDir is where the shared reference models live (a var so that a run
// can point elsewhere with -ldflags=-X).
var refDir = "../../shared/refmodels"

// refPath returns the path of a shared reference file, skipping the test
// when the shared folder is absent.
func refPath(t testing.TB, name string) string {
	t.Helper()
	p := filepath.Join(refDir, name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference data not available (%v); the shared/refmodels folder is needed next to the repository", err)
	}
	return p
}

// loadGGUF loads the vocabulary of a GGUF file.
func loadGGUF(t testing.TB, path string) *Tokenizer {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// vocabCases reads llama.cpp's .inp/.out test cases.
func vocabCases(t *testing.T, ggufPath string) (inputs []string, want [][]int32) {
	t.Helper()
	inp, err := os.ReadFile(ggufPath + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(ggufPath + ".out")
	if err != nil {
		t.Fatal(err)
	}
	inputs = strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if inputs[len(inputs)-1] != "" {
		t.Fatalf("%s.inp does not end with a separator", ggufPath)
	}
	inputs = inputs[:len(inputs)-1]
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(lines) != len(inputs) {
		t.Fatalf("%d inputs but %d output lines", len(inputs), len(lines))
	}
	for _, line := range lines {
		var ids []int32
		for _, f := range strings.Fields(line) {
			v, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			ids = append(ids, int32(v))
		}
		want = append(want, ids)
	}
	return inputs, want
}

func TestLlamaCppVocabFixtures(t *testing.T) {
	dir := refPath(t, "vocab")
	files, err := filepath.Glob(filepath.Join(dir, "*.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no vocab fixtures")
	}
	for _, path := range files {
		name := strings.TrimSuffix(filepath.Base(path), ".gguf")
		t.Run(name, func(t *testing.T) {
			tok := loadGGUF(t, path)
			if _, err := os.Stat(path + ".inp"); err != nil {
				// No upstream cases (gpt-neox): check that it loads and round-trips.
				ids, err := tok.Encode("Hello world  \n\n 123", EncodeOptions{})
				if err != nil || len(ids) == 0 {
					t.Fatalf("Encode: %v %v", ids, err)
				}
				return
			}
			inputs, want := vocabCases(t, path)
			fails := 0
			for i, in := range inputs {
				got, err := tok.Encode(in, EncodeOptions{})
				if err != nil {
					t.Errorf("case %d %q: %v", i, in, err)
					continue
				}
				if !slices.Equal(got, want[i]) {
					fails++
					t.Errorf("case %d %q:\n got %v\nwant %v", i, in, got, want[i])
				}
			}
			t.Logf("%s: %d/%d cases match", name, len(inputs)-fails, len(inputs))
		})
	}
}

func TestStories260K(t *testing.T) {
	tok := loadGGUF(t, refPath(t, "stories260K-f32.gguf"))
	ids, err := tok.Encode("Once upon a time", EncodeOptions{AddBOS: tok.AddBOS()})
	if err != nil {
		t.Fatal(err)
	}
	if want := []int32{1, 403, 407, 261, 378}; !slices.Equal(ids, want) {
		t.Fatalf("Encode = %v, want %v", ids, want)
	}
	data, err := os.ReadFile(refPath(t, "stories260K-f32.llamacpp.ref.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ref struct {
		PromptTokens    []int32           `json:"prompt_tokens"`
		GeneratedTokens []int32           `json:"generated_tokens"`
		Text            string            `json:"text"`
		FullText        string            `json:"full_text"`
		TokenTexts      map[string]string `json:"token_texts"`
	}
	if err := json.NewDecoder(bytes.NewReader(data)).Decode(&ref); err != nil {
		t.Fatal(err)
	}
	text, err := tok.Decode(ref.GeneratedTokens)
	if err != nil {
		t.Fatal(err)
	}
	if text != ref.Text {
		t.Errorf("Decode(generated) = %q, want %q", text, ref.Text)
	}
	full, err := tok.Decode(append(slices.Clone(ref.PromptTokens), ref.GeneratedTokens...))
	if err != nil {
		t.Fatal(err)
	}
	if full != ref.FullText {
		t.Errorf("Decode(prompt+generated) = %q, want %q", full, ref.FullText)
	}
	for k, v := range ref.TokenTexts {
		id, _ := strconv.Atoi(k)
		if got := tok.Piece(int32(id)); got != v {
			t.Errorf("Piece(%d) = %q, want %q", id, got, v)
		}
	}
	sd := NewStreamDecoder(tok)
	var sb strings.Builder
	for _, id := range ref.GeneratedTokens {
		sb.WriteString(sd.Add(id))
	}
	sb.WriteString(sd.Flush())
	if sb.String() != ref.Text {
		t.Errorf("stream decode = %q, want %q", sb.String(), ref.Text)
	}
	if !tok.IsEOG(2) || tok.BOS() != 1 || tok.EOS() != 2 || tok.VocabSize() != 512 {
		t.Errorf("BOS %d EOS %d IsEOG(2) %v VocabSize %d", tok.BOS(), tok.EOS(), tok.IsEOG(2), tok.VocabSize())
	}
}

// openGGUF opens a vocabulary fixture.
func openGGUF(t testing.TB, name string) *gguf.File {
	t.Helper()
	f, err := gguf.Open(filepath.Join(refPath(t, "vocab"), name))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestSpecialTokensInRealVocabs(t *testing.T) {
	dir := refPath(t, "vocab")
	phi3 := loadGGUF(t, filepath.Join(dir, "ggml-vocab-phi-3.gguf"))
	end, _ := phi3.Lookup("<|end|>")
	eot, _ := phi3.Lookup("<|endoftext|>")
	s, _ := phi3.Lookup("</s>")
	if phi3.EOT() != end || !phi3.IsEOG(end) || !phi3.IsEOG(eot) || !phi3.IsEOG(s) || phi3.Type(s) != TypeControl {
		t.Errorf("phi-3: EOT %d (<|end|> %d), EOGs %v, type of </s> %v", phi3.EOT(), end, phi3.EOGs(), phi3.Type(s))
	}
	for _, c := range []struct {
		text    string
		special bool
		want    []string
	}{
		// <|user|> is a control token with rstrip (general.name is Phi-3):
		// it swallows the newline, and the text after it gets the space
		// prefix again.
		{"<|user|>\nHi<|end|>", true, []string{"<|user|>", "▁Hi", "<|end|>"}},
		// Without ParseSpecial the control tokens are text.
		{"<|user|>\nHi<|end|>", false, []string{"▁<", "|", "user", "|", ">", "<0x0A>", "Hi", "<", "|", "end", "|", ">"}},
		{"<s>Hi", true, []string{"<s>", "▁Hi"}},
	} {
		ids, err := phi3.Encode(c.text, EncodeOptions{ParseSpecial: c.special})
		if err != nil {
			t.Fatal(err)
		}
		if got := pieces(phi3, ids); !slices.Equal(got, c.want) {
			t.Errorf("phi-3 %q special=%v: got %q, want %q", c.text, c.special, got, c.want)
		}
	}

	gpt2 := loadGGUF(t, filepath.Join(dir, "ggml-vocab-gpt-2.gguf"))
	ids, _ := gpt2.Encode("a<|endoftext|>b", EncodeOptions{ParseSpecial: true})
	if want := []int32{64, 50256, 65}; !slices.Equal(ids, want) {
		t.Errorf("gpt-2 with ParseSpecial: %v, want %v", ids, want)
	}
	ids, _ = gpt2.Encode("a<|endoftext|>b", EncodeOptions{})
	if slices.Contains(ids, 50256) {
		t.Errorf("gpt-2 without ParseSpecial: %v", ids)
	}
	if gpt2.EOT() != 50256 || !gpt2.IsEOG(50256) || gpt2.AddBOS() {
		t.Errorf("gpt-2: EOT %d AddBOS %v", gpt2.EOT(), gpt2.AddBOS())
	}
	if text, _ := gpt2.Decode([]int32{64, 50256, 65}); text != "ab" {
		t.Errorf("gpt-2 Decode drops control tokens: %q", text)
	}

	spm := loadGGUF(t, filepath.Join(dir, "ggml-vocab-llama-spm.gguf"))
	if spm.EOT() != -1 || !slices.Equal(spm.EOGs(), []int32{2}) || !spm.AddBOS() {
		t.Errorf("llama-spm: EOT %d EOGs %v AddBOS %v", spm.EOT(), spm.EOGs(), spm.AddBOS())
	}
}

func TestConcurrentEncode(t *testing.T) {
	dir := refPath(t, "vocab")
	toks := []*Tokenizer{
		loadGGUF(t, filepath.Join(dir, "ggml-vocab-gpt-2.gguf")),
		loadGGUF(t, filepath.Join(dir, "ggml-vocab-llama-spm.gguf")),
	}
	texts := []string{"Hello world, it's 2024!", "  multiple   spaces\n\nand lines", "日本語 😀 ✓"}
	want := make([][][]int32, len(toks))
	for i, tok := range toks {
		for _, s := range texts {
			ids, _ := tok.Encode(s, EncodeOptions{})
			want[i] = append(want[i], ids)
		}
	}
	done := make(chan error, 8)
	for g := range 8 {
		go func() {
			for n := range 200 {
				i, j := (g+n)%len(toks), n%len(texts)
				ids, err := toks[i].Encode(texts[j], EncodeOptions{})
				if err != nil || !slices.Equal(ids, want[i][j]) {
					done <- fmt.Errorf("goroutine %d: %q gave %v %v", g, texts[j], ids, err)
					return
				}
			}
			done <- nil
		}()
	}
	for range 8 {
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
