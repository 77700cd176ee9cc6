// Package interp evaluates graphs on the host. It defines what every
// interpreter of poot shares (the [Interpreter] and [Executable] interfaces,
// the way constants, slots and state are bound, and the typed [Error] of a
// failed step) and provides the oracle: [Oracle], a plain, exact evaluator
// that runs a graph equation by equation through the host kernels of
// internal/hostexec (one per primitive; elementwise primitives through
// the scalar meaning their poot.Op record holds).
//
// The oracle is the reference every other interpreter is compared with, so
// it is written to be obviously right rather than fast. Values are float32,
// int32 or bytes; every reduction and contraction accumulates in float64;
// transcendental functions are computed in float64 and rounded once. A
// contraction reads its weight as stored (F32, F16, BF16 or any packed type,
// one row at a time); other primitives read half-precision and packed data
// only through the layout primitives, Gather and Cast, which keep the stored
// bytes, so a Cast decodes exactly what the checkpoint holds.
//
// Compile allocates one buffer per value once; Run rewrites them in place, so
// a step allocates nothing beyond its results. Runtime faults (an index out
// of range, a slot outside its declared range, an integer division by zero)
// are errors naming the equation and its scope; NaN and Inf in data
// propagate as IEEE 754 says.
//
// It is not a fast CPU backend (that is the planner's job), and it knows
// nothing about checkpoints, tokenizers or families.
//
// The oracle assumes a little-endian host, as every Go port of interest is;
// Compile reports ErrUnsupported elsewhere.
package interp
