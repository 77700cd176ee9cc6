package serve

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/ardanlabs/jinja"
)

// The renderings in testdata/templates/renderings.json were made by
// transformers.js's Jinja engine (@huggingface/jinja 0.5) under Node.js
// from the same templates and conversation; they show each model's
// documented turn format.
func TestTemplatesRenderKnownConversations(t *testing.T) {
	data, err := os.ReadFile("testdata/templates/renderings.json")
	if err != nil {
		t.Fatal(err)
	}
	var want map[string]string
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	special := map[string][2]string{
		"llama3":      {"<|begin_of_text|>", "<|eot_id|>"},
		"qwen2.5":     {"", "<|im_end|>"},
		"qwen3":       {"", "<|im_end|>"},
		"gemma3":      {"<bos>", "<eos>"},
		"mistral":     {"<s>", "</s>"},
		"deepseek-r1": {"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"},
		"deepseek-v3": {"<｜begin▁of▁sentence｜>", "<｜end▁of▁sentence｜>"},
		"gpt-oss":     {"<|startoftext|>", "<|return|>"},
	}
	conversation := []Message{
		{Role: "system", Content: "You are a terse assistant."},
		{Role: "user", Content: "What is 2+2?"},
		{Role: "assistant", Content: "4."},
		{Role: "user", Content: "And 3+3?"},
	}
	for name, tok := range special {
		t.Run(name, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("testdata/templates", name+".jinja"))
			if err != nil {
				t.Fatal(err)
			}
			ct, err := NewChatTemplate(string(src), tok[0], tok[1])
			if err != nil {
				t.Fatal(err)
			}
			ct.Vars = map[string]any{"date_string": "02 Dec 2025", "strftime_now": jinja.NewCallable("strftime_now",
				func([]jinja.Value, map[string]jinja.Value) (jinja.Value, error) {
					return jinja.NewString("2025-12-02"), nil
				})}
			msgs := conversation
			switch name {
			case "mistral": // user and assistant turns only
				msgs = conversation[1:]
			case "gemma3": // its template reads the system turn as parts
				msgs = append([]Message{{Role: "system", Content: []any{map[string]any{"type": "text", "text": conversation[0].Content}}}}, conversation[1:]...)
			}
			for _, gen := range []bool{true, false} {
				key := name + "/nogen"
				if gen {
					key = name + "/prompt"
				}
				got, err := ct.Render(msgs, gen)
				if err != nil {
					t.Fatal(err)
				}
				if got != want[key] {
					t.Errorf("%s rendered\n%q\nwant\n%q", key, got, want[key])
				}
			}
		})
	}
}

func TestTemplateErrors(t *testing.T) {
	var te *TemplateError
	if _, err := NewChatTemplate("{% for x in %}", "", ""); !errors.As(err, &te) || te.Stage != "compile" {
		t.Errorf("a broken template: %v, want a compile TemplateError", err)
	}
	src, err := os.ReadFile("testdata/templates/mistral.jinja")
	if err != nil {
		t.Fatal(err)
	}
	ct, err := NewChatTemplate(string(src), "<s>", "</s>")
	if err != nil {
		t.Fatal(err)
	}
	// Mistral's template raises an exception for a system turn.
	if _, err := ct.Render([]Message{{Role: "system", Content: "x"}}, true); !errors.As(err, &te) || te.Stage != "render" {
		t.Errorf("a system turn for mistral: %v, want a render TemplateError", err)
	}
}
