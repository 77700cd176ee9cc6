// Package quant converts between float32 and the stored element formats of
// GGUF: the plain half-precision types (F16, BF16), the 32-element legacy
// blocks (Q8_0, Q4_0, Q4_1, Q5_0, Q5_1), the 256-element K-quant
// super-blocks (Q4_K, Q5_K, Q6_K, Q8_K) and MXFP4, the 32-element FP4 blocks
// with a power-of-two scale that gpt-oss's experts are stored in.
//
// Every conversion is bit-exact with ggml's reference C code (llama.cpp tag
// b10573; MXFP4 checked against b10472): [DequantizeRow] reproduces ggml's
// to_float and [QuantizeRow] reproduces the quantize_row_*_ref functions,
// byte for byte. That is why the
// arithmetic here is written out in float32, in ggml's source order, with each
// product wrapped in an explicit float32 conversion: Go may otherwise fuse a
// multiply and an add into one FMA on some architectures, and a single fused
// rounding is enough to change a stored byte.
//
// The package works on rows: a run of whole blocks along a tensor's last
// axis, exactly as a weight matrix sits in a model file. It knows nothing of
// tensors, files or graphs, and it does not try to be fast beyond simple,
// allocation-free loops; fused quantized kernels belong to the backends, which
// can test themselves against [DequantizeRow] and [DotRow].
//
// No function here panics on any input: sizes are checked and reported as an
// [*Error], and garbage bytes decode to garbage numbers, never to a crash.
package quant
