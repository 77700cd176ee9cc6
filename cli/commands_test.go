package cli

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/kernels"
	"github.com/pootlabs/poot/tokenizer"
)

type refJSON struct {
	Prompt    []int32     `json:"prompt_tokens"`
	Generated []int32     `json:"generated_tokens"`
	Text      string      `json:"text"`
	FullText  string      `json:"full_text"`
	Logits    [][]float64 `json:"logits_all_positions"`
}

func readRef(t *testing.T, path string) refJSON {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var r refJSON
	if err := json.Unmarshal(data, &r); err != nil {
		t.Fatal(err)
	}
	return r
}

// generate prints the prompt, then the generated text, then a newline:
// llama.cpp's full_text without SentencePiece's leading space.
func TestGenerateReference(t *testing.T) {
	dir := refDir(t)
	for _, c := range [][2]string{{"stories260K-f32", "oracle"}, {"stories260K-q8_0", "oracle"}, {"stories260K-q4_0", "oracle"},
		{"stories260K-f32", "cpu"}, {"stories260K-q8_0", "cpu"}, {"stories260K-q4_0", "cpu"}} {
		name, in := c[0], c[1]
		t.Run(name+"/"+in, func(t *testing.T) {
			ref := readRef(t, filepath.Join(dir, name+".llamacpp.ref.json"))
			out, errOut, status := runPoot("generate", "-m", filepath.Join(dir, name+".gguf"), "-p", "Once upon a time", "-n", "64", "--interp", in)
			if status != 0 {
				t.Fatalf("status %d: %s", status, errOut)
			}
			want := strings.TrimPrefix(ref.FullText, " ") + "\n"
			if out != want {
				t.Errorf("generate printed\n%q\nwant\n%q", out, want)
			}
			if !strings.Contains(errOut, "tokens/s") {
				t.Errorf("no summary line on stderr: %q", errOut)
			}
		})
	}
}

// llama2.c's run with -n 64 counts positions: 4 forced prompt positions,
// then 60 sampled tokens.
func TestGenerateLlama2C(t *testing.T) {
	dir := refDir(t)
	want, err := os.ReadFile(filepath.Join(dir, "stories260K.llama2c.run_stdout.txt"))
	if err != nil {
		t.Fatal(err)
	}
	out, errOut, status := runPoot("generate", "-m", filepath.Join(dir, "stories260K-f32.gguf"), "-p", "Once upon a time", "-n", "60", "--quiet")
	if status != 0 || errOut != "" {
		t.Fatalf("status %d, stderr %q", status, errOut)
	}
	if out != string(want) {
		t.Errorf("generate printed\n%q\nllama2.c printed\n%q", out, want)
	}
}

func TestTokenizeReference(t *testing.T) {
	model := filepath.Join(refDir(t), "stories260K-f32.gguf")
	out, errOut, status := runPoot("tokenize", "-m", model, "-p", "Once upon a time")
	if status != 0 || out != "1,403,407,261,378\n" {
		t.Errorf("tokenize: %q (status %d, %s)", out, status, errOut)
	}
	out, _, _ = runPoot("tokenize", "-m", model, "-p", "Once upon a time", "--no-bos")
	if out != "403,407,261,378\n" {
		t.Errorf("tokenize --no-bos: %q", out)
	}
	out, _, _ = runPoot("tokenize", "-m", model, "-p", "Once", "--pieces")
	if out != "1 <s>\n403 ▁Once\n" {
		t.Errorf("tokenize --pieces: %q", out)
	}
	out, _, _ = runPoot("tokenize", "-m", model, "-p", "<s>a", "--special", "--no-bos")
	if !strings.HasPrefix(out, "1,") {
		t.Errorf("tokenize --special did not read <s>: %q", out)
	}
	out, _, _ = runPoot("detokenize", "-m", model, "--tokens", "1,403,407,261,378")
	if out != " Once upon a time\n" {
		t.Errorf("detokenize: %q", out)
	}
}

type logitsJSON struct {
	Tokens []int32     `json:"tokens"`
	Logits [][]float64 `json:"logits"`
}

func TestLogitsReference(t *testing.T) {
	for _, in := range []string{"oracle", "cpu"} {
		t.Run(in, func(t *testing.T) { checkLogitsReference(t, in) })
	}
}

