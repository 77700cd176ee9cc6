// Package ops holds the composite operations that model families are written
// in: normalisations, projections, rotary embeddings, attention, activations
// and feed-forward blocks (and, in the files of its second author, mixtures of
// experts, recurrent mixers and latent attention).
//
// Every function here is an ordinary generic Go function over a
// [poot.Builder] and its [poot.Traced] handles. It appends primitive equations
// only, inside a named scope (b.Scope), so printers show the structure and
// passes such as the planner's flash-attention rewrite can find a composite by
// its scope. None of them is an opcode: an interpreter that implements the
// primitives runs every composite, and the composites are the specification
// that fused kernels are checked against.
//
// What ops is for: the arithmetic of a model, written so a family reads like
// its paper. There is no error plumbing: the builder keeps the first error
// (an operand of the wrong shape, a missing weight, an inconsistent
// hyperparameter reported through Builder.Fail), and every later call returns
// a poisoned handle. Shape arithmetic goes through Builder.Dim, which is safe
// after an error, so no function here panics on any input.
//
// What ops is not for: it knows nothing about checkpoints, weight names,
// step specifications, KV-cache paging, batching policy or backends. A weight
// is whatever handle the family passes (any float dtype for contractions,
// read as stored; norms and biases are cast to F32 explicitly). Host helpers
// (rotary frequency tables) are plain functions of their configuration.
//
// Conventions shared by the package:
//   - Activations are F32. A sequence of T new tokens is a matrix [T, C]; a
//     batch of R sequences of T tokens each is the same matrix with R*T rows.
//   - Multi-head values keep heads packed on the last axis, [T, H*D]; the
//     functions that need heads take their count.
//   - A zero poot.Traced value means "absent" for optional operands (a bias,
//     a norm weight, attention sinks).
//   - Positions are the absolute I32 positions of the step's new tokens (the
//     SlotPos slot), and masks are built from them in the graph.
package ops
