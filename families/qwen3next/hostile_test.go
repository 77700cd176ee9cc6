package qwen3next_test

import (
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/families/familytest"
	"github.com/pootlabs/poot/families/registry"
	"github.com/pootlabs/poot/gguf"
)

// TestHugeHeaderNumbers sets a hyperparameter that drives a loop of the
// tracer (the convolution's taps) to 2^30: configuring the model must fail
// with an error, at a cost bounded by the file's tensor table, not loop a
// billion times or run out of memory before the tensor shapes are checked.
func TestHugeHeaderNumbers(t *testing.T) {
	c, _ := open(t, filepath.Join("testdata", "tiny-f32.gguf"))
	f := c.GGUF()
	for _, key := range []string{"qwen3next.ssm.conv_kernel", "qwen3next.ssm.state_size", "qwen3next.ssm.group_count", "qwen3next.ssm.time_step_rank"} {
		kvs := f.KVs()
		found := false
		for i, kv := range kvs {
			if kv.Key == key {
				kvs[i], found = gguf.KV{Key: key, Value: gguf.ValueOf(uint32(1 << 30))}, true
			}
		}
		if !found {
			t.Fatalf("the fixture has no %s", key)
		}
		bad := familytest.ParseGGUF(t, familytest.EditGGUF(t, f, kvs, nil))
		if _, err := registry.FromGGUF(bad); err == nil {
			t.Errorf("%s = 2^30 configured a model", key)
		}
	}
}
