package load_test

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/gguf"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/safetensors"
)

// A copied checkpoint reads the same tensors as a mapped one and no longer
// depends on its files: truncating or removing them changes nothing.
func TestCopied(t *testing.T) {
	dir := t.TempDir()
	data := make([]byte, 64*1024*4)
	for i := range data {
		data[i] = byte(i*7 + i>>10)
	}
	g := filepath.Join(dir, "m.gguf")
	if err := gguf.WriteFile(g, nil, []gguf.WriterTensor{{Name: "w", DType: poot.F32, Shape: poot.Shape{64, 1024}, Data: data}}, 0); err != nil {
		t.Fatal(err)
	}
	st := filepath.Join(dir, "st")
	dt, _ := safetensors.DTypeOf(poot.F32)
	if err := safetensors.WriteDir(st, []byte(`{"architectures":["LlamaForCausalLM"]}`), []safetensors.WriterTensor{{Name: "w", DType: dt, Shape: poot.Shape{64, 1024}, Data: data}}, 0); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{g, st} {
		mapped, err := load.OpenWith(path, load.Mapped)
		if err != nil {
			t.Fatal(err)
		}
		if want, err := mapped.Tensor("w"); err != nil || !bytes.Equal(want.Data, data) {
			t.Fatalf("%s: the mapped tensor: %v", path, err)
		}
		c, err := load.OpenWith(path, load.Copied)
		if err != nil {
			t.Fatal(err)
		}
		if !c.Resident() || mapped.Resident() {
			t.Errorf("%s: Resident() = %v copied, %v mapped", path, c.Resident(), mapped.Resident())
		}
		// Auto leaves a file below AutoMinBytes mapped.
		if a, err := load.Open(path); err != nil || a.Resident() {
			t.Errorf("%s: Auto on a small checkpoint: resident %v, %v", path, a != nil && a.Resident(), err)
		} else {
			a.Close()
		}
		file := path
		if path == st {
			file = filepath.Join(st, safetensors.SingleFile)
		}
		if err := os.Truncate(file, 4096); err != nil {
			t.Fatal(err)
		}
		got, err := c.Tensor("w")
		if err != nil {
			t.Fatalf("%s: reading a copied checkpoint whose file was truncated: %v", path, err)
		}
		if !bytes.Equal(got.Data, data) {
			t.Errorf("%s: the copied tensor differs from the file's", path)
		}
		if _, err := c.CheckData("w"); err != nil {
			t.Errorf("%s: CheckData on the copy: %v", path, err)
		}
		c.Close()
		mapped.Close() // its reads would fault now
	}
	if _, err := load.OpenWith(g, load.Residency(7)); err == nil {
		t.Error("an unknown residency was accepted")
	}
}

// Residency reads and writes its names, as flags and JSON carry them.
func TestResidencyText(t *testing.T) {
	for _, r := range []load.Residency{load.Auto, load.Mapped, load.Copied} {
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		var back load.Residency
		if err := json.Unmarshal(b, &back); err != nil || back != r {
			t.Errorf("%v: round trip through %s gave %v, %v", r, b, back, err)
		}
	}
	var r load.Residency
	if err := r.UnmarshalText([]byte("huge")); err == nil {
		t.Error(`"huge" was accepted`)
	}
}
