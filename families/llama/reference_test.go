package llama_test

import (
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot/driver/drivertest"
	"github.com/pootlabs/poot/families/familytest"
)

// TestAttentionBiasReference checks a Llama with biases on the q, k, v and
// output projections (Hugging Face's attention_bias; llama.cpp reads them
// from the tensor table) against llama.cpp, through the driver on every
// interpreter. The fixture's weights are strong (N(0, 0.25)), so a missing
// bias moves the logits by whole units.
func TestAttentionBiasReference(t *testing.T) {
	ref := familytest.ReadRef(t, filepath.Join("testdata", "tiny-bias-f32.ref.json"))
	drivertest.CheckReference(t, filepath.Join("testdata", "tiny-bias-f32.gguf"), ref, 1e-3)
}

// TestRelativeTolerance: the kit's relative tolerance is a fraction of the
// reference's logit range.
func TestRelativeTolerance(t *testing.T) {
	ref := familytest.ReadRef(t, filepath.Join("testdata", "tiny-bias-f32.ref.json"))
	if tol := ref.Relative(1e-4); !(tol > 1e-4 && tol < 1e-2) {
		t.Errorf("1e-4 of a range of about 12 logits is %g", tol)
	}
	drivertest.CheckReference(t, filepath.Join("testdata", "tiny-bias-f32.gguf"), ref, ref.Relative(1e-4))
}