func checkLogitsReference(t *testing.T, in string) {
	dir := refDir(t)
	ref := readRef(t, filepath.Join(dir, "stories260K-f32.llamacpp.ref.json"))
	toks := append(append([]int32{}, ref.Prompt...), ref.Generated[:len(ref.Generated)-1]...)
	out, errOut, status := runPoot("logits", "-m", filepath.Join(dir, "stories260K-f32.gguf"), "--tokens", joinTokens(toks), "--all", "--interp", in)
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	var got logitsJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("not JSON: %v", err)
	}
	if len(got.Tokens) != len(toks) || len(got.Logits) != len(ref.Logits) {
		t.Fatalf("%d tokens, %d rows; want %d and %d", len(got.Tokens), len(got.Logits), len(toks), len(ref.Logits))
	}
	worst := 0.0
	for i := range ref.Logits {
		for j := range ref.Logits[i] {
			worst = max(worst, math.Abs(got.Logits[i][j]-ref.Logits[i][j]))
		}
	}
	t.Logf("max |Δlogit| vs llama.cpp over %d positions: %.3g", len(ref.Logits), worst)
	if worst > 1e-4 {
		t.Errorf("max |Δlogit| %.3g > 1e-4", worst)
	}
	// Without --all: the last row only, equal to the last row with --all.
	out, _, _ = runPoot("logits", "-m", filepath.Join(dir, "stories260K-f32.gguf"), "--tokens", joinTokens(toks), "--interp", in)
	var last logitsJSON
	if err := json.Unmarshal([]byte(out), &last); err != nil || len(last.Logits) != 1 {
		t.Fatalf("last only: %v, %d rows", err, len(last.Logits))
	}
	for j, x := range last.Logits[0] {
		if math.Abs(x-got.Logits[len(got.Logits)-1][j]) > 1e-5 {
			t.Fatalf("last row differs at %d: %v vs %v", j, x, got.Logits[len(got.Logits)-1][j])
		}
	}
}

// Full precision: every float reads back as the same float32.
func TestLogitsPrecision(t *testing.T) {
	out, errOut, status := runPoot("logits", "-m", tinyModel, "--tokens", "1,5,9")
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	var got logitsJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Logits) != 1 || len(got.Logits[0]) != 512 {
		t.Fatalf("shape %d rows", len(got.Logits))
	}
	s, err := driver.Open(tinyModel, driver.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	want, err := s.Logits([]int32{1, 5, 9}, false)
	if err != nil {
		t.Fatal(err)
	}
	for j, x := range got.Logits[0] {
		if float32(x) != want[0][j] {
			t.Fatalf("logit %d: printed %v, the float32 is %v", j, x, want[0][j])
		}
	}
}

