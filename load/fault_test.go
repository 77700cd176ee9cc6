package load_test

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/internal/mmap"
	"github.com/pootlabs/poot/load"
)

// A checkpoint truncated while it is mapped makes the reads of its data
// fault; CheckData and Bind turn that into a *mmap.FaultError.
func TestTruncatedWhileMapped(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.gguf")
	const rows, cols = 64, 1024 // 256 KiB a tensor: whole pages past the header
	ts := []gguf.WriterTensor{
		{Name: "a", DType: poot.F32, Shape: poot.Shape{rows, cols}, Data: make([]byte, rows*cols*4)},
		{Name: "b", DType: poot.F32, Shape: poot.Shape{rows, cols}, Data: make([]byte, rows*cols*4)},
	}
	if err := gguf.WriteFile(path, nil, ts, 0); err != nil {
		t.Fatal(err)
	}
	c, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := os.Truncate(path, 4096); err != nil {
		t.Fatal(err)
	}
	var fe *mmap.FaultError
	if _, err := c.CheckData("b"); !errors.As(err, &fe) || !errors.Is(err, load.ErrFault) {
		t.Errorf("CheckData on a truncated file = %v, want a FaultError", err)
	}
	b := poot.NewBuilder[struct{}](poot.Limits{})
	x := b.Constant("stack", poot.T(poot.F32, 2, rows, cols))
	g, err := b.Finish(poot.Out(b.Cast(x, poot.F32)))
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = load.Bind(g, c, func(string) (load.Source, bool) { return load.Source{Parts: []string{"a", "b"}}, true })
	if !errors.As(err, &fe) {
		t.Errorf("Bind copying a truncated file = %v, want a FaultError", err)
	}
}
