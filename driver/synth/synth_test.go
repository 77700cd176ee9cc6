package synth_test

import (
	"bytes"
	"context"
	"errors"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
)

func TestVocabulary(t *testing.T) {
	v, err := synth.BuildVocabulary(synth.TinyVocab)
	if err != nil {
		t.Fatal(err)
	}
	if len(v.Tokens) != synth.TinyVocab || len(v.Scores) != synth.TinyVocab || len(v.Types) != synth.TinyVocab {
		t.Fatalf("sizes %d %d %d, want %d", len(v.Tokens), len(v.Scores), len(v.Types), synth.TinyVocab)
	}
	if v.Tokens[1] != "<s>" || v.Tokens[2] != "</s>" || v.Tokens[3] != "<0x00>" {
		t.Errorf("specials and bytes misplaced: %q %q %q", v.Tokens[1], v.Tokens[2], v.Tokens[3])
	}
	if len(v.Merges) < 100 {
		t.Errorf("only %d merges", len(v.Merges))
	}
	seen := map[string]bool{}
	for _, tok := range v.Tokens {
		if seen[tok] {
			t.Errorf("duplicate piece %q", tok)
		}
		seen[tok] = true
	}
	if _, err := synth.BuildVocabulary(10); err == nil {
		t.Error("a 10-token vocabulary was built")
	}
	big, err := synth.BuildVocabulary(5000)
	if err != nil || len(big.Tokens) != 5000 {
		t.Fatalf("5000 tokens: %v, %d", err, len(big.Tokens))
	}
}

// Every tiny preset, in both containers and several stored types, loads,
// tokenizes and generates.
func TestPresetsRun(t *testing.T) {
	cases := []struct {
		format string
		typ    poot.DType
	}{
		{"gguf", poot.F32}, {"gguf", poot.F16}, {"gguf", poot.Q8_0},
		{"safetensors", poot.F32}, {"safetensors", poot.BF16},
	}
	for _, p := range synth.Presets() {
		if p.Name != "tiny" {
			continue
		}
		for _, c := range cases {
			t.Run(p.Family+"/"+c.format+"/"+c.typ.String(), func(t *testing.T) {
				m, err := synth.Model(p.Family, p.Config)
				if err != nil {
					t.Fatal(err)
				}
				path := filepath.Join(t.TempDir(), "model")
				if c.format == "gguf" {
					path += ".gguf"
				}
				if err := synth.Write(m, path, synth.Options{Format: c.format, Type: c.typ, Seed: 7}); err != nil {
					t.Fatal(err)
				}
				s, err := driver.Open(path, driver.Options{Capacity: 64})
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if got := s.Model().Family(); got != p.Family {
					t.Errorf("family %q, want %q", got, p.Family)
				}
				tok, err := s.Tokenizer()
				if err != nil {
					t.Fatal(err)
				}
				ids, err := tok.Encode("Once upon a time", tokenizerOpts())
				if err != nil {
					t.Fatal(err)
				}
				// 17 characters and BOS without merges.
				if len(ids) < 2 || len(ids) > 12 {
					t.Errorf("\"Once upon a time\" gives %d tokens %v: the merges do not apply", len(ids), ids)
				}
				var text strings.Builder
				st, err := s.Generate(context.Background(), "Once upon a time", driver.GenerateOptions{MaxTokens: 5, IgnoreEOS: true}, func(p string) { text.WriteString(p) })
				if err != nil {
					t.Fatal(err)
				}
				if st.GeneratedTokens != 5 {
					t.Errorf("%d tokens generated, want 5", st.GeneratedTokens)
				}
			})
		}
	}
}

