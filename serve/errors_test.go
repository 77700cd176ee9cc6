package serve_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/serve"
)

// nanModel copies the tiny model with NaN in its output matrix.
func nanModel(t *testing.T) string {
	data, err := os.ReadFile(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	f, err := gguf.Open(tinyPath)
	if err != nil {
		t.Fatal(err)
	}
	info, ok := f.Tensor("output.weight")
	start := f.DataOffset() + int64(info.Offset)
	f.Close()
	if !ok || info.Type != gguf.GGMLTypeF32 {
		t.Fatalf("the tiny model has no f32 output.weight: %+v", info)
	}
	for i := start; i < start+info.Size; i += 4 {
		binary.LittleEndian.PutUint32(data[i:], 0x7fc00000)
	}
	path := filepath.Join(t.TempDir(), "nan.gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// The driver's typed errors reach the client as API errors: before a
// stream starts as a status, after it as an error event.
func TestDriverErrorsAsAPIErrors(t *testing.T) {
	ctx := context.Background()
	e, err := driver.OpenEngine(nanModel(t), driver.EngineOptions{Parallel: 1, Capacity: 32})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	s, err := serve.New(serve.Config{Engine: e, Model: "nan"})
	if err != nil {
		t.Fatal(err)
	}
	ts := newServer(t, s)
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", strings.NewReader(`{"prompt": "hi", "max_tokens": 2}`))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]map[string]any
	json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if resp.StatusCode != 500 || v["error"]["code"] != "non_finite_logits" {
		t.Errorf("NaN logits: %d %v, want 500 non_finite_logits", resp.StatusCode, v)
	}

	// A pool of two pages of four positions: a sequence growing past
	// eight positions runs out of cache mid-stream.
	ts2, _ := startServer(t, driver.EngineOptions{Parallel: 1, Capacity: 64, PageSize: 4, Pages: 2}, false)
	c := client(ts2)
	p := openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{1, 2, 3}},
		MaxTokens: openai.Int(20), Temperature: openai.Float(0)}
	stream := c.Completions.NewStreaming(ctx, p)
	chunks := 0
	for stream.Next() {
		chunks++
	}
	if err := stream.Err(); err == nil || !strings.Contains(err.Error(), "kv_cache_exhausted") || chunks == 0 {
		t.Errorf("cache exhausted mid-stream after %d chunks: %v", chunks, err)
	}
	if _, err := c.Completions.New(ctx, p); func() bool { s, code := apiStatus(err); return s != 503 || code != "kv_cache_exhausted" }() {
		t.Errorf("cache exhausted: %v, want 503 kv_cache_exhausted", err)
	}
}
