// Package serve is poot's HTTP server: the OpenAI API as clients use it
// (chat and text completions, streamed as server-sent events or whole;
// the model list), llama.cpp's /health, /tokenize and /detokenize, over a
// driver.Engine that batches every request in flight into shared steps.
// Conversations become prompts through the model's own chat template
// (ChatTemplate).
//
// Errors have the API's shape, {"error": {"message", "type", "param",
// "code"}}: 400 for a bad request, 404 for an unknown model or path, 413
// for an oversized body, 503 when the queue or the KV cache is full, 500
// for a model that produced non-finite logits. A failure after a stream
// has begun is sent as an error event before "data: [DONE]", never as a
// dropped connection.
//
// What this package is not for: scheduling and sampling (driver),
// tokenizing (tokenizer), and the command line (cmd/poot).
package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"net/http"
	"strings"
	"sync/atomic"
	"time"

	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/tokenizer"
)

// DefaultMaxBody is the largest request body a Server reads when
// Config.MaxBody is zero.
const DefaultMaxBody = 8 << 20

// Config configures a Server.
type Config struct {
	// Engine runs the requests; the server does not close it.
	Engine *driver.Engine
	// Model is the id the API knows the model by (requests naming another
	// are 404).
	Model string
	// Template turns conversations into prompts; nil refuses chat
	// requests with ErrNoTemplate.
	Template *ChatTemplate
	// MaxBody bounds a request body in bytes; zero means DefaultMaxBody.
	MaxBody int64
}

// Server is an http.Handler serving the API over one engine.
type Server struct {
	cfg     Config
	tok     *tokenizer.Tokenizer
	mux     *http.ServeMux
	started time.Time
	ids     atomic.Uint64
}

// New returns a server over cfg.Engine. A model without a tokenizer is an
// error: nothing could be served.
func New(cfg Config) (*Server, error) {
	tok, err := cfg.Engine.Tokenizer()
	if err != nil {
		return nil, err
	}
	if cfg.MaxBody == 0 {
		cfg.MaxBody = DefaultMaxBody
	}
	s := &Server{cfg: cfg, tok: tok, mux: http.NewServeMux(), started: time.Now()}
	s.mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, true) })
	s.mux.HandleFunc("POST /v1/completions", func(w http.ResponseWriter, r *http.Request) { s.complete(w, r, false) })
	s.mux.HandleFunc("GET /v1/models", s.models)
	s.mux.HandleFunc("GET /v1/models/{id}", s.models)
	s.mux.HandleFunc("GET /health", s.health)
	s.mux.HandleFunc("POST /tokenize", s.tokenize)
	s.mux.HandleFunc("POST /detokenize", s.detokenize)
	s.mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		writeError(w, &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Code: "not_found",
			Message: fmt.Sprintf("no route %s %s", r.Method, r.URL.Path)})
	})
	return s, nil
}

// ServeHTTP serves the API.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

// apiError is an error as the API shapes it.
type apiError struct {
	Status  int    `json:"-"`
	Message string `json:"message"`
	Type    string `json:"type"`
	Param   any    `json:"param"`
	Code    any    `json:"code"`
}

// Error returns the message.
func (e *apiError) Error() string { return e.Message }

func badRequest(param, format string, args ...any) *apiError {
	return &apiError{Status: http.StatusBadRequest, Type: "invalid_request_error", Param: param, Message: fmt.Sprintf(format, args...)}
}

