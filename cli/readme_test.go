package cli

import (
	"os"
	"strings"
	"testing"
)

// The README's first commands are the demo and the tests, exactly.
func TestReadmeFirstCommands(t *testing.T) {
	data, err := os.ReadFile("../README.md")
	if err != nil {
		t.Skip("no README.md at the repository root")
	}
	text := string(data)
	start := strings.Index(text, "```\n")
	if start < 0 {
		t.Fatal("README.md has no code block")
	}
	rest := text[start+4:]
	block := rest[:strings.Index(rest, "```")]
	if want := "go run ./cmd/poot demo\ngo test ./...\n"; block != want {
		t.Errorf("README's first code block is %q, want %q", block, want)
	}
}
