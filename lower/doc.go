// Package lower is the planner: it turns a bound graph and a target's
// capabilities into a [Plan] that a backend executes step after step.
//
// The pipeline is a short list of named passes over a list of kernels, each
// of which a caller can switch off by name ([Options]; [Passes] lists them).
// A pass runs only when the target runs the kernel kinds it makes
// ([Target].Kinds), so a backend is never handed a kernel it cannot run:
//
//  1. legalize: one kernel per equation. Literal and Iota become init
//     kernels (computed once, at compile time), Reshape an alias (no work),
//     a MatMul whose weight has rank 2 a contraction that reads the weight
//     as stored (packed blocks decoded in registers); every other equation
//     a generic kernel of its primitive. A weight dtype the target cannot
//     read is a *[LegalizeError].
//  2. flash_attention: each "attention" composite that ops.Attention
//     records (found by its record, read by [AttentionOf]: name,
//     attributes, operands) becomes one fused kernel that reads q, the K and
//     V caches directly (sharing K/V rows between the n_rep query heads of a
//     group), the mask, scale, soft cap and sinks, and runs an online
//     softmax per query row. It runs only for a target that fuses the
//     composite ([Target].Composites). For a target whose kernel reads F16
//     or Q8_0 caches ([Target].NarrowKV), keys and values cast from such
//     caches are read as stored and the casts do not run ([Attention].KV).
//  3. rope: each "rope" composite that ops.RoPE records ([RotaryOf])
//     becomes one kernel that rotates every head's pairs by its row's
//     cos and sin tables, for a target that fuses the composite: the body
//     is a program of strided loads (pairs, broadcast tables), whose
//     interpretation cost several times the rotation in a decode step.
//  4. swiglu: likewise each "swiglu" composite (ops.SwiGLU) over F32
//     operands of one shape, as one pass over gate and up ([Gated]).
//  5. rmsnorm: likewise each "rmsnorm" composite (ops.RMSNorm,
//     ops.RMSNormHeads) over F32 rows and an F32 weight or none, as one
//     pass a row ([Norm]) that also does the residual add before it when
//     nothing else reads the sum first; its sum of squares may be taken
//     in another order than the body's, so only a target that fuses it
//     (not an exact one) gets it.
//  6. elementwise: runs of elementwise equations over the same number of
//     elements (with broadcasts of their operands folded in as strided
//     loads, and literals as immediates) become one [Program]: a small
//     register machine a backend runs over chunks of a row.
//  7. reduce_fusion: a sum or max over the last axis whose operand is the
//     only store of the program just before it takes that program as its
//     prologue, so x*x feeds a sum of squares without a buffer.
//  8. row_fusion: a sequence of last-axis reductions and programs that
//     read each other's results only within a row (per-row values
//     broadcast along the row) runs row by row as one kernel, so an
//     RMSNorm left unfused (with the residual add before it) and softmax
//     read each row once.
//  9. concat_stores: a Concat of parts the program just before it
//     computes is written by that program in place, each part a strided
//     store (the halves of a rotary embedding the target does not fuse).
//  10. inplace: a WriteRows into a state input that nothing else reads
//     writes the state buffer in place, so a KV-cache append never copies
//     the cache.
//
// Memory planning then gives every value that crosses kernels a stable
// offset in one arena, chosen from the values' lifetimes (first fit,
// largest first), so that a step can be captured once and replayed with
// the slot buffers rewritten in place.
//
// What it is not: it runs nothing. Package lower/cpu is a backend; a CUDA
// backend reuses the same plans.
package lower