// toAPI maps an error of the driver, the template or the request to the
// API's status, type and code.
func toAPI(err error, param string) *apiError {
	var (
		ae   *apiError
		ce   *driver.ContextError
		te   *TemplateError
		mb   *http.MaxBytesError
		tokE *driver.TokenError
	)
	code := func(status int, typ, code string) *apiError {
		return &apiError{Status: status, Type: typ, Code: code, Message: err.Error()}
	}
	switch {
	case errors.As(err, &ae):
		return ae
	case errors.As(err, &mb):
		return code(http.StatusRequestEntityTooLarge, "invalid_request_error", "request_too_large")
	case errors.As(err, &ce):
		e := code(http.StatusBadRequest, "invalid_request_error", "context_length_exceeded")
		e.Param = param
		return e
	case errors.As(err, &tokE), errors.Is(err, driver.ErrEmptyPrompt), errors.Is(err, driver.ErrOptions):
		e := code(http.StatusBadRequest, "invalid_request_error", "invalid_value")
		e.Param = param
		return e
	case errors.Is(err, ErrNoTemplate):
		return code(http.StatusBadRequest, "invalid_request_error", "no_chat_template")
	case errors.As(err, &te):
		e := code(http.StatusBadRequest, "invalid_request_error", "chat_template_error")
		e.Param = "messages"
		return e
	case errors.Is(err, driver.ErrQueueFull):
		return code(http.StatusServiceUnavailable, "server_error", "queue_full")
	case errors.Is(err, driver.ErrCacheFull):
		return code(http.StatusServiceUnavailable, "server_error", "kv_cache_exhausted")
	case errors.Is(err, driver.ErrNonFinite):
		return code(http.StatusInternalServerError, "server_error", "non_finite_logits")
	case errors.Is(err, driver.ErrClosed):
		return code(http.StatusServiceUnavailable, "server_error", "shutting_down")
	}
	return code(http.StatusInternalServerError, "server_error", "internal_error")
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, e *apiError) {
	writeJSON(w, e.Status, map[string]any{"error": e})
}

// decode reads a JSON body into v (bounded by MaxBody).
func (s *Server) decode(w http.ResponseWriter, r *http.Request, v any) *apiError {
	r.Body = http.MaxBytesReader(w, r.Body, s.cfg.MaxBody)
	if err := json.NewDecoder(r.Body).Decode(v); err != nil {
		var mb *http.MaxBytesError
		if errors.As(err, &mb) {
			return toAPI(err, "")
		}
		return badRequest("", "the body is not a valid JSON request: %v", err)
	}
	return nil
}

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	running, waiting, free, pages := s.cfg.Engine.Load()
	writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "running": running, "waiting": waiting,
		"free_pages": free, "pages": pages, "parallel": s.cfg.Engine.Parallel()})
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	m := map[string]any{"id": s.cfg.Model, "object": "model", "created": s.started.Unix(), "owned_by": "poot",
		"meta": map[string]any{"n_ctx": s.cfg.Engine.Capacity(), "n_vocab": s.tok.VocabSize()}}
	if id := r.PathValue("id"); id != "" {
		if id != s.cfg.Model {
			writeError(w, s.unknownModel(id))
			return
		}
		writeJSON(w, http.StatusOK, m)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{m}})
}

func (s *Server) unknownModel(id string) *apiError {
	return &apiError{Status: http.StatusNotFound, Type: "invalid_request_error", Param: "model", Code: "model_not_found",
		Message: fmt.Sprintf("the model %q does not exist; this server serves %q", id, s.cfg.Model)}
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Content      *string `json:"content"`
		AddSpecial   bool    `json:"add_special"`
		ParseSpecial *bool   `json:"parse_special"`
		WithPieces   bool    `json:"with_pieces"`
	}
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	if req.Content == nil {
		writeError(w, badRequest("content", "no content to tokenize"))
		return
	}
	ids, err := s.tok.Encode(*req.Content, tokenizer.EncodeOptions{AddBOS: req.AddSpecial && s.tok.AddBOS(),
		ParseSpecial: req.ParseSpecial == nil || *req.ParseSpecial})
	if err != nil {
		writeError(w, toAPI(err, "content"))
		return
	}
	if !req.WithPieces {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": nonNil(ids)})
		return
	}
	pieces := make([]map[string]any, len(ids))
	for i, id := range ids {
		pieces[i] = map[string]any{"id": id, "piece": s.tok.TokenText(id)}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": pieces})
}

func nonNil(ids []int32) []int32 {
	if ids == nil {
		return []int32{}
	}
	return ids
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tokens []int32 `json:"tokens"`
	}
	if e := s.decode(w, r, &req); e != nil {
		writeError(w, e)
		return
	}
	for i, id := range req.Tokens {
		if id < 0 || int(id) >= s.tok.VocabSize() {
			writeError(w, badRequest("tokens", "token %d (at index %d) is outside the vocabulary of %d", id, i, s.tok.VocabSize()))
			return
		}
	}
	text, err := s.tok.Decode(req.Tokens)
	if err != nil {
		writeError(w, toAPI(err, "tokens"))
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"content": text})
}

