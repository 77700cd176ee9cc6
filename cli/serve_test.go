package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"regexp"
	"strings"
	"testing"
)

// startServe runs poot serve in-process on a free loopback port and
// returns its base URL; the server stops when the test ends.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	old := serveContext
	serveContext = func() (context.Context, context.CancelFunc) { return ctx, cancel }
	pr, pw := io.Pipe()
	done := make(chan int, 1)
	go func() {
		done <- run(append([]string{"serve", "-m", tinyModel, "--port", "0"}, args...), io.Discard, pw)
		pw.Close()
	}()
	lines := bufio.NewScanner(pr)
	addr := regexp.MustCompile(`on http://(127\.0\.0\.1:\d+) `)
	for lines.Scan() {
		if m := addr.FindStringSubmatch(lines.Text()); m != nil {
			go io.Copy(io.Discard, pr)
			t.Cleanup(func() {
				cancel()
				if status := <-done; status != 0 {
					t.Errorf("serve exited with status %d", status)
				}
				serveContext = old
			})
			return "http://" + m[1]
		}
	}
	cancel()
	t.Fatalf("serve did not start (status %d)", <-done)
	return ""
}

func TestServeCommand(t *testing.T) {
	url := startServe(t, "--parallel", "2", "--ctx", "256", "--threads", "1", "--chat-template", "../serve/testdata/templates/qwen2.5.jinja")
	resp, err := http.Get(url + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	var models struct{ Data []struct{ ID string } }
	json.NewDecoder(resp.Body).Decode(&models)
	resp.Body.Close()
	if len(models.Data) != 1 || models.Data[0].ID != "tiny.gguf" {
		t.Errorf("models %+v", models)
	}
	resp, err = http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "temperature": 0}`))
	if err != nil {
		t.Fatal(err)
	}
	var chat struct {
		Choices []struct {
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			CompletionTokens int `json:"completion_tokens"`
		}
	}
	json.NewDecoder(resp.Body).Decode(&chat)
	resp.Body.Close()
	if resp.StatusCode != 200 || len(chat.Choices) != 1 || chat.Choices[0].FinishReason != "length" || chat.Usage.CompletionTokens != 3 {
		t.Errorf("chat: %d %+v", resp.StatusCode, chat)
	}
}

func TestServeUsage(t *testing.T) {
	for _, args := range [][]string{
		{"serve"},
		{"serve", "-m", tinyModel, "--port", "70000"},
		{"serve", "-m", tinyModel, "--parallel", "0"},
		{"serve", "-m", tinyModel, "--threads", "-1"},
		{"serve", "-m", tinyModel, "--ctx", "-5"},
	} {
		_, stderr, status := runPoot(args...)
		if status != 2 {
			t.Errorf("%v: status %d (%s), want 2", args, status, stderr)
		}
	}
	_, stderr, status := runPoot("serve", "-m", tinyModel, "--port", "0", "--chat-template", "/nonexistent/template.jinja")
	oneLineError(t, stderr, status, "template.jinja")
}
