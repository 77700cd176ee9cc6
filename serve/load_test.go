package serve_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/serve"
)

// loadRequest is distinct request k: its own prompt, budget and sampling.
func loadRequest(k int) openai.CompletionNewParams {
	p := openai.CompletionNewParams{Model: "tiny", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(fmt.Sprintf("Story %d: %s", k, strings.Repeat("and then ", k%5)))},
		MaxTokens: openai.Int(int64(6 + k%7)), Temperature: openai.Float(0)}
	if k%2 == 1 {
		p.Temperature, p.Seed = openai.Float(0.9), openai.Int(int64(k))
	}
	return p
}

type outcome struct {
	text, reason string
}

func stream(ctx context.Context, c openai.Client, p openai.CompletionNewParams, cancelAfter int, cancel func()) (outcome, error) {
	s := c.Completions.NewStreaming(ctx, p)
	defer s.Close()
	var o outcome
	n := 0
	for s.Next() {
		ch := s.Current()
		if len(ch.Choices) == 0 {
			continue
		}
		o.text += ch.Choices[0].Text
		if ch.Choices[0].FinishReason != "" {
			o.reason = string(ch.Choices[0].FinishReason)
		}
		if n++; n == cancelAfter {
			cancel()
		}
	}
	return o, s.Err()
}

// 32 streaming clients of 4 requests each on 16 rows, every fifth request
// cancelled mid-stream: each completed response is the request's response
// alone, /health answers throughout, and afterwards no page is held and
// no goroutine is left.
func TestLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("a load test")
	}
	e, err := driver.OpenEngine(tinyPath, driver.EngineOptions{Parallel: 16, Capacity: 64, PrefillChunk: 16, PageSize: 8})
	if err != nil {
		t.Fatal(err)
	}
	// The goroutines before the server, less the engine's scheduler (the
	// cpu backend's workers, started by the first compile, stay).
	baseline := runtime.NumGoroutine() - 1
	s, err := serve.New(serve.Config{Engine: e, Model: "tiny"})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 64}}
	c := openai.NewClient(option.WithBaseURL(ts.URL+"/v1/"), option.WithAPIKey("none"), option.WithMaxRetries(0), option.WithHTTPClient(hc))
	ctx := context.Background()

	const distinct, clients, each = 16, 32, 4
	alone := make([]outcome, distinct)
	for k := range alone {
		if alone[k], err = stream(ctx, c, loadRequest(k), 0, nil); err != nil {
			t.Fatal(err)
		}
	}

	stopHealth := make(chan struct{})
	var healthFailures, healthChecks atomic.Int64
	var healthWG sync.WaitGroup
	healthWG.Go(func() {
		hcl := &http.Client{Timeout: 5 * time.Second}
		for {
			select {
			case <-stopHealth:
				return
			case <-time.After(5 * time.Millisecond):
			}
			resp, err := hcl.Get(ts.URL + "/health")
			healthChecks.Add(1)
			if err != nil || resp.StatusCode != 200 {
				healthFailures.Add(1)
			}
			if err == nil {
				resp.Body.Close()
			}
		}
	})

	var wg sync.WaitGroup
	var completed, cancelled atomic.Int64
	var tokens atomic.Int64
	start := time.Now()
	for cl := range clients {
		wg.Go(func() {
			for r := range each {
				k := (cl*each + r) % distinct
				rctx, cancel := context.WithCancel(ctx)
				cancelAfter := 0
				if (cl*each+r)%5 == 4 {
					cancelAfter = 2
				}
				got, err := stream(rctx, c, loadRequest(k), cancelAfter, cancel)
				cancel()
				switch {
				case cancelAfter > 0 && rctx.Err() != nil:
					cancelled.Add(1)
				case err != nil:
					t.Errorf("client %d request %d: %v", cl, r, err)
				case got != alone[k]:
					t.Errorf("client %d request %d (%d): %+v, alone %+v", cl, r, k, got, alone[k])
				default:
					completed.Add(1)
					tokens.Add(loadRequest(k).MaxTokens.Value)
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(stopHealth)
	healthWG.Wait()
	t.Logf("%d completed, %d cancelled in %v (about %.0f generated tokens/s); %d health checks",
		completed.Load(), cancelled.Load(), elapsed.Round(time.Millisecond), float64(tokens.Load())/elapsed.Seconds(), healthChecks.Load())
	if healthFailures.Load() > 0 || healthChecks.Load() == 0 {
		t.Errorf("%d of %d health checks failed", healthFailures.Load(), healthChecks.Load())
	}
	if completed.Load()+cancelled.Load() != clients*each || cancelled.Load() == 0 {
		t.Errorf("%d completed and %d cancelled of %d", completed.Load(), cancelled.Load(), clients*each)
	}

	deadline := time.Now().Add(30 * time.Second)
	for {
		running, waiting, free, pages := e.Load()
		if running == 0 && waiting == 0 && free == pages {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after the load: %d running, %d waiting, %d of %d pages free", running, waiting, free, pages)
		}
		time.Sleep(time.Millisecond)
	}
	hc.CloseIdleConnections()
	ts.Close()
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	for deadline = time.Now().Add(30 * time.Second); runtime.NumGoroutine() > baseline; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<16)
			t.Fatalf("%d goroutines after the load, %d before:\n%s", runtime.NumGoroutine(), baseline, buf[:runtime.Stack(buf, true)])
		}
	}
}