func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	text := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(text, []byte("hello, not a model\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unknown := filepath.Join(dir, "unknown.gguf")
	if err := gguf.WriteFile(unknown, []gguf.KV{{Key: "general.architecture", Value: gguf.ValueOf("florp")}}, nil, 0); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("Once upon a time there was a story. ", 20)
	cases := []struct {
		name string
		args []string
		want []string
	}{
		{"missing file", []string{"generate", "-m", filepath.Join(dir, "nope.gguf"), "-p", "hi"}, []string{"nope.gguf", "no such file"}},
		{"not a model", []string{"generate", "-m", text, "-p", "hi"}, []string{"not a GGUF file"}},
		{"unknown architecture", []string{"inspect", "-m", unknown}, []string{"unknown architecture", "florp"}},
		{"prompt longer than the context", []string{"generate", "-m", tinyModel, "--ctx", "16", "-p", long}, []string{"context overflow"}},
		{"token out of range", []string{"logits", "-m", tinyModel, "--tokens", "1,2,512"}, []string{"512", "out of range"}},
		{"negative token", []string{"logits", "-m", tinyModel, "--tokens", "-1"}, []string{"out of range"}},
		{"not a token", []string{"logits", "-m", tinyModel, "--tokens", "1,x"}, []string{"\"x\""}},
		{"unknown interpreter", []string{"generate", "-m", tinyModel, "-p", "hi", "--interp", "warp"}, []string{"unknown interpreter", "warp", "oracle"}},
		{"unknown command", []string{"frobnicate"}, []string{"unknown command"}},
		{"unknown flag", []string{"generate", "--frob"}, []string{"frob"}},
		{"no model", []string{"generate", "-p", "hi"}, []string{"-m MODEL"}},
		{"tokenize missing file", []string{"tokenize", "-m", filepath.Join(dir, "nope.gguf"), "-p", "hi"}, []string{"no such file"}},
		{"trace unknown family", []string{"trace", "--family", "florp"}, []string{"florp"}},
		{"synth bad type", []string{"synth", "--family", "llama", "--out", filepath.Join(dir, "x.gguf"), "--type", "q9"}, []string{"q9"}},
		{"synth packed safetensors", []string{"synth", "--family", "llama", "--out", filepath.Join(dir, "x"), "--format", "safetensors", "--type", "q8_0"}, []string{"safetensors"}},
		{"bad temperature", []string{"generate", "-m", tinyModel, "-p", "hi", "--top-p", "-1"}, []string{"top-p"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errOut, status := runPoot(c.args...)
			oneLineError(t, errOut, status, c.want...)
		})
	}
}

func TestHelp(t *testing.T) {
	for name := range commands {
		for _, h := range []string{"--help", "-h"} {
			out, errOut, status := runPoot(name, h)
			if status != 0 {
				t.Errorf("%s %s: status %d", name, h, status)
			}
			if !strings.Contains(out+errOut, "Usage: poot "+name) {
				t.Errorf("%s %s printed no usage: %q", name, h, out+errOut)
			}
		}
	}
	out, _, status := runPoot("--help")
	if status != 0 || !strings.Contains(out, "demo") {
		t.Errorf("poot --help: status %d, %q", status, out)
	}
	if _, _, status := runPoot(); status != 2 {
		t.Errorf("poot with no command: status %d, want 2", status)
	}
}

func TestDemo(t *testing.T) {
	out, errOut, status := runPoot("demo")
	if status != 0 {
		t.Fatalf("status %d: %s", status, errOut)
	}
	for _, want := range []string{"synthesized", "graph:", "layer.0", "oracle", "generating", "tokens/s"} {
		if !strings.Contains(out, want) {
			t.Errorf("demo output lacks %q:\n%s", want, out)
		}
	}
}

func TestSynthThenRun(t *testing.T) {
	dir := t.TempDir()
	for _, c := range []struct{ family, format, typ string }{
		{"llama", "gguf", "q8_0"}, {"llama", "safetensors", "bf16"}, {"gemma3", "safetensors", "f32"}, {"qwen3moe", "gguf", "q4_0"},
		{"gpt-oss", "gguf", "mxfp4"},
	} {
		out := filepath.Join(dir, c.family+"-"+c.typ)
		if c.format == "gguf" {
			out += ".gguf"
		}
		if _, errOut, status := runPoot("synth", "--family", c.family, "--out", out, "--format", c.format, "--type", c.typ); status != 0 {
			t.Fatalf("synth %v: %s", c, errOut)
		}
		gen, errOut, status := runPoot("generate", "-m", out, "-p", "Once upon a time", "-n", "4", "--ignore-eos", "--temp", "0.7", "--seed", "5")
		if status != 0 || !strings.HasPrefix(gen, "Once upon a time") {
			t.Errorf("generate %v: status %d, %q, %s", c, status, gen, errOut)
		}
		insp, errOut, status := runPoot("inspect", "-m", out, "--json")
		var in inspection
		if status != 0 || json.Unmarshal([]byte(insp), &in) != nil || in.Family != c.family || in.Decode.Equations == 0 {
			t.Errorf("inspect %v: status %d, %s %s", c, status, insp, errOut)
		}
	}
}

func TestTrace(t *testing.T) {
	out, errOut, status := runPoot("trace", "-m", tinyModel)
	if status != 0 || !strings.HasPrefix(out, "graph: ") || !strings.Contains(out, "layer.1") {
		t.Fatalf("trace: status %d, %s, %.200q", status, errOut, out)
	}
	out, _, status = runPoot("trace", "--family", "gemma3", "--preset", "tiny", "--prefill", "8", "--dot")
	if status != 0 || !strings.HasPrefix(out, "digraph") {
		t.Errorf("trace --dot: status %d, %.100q", status, out)
	}
	cfg := filepath.Join(t.TempDir(), "config.json")
	js := `{"architectures":["LlamaForCausalLM"],"hidden_size":32,"num_hidden_layers":1,"num_attention_heads":2,"intermediate_size":64,"vocab_size":100}`
	if err := os.WriteFile(cfg, []byte(js), 0o644); err != nil {
		t.Fatal(err)
	}
	out, errOut, status = runPoot("trace", "--family", "llama", "--config", cfg)
	if status != 0 || !strings.Contains(out, "layer.0") {
		t.Errorf("trace --config: status %d, %s", status, errOut)
	}
	out, errOut, status = runPoot("trace", "-m", tinyModel, "--plan", "--ctx", "32")
	for _, want := range []string{"plan for cpu:", "flash_attention", "contract.matmul", "@state(cache.k.0)"} {
		if status != 0 || !strings.Contains(out, want) {
			t.Errorf("trace --plan: status %d, %s; output lacks %q", status, errOut, want)
		}
	}
}

func TestGenerateStops(t *testing.T) {
	out, _, status := runPoot("generate", "-m", tinyModel, "-p", "Once", "-n", "3", "--ignore-eos", "--quiet")
	if status != 0 || !strings.HasPrefix(out, "Once") || !strings.HasSuffix(out, "\n") {
		t.Errorf("generate: status %d, %q", status, out)
	}
	// Sampling with a seed is reproducible.
	a, _, _ := runPoot("generate", "-m", tinyModel, "-p", "Once", "-n", "8", "--temp", "1", "--seed", "9", "--ignore-eos", "--quiet")
	b, _, _ := runPoot("generate", "-m", tinyModel, "-p", "Once", "-n", "8", "--temp", "1", "--seed", "9", "--ignore-eos", "--quiet")
	if a != b {
		t.Errorf("same seed, different text: %q vs %q", a, b)
	}
}

// The tiny random-weight references of three architectures, F32 and F16,
// at every position. gemma3's bound is wider: llama.cpp reads GELU from an
// fp16 table (see the refmodels README).
func TestLogitsTinyReferences(t *testing.T) {
	dir := refDir(t)
	for _, c := range []struct {
		model string
		tol   float64
	}{
		{"tiny-llama-f32", 1e-4}, {"tiny-qwen3-f32", 1e-4}, {"tiny-gemma3-f32", 1e-3},
		{"tiny-llama-f16", 2e-3}, {"tiny-qwen3-f16", 2e-3}, {"tiny-gemma3-f16", 2e-3},
	} {
		for _, in := range []string{"oracle", "cpu"} {
			t.Run(c.model+"/"+in, func(t *testing.T) {
				ref := readRef(t, filepath.Join(dir, c.model+".ref.json"))
				toks := append(append([]int32{}, ref.Prompt...), ref.Generated[:len(ref.Generated)-1]...)
				out, errOut, status := runPoot("logits", "-m", filepath.Join(dir, c.model+".gguf"), "--tokens", joinTokens(toks), "--all", "--interp", in)
				if status != 0 {
					t.Fatalf("status %d: %s", status, errOut)
				}
				var got logitsJSON
				if err := json.Unmarshal([]byte(out), &got); err != nil {
					t.Fatal(err)
				}
				if len(got.Logits) != len(ref.Logits) {
					t.Fatalf("%d rows, want %d", len(got.Logits), len(ref.Logits))
				}
				worst := 0.0
				for i := range ref.Logits {
					for j := range ref.Logits[i] {
						worst = max(worst, math.Abs(got.Logits[i][j]-ref.Logits[i][j]))
					}
				}
				if worst > c.tol {
					t.Errorf("max |Δlogit| %.3g > %.3g", worst, c.tol)
				}
			})
		}
	}
}

// TestTokenizeTokenizerOnly: a directory holding only tokenizer.json and
// tokenizer_config.json (no weights, no config.json) is enough for
// tokenize and detokenize.
func TestTokenizeTokenizerOnly(t *testing.T) {
	gz, err := os.ReadFile(filepath.Join("..", "tokenizer", "testdata", "hf", "qwen3", "tokenizer.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(gz))
	if err != nil {
		t.Fatal(err)
	}
	js, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	want, err := tokenizer.FromHFDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	ids, err := want.Encode("Hello world", tokenizer.EncodeOptions{AddBOS: want.AddBOS()})
	if err != nil {
		t.Fatal(err)
	}
	out, errs, status := runPoot("tokenize", "-m", dir, "-p", "Hello world")
	if status != 0 || strings.TrimSpace(out) != joinTokens(ids) {
		t.Fatalf("tokenize: status %d, %q (stderr %q), want %s", status, out, errs, joinTokens(ids))
	}
	out, errs, status = runPoot("detokenize", "-m", dir, "--tokens", joinTokens(ids))
	if status != 0 || !strings.Contains(out, "Hello world") {
		t.Fatalf("detokenize: status %d, %q (stderr %q)", status, out, errs)
	}
}

// TestBenchKernels: bench's text output names the kernel level that ran,
// the lowered one when the level is lowered.
func TestBenchKernels(t *testing.T) {
	for _, l := range kernels.Levels() {
		restore, err := kernels.SetLevel(l)
		if err != nil {
			t.Fatal(err)
		}
		out, errs, status := runPoot("bench", "-m", tinyModel, "--prompt", "2", "--gen", "2", "--reps", "1")
		restore()
		if status != 0 {
			t.Fatalf("status %d: %s", status, errs)
		}
		if !strings.Contains(out, "\nkernels "+l.String()) {
			t.Errorf("at level %v, bench printed %q", l, out)
		}
	}
}

// TestBenchDepth: --depth puts that many positions in the cache before
// the prompt (reported in the JSON), and a depth beyond the model's
// context is a usage error.
func TestBenchDepth(t *testing.T) {
	out, errs, status := runPoot("bench", "-m", tinyModel, "--prompt", "2", "--gen", "2", "--depth", "16", "--reps", "1", "--json")
	if status != 0 {
		t.Fatalf("status %d: %s", status, errs)
	}
	var r struct {
		Depth int       `json:"depth"`
		Gen   float64   `json:"gen_tokens_per_s"`
		Peak  float64   `json:"peak_bandwidth_gb_per_s"`
		Low   float64   `json:"low_bandwidth_gb_per_s"`
		Kern  string    `json:"kernels"`
		Feat  string    `json:"kernel_features"`
		Reps  []float64 `json:"rep_bandwidth_fractions"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Depth != 16 || !(r.Gen > 0) || !(r.Peak > 0) || !(r.Low > 0 && r.Low <= r.Peak) || len(r.Reps) != 1 || !(r.Reps[0] > 0) {
		t.Fatalf("%q: %+v, %v", out, r, err)
	}
	if _, err := kernels.ParseLevel(r.Kern); err != nil || !strings.HasPrefix(r.Feat, r.Kern) {
		t.Fatalf("%q: kernels %q, features %q: %v", out, r.Kern, r.Feat, err)
	}
	_, errs, status = runPoot("bench", "-m", tinyModel, "--depth", "100000")
	oneLineError(t, errs, status, "context")
}

// TestBenchOnePart: --gen 0 measures only the prompt and --prompt 0 only
// decode (as llama-bench's -n 0 and -p 0); both 0 is a usage error.
func TestBenchOnePart(t *testing.T) {
	var r struct {
		Prompt float64 `json:"prompt_tokens_per_s"`
		Gen    float64 `json:"gen_tokens_per_s"`
		Bytes  int64   `json:"bytes_per_token"`
	}
	out, errs, status := runPoot("bench", "-m", tinyModel, "--prompt", "4", "--gen", "0", "--reps", "1", "--json")
	if status != 0 {
		t.Fatalf("status %d: %s", status, errs)
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || !(r.Prompt > 0) || r.Gen != 0 || r.Bytes != 0 {
		t.Fatalf("--gen 0: %q: %+v, %v", out, r, err)
	}
	r.Prompt, r.Gen = 0, 0
	out, errs, status = runPoot("bench", "-m", tinyModel, "--prompt", "0", "--gen", "3", "--depth", "5", "--reps", "1", "--json")
	if status != 0 {
		t.Fatalf("status %d: %s", status, errs)
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil || r.Prompt != 0 || !(r.Gen > 0) || !(r.Bytes > 0) {
		t.Fatalf("--prompt 0: %q: %+v, %v", out, r, err)
	}
	out, _, _ = runPoot("bench", "-m", tinyModel, "--prompt", "0", "--gen", "3", "--reps", "1")
	if strings.Contains(out, "prompt") || !strings.Contains(out, "gen ") {
		t.Errorf("--prompt 0 printed %q", out)
	}
	_, errs, status = runPoot("bench", "-m", tinyModel, "--prompt", "0", "--gen", "0")
	oneLineError(t, errs, status, "not both 0")
}

// TestCacheType: --cache-type f16 halves the caches: bench reports it and
// reads fewer bytes a token than with f32 caches, generate prints the same
// greedy text, and a dtype the caches cannot hold is a usage error.
func TestCacheType(t *testing.T) {
	var bytes []int64
	for _, kv := range []string{"f32", "f16", "q8_0"} {
		out, errs, status := runPoot("bench", "-m", tinyModel, "--prompt", "2", "--gen", "2", "--depth", "32", "--reps", "1", "--json", "--cache-type", kv)
		if status != 0 {
			t.Fatalf("status %d: %s", status, errs)
		}
		var r struct {
			CacheType string `json:"cache_type"`
			Bytes     int64  `json:"bytes_per_token"`
		}
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		if r.CacheType != kv {
			t.Errorf("cache_type %q, want %q", r.CacheType, kv)
		}
		bytes = append(bytes, r.Bytes)
	}
	if bytes[1] >= bytes[0] || bytes[2] >= bytes[1] {
		t.Errorf("bytes a token: %d with q8_0 caches, %d with f16, %d with f32", bytes[2], bytes[1], bytes[0])
	}
	if texts := greedyTexts(t, "--cache-type", "f32", "f16"); texts[0] != texts[1] {
		t.Errorf("f16 caches: %q, f32: %q", texts[1], texts[0])
	}
	if _, errs, status := runPoot("generate", "-m", tinyModel, "-p", "x", "--cache-type", "q4_0"); status != 2 || !strings.Contains(errs, "want f32, f16 or q8_0") {
		t.Errorf("--cache-type q4_0: status %d, %s", status, errs)
	}
}

// TestLoadFlag: --load copy reads the weights from a private copy (bench
// says so) with the same greedy text as the memory map, auto leaves the
// tiny model mapped, and a mode it does not know is a usage error.
func TestLoadFlag(t *testing.T) {
	for _, mode := range []string{"auto", "mmap", "copy"} {
		out, errs, status := runPoot("bench", "-m", tinyModel, "--prompt", "2", "--gen", "2", "--reps", "1", "--json", "--load", mode)
		if status != 0 {
			t.Fatalf("--load %s: status %d: %s", mode, status, errs)
		}
		var r struct {
			Weights string `json:"weights"`
		}
		want := map[string]string{"auto": "mmap", "mmap": "mmap", "copy": "copy"}[mode]
		if err := json.Unmarshal([]byte(out), &r); err != nil || r.Weights != want {
			t.Errorf("--load %s: weights %q, want %q (%v)", mode, r.Weights, want, err)
		}
	}
	if texts := greedyTexts(t, "--load", "mmap", "copy"); texts[0] != texts[1] {
		t.Errorf("--load copy: %q, mmap: %q", texts[1], texts[0])
	}
	if _, errs, status := runPoot("generate", "-m", tinyModel, "-p", "x", "--load", "huge"); status != 2 || !strings.Contains(errs, "want auto, mmap or copy") {
		t.Errorf("--load huge: status %d, %s", status, errs)
	}
}

// greedyTexts generates greedily from the tiny model once with each value
// of flag, and returns the texts in order.
func greedyTexts(t *testing.T, flag string, values ...string) []string {
	t.Helper()
	var texts []string
	for _, v := range values {
		out, errs, status := runPoot("generate", "-m", tinyModel, "-p", "Once upon a time", "-n", "12", flag, v)
		if status != 0 {
			t.Fatalf("%s %s: status %d: %s", flag, v, status, errs)
		}
		texts = append(texts, out)
	}
	return texts
}
