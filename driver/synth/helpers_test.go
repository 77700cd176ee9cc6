package synth_test

import "github.com/pootlabs/poot/tokenizer"

func tokenizerOpts() tokenizer.EncodeOptions { return tokenizer.EncodeOptions{AddBOS: true} }