func TestErrors(t *testing.T) {
	p, err := synth.FindPreset("llama", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model("llama", p.Config)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, c := range []struct {
		name string
		o    synth.Options
	}{
		{"packed safetensors", synth.Options{Format: "safetensors", Type: poot.Q8_0}},
		{"unknown format", synth.Options{Format: "onnx"}},
		{"integer type", synth.Options{Type: poot.I32}},
	} {
		if err := synth.Write(m, filepath.Join(dir, c.name), c.o); err == nil {
			t.Errorf("%s: no error", c.name)
		}
	}
	if _, err := synth.FindPreset("llama", "huge"); err == nil {
		t.Error("unknown preset found")
	}
	if _, err := synth.Model("nope", p.Config); err == nil {
		t.Error("unknown family configured")
	}
}

// The bytes depend on the seed only, not on the number of workers.
func TestDeterministic(t *testing.T) {
	p, err := synth.FindPreset("llama", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model("llama", p.Config)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name string, procs int, seed uint64) []byte {
		defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(procs))
		path := filepath.Join(dir, name)
		if err := synth.Write(m, path, synth.Options{Type: poot.Q8_0, Seed: seed}); err != nil {
			t.Fatal(err)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return data
	}
	a, b, c := write("a.gguf", 1, 5), write("b.gguf", 4, 5), write("c.gguf", 4, 6)
	if !bytes.Equal(a, b) {
		t.Error("one worker and four wrote different files")
	}
	if bytes.Equal(a, c) {
		t.Error("seeds 5 and 6 wrote the same file")
	}
}

// The head's rows of byte and control tokens are zero, the others not.
func TestSilentHeadRows(t *testing.T) {
	p, _ := synth.FindPreset("llama", "tiny")
	m, err := synth.Model("llama", p.Config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(m, path, synth.Options{Seed: 2}); err != nil {
		t.Fatal(err)
	}
	c, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	head, err := c.Tensor("output.weight")
	if err != nil {
		t.Fatal(err)
	}
	w := head.F32()
	dim := head.Type.Shape[1]
	zero := func(r int) bool {
		for _, x := range w[r*dim : (r+1)*dim] {
			if x != 0 {
				return false
			}
		}
		return true
	}
	for r := range head.Type.Shape[0] {
		silent := r >= 1 && r <= 258 // <s>, </s> and the byte tokens
		if zero(r) != silent {
			t.Errorf("row %d: zero %v, want %v", r, zero(r), silent)
		}
	}
}

// Writing streams: a checkpoint of about 100 MB allocates well under its
// size in all (a batch of rows a tensor, the vocabulary), where holding the
// model would allocate all of it.
func TestWriteStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 100 MB")
	}
	cfg := map[string]any{
		"architectures": []any{"LlamaForCausalLM"}, "hidden_size": 512, "num_hidden_layers": 4,
		"num_attention_heads": 8, "intermediate_size": 2048, "vocab_size": 8000,
	}
	m, err := synth.Model("llama", cfg)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	if err := synth.Write(m, path, synth.Options{Seed: 1}); err != nil {
		t.Fatal(err)
	}
	runtime.ReadMemStats(&after)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	alloc := after.TotalAlloc - before.TotalAlloc
	t.Logf("wrote %d MB, allocated %d MB", fi.Size()>>20, alloc>>20)
	if fi.Size() < 90<<20 || alloc > uint64(fi.Size())/2 {
		t.Errorf("wrote %d bytes allocating %d: not streamed", fi.Size(), alloc)
	}
}

