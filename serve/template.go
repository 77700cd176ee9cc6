package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/ardanlabs/jinja"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/tokenizer"
)

// ErrNoTemplate: the model carries no chat template, so a conversation
// cannot be turned into a prompt (completions of raw text still work).
var ErrNoTemplate = errors.New("the model has no chat template (tokenizer.chat_template); give one with --chat-template FILE, or use /v1/completions")

// Message is one turn of a conversation. Content is a string, or the
// OpenAI list of parts ([{"type": "text", "text": …}]) passed to the
// template as given.
type Message struct {
	Role    string `json:"role"`
	Content any    `json:"content"`
}

// Text returns the message's text: the string, or its text parts joined.
func (m Message) Text() string {
	switch c := m.Content.(type) {
	case string:
		return c
	case []any:
		var b strings.Builder
		for _, p := range c {
			if part, ok := p.(map[string]any); ok {
				if t, ok := part["text"].(string); ok {
					b.WriteString(t)
				}
			}
		}
		return b.String()
	}
	return ""
}

// ChatTemplate is a model's chat template, compiled, with the special
// tokens it is rendered with. It is safe for concurrent use.
type ChatTemplate struct {
	tmpl     *jinja.Template
	bos, eos string
	// Vars are further variables every rendering sees (a fixed
	// strftime_now or date_string for reproducible renderings): Go
	// values, or jinja.Values such as callables.
	Vars map[string]any
}

// TemplateError reports a chat template that does not compile or render.
type TemplateError struct {
	Stage string // "compile" or "render"
	Err   error
}

// Error formats the error on one line.
func (e *TemplateError) Error() string { return fmt.Sprintf("chat template: %s: %v", e.Stage, e.Err) }

// Unwrap returns the cause.
func (e *TemplateError) Unwrap() error { return e.Err }

// NewChatTemplate compiles src, a Jinja chat template, to be rendered
// with bos and eos as bos_token and eos_token.
func NewChatTemplate(src, bos, eos string) (*ChatTemplate, error) {
	t, err := jinja.Compile(src)
	if err != nil {
		return nil, &TemplateError{Stage: "compile", Err: err}
	}
	return &ChatTemplate{tmpl: t, bos: bos, eos: eos}, nil
}

// Render renders a conversation; addGenerationPrompt ends it with the
// opening of the assistant's turn.
func (c *ChatTemplate) Render(messages []Message, addGenerationPrompt bool) (string, error) {
	msgs := make([]any, len(messages))
	for i, m := range messages {
		msgs[i] = map[string]any{"role": m.Role, "content": m.Content}
	}
	data := map[string]jinja.Value{"messages": jinja.FromGoValue(msgs), "add_generation_prompt": jinja.NewBool(addGenerationPrompt),
		"bos_token": jinja.NewString(c.bos), "eos_token": jinja.NewString(c.eos)}
	for k, v := range c.Vars {
		if jv, ok := v.(jinja.Value); ok {
			data[k] = jv
		} else {
			data[k] = jinja.FromGoValue(v)
		}
	}
	out, err := c.tmpl.RenderValues(data)
	if err != nil {
		return "", &TemplateError{Stage: "render", Err: err}
	}
	return out, nil
}

// TemplateSource returns a checkpoint's chat template: a GGUF file's
// tokenizer.chat_template, or the chat_template of a safetensors
// directory's tokenizer_config.json (a string, or the entry named
// "default" of a list). A checkpoint without one is ErrNoTemplate.
func TemplateSource(c *load.Checkpoint) (string, error) {
	if f := c.GGUF(); f != nil {
		if !f.Has("tokenizer.chat_template") {
			return "", ErrNoTemplate
		}
		return f.String("tokenizer.chat_template")
	}
	if d := c.Safetensors(); d != nil && d.TokenizerConfigJSON() != nil {
		var cfg struct {
			ChatTemplate json.RawMessage `json:"chat_template"`
		}
		if err := json.Unmarshal(d.TokenizerConfigJSON(), &cfg); err != nil {
			return "", fmt.Errorf("tokenizer_config.json: %w", err)
		}
		var s string
		if json.Unmarshal(cfg.ChatTemplate, &s) == nil && s != "" {
			return s, nil
		}
		var named []struct{ Name, Template string }
		if json.Unmarshal(cfg.ChatTemplate, &named) == nil {
			for _, n := range named {
				if n.Name == "default" {
					return n.Template, nil
				}
			}
		}
	}
	return "", ErrNoTemplate
}

// specialText is the text of a special token, or "" for none (-1).
func specialText(t *tokenizer.Tokenizer, id int32) string {
	if id < 0 || int(id) >= t.VocabSize() {
		return ""
	}
	return t.Piece(id)
}

// ModelTemplate compiles the chat template for a model: src when it is
// not empty, else the checkpoint's own (TemplateSource), with the
// vocabulary's BOS and EOS texts. A model without a template gives nil
// and no error: chat requests are then refused with ErrNoTemplate.
func ModelTemplate(c *load.Checkpoint, tok *tokenizer.Tokenizer, src string) (*ChatTemplate, error) {
	if src == "" {
		var err error
		if src, err = TemplateSource(c); errors.Is(err, ErrNoTemplate) {
			return nil, nil
		} else if err != nil {
			return nil, err
		}
	}
	return NewChatTemplate(src, specialText(tok, tok.BOS()), specialText(tok, tok.EOS()))
}
