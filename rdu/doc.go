// Package rdu is poot's third interpreter: the streamed lowering of a traced
// step for a reconfigurable dataflow accelerator, which runs a model one
// layer program at a time, streaming each layer's weights through the same
// spatial program.
//
// A model's layers fall into a few layer kinds ([LayerKinds]): layers whose
// equations are one program up to the names of the weights and states they
// read, with the same step tables (attention masks, rotary angles) and
// weights stored in the same dtypes. Llama has one kind; Gemma 3 two (its
// sliding-window and its global attention layers); DeepSeek-V2 two (its
// dense first layers and its expert layers); Llama 4 one per
// combination of rotary or not and dense or routed feed-forward. [Lower]
// writes one program per kind, in the layer-program language of package
// rdu/lang, for the kind's first layer, plus an embedding program and a
// head program, and a manifest that says which kind runs at each layer and
// binds every name each program declares, for that layer, to a checkpoint
// tensor (its name, stored dtype and byte range; a projection stored Q8_0
// is declared Q8_0, every other weight is read dense), a KV cache, a host
// table (rotary angles computed for every position of the context), the
// runtime inputs, or the hidden state the previous program leaves. The
// cost of lowering, and what a vendor ingests besides the manifest, do not
// grow with the model's depth.
//
// Three deployments are written: decode (one token of one sequence a run,
// tok and pos runtime inputs, every attention layer appending to and
// attending over its cache of ctx positions; a step of several tokens
// runs as that many decode runs), prefill (a chunk of one sequence as the
// rows of one run, over the decode deployment's caches, so a decode bundle
// continues from them; a table of the positions, Llama 4's attention
// temperature, is read at the chunk's positions, the runtime input poss),
// and batched decode (one token of each of B
// sequences a run, their hidden states stacked as the rows X, bxo0, …;
// every weight is read once for all of them, and the statements that read
// a position, rotations, cache writes and attention, are written once a
// sequence over its own caches Kc3_s1 and position pos_s1, bound to
// sequence b's block of the step's caches). A paged cache is refused: the
// language has no form for cache rows a table of slots chooses.
//
// The decode and batched deployments are also written tensor-parallel
// over tp chips ([TensorParallel], Options.TP): the embedding and the head
// on the replicated spine, each kind's program over the chips, every chip
// its own attention heads (a run of key-value heads with their query
// heads), its own key heads of a gated delta rule (each with its value
// heads), and its feed-forward columns, each chip's partial of the output
// projection and of the down projection summed by an all-reduce, two a
// layer. The split is found column by column through the kind's program,
// so a fused projection (Falcon's, GPT-NeoX's and Phi-3's query, key and
// value columns, Qwen3-Next's q, k, v and z, its beta and alpha) splits
// as its heads do: a chip's part of it is several runs of its columns,
// and the column views that cut it are written over the chip's part with
// the chip's counts. The chips' names carry _c{c} (Wq0_c1, Kc0_c1); the
// manifest places each on its chip, lists the all-reduces, and binds each
// chip's part of a weight to its slices, the byte runs in the checkpoint
// of each run of rows or columns (a packed type cut only at its block
// boundaries), and of a cache or recurrent state to its runs of columns
// or rows. A model that does not split over tp chips is a *TPError naming
// the kind, the statement, its binder and why: heads or key heads too few
// for the chips, a packed block cut, an expert mixture, a latent
// attention, an attention with sinks.
//
// Lifting reads the graph's composite records: an rmsnorm or layernorm, a
// rope, an attention core, a swiglu, a gelu or a mixture of experts becomes
// its statement,
// with its attributes as clauses, and the primitives between them
// (residual additions, parallel residuals, embedding scales, biases, the
// columns of a fused QKV projection, cache writes) become the language's
// primitive forms.
//
// The recurrent mixer of Qwen3-Next and Qwen3.5 lifts to its statements:
// the causal_conv record to "causal conv", gated_delta_decay to "decay",
// and gated_delta (the delta rule with its query and key L2 norms, its
// gated norm and its output gate) to "gated delta"; their states, the
// convolution's window and the rule's Hv·Dv by Dk matrices, are bound as
// recurrent states, and the step's reset of them at a sequence's start is
// the statements' "from position" clause. The strided cuts of fused
// projections into heads (a reshape, a slice of one axis, a reshape back:
// Qwen3-Next's query and gate, its q, k, v and z, its beta and alpha) are
// columns. Such a model lowers to two kinds, its delta-rule layers and its
// attention layers, as the decode, the prefill and the batched
// deployments (batched: the convolution and the delta rule written once a
// sequence over its block of the states, Cs0_s1 from position
// pos_s1), and over chips: each chip its key heads with their value
// heads (h/(H/G), or h mod G in llama.cpp's tiled order), its columns of
// the q, k and v projections and of the causal conv's filter and window,
// its columns of the decay's bias and rate, of beta and of the gate, its
// value heads' rows of the delta rule's state, the per-head norm whole,
// and its rows of the output projection, whose partials an all-reduce
// sums as attention's are. Over more chips than key heads it is a
// *TPError; so is Qwen3-Next's expert mixture.
//
// DeepSeek-V2's and V3's latent attention lifts in the seed's absorbed
// form, whichever form the graph computes: the compressed keys (the
// latent_kv record) part by part, the cache of latent rows Kc as the one
// key head every query head attends over with the latent columns as its
// values, and the per-head products with W_UK and W_UV ("matmul … across
// H heads") reading weights the manifest cuts head by head from kv_b, or
// from its split k_b and v_b (bundle.HeadCut, filled dense). Such a model
// lowers to two kinds, its dense first layers and its expert layers, as
// every deployment but the tensor-parallel one, which is a *TPError
// naming latent attention. A Hugging Face checkpoint's experts, one tensor
// an expert, are bound as the parts of their stacks (bundle.Part).
//
// Whatever the language cannot write is a *Reject naming the program, the
// statement, its binder and the reason; nothing is approximated.
//
// A bundle is certified ([CertifyKinds], [Certify]) by package rdu/sim,
// which runs it from the language's definition alone, against the oracle
// on the graph it was lowered from: each kind once by itself, against its
// first layer's equations, and the whole bundle over a few runs. The
// [Interpreter] lowers, certifies and runs every step the driver asks for,
// so "rdu" is interchangeable with the other interpreters.
package rdu
