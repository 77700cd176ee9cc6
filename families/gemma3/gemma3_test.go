package gemma3

import (
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/families/familytest"
)

func open(t *testing.T, name string) (familytest.Binder, families.Model) {
	t.Helper()
	c := familytest.Open(t, name)
	m, err := FromGGUF(c.GGUF())
	if err != nil {
		t.Fatal(err)
	}
	return familytest.LoadBinder(c, m.Weights()), m
}

// TestReference compares with llama.cpp's logits at every position and its
// greedy tokens. The bound is 1e-3 for both files although the F32 one
// agrees to about 2e-4: ggml computes GELU from an fp16 table, which
// differs from poot's exact tanh form at fp16 precision of the activation.
func TestReference(t *testing.T) {
	for _, c := range []struct{ model, ref string }{
		{"tiny-gemma3-f32.gguf", "tiny-gemma3-f32.ref.json"},
		{"tiny-gemma3-f16.gguf", "tiny-gemma3-f16.ref.json"},
	} {
		t.Run(c.model, func(t *testing.T) {
			bind, m := open(t, c.model)
			ref := familytest.ReadRef(t, filepath.Join(familytest.Dir(t), c.ref))
			familytest.CheckReference(t, m, bind, ref, 32, 1e-3, true)
		})
	}
}

// TestLayouts checks the step laws with a sliding window (4) shorter than
// the sequence.
func TestLayouts(t *testing.T) {
	bind, m := open(t, "tiny-gemma3-f32.gguf")
	familytest.CheckLayouts(t, m, bind, []int32{1, 15, 27, 100, 200, 300, 400, 500}, 16)
}

func TestWindows(t *testing.T) {
	_, m := open(t, "tiny-gemma3-f32.gguf")
	d := m.(*families.Decoder)
	if got := d.Windows; len(got) != 3 || got[0] != 4 || got[1] != 4 || got[2] != 0 {
		t.Errorf("windows %v, want [4 4 0]", got)
	}
	if d.Rope.Theta != 1e6 || d.LocalRope == nil || d.LocalRope.Theta != 1e4 {
		t.Errorf("rope bases: global %v, local %+v", d.Rope.Theta, d.LocalRope)
	}
}
