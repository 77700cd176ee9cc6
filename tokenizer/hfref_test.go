package tokenizer

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"unicode/utf8"
)

// hfRefCase is one reference case of testdata/hf/*/cases.json: the ids
// transformers.js gives without special tokens (plain: added tokens flagged
// special are not recognised, nothing is added around the text), with
// them (special), and the decoding of the latter with special tokens
// skipped.
type hfRefCase struct {
	Text    string  `json:"text"`
	Plain   []int32 `json:"plain"`
	Special []int32 `json:"special"`
	Decoded *string `json:"decoded"`
}

// hfRefDirs returns the reference tokenizer directories: testdata/hf, or
// the directory named by POOT_HF_REFERENCE_DIR (the same layout, for runs
// on the complete tokenizer files).
func hfRefDirs(t *testing.T) []string {
	root := filepath.Join("testdata", "hf")
	if d := os.Getenv("POOT_HF_REFERENCE_DIR"); d != "" {
		root = d
	}
	dirs := hfTokenizerDirs(root)
	if len(dirs) == 0 {
		t.Fatalf("no reference tokenizers in %s", root)
	}
	return dirs
}

// hfTokenizerDirs returns the subdirectories of root.
func hfTokenizerDirs(root string) []string {
	entries, _ := os.ReadDir(root)
	var dirs []string
	for _, e := range entries {
		if e.IsDir() {
			dirs = append(dirs, filepath.Join(root, e.Name()))
		}
	}
	return dirs
}

func loadHFRef(t *testing.T, dir string) (*Tokenizer, []hfRefCase) {
	t.Helper()
	tok, err := FromHFDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(filepath.Join(dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var cases []hfRefCase
	if err := json.Unmarshal(data, &cases); err != nil {
		t.Fatal(err)
	}
	if len(cases) < 39 {
		t.Fatalf("%d cases, want at least 39", len(cases))
	}
	return tok, cases
}

func TestHFReference(t *testing.T) {
	for _, dir := range hfRefDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tok, cases := loadHFRef(t, dir)
			bad := 0
			for i, c := range cases {
				plain, err := tok.Encode(c.Text, EncodeOptions{})
				if err != nil || !slices.Equal(plain, c.Plain) {
					bad++
					t.Errorf("case %d %q plain:\n got %v %v\nwant %v\n got %q\nwant %q", i, c.Text, plain, err, c.Plain, pieces(tok, plain), pieces(tok, c.Plain))
				}
				special, err := tok.Encode(c.Text, EncodeOptions{AddBOS: tok.AddBOS(), AddEOS: tok.AddEOS(), ParseSpecial: true})
				if err != nil || !slices.Equal(special, c.Special) {
					bad++
					t.Errorf("case %d %q special:\n got %v %v\nwant %v\n got %q\nwant %q", i, c.Text, special, err, c.Special, pieces(tok, special), pieces(tok, c.Special))
				}
				if c.Decoded != nil {
					if got, err := tok.Decode(c.Special); err != nil || got != *c.Decoded {
						bad++
						t.Errorf("case %d decode:\n got %q %v\nwant %q", i, got, err, *c.Decoded)
					}
				}
			}
			if bad > 0 {
				t.Logf("%d of %d checks differ", bad, 3*len(cases))
			}
		})
	}
}

// TestHFStreamDecoder checks that streaming the reference ids one at a
// time gives Decode's text.
func TestHFStreamDecoder(t *testing.T) {
	for _, dir := range hfRefDirs(t) {
		t.Run(filepath.Base(dir), func(t *testing.T) {
			tok, cases := loadHFRef(t, dir)
			for i, c := range cases {
				want, _ := tok.Decode(c.Special)
				d := NewStreamDecoder(tok)
				got := ""
				for _, id := range c.Special {
					s := d.Add(id)
					if !utf8.ValidString(s) {
						t.Errorf("case %d: Add returned invalid UTF-8 %q", i, s)
					}
					got += s
				}
				got += d.Flush()
				if got != want {
					t.Errorf("case %d: stream %q, Decode %q", i, got, want)
				}
			}
		})
	}
}

// TestFromHFDir checks that a directory of tokenizer files alone loads,
// with config.json's end-of-generation ids, and that a directory without
// tokenizer.json is a *LoadError.
func TestFromHFDir(t *testing.T) {
	dir := t.TempDir()
	src, err := os.ReadFile(filepath.Join("testdata", "hf", "qwen3", "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	js, err := gunzip(src)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := FromHFDir(dir); !errors.As(err, new(*LoadError)) {
		t.Errorf("empty directory: %v, want a *LoadError", err)
	}
	for name, data := range map[string][]byte{
		"tokenizer.json":        js,
		"tokenizer_config.json": []byte(`{"eos_token":"<|im_end|>","add_bos_token":false}`),
		"config.json":           []byte(`{"eos_token_id":[7, 9]}`),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tok, err := FromHFDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if id, _ := tok.Lookup("<|im_end|>"); tok.EOS() != id || !tok.IsEOG(id) || !tok.IsEOG(7) || !tok.IsEOG(9) || tok.AddBOS() {
		t.Errorf("EOS %d EOGs %v AddBOS %v", tok.EOS(), tok.EOGs(), tok.AddBOS())
	}
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte(`{"eos_token_id":"x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := FromHFDir(dir); !errors.As(err, new(*LoadError)) {
		t.Errorf("bad config.json: %v, want a *LoadError", err)
	}
}
