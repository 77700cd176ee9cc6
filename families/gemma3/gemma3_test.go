package gemma3

import (
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/internal/reftest"
	"github.com/pootlabs/poot/gguf"
)

func open(t *testing.T, name string) (*gguf.File, families.Model) {
	t.Helper()
	f, err := gguf.Open(filepath.Join(reftest.Dir(t), name))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	m, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return f, m
}

func TestReferenceF32(t *testing.T) {
	for _, c := range []struct {
		model, ref string
		capacity   int
	}{
		{"tiny-gemma3-f32.gguf", "tiny-gemma3-f32.ref.json", 32},
	} {
		t.Run(c.model, func(t *testing.T) {
			f, m := open(t, c.model)
			ref := reftest.ReadRef(t, filepath.Join(reftest.Dir(t), c.ref))
			reftest.CheckReference(t, m, reftest.GGUFBinder(f, m.Weights()), ref, c.capacity, 1e-3)
		})
	}
}

func TestLayouts(t *testing.T) {
	for _, name := range []string{"tiny-gemma3-f32.gguf"} {
		t.Run(name, func(t *testing.T) {
			f, m := open(t, name)
			toks := []int32{1, 15, 27, 100, 200, 300, 400, 500}
			reftest.CheckLayouts(t, m, reftest.GGUFBinder(f, m.Weights()), toks, 16)
		})
	}
}
