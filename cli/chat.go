package cli

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/pootlabs/poot/driver"
	"github.com/pootlabs/poot/serve"
	"github.com/pootlabs/poot/tokenizer"
)

// chatInterrupts delivers the interrupts (Ctrl-C) of a chat; tests
// replace it.
var chatInterrupts = func() (<-chan os.Signal, func()) {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, os.Interrupt)
	return ch, func() { signal.Stop(ch) }
}

// cmdChat is an interactive chat over the model's template: each line of
// stdin is a user turn, the reply streams to stdout. /reset forgets the
// conversation, /exit (or the end of input) leaves, Ctrl-C stops a reply.
func cmdChat(args []string, stdout, stderr io.Writer) error {
	fs := flags("chat", "chat -m MODEL [--system TEXT] [--chat-template FILE] [-n N] [--temp T] [--seed S] [--ctx N] [--interp NAME] [--threads N]", stdout)
	var model, interpName string
	var capacity int
	kv := modelFlags(fs, &model, &interpName, &capacity)
	system := fs.String("system", "", "a system message to start the conversation with")
	tmplPath := fs.String("chat-template", "", "a Jinja chat template file to use instead of the model's")
	n := fs.Int("n", 512, "the most tokens of one reply (0: until the end of the context)")
	temp := fs.Float64("temp", 0.8, "temperature; 0 is greedy")
	topP := fs.Float64("top-p", 0.95, "keep the most likely tokens up to probability P (1: all)")
	seed := fs.Int64("seed", -1, "random seed (-1: from the clock)")
	threads := threadsFlag(fs)
	if err := fs.parse(args); err != nil {
		return err
	}
	if *n < 0 {
		return usagef("-n %d: want 0 or more", *n)
	}
	if err := checkSampling(*temp, 0, *topP, 0, 1, 0); err != nil {
		return err
	}
	restore, err := setThreads(*threads)
	if err != nil {
		return err
	}
	defer restore()
	var src string
	if *tmplPath != "" {
		data, err := os.ReadFile(*tmplPath)
		if err != nil {
			return err
		}
		src = string(data)
	}
	s, err := openSession(model, interpName, capacity, kv, stderr)
	if err != nil {
		return err
	}
	defer s.Close()
	tok, err := s.Tokenizer()
	if err != nil {
		return err
	}
	tmpl, err := serve.ModelTemplate(s.Checkpoint(), tok, src)
	if err != nil {
		return err
	}
	if tmpl == nil {
		return serve.ErrNoTemplate
	}
	sd := uint64(*seed)
	if *seed < 0 {
		sd = uint64(time.Now().UnixNano())
	}
	c := &chat{s: s, tok: tok, tmpl: tmpl, system: *system, out: bufio.NewWriter(stdout), stderr: stderr,
		opts: driver.GenerateOptions{MaxTokens: *n, SamplerOptions: driver.SamplerOptions{Temperature: *temp, TopP: *topP, Seed: sd}}}
	c.reset()
	sigs, stop := chatInterrupts()
	defer stop()
	var mu sync.Mutex
	var cancelReply context.CancelFunc
	go func() {
		for range sigs {
			mu.Lock()
			if cancelReply != nil {
				cancelReply()
			} else {
				fmt.Fprintln(stderr, "\n(type /exit to leave)")
			}
			mu.Unlock()
		}
	}()
	prompt := isTerminal(stdout)
	fmt.Fprintln(stderr, "poot chat: /reset forgets the conversation, /exit leaves, Ctrl-C stops a reply")
	in := bufio.NewScanner(stdin)
	in.Buffer(nil, 1<<24)
	for {
		if prompt {
			c.out.WriteString("> ")
			c.out.Flush()
		}
		if !in.Scan() {
			return in.Err()
		}
		line := strings.TrimSpace(in.Text())
		switch line {
		case "":
			continue
		case "/exit", "/quit":
			return writeErr(stdout)
		case "/reset":
			c.reset()
			fmt.Fprintln(stderr, "(conversation forgotten)")
			continue
		}
		ctx, cancel := context.WithCancel(context.Background())
		mu.Lock()
		cancelReply = cancel
		mu.Unlock()
		err := c.turn(ctx, line)
		mu.Lock()
		cancelReply = nil
		mu.Unlock()
		interrupted := ctx.Err() != nil
		cancel()
		if err := writeErr(stdout); err != nil {
			return err
		}
		switch {
		case interrupted:
			fmt.Fprintln(stderr, "(reply stopped)")
		case err != nil:
			return err
		}
	}
}

// chat is a conversation: its messages, rendered whole for each turn; the
// session's cache is reused where the new rendering extends the tokens it
// holds.
type chat struct {
	s        *driver.Session
	tok      *tokenizer.Tokenizer
	tmpl     *serve.ChatTemplate
	system   string
	messages []serve.Message
	opts     driver.GenerateOptions
	out      *bufio.Writer
	stderr   io.Writer
}

func (c *chat) reset() {
	c.messages = c.messages[:0]
	if c.system != "" {
		c.messages = append(c.messages, serve.Message{Role: "system", Content: c.system})
	}
	c.s.Reset()
}

// turn adds the user's line, streams the reply and keeps what was said
// (the part of a reply that was stopped, too).
func (c *chat) turn(ctx context.Context, line string) error {
	msgs := append(slices.Clone(c.messages), serve.Message{Role: "user", Content: line})
	text, err := c.tmpl.Render(msgs, true)
	if err != nil {
		return err
	}
	bos := ""
	if id := c.tok.BOS(); id >= 0 {
		bos = c.tok.TokenText(id)
	}
	ids, err := c.tok.Encode(text, tokenizer.EncodeOptions{AddBOS: c.tok.AddBOS() && (bos == "" || !strings.HasPrefix(text, bos)), ParseSpecial: true})
	if err != nil {
		return err
	}
	if held := c.s.History(); len(held) < len(ids) && slices.Equal(held, ids[:len(held)]) {
		ids = ids[len(held):]
	} else {
		c.s.Reset()
	}
	var reply strings.Builder
	_, err = c.s.GenerateTokens(ctx, ids, c.opts, func(piece string) {
		reply.WriteString(piece)
		c.out.WriteString(piece)
		c.out.Flush()
	})
	c.out.WriteString("\n")
	c.out.Flush()
	if err != nil && ctx.Err() == nil {
		c.s.Reset() // the conversation is kept; the cache is rebuilt next turn
		return err
	}
	c.messages = append(msgs, serve.Message{Role: "assistant", Content: reply.String()})
	return nil
}
