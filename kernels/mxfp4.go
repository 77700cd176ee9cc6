package kernels

import "github.com/pootlabs/poot/quant"

// MXFP4 weights are int8 dot products like the legacy 32-element types:
// each 4-bit code becomes ggml's doubled E2M1 value (-12…12) through a
// 16-entry table, and each block's E8M0 exponent becomes its float32 scale
// 2^(e-128) through a 256-entry one. The tables come from package quant,
// so the kernels cannot drift from the format's definition.

// mxfp4Values is quant.MXFP4Value's table; the assembly keeps its own copy
// as VPSHUFB's lookup table (mxfp4vals in quant_amd64.s), and
// TestMXFP4Codes runs every code at every position through both.
var mxfp4Values = func() (t [16]int8) {
	for c := range t {
		t[c] = quant.MXFP4Value(byte(c))
	}
	return t
}()

// e8m0Half maps an MXFP4 block's exponent byte to its scale; the assembly
// reads it too.
var e8m0Half = func() (t [256]float32) {
	for e := range t {
		t[e] = quant.E8M0Half(uint8(e))
	}
	return t
}()
