package serve_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/serve"
)

// Any body on any endpoint gets a JSON answer: a result or an API error
// with a status the API uses, never a panic or a dropped connection.
func FuzzRequests(f *testing.F) {
	for _, s := range []string{
		`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 2}`,
		`{"messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}], "max_tokens": 1, "logprobs": true, "top_logprobs": 2}`,
		`{"prompt": "Once", "max_tokens": 2, "stop": ["x", "y"], "seed": 3, "temperature": 0.5}`,
		`{"prompt": [1, 2, 3], "max_tokens": 1, "logprobs": 2}`,
		`{"prompt": [[1, 2]], "max_completion_tokens": 1, "presence_penalty": 1, "frequency_penalty": -1}`,
		`{"prompt": "x", "max_tokens": -1}`, `{"prompt": null}`, `{"n": 2}`, `[]`, `{`, ``,
		`{"content": "hello", "with_pieces": true}`, `{"tokens": [1, 2, 3]}`, `{"tokens": [-7]}`,
	} {
		for _, path := range []string{"/v1/chat/completions", "/v1/completions", "/tokenize", "/detokenize"} {
			f.Add(path, s)
		}
	}
	e, err := driver.OpenEngine(tinyPath, driver.EngineOptions{Parallel: 2, Capacity: 48})
	if err != nil {
		f.Fatal(err)
	}
	f.Cleanup(func() { e.Close() })
	src := `{% for m in messages %}{{ m.role }}: {{ m.content }}
{% endfor %}{% if add_generation_prompt %}assistant:{% endif %}`
	tmpl, err := serve.NewChatTemplate(src, "", "")
	if err != nil {
		f.Fatal(err)
	}
	s, err := serve.New(serve.Config{Engine: e, Model: "tiny", Template: tmpl, MaxBody: 4096})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, path, body string) {
		if !strings.HasPrefix(path, "/") {
			path = "/" + path
		}
		req, err := http.NewRequest("POST", "http://x"+path, strings.NewReader(body))
		if err != nil {
			return
		}
		w := httptest.NewRecorder()
		s.ServeHTTP(w, req)
		switch w.Code {
		case 301, 307, 308: // the mux cleans paths such as /./v1
			return
		case 200, 400, 404, 405, 413, 500, 503:
		default:
			t.Fatalf("%s %q: status %d", path, body, w.Code)
		}
		if w.Code == 405 || strings.HasPrefix(w.Header().Get("Content-Type"), "text/event-stream") {
			return
		}
		var v map[string]any
		if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil {
			t.Fatalf("%s %q: status %d, the body is not JSON: %q", path, body, w.Code, w.Body.String())
		}
		if _, isErr := v["error"]; isErr != (w.Code != 200) {
			t.Fatalf("%s %q: status %d with %v", path, body, w.Code, v)
		}
	})
}
