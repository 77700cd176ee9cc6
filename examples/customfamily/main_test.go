package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pootlabs/poot/cli"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/examples/parallel"
)

// The family's own binary has every subcommand of poot: each runs on a
// random checkpoint of the family.
func TestSubcommands(t *testing.T) {
	m := &parallel.Model{Vocab: 512, Dim: 64, Layers: 2, Heads: 4, KVHeads: 2, FFN: 128, MaxContext: 128, Eps: 1e-5, RopeTheta: 10000}
	path := filepath.Join(t.TempDir(), "parallel.gguf")
	if err := synth.Write(m, path, synth.Options{Seed: 1, Scale: 0.25}); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"inspect", "-m", path}, "parallel"},
		{[]string{"logits", "-m", path, "--tokens", "1,2,3"}, `"logits"`},
		{[]string{"generate", "-m", path, "-p", "Once upon a time", "-n", "4", "--seed", "1"}, ""},
		{[]string{"trace", "-m", path}, "layer.1"},
		{[]string{"bench", "-m", path, "--prompt", "4", "--gen", "2", "--reps", "1"}, "tokens/s"},
	} {
		var out, errs bytes.Buffer
		if status := cli.Run(c.args, &out, &errs, parallel.Row); status != 0 {
			t.Errorf("%s: status %d: %s", strings.Join(c.args, " "), status, errs.String())
			continue
		}
		if !strings.Contains(out.String()+errs.String(), c.want) {
			t.Errorf("%s: output does not mention %q:\n%s", strings.Join(c.args, " "), c.want, out.String())
		}
	}
}
