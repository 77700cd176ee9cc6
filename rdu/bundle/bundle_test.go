package bundle

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pootlabs/poot/rdu/lang"
)

func sample(t *testing.T) *Bundle {
	t.Helper()
	b := &Bundle{Programs: map[string]*lang.Program{}, Tables: make([]byte, 4*2*3)}
	for name, src := range map[string]string{
		"embed": "## embed\nLet tok be 1.\n",
		"kind0": "## kind0\nLet x be a 1 by 2 tensor of Real.\n",
		"head":  "## head\nLet xo0 be a 1 by 2 tensor of Real.\n",
	} {
		p, err := lang.Parse(src)
		if err != nil {
			t.Fatal(err)
		}
		b.Programs[name] = p
	}
	b.Manifest = Manifest{Format: Format, Deployment: Deployment{Kind: "decode", Ctx: 4, Tokens: 1},
		Embed: Program{Name: "embed", File: "embed.prog"}, Head: Program{Name: "head", File: "head.prog"},
		Kinds:  []Kind{{Name: "kind0", File: "kind0.prog", Layers: []int{0, 1}}},
		Layers: []Layer{{Layer: 0, Kind: "kind0"}, {Layer: 1, Kind: "kind0"}},
		Tables: []Table{{Name: "T", Rows: 2, Cols: 3}},
	}
	return b
}

// TestCheck: a manifest inconsistent with itself is an ErrBundle.
func TestCheck(t *testing.T) {
	if err := sample(t).Check(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		change func(b *Bundle)
		want   string
	}{
		{"format", func(b *Bundle) { b.Manifest.Format = "other" }, "format"},
		{"deployment", func(b *Bundle) { b.Manifest.Deployment.Kind = "tensor" }, "deployment"},
		{"batch", func(b *Bundle) { b.Manifest.Deployment.Kind = "batched" }, "0 sequences"},
		{"tokens", func(b *Bundle) { b.Manifest.Deployment.Tokens = 9 }, "tokens"},
		{"layer of another kind", func(b *Bundle) { b.Manifest.Layers[1].Kind = "kind9" }, "layer entry 1"},
		{"kind listing an unbound layer", func(b *Bundle) { b.Manifest.Kinds[0].Layers = []int{0, 1, 2} }, "lists layer 2"},
		{"missing program", func(b *Bundle) { delete(b.Programs, "head") }, "no program"},
		{"table past the data", func(b *Bundle) { b.Manifest.Tables[0].Offset = 4 }, "not inside tables.bin"},
	} {
		b := sample(t)
		c.change(b)
		err := b.Check()
		if !errors.Is(err, ErrBundle) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

// TestWriteRead: a bundle written reads back; a program file holding
// another program, or named outside the bundle, is refused.
func TestWriteRead(t *testing.T) {
	dir := t.TempDir()
	b := sample(t)
	if err := b.Write(dir); err != nil {
		t.Fatal(err)
	}
	back, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if lang.Format(back.Programs["kind0"]) != lang.Format(b.Programs["kind0"]) || len(back.Manifest.Layers) != 2 {
		t.Error("the bundle read back differs")
	}
	if err := os.WriteFile(filepath.Join(dir, "kind0.prog"), []byte("## head\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); !errors.Is(err, ErrBundle) {
		t.Errorf("a file holding another program: %v", err)
	}
	b.Manifest.Kinds[0].File = "../kind0.prog"
	if err := b.Write(t.TempDir()); !errors.Is(err, ErrBundle) {
		t.Errorf("writing a program outside the bundle: %v", err)
	}
	dir3 := t.TempDir()
	b2 := sample(t)
	if err := b2.Write(dir3); err != nil {
		t.Fatal(err)
	}
	js, _ := os.ReadFile(filepath.Join(dir3, "manifest.json"))
	js = []byte(strings.Replace(string(js), `"file": "kind0.prog"`, `"file": "../kind0.prog"`, 1))
	if err := os.WriteFile(filepath.Join(dir3, "manifest.json"), js, 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir3); !errors.Is(err, ErrBundle) {
		t.Errorf("a program file outside the bundle: %v", err)
	}
}
