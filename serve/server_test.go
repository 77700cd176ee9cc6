package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/driver/synth"
	_ "github.com/pootlabs/poot/lower/cpu/register"
	"github.com/pootlabs/poot/serve"
)

var tinyPath string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "poot-serve-test-")
	if err != nil {
		panic(err)
	}
	tinyPath = filepath.Join(dir, "tiny.gguf")
	p, err := synth.FindPreset("llama", "tiny")
	if err != nil {
		panic(err)
	}
	mod, err := synth.Model(p.Family, p.Config)
	if err != nil {
		panic(err)
	}
	if err := synth.Write(mod, tinyPath, synth.Options{Type: poot.F32, Seed: 11}); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// startServer serves the tiny model on a loopback port with Qwen 2.5's
// chat template (or none when template is false).
func startServer(t *testing.T, o driver.EngineOptions, template bool) (*httptest.Server, *driver.Engine) {
	t.Helper()
	e, err := driver.OpenEngine(tinyPath, o)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Close() })
	cfg := serve.Config{Engine: e, Model: "tiny", MaxBody: 1 << 16}
	if template {
		src, err := os.ReadFile("testdata/templates/qwen2.5.jinja")
		if err != nil {
			t.Fatal(err)
		}
		if cfg.Template, err = serve.NewChatTemplate(string(src), "", "<|im_end|>"); err != nil {
			t.Fatal(err)
		}
	}
	s, err := serve.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return newServer(t, s), e
}

// newServer serves s on a loopback port until the test ends.
func newServer(t *testing.T, s http.Handler) *httptest.Server {
	ts := httptest.NewServer(s)
	t.Cleanup(ts.Close)
	return ts
}

func client(ts *httptest.Server) openai.Client {
	return openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0))
}

func chatParams(maxTokens int64) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:       "tiny",
		Messages:    []openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be brief."), openai.UserMessage("Tell me a story.")},
		MaxTokens:   openai.Int(maxTokens),
		Temperature: openai.Float(0.8),
		Seed:        openai.Int(7),
	}
}

func TestOpenAIClient(t *testing.T) {
	ts, _ := startServer(t, driver.EngineOptions{Parallel: 4, Capacity: 128}, true)
	c := client(ts)
	ctx := context.Background()

	// Chat, whole and streamed: the same text, the budget as the reason.
	whole, err := c.Chat.Completions.New(ctx, chatParams(12))
	if err != nil {
		t.Fatal(err)
	}
	if len(whole.Choices) != 1 || whole.Choices[0].FinishReason != "length" || whole.Usage.CompletionTokens != 12 || whole.Usage.PromptTokens == 0 {
		t.Fatalf("chat: %+v", whole)
	}
	text := whole.Choices[0].Message.Content
	if text == "" || whole.Choices[0].Message.Role != "assistant" {
		t.Errorf("chat message %+v", whole.Choices[0].Message)
	}
	p := chatParams(12)
	p.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
	stream := c.Chat.Completions.NewStreaming(ctx, p)
	var acc openai.ChatCompletionAccumulator
	for stream.Next() {
		acc.AddChunk(stream.Current())
	}
	if err := stream.Err(); err != nil {
		t.Fatal(err)
	}
	if got := acc.Choices[0].Message.Content; got != text || acc.Choices[0].FinishReason != "length" || acc.Usage.CompletionTokens != 12 {
		t.Errorf("streamed chat %q (%s, usage %+v), whole %q", got, acc.Choices[0].FinishReason, acc.Usage, text)
	}

	// A stop string cuts the text where it starts.
	if r := []rune(text); len(r) > 3 {
		before, stop := string(r[:2]), string(r[2:4])
		p := chatParams(12)
		p.Stop = openai.ChatCompletionNewParamsStopUnion{OfString: openai.String(stop)}
		cut, err := c.Chat.Completions.New(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if got := cut.Choices[0].Message.Content; got != before || cut.Choices[0].FinishReason != "stop" {
			t.Errorf("stop %q: %q (%s), want %q", stop, got, cut.Choices[0].FinishReason, before)
		}
	}

	// Log-probabilities: greedy picks the most likely token.
	p = chatParams(4)
	p.Temperature, p.Logprobs, p.TopLogprobs = openai.Float(0), openai.Bool(true), openai.Int(3)
	lp, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	content := lp.Choices[0].Logprobs.Content
	if len(content) != 4 {
		t.Fatalf("%d logprob entries, want 4", len(content))
	}
	for i, e := range content {
		if len(e.TopLogprobs) != 3 || e.TopLogprobs[0].Logprob != e.Logprob || e.Logprob > 0 || e.TopLogprobs[1].Logprob > e.Logprob {
			t.Errorf("entry %d: %+v", i, e)
		}
	}

	// Completions, whole and streamed.
	cp := openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
		MaxTokens: openai.Int(10), Temperature: openai.Float(0)}
	cw, err := c.Completions.New(ctx, cp)
	if err != nil {
		t.Fatal(err)
	}
	if cw.Choices[0].FinishReason != "length" || cw.Usage.CompletionTokens != 10 || cw.Choices[0].Text == "" {
		t.Fatalf("completion %+v", cw)
	}
	cs := c.Completions.NewStreaming(ctx, cp)
	var streamed strings.Builder
	reason := ""
	for cs.Next() {
		ch := cs.Current()
		streamed.WriteString(ch.Choices[0].Text)
		if ch.Choices[0].FinishReason != "" {
			reason = string(ch.Choices[0].FinishReason)
		}
	}
	if err := cs.Err(); err != nil {
		t.Fatal(err)
	}
	if streamed.String() != cw.Choices[0].Text || reason != "length" {
		t.Errorf("streamed completion %q (%s), whole %q", streamed.String(), reason, cw.Choices[0].Text)
	}
	// Token ids as the prompt.
	ids := openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfArrayOfTokens: []int64{1, 20, 30}}, MaxTokens: openai.Int(3)}
	if r, err := c.Completions.New(ctx, ids); err != nil || r.Usage.PromptTokens != 3 {
		t.Errorf("token prompt: %+v, %v", r, err)
	}

	models, err := c.Models.List(ctx)
	if err != nil || len(models.Data) != 1 || models.Data[0].ID != "tiny" {
		t.Errorf("models: %+v, %v", models, err)
	}
}

