package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/serve"
)

// serveContext is the lifetime of a server: until SIGINT or SIGTERM.
// Tests replace it to stop an in-process server.
var serveContext = func() (context.Context, context.CancelFunc) {
	return signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
}

// cmdServe serves the OpenAI API on host:port until interrupted; the
// address goes to stderr once it listens.
func cmdServe(args []string, stdout, stderr io.Writer) error {
	fs := flags("serve", "serve -m MODEL [--host 127.0.0.1] [--port 8080] [--parallel N] [--ctx N] [--interp NAME] [--threads N] [--chat-template FILE]", stdout)
	var model, interpName string
	var capacity int
	kv := modelFlags(fs, &model, &interpName, &capacity)
	host := fs.String("host", "127.0.0.1", "the address to listen on")
	port := fs.Int("port", 8080, "the port to listen on (0: any free port)")
	parallel := fs.Int("parallel", driver.DefaultParallel, "the most sequences decoded at once (the rows of each batched step)")
	queue := fs.Int("queue", 0, "the most requests waiting for a row; beyond it requests get 503 (0: 4 per row)")
	chunk := fs.Int("prefill-chunk", driver.DefaultPrefillChunk, "the most prompt tokens of one prefill step")
	tmplPath := fs.String("chat-template", "", "a Jinja chat template file to use instead of the model's")
	name := fs.String("alias", "", "the model id the API shows (default: the checkpoint's file name)")
	maxBody := fs.Int64("max-body", serve.DefaultMaxBody, "the largest request body in bytes (413 beyond)")
	threads := threadsFlag(fs)
	if err := fs.parse(args); err != nil {
		return err
	}
	switch {
	case model == "":
		return usagef("no model: give -m MODEL (a GGUF file or a safetensors directory)")
	case *port < 0 || *port > 65535:
		return usagef("--port %d: want 0 to 65535", *port)
	case *parallel < 1 || *parallel > 1024:
		return usagef("--parallel %d: want 1 to 1024", *parallel)
	case *queue < 0:
		return usagef("--queue %d: want 0 or more", *queue)
	case *chunk < 1:
		return usagef("--prefill-chunk %d: want at least 1", *chunk)
	case *maxBody < 1:
		return usagef("--max-body %d: want at least 1", *maxBody)
	}
	if err := checkCtx(capacity); err != nil {
		return err
	}
	restore, err := setThreads(*threads)
	if err != nil {
		return err
	}
	defer restore()
	var tmplSrc string
	if *tmplPath != "" {
		data, err := os.ReadFile(*tmplPath)
		if err != nil {
			return err
		}
		tmplSrc = string(data)
	}
	b := newBar(stderr)
	e, err := driver.OpenEngine(model, driver.EngineOptions{Interp: interpName, Parallel: *parallel, Capacity: capacity, KV: kv.dtype(), Residency: kv.residency(),
		PrefillChunk: *chunk, Queue: *queue, Progress: func(p driver.Progress) {
			b.last = -1
			b.draw(p.Stage, float64(p.Done)/float64(p.Total))
		}})
	b.clear()
	if err != nil {
		return err
	}
	defer e.Close()
	tok, err := e.Tokenizer()
	if err != nil {
		return err
	}
	tmpl, err := serve.ModelTemplate(e.Checkpoint(), tok, tmplSrc)
	if err != nil {
		return err
	}
	id := *name
	if id == "" {
		id = filepath.Base(filepath.Clean(model))
	}
	s, err := serve.New(serve.Config{Engine: e, Model: id, Template: tmpl, MaxBody: *maxBody})
	if err != nil {
		return err
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(*host, strconv.Itoa(*port)))
	if err != nil {
		return err
	}
	chat := "chat from the model's template"
	if tmpl == nil {
		chat = "no chat template: completions only"
	}
	fmt.Fprintf(stderr, "poot serve: %s on http://%s (%s, %d parallel, context %d, %s)\n", id, ln.Addr(), e.Interpreter().Name(), e.Parallel(), e.Capacity(), chat)
	srv := &http.Server{Handler: s, ReadHeaderTimeout: 30 * time.Second}
	ctx, stop := serveContext()
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case err := <-served:
		return err
	case <-ctx.Done():
	}
	// Finish what is in flight, for a while; then cut the rest off.
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	srv.Close()
	fmt.Fprintln(stderr, "poot serve: stopped")
	return nil
}
