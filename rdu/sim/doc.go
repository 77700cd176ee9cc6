// Package sim is poot's simulator of the streamed accelerator: it
// certifies that a bundle's programs compose (Check), and runs a bundle on
// the CPU (Machine): a decode bundle a token a run, a prefill bundle a
// chunk a run, a batched bundle a token of each sequence a run, reading
// each weight from the checkpoint where the manifest
// says it lies, keeping the KV caches and reading the host tables.
//
// Its statements mean what package lang's documentation says they mean,
// and nothing else: the simulator never sees the graph a bundle was lowered
// from, so running a bundle and the graph side by side is an independent
// check of the lowering. Values are float32; sums and products accumulate
// in float64 and are rounded once, as the oracle's do. A Q8_0 weight is
// decoded exactly (its int8 values times its block scales), which is what
// folding it on the chip computes.
//
// A tensor-parallel bundle's chips are certified by their placement
// (Check): a statement runs on the chip of the name it binds, reads only
// that chip's slices and the spine's values, and crosses chips only in an
// all-reduce, whose folds sum one partial a chip in chip order; each chip
// reads only its slices of a weight (the byte runs of each, joined along
// the axis they cut) and keeps only its slices of a cache or a recurrent
// state, in storage of its own.
//
// The recurrent mixer's statements (causal conv, decay, gated delta) run as
// the language defines them, written here from that definition: the
// convolution over its carried window, which it then shifts; the decay
// rate·softplus(x + bias); the gated delta rule a row at a time, a value
// head at a time, its state decayed, corrected toward the value along the
// unit key, and read by the scaled unit query, then normed and gated. Their
// states are bound as recurrent (bundle.Binding.Recurrent): the whole state,
// not a cache of ctx positions, read as zeros where a run starts at
// position 0.
package sim
