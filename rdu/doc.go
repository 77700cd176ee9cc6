// Package rdu is poot's third interpreter: the streamed lowering of a traced
// step for a reconfigurable dataflow accelerator, which runs a model one
// layer program at a time, streaming each layer's weights through the same
// spatial program.
//
// A model's layers fall into a few layer kinds ([LayerKinds]): layers whose
// equations are one program up to the names of the weights and states they
// read. Llama has one kind; Gemma 3 two (its sliding-window and its global
// attention layers); Llama 4 one per combination of rotary or not and dense
// or routed feed-forward. The lowering writes one program per kind, in the
// layer-program language of package rdu/lang, plus an embedding program and
// a head program, and a manifest that says which kind runs at each layer
// and binds every name each program declares to that layer's tensor: a
// checkpoint tensor (its name, stored dtype and byte range), a KV cache, a
// host table (rotary angles, for instance, computed for every position of
// the context), or the hidden state the previous program produced. So the
// cost of lowering, and the artifact a vendor ingests, do not grow with the
// model's depth.
//
// Lifting reads the graph's composite records: an rmsnorm, a rope, an
// attention core, a swiglu or a mixture of experts becomes its statement,
// with its attributes as clauses, and the primitives between them
// (residual additions, embedding scales, cache writes) become the
// language's primitive forms. Whatever the language cannot write is a
// *Reject naming the program, the statement and the reason; nothing is
// approximated.
//
// Package rdu is not a simulator: package rdu/sim runs bundles, from the
// language's definition alone, and certifies them against the oracle.
package rdu