// apiStatus returns the status and error code of a client error.
func apiStatus(err error) (int, string) {
	var e *openai.Error
	if errors.As(err, &e) {
		return e.StatusCode, e.Code
	}
	return 0, ""
}

func TestBadRequests(t *testing.T) {
	ts, _ := startServer(t, driver.EngineOptions{Parallel: 2, Capacity: 64}, true)
	c := client(ts)
	ctx := context.Background()
	for _, tc := range []struct {
		name   string
		edit   func(*openai.ChatCompletionNewParams)
		status int
		param  string
	}{
		{"n", func(p *openai.ChatCompletionNewParams) { p.N = openai.Int(2) }, 400, "n"},
		{"temperature", func(p *openai.ChatCompletionNewParams) { p.Temperature = openai.Float(3) }, 400, "temperature"},
		{"top_p", func(p *openai.ChatCompletionNewParams) { p.TopP = openai.Float(0) }, 400, "top_p"},
		{"max_tokens", func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(0) }, 400, "max_tokens"},
		{"context", func(p *openai.ChatCompletionNewParams) { p.MaxTokens = openai.Int(1000) }, 400, "messages"},
		{"top_logprobs", func(p *openai.ChatCompletionNewParams) { p.Logprobs, p.TopLogprobs = openai.Bool(true), openai.Int(50) }, 400, "top_logprobs"},
		{"role", func(p *openai.ChatCompletionNewParams) { p.Messages = nil }, 400, "messages"},
		{"model", func(p *openai.ChatCompletionNewParams) { p.Model = "gpt-4o" }, 404, "model"},
	} {
		p := chatParams(4)
		tc.edit(&p)
		_, err := c.Chat.Completions.New(ctx, p)
		var e *openai.Error
		if !errors.As(err, &e) || e.StatusCode != tc.status || e.Param != tc.param {
			t.Errorf("%s: %v, want status %d naming %q", tc.name, err, tc.status, tc.param)
		}
	}
	// A prompt longer than the context, streamed: an error, not a stream.
	long := chatParams(4)
	long.Messages = []openai.ChatCompletionMessageParamUnion{openai.UserMessage(strings.Repeat("word ", 200))}
	s := c.Chat.Completions.NewStreaming(ctx, long)
	for s.Next() {
	}
	if status, code := apiStatus(s.Err()); status != 400 || code != "context_length_exceeded" {
		t.Errorf("a long streamed prompt: %v", s.Err())
	}

	post := func(path, body string) (int, map[string]any) {
		resp, err := http.Post(ts.URL+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var v map[string]any
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatalf("%s: the body is not JSON: %v", path, err)
		}
		return resp.StatusCode, v
	}
	errShape := func(name string, status, want int, v map[string]any) {
		e, ok := v["error"].(map[string]any)
		_, hasType := e["type"]
		_, hasParam := e["param"]
		_, hasCode := e["code"]
		if status != want || !ok || e["message"] == "" || !hasType || !hasParam || !hasCode {
			t.Errorf("%s: status %d %v, want %d and an error object", name, status, v, want)
		}
	}
	st, v := post("/v1/chat/completions", "{not json")
	errShape("bad JSON", st, 400, v)
	st, v = post("/v1/completions", `{"prompt": "`+strings.Repeat("x", 1<<17)+`"}`)
	errShape("oversized body", st, 413, v)
	st, v = post("/v1/completions", `{"prompt": ["a", "b"]}`)
	errShape("two prompts", st, 400, v)
	st, v = post("/v1/completions", `{"prompt": [1, 99999], "max_tokens": 2}`)
	errShape("a token outside the vocabulary", st, 400, v)
	st, v = post("/v1/completions", `{"prompt": "x", "stop": 3}`)
	errShape("a stop that is a number", st, 400, v)
	st, v = post("/v1/nowhere", `{}`)
	errShape("unknown path", st, 404, v)

	// Tokenize and detokenize are inverse on plain text.
	st, v = post("/tokenize", `{"content": "Once upon a time"}`)
	toks, _ := json.Marshal(v["tokens"])
	if st != 200 || len(v["tokens"].([]any)) == 0 {
		t.Fatalf("tokenize: %d %v", st, v)
	}
	st, v = post("/detokenize", `{"tokens": `+string(toks)+`}`)
	if st != 200 || strings.TrimPrefix(v["content"].(string), " ") != "Once upon a time" {
		t.Errorf("detokenize: %d %v", st, v)
	}
	st, v = post("/detokenize", `{"tokens": [-1]}`)
	errShape("detokenize out of range", st, 400, v)

	// A server without a chat template refuses chat, and still completes.
	bare, _ := startServer(t, driver.EngineOptions{Parallel: 1, Capacity: 64}, false)
	bc := client(bare)
	if _, err := bc.Chat.Completions.New(ctx, chatParams(2)); func() bool { s, code := apiStatus(err); return s != 400 || code != "no_chat_template" }() {
		t.Errorf("chat without a template: %v", err)
	}
	if _, err := bc.Completions.New(ctx, openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("hi")}, MaxTokens: openai.Int(2)}); err != nil {
		t.Errorf("completion without a template: %v", err)
	}
}

