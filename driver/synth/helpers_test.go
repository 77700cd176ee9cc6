package synth_test

import (
	// The tests run sessions on the default interpreter, the cpu backend.
	_ "github.com/pootlabs/poot/lower/cpu/register"
	"github.com/pootlabs/poot/tokenizer"
)

func tokenizerOpts() tokenizer.EncodeOptions { return tokenizer.EncodeOptions{AddBOS: true} }
