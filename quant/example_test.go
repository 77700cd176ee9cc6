package quant_test

import (
	"fmt"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/quant"
)

// A row of 32 weights stored as Q8_0 takes one 34-byte block; decoding it
// gives ggml's values (the scale 2/127 is stored as binary16, hence
// -1.9998779), and DotRow gives the reference dot product (exactly 42.75
// before quantization).
func Example() {
	x := make([]float32, 32)
	for i := range x {
		x[i] = float32(i-16) / 8
	}
	stored := make([]byte, poot.Q8_0.RowBytes(int64(len(x))))
	if err := quant.QuantizeRow(poot.Q8_0, stored, x); err != nil {
		fmt.Println(err)
		return
	}
	y := make([]float32, len(x))
	if err := quant.DequantizeRow(poot.Q8_0, y, stored); err != nil {
		fmt.Println(err)
		return
	}
	dot, _ := quant.DotRow(poot.Q8_0, stored, x)
	fmt.Printf("%d bytes; x[0] = %g decodes to %g; x·x ≈ %.3f\n", len(stored), x[0], y[0], dot)

	err := quant.DequantizeRow(poot.Q4_K, y, stored)
	fmt.Println(err)
	// Output:
	// 34 bytes; x[0] = -2 decodes to -1.9998779; x·x ≈ 42.722
	// quant: dequantize q4_K: size mismatch: 32 elements is not a whole number of 256-element blocks
}

// An MXFP4 block holds 32 values as one power-of-two exponent byte and 16
// bytes of 4-bit E2M1 codes. The largest magnitude here, 5.5, puts the
// exponent at 127 (element scale 1, levels 0, 0.5, 1, 1.5, 2, 3, 4, 6), so
// 5.5 becomes 6 and 0.3 becomes 0.5; code 7 (6) of element 16 sits in the
// high nibble of byte 0.
func Example_mxfp4() {
	x := make([]float32, 32)
	x[0], x[1], x[16] = 0.3, -2.2, 5.5
	stored := make([]byte, poot.MXFP4.RowBytes(32))
	if err := quant.QuantizeRow(poot.MXFP4, stored, x); err != nil {
		fmt.Println(err)
		return
	}
	y := make([]float32, 32)
	if err := quant.DequantizeRow(poot.MXFP4, y, stored); err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%d bytes: % x …; decoded %g %g %g\n", len(stored), stored[:3], y[0], y[1], y[16])
	// Output:
	// 17 bytes: 7f 71 0c …; decoded 0.5 -2 6
}