// A full queue is 503; health answers meanwhile.
func TestQueueFull(t *testing.T) {
	ts, e := startServer(t, driver.EngineOptions{Interp: "oracle", Parallel: 1, Queue: 1, Capacity: 256}, false)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	body := `{"prompt": "a", "ignore_eos": true, "stream": true}`
	open := func() *http.Response {
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", strings.NewReader(body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		return resp
	}
	first := open() // streaming: its header comes with the first token
	defer first.Body.Close()
	done := make(chan struct{})
	go func() { // waits in the queue until cancelled
		defer close(done)
		req, _ := http.NewRequestWithContext(ctx, "POST", ts.URL+"/v1/completions", strings.NewReader(body))
		if resp, err := http.DefaultClient.Do(req); err == nil {
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
		}
	}()
	for _, waiting, _, _ := e.Load(); waiting == 0; _, waiting, _, _ = e.Load() {
	}
	resp, err := http.Post(ts.URL+"/v1/completions", "application/json", bytes.NewReader([]byte(`{"prompt": "a"}`)))
	if err != nil {
		t.Fatal(err)
	}
	var v map[string]map[string]any
	json.NewDecoder(resp.Body).Decode(&v)
	resp.Body.Close()
	if resp.StatusCode != 503 || v["error"]["code"] != "queue_full" {
		t.Errorf("a third request: %d %v, want 503 queue_full", resp.StatusCode, v)
	}
	h, err := http.Get(ts.URL + "/health")
	if err != nil || h.StatusCode != 200 {
		t.Errorf("health while full: %v %v", h, err)
	}
	cancel()
	<-done
}