// completionRequest is the body of both completion endpoints, as the API
// names its fields (and llama.cpp's top_k, min_p and repeat_penalty).
type completionRequest struct {
	Model               string          `json:"model"`
	Messages            []Message       `json:"messages"`
	Prompt              json.RawMessage `json:"prompt"`
	MaxTokens           *int            `json:"max_tokens"`
	MaxCompletionTokens *int            `json:"max_completion_tokens"`
	Temperature         *float64        `json:"temperature"`
	TopP                *float64        `json:"top_p"`
	TopK                int             `json:"top_k"`
	MinP                float64         `json:"min_p"`
	RepeatPenalty       float64         `json:"repeat_penalty"`
	N                   *int            `json:"n"`
	Stream              bool            `json:"stream"`
	StreamOptions       *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`
	Stop             json.RawMessage `json:"stop"`
	Seed             *int64          `json:"seed"`
	PresencePenalty  float64         `json:"presence_penalty"`
	FrequencyPenalty float64         `json:"frequency_penalty"`
	Logprobs         json.RawMessage `json:"logprobs"`
	TopLogprobs      *int            `json:"top_logprobs"`
	IgnoreEOS        bool            `json:"ignore_eos"`
}

// maxStops and maxTopLogprobs bound what a request may ask for.
const (
	maxStops       = 16
	maxTopLogprobs = 20
)

// request checks a body and turns it into the engine's request, with the
// param name that prompt errors are blamed on.
func (s *Server) request(body completionRequest, chat bool) (driver.Request, string, *apiError) {
	var req driver.Request
	if body.Model != "" && body.Model != s.cfg.Model {
		return req, "", s.unknownModel(body.Model)
	}
	if body.N != nil && *body.N != 1 {
		return req, "", badRequest("n", "n is %d: this server makes one choice per request (n = 1)", *body.N)
	}
	finite := func(p *float64) bool { return p == nil || !math.IsNaN(*p) && !math.IsInf(*p, 0) }
	temp, topP := 1.0, 1.0
	if body.Temperature != nil {
		temp = *body.Temperature
	}
	if body.TopP != nil {
		topP = *body.TopP
	}
	switch {
	case !finite(&temp) || temp < 0 || temp > 2:
		return req, "", badRequest("temperature", "temperature %v: want a number in [0, 2]", temp)
	case !finite(&topP) || topP <= 0 || topP > 1:
		return req, "", badRequest("top_p", "top_p %v: want a number in (0, 1]", topP)
	case !finite(&body.PresencePenalty) || math.Abs(body.PresencePenalty) > 2:
		return req, "", badRequest("presence_penalty", "presence_penalty %v: want a number in [-2, 2]", body.PresencePenalty)
	case !finite(&body.FrequencyPenalty) || math.Abs(body.FrequencyPenalty) > 2:
		return req, "", badRequest("frequency_penalty", "frequency_penalty %v: want a number in [-2, 2]", body.FrequencyPenalty)
	case body.TopK < 0:
		return req, "", badRequest("top_k", "top_k %d: want 0 (all) or more", body.TopK)
	case !finite(&body.MinP) || body.MinP < 0 || body.MinP > 1:
		return req, "", badRequest("min_p", "min_p %v: want a number in [0, 1]", body.MinP)
	case !finite(&body.RepeatPenalty) || body.RepeatPenalty < 0:
		return req, "", badRequest("repeat_penalty", "repeat_penalty %v: want a positive number", body.RepeatPenalty)
	}
	maxTokens := body.MaxCompletionTokens
	if maxTokens == nil {
		maxTokens = body.MaxTokens
	}
	if maxTokens != nil && *maxTokens < 1 {
		return req, "", badRequest("max_tokens", "max_tokens %d: want at least 1", *maxTokens)
	}
	var stops []string
	if len(body.Stop) > 0 && string(body.Stop) != "null" {
		var one string
		if json.Unmarshal(body.Stop, &one) == nil {
			stops = []string{one}
		} else if err := json.Unmarshal(body.Stop, &stops); err != nil {
			return req, "", badRequest("stop", "stop is neither a string nor a list of strings")
		}
		if len(stops) > maxStops {
			return req, "", badRequest("stop", "%d stop strings: at most %d", len(stops), maxStops)
		}
	}
	seed := rand.Uint64()
	if body.Seed != nil {
		seed = uint64(*body.Seed)
	}
	req.GenerateOptions = driver.GenerateOptions{Stop: stops, IgnoreEOS: body.IgnoreEOS,
		SamplerOptions: driver.SamplerOptions{Temperature: temp, TopP: topP, TopK: body.TopK, MinP: body.MinP, RepeatPenalty: body.RepeatPenalty, Seed: seed}}
	if maxTokens != nil {
		req.MaxTokens = *maxTokens
	}
	req.PresencePenalty, req.FrequencyPenalty = body.PresencePenalty, body.FrequencyPenalty
	if e := logprobOptions(&req, body, chat); e != nil {
		return req, "", e
	}
	param := "prompt"
	var err error
	if chat {
		param = "messages"
		req.Prompt, err = s.chatPrompt(body.Messages)
	} else {
		req.Prompt, err = s.textPrompt(body.Prompt)
	}
	if err != nil {
		return req, "", toAPI(err, param)
	}
	if need := len(req.Prompt) + req.MaxTokens; maxTokens != nil && need > s.cfg.Engine.Capacity() {
		e := toAPI(&driver.ContextError{Need: need, Capacity: s.cfg.Engine.Capacity()}, param)
		e.Message = fmt.Sprintf("%d prompt tokens and max_tokens %d need %d positions; the context holds %d", len(req.Prompt), req.MaxTokens, need, s.cfg.Engine.Capacity())
		return req, "", e
	}
	return req, param, nil
}

// logprobOptions reads logprobs and top_logprobs: a boolean and a count
// for chat, a count for completions.
func logprobOptions(req *driver.Request, body completionRequest, chat bool) *apiError {
	if len(body.Logprobs) == 0 || string(body.Logprobs) == "null" {
		if body.TopLogprobs != nil && *body.TopLogprobs > 0 {
			return badRequest("top_logprobs", "top_logprobs needs logprobs")
		}
		return nil
	}
	if chat {
		if err := json.Unmarshal(body.Logprobs, &req.Logprobs); err != nil {
			return badRequest("logprobs", "logprobs is not a boolean")
		}
		if body.TopLogprobs != nil {
			req.TopLogprobs = *body.TopLogprobs
		}
	} else {
		if err := json.Unmarshal(body.Logprobs, &req.TopLogprobs); err != nil {
			return badRequest("logprobs", "logprobs is not a number")
		}
		req.Logprobs = true
	}
	if req.TopLogprobs < 0 || req.TopLogprobs > maxTopLogprobs {
		return badRequest("top_logprobs", "top_logprobs %d: want 0 to %d", req.TopLogprobs, maxTopLogprobs)
	}
	return nil
}

// chatPrompt renders a conversation through the template and tokenizes
// it, special tokens parsed; BOS is added when the vocabulary asks for it
// and the template did not write it.
func (s *Server) chatPrompt(msgs []Message) ([]int32, error) {
	if s.cfg.Template == nil {
		return nil, ErrNoTemplate
	}
	if len(msgs) == 0 {
		return nil, badRequest("messages", "no messages")
	}
	for i, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant", "developer", "tool":
		default:
			return nil, badRequest("messages", "message %d has role %q: want system, user, assistant, developer or tool", i, m.Role)
		}
		switch m.Content.(type) {
		case string, []any, nil:
		default:
			return nil, badRequest("messages", "message %d: content is neither a string nor a list of parts", i)
		}
	}
	text, err := s.cfg.Template.Render(msgs, true)
	if err != nil {
		return nil, err
	}
	bos := specialText(s.tok, s.tok.BOS())
	addBOS := s.tok.AddBOS() && (bos == "" || !strings.HasPrefix(text, bos))
	return s.tok.Encode(text, tokenizer.EncodeOptions{AddBOS: addBOS, ParseSpecial: true})
}

// textPrompt reads a completion prompt: a string, a list of one string,
// or token ids (a list of numbers, or a list of one such list).
func (s *Server) textPrompt(raw json.RawMessage) ([]int32, error) {
	var text string
	var texts []string
	var ids []int32
	var idss [][]int32
	switch {
	case len(raw) == 0 || string(raw) == "null":
		return nil, badRequest("prompt", "no prompt")
	case json.Unmarshal(raw, &text) == nil:
	case json.Unmarshal(raw, &texts) == nil && len(texts) == 1:
		text = texts[0]
	case json.Unmarshal(raw, &ids) == nil && len(ids) > 0:
		return ids, nil
	case json.Unmarshal(raw, &idss) == nil && len(idss) == 1:
		return idss[0], nil
	default:
		return nil, badRequest("prompt", "prompt is not a string, a list of one string, or token ids (one prompt per request)")
	}
	return s.tok.Encode(text, tokenizer.EncodeOptions{AddBOS: s.tok.AddBOS(), ParseSpecial: true})
}

// finishReason is the API's name of a stop reason.
func finishReason(r driver.StopReason) string {
	if r == driver.StopBudget || r == driver.StopContext {
		return "length"
	}
	return "stop"
}

func (s *Server) complete(w http.ResponseWriter, r *http.Request, chat bool) {
	var body completionRequest
	if e := s.decode(w, r, &body); e != nil {
		writeError(w, e)
		return
	}
	req, param, e := s.request(body, chat)
	if e != nil {
		writeError(w, e)
		return
	}
	kind, object := "cmpl-", "text_completion"
	if chat {
		kind, object = "chatcmpl-", "chat.completion"
	}
	resp := response{id: fmt.Sprintf("%s%d-%d", kind, s.started.UnixNano(), s.ids.Add(1)), created: time.Now().Unix(),
		model: s.cfg.Model, chat: chat, object: object, tok: s.tok}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	if !body.Stream {
		var text strings.Builder
		st, err := s.cfg.Engine.Generate(ctx, req, func(p driver.Piece) {
			text.WriteString(p.Text)
			resp.addLogprobs(p, req)
		})
		if err != nil {
			if ctx.Err() == nil {
				writeError(w, toAPI(err, param))
			}
			return
		}
		writeJSON(w, http.StatusOK, resp.whole(text.String(), st, req))
		return
	}
	sse := &eventStream{w: w, rc: http.NewResponseController(w), cancel: cancel}
	st, err := s.cfg.Engine.Generate(ctx, req, func(p driver.Piece) {
		if !sse.started && chat {
			sse.send(resp.chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil))
		}
		var lp any
		if req.Logprobs {
			resp.lps, resp.top = nil, nil
			resp.addLogprobs(p, req)
			lp = resp.logprobs()
		}
		if p.Text != "" || lp != nil {
			if chat {
				sse.send(resp.chunk(map[string]any{"content": p.Text}, lp, nil))
			} else {
				sse.send(resp.chunk(p.Text, lp, nil))
			}
		}
	})
	switch {
	case err != nil && ctx.Err() != nil: // the client left, or a write failed
		return
	case err != nil && !sse.started:
		writeError(w, toAPI(err, param))
		return
	case err != nil:
		sse.send(map[string]any{"error": toAPI(err, param)})
	default:
		if !sse.started && chat {
			sse.send(resp.chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil))
		}
		reason := finishReason(st.Stop)
		if chat {
			sse.send(resp.chunk(map[string]any{}, nil, reason))
		} else {
			sse.send(resp.chunk("", nil, reason))
		}
		if body.StreamOptions != nil && body.StreamOptions.IncludeUsage {
			u := resp.chunk(nil, nil, nil)
			u["choices"], u["usage"] = []any{}, usage(st)
			sse.send(u)
		}
	}
	sse.done()
}

// eventStream writes server-sent events, starting the response on the
// first; a failed write cancels the generation.
type eventStream struct {
	w       http.ResponseWriter
	rc      *http.ResponseController
	cancel  func()
	started bool
	err     error
}

func (e *eventStream) write(data []byte) {
	if e.err != nil {
		return
	}
	if !e.started {
		h := e.w.Header()
		h.Set("Content-Type", "text/event-stream")
		h.Set("Cache-Control", "no-cache")
		e.w.WriteHeader(http.StatusOK)
		e.started = true
	}
	if _, e.err = fmt.Fprintf(e.w, "data: %s\n\n", data); e.err == nil {
		e.err = e.rc.Flush()
	}
	if e.err != nil {
		e.cancel()
	}
}

func (e *eventStream) send(v any) {
	data, err := json.Marshal(v)
	if err != nil {
		data, _ = json.Marshal(map[string]any{"error": toAPI(err, "")})
	}
	e.write(data)
}

func (e *eventStream) done() { e.write([]byte("[DONE]")) }

func usage(st driver.Stats) map[string]int {
	return map[string]int{"prompt_tokens": st.PromptTokens, "completion_tokens": st.GeneratedTokens,
		"total_tokens": st.PromptTokens + st.GeneratedTokens}
}

// response builds one request's response objects.
type response struct {
	id, model, object string
	created           int64
	chat              bool
	tok               *tokenizer.Tokenizer
	lps               []driver.Piece
	top               [][]driver.TokenLogprob
}

func (r *response) addLogprobs(p driver.Piece, req driver.Request) {
	if req.Logprobs && p.Token >= 0 {
		r.lps = append(r.lps, p)
	}
}

// logprobs is the logprobs object of the pieces gathered: chat's list of
// token entries, or completions' parallel lists.
func (r *response) logprobs() any {
	if r.chat {
		content := []map[string]any{}
		for _, p := range r.lps {
			top := []map[string]any{}
			for _, t := range p.Top {
				top = append(top, r.tokenEntry(t.Token, t.Logprob))
			}
			e := r.tokenEntry(p.Token, p.Logprob)
			e["top_logprobs"] = top
			content = append(content, e)
		}
		return map[string]any{"content": content}
	}
	tokens, lps, tops := []string{}, []float64{}, []map[string]float64{}
	for _, p := range r.lps {
		tokens = append(tokens, r.tok.TokenText(p.Token))
		lps = append(lps, p.Logprob)
		top := map[string]float64{}
		for _, t := range p.Top {
			top[r.tok.TokenText(t.Token)] = t.Logprob
		}
		tops = append(tops, top)
	}
	return map[string]any{"tokens": tokens, "token_logprobs": lps, "top_logprobs": tops}
}

func (r *response) tokenEntry(id int32, lp float64) map[string]any {
	text := r.tok.TokenText(id)
	b := make([]int, len(text))
	for i := range len(text) {
		b[i] = int(text[i])
	}
	return map[string]any{"token": text, "logprob": lp, "bytes": b}
}

// whole is a non-streamed response.
func (r *response) whole(text string, st driver.Stats, req driver.Request) map[string]any {
	choice := map[string]any{"index": 0, "finish_reason": finishReason(st.Stop), "logprobs": nil}
	if req.Logprobs {
		choice["logprobs"] = r.logprobs()
	}
	if r.chat {
		choice["message"] = map[string]any{"role": "assistant", "content": text}
	} else {
		choice["text"] = text
	}
	return map[string]any{"id": r.id, "object": r.object, "created": r.created, "model": r.model,
		"choices": []any{choice}, "usage": usage(st)}
}

// chunk is one streamed event: a chat delta or a completion's text.
func (r *response) chunk(delta any, logprobs any, reason any) map[string]any {
	choice := map[string]any{"index": 0, "finish_reason": reason, "logprobs": logprobs}
	object := "text_completion"
	if r.chat {
		choice["delta"], object = delta, "chat.completion.chunk"
	} else {
		choice["text"] = delta
	}
	return map[string]any{"id": r.id, "object": object, "created": r.created, "model": r.model, "choices": []any{choice}}
}
