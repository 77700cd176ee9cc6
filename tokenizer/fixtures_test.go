package tokenizer

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/pootlabs/poot/gguf"
)

const refDir = "../../shared/refmodels"

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