// The vocabulary reads the same from GGUF metadata and from tokenizer.json,
// and round-trips text with characters outside it (byte fallback). Decoding
// follows each container's rules: llama.cpp keeps the space the
// normalizer prepended, tokenizer.json's decoder strips it (Strip 1).
func TestVocabularyBothContainers(t *testing.T) {
	p, _ := synth.FindPreset("llama", "tiny")
	m, err := synth.Model("llama", p.Config)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	const text = "Once upon a time, the cat saw a bird. Ünïcödé ✓ 42"
	var got [][]int32
	for _, format := range []string{"gguf", "safetensors"} {
		path := filepath.Join(dir, "m."+format)
		if err := synth.Write(m, path, synth.Options{Format: format}); err != nil {
			t.Fatal(err)
		}
		c, err := load.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := driver.TokenizerOf(c)
		if err != nil {
			t.Fatal(err)
		}
		ids, err := tok.Encode(text, tokenizerOpts())
		if err != nil {
			t.Fatal(err)
		}
		back, err := tok.Decode(ids)
		want := " " + text
		if format == "safetensors" {
			want = text
		}
		if err != nil || back != want {
			t.Errorf("%s: decode gives %q, %v", format, back, err)
		}
		got = append(got, ids)
		c.Close()
	}
	if !slices.Equal(got[0], got[1]) {
		t.Errorf("GGUF ids %v, tokenizer.json ids %v", got[0], got[1])
	}
}

// A packed type says which matrices stay F32, and is refused when none can
// take it (the tiny presets' rows of 64 are not whole q4_K blocks).
func TestPackedFallback(t *testing.T) {
	p, err := synth.FindPreset("llama", "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model("llama", p.Config)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "m.gguf")
	if err := synth.Write(m, path, synth.Options{Type: poot.Q4_K}); !errors.Is(err, synth.ErrSynth) {
		t.Errorf("q4_K on rows of 64 = %v, want an ErrSynth refusal", err)
	}
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a refused write left %s", path)
	}
	cfg := maps.Clone(p.Config)
	cfg["hidden_size"], cfg["intermediate_size"], cfg["head_dim"] = 256, 128, 64
	m, err = synth.Model("llama", cfg)
	if err != nil {
		t.Fatal(err)
	}
	fell := map[string]string{}
	if err := synth.Write(m, path, synth.Options{Type: poot.Q4_K, Fallback: func(name, why string) { fell[name] = why }}); err != nil {
		t.Fatal(err)
	}
	// ffn_down reads rows of the 128-wide hidden layer; every other matrix
	// reads rows of 256.
	if len(fell) != 2 || !strings.Contains(fell["blk.0.ffn_down.weight"], "128") {
		t.Errorf("fallbacks %v, want the two ffn_down matrices", fell)
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, want := range map[string]gguf.GGMLType{"blk.0.attn_q.weight": gguf.GGMLTypeQ4_K, "blk.0.ffn_down.weight": gguf.GGMLTypeF32} {
		if ti, _ := f.Tensor(name); ti.Type != want {
			t.Errorf("%s stored as %v, want %v", name, ti.Type, want)
		}
	}
}

// Write never overwrites without Replace, and a cancelled write leaves
// nothing behind.
func TestWriteReplaceAndCancel(t *testing.T) {
	p, _ := synth.FindPreset("llama", "tiny")
	m, err := synth.Model("llama", p.Config)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	for _, format := range []string{"gguf", "safetensors"} {
		path := filepath.Join(dir, "m-"+format)
		if err := synth.Write(m, path, synth.Options{Format: format}); err != nil {
			t.Fatal(err)
		}
		if err := synth.Write(m, path, synth.Options{Format: format}); !errors.Is(err, synth.ErrExists) {
			t.Errorf("%s: second write = %v, want ErrExists", format, err)
		}
		if err := synth.Write(m, path, synth.Options{Format: format, Replace: true, Seed: 2}); err != nil {
			t.Errorf("%s: replacing: %v", format, err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		other := filepath.Join(dir, "cancelled-"+format)
		if err := synth.Write(m, other, synth.Options{Format: format, Context: ctx}); !errors.Is(err, context.Canceled) {
			t.Errorf("%s: cancelled write = %v", format, err)
		}
	}
	es, _ := os.ReadDir(dir)
	if len(es) != 2 {
		var names []string
		for _, e := range es {
			names = append(names, e.Name())
		}
		t.Errorf("directory holds %v, want the two models only", names)
	}
}
