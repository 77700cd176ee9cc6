// Package families is where language-model families meet the IR: the step
// vocabulary every family shares ([StepSpec], [StepShape], the [Step] helper
// that declares a step's token and position slots and its KV cache), the
// non-generic [Model] interface the driver calls, the shared decoder
// components ([Stack], [Layer], [Attention], [FeedForward], [RoutedFFN]) and the
// hyperparameter and weight-name plumbing ([Reader], [WeightMap]) that lets a
// standard decoder family be a config reader plus a weight map.
//
// A family lives in its own subpackage (families/llama, families/gemma3, …)
// and exports one registry [Row]; package families/registry lists the rows
// shipped with poot, which is how a driver finds the family of a checkpoint.
//
// What this package is not for: tokenizers, sampling, KV-cache allocation,
// weight loading and interpretation. A family records a graph; the loader
// binds it, an interpreter runs it, the driver owns the loop.
//
// # Names
//
// Graph constants use the GGUF tensor names as canonical names
// (token_embd.weight, blk.3.attn_q.weight, output_norm.weight, …), declared
// F32 with poot-order shapes [out_features, in_features]; load.Bind retypes
// them to their stored dtypes. A family's [WeightMap] translates canonical
// names to the names stored in each container.
//
// Slots: token and pos are i32[rows*new] (row-major: row r's new tokens are
// elements r*new … r*new+new-1); positions are absolute, in [0, capacity).
// Paged layouts add slot_map i32[rows, capacity] (logical position of a row
// to physical cache row) and write_map i32[rows*new] (the physical cache row
// each new token is written to).
//
// States: cache.k.<layer> and cache.v.<layer>, F32. Contiguous layout:
// [rows*capacity, kv_heads*head_dim], row r's position p at row
// r*capacity+p. Paged layout: [pages*page_size, kv_heads*head_dim], a pool
// shared by all rows and addressed through slot_map and write_map. A step
// writes its new keys and values first, then reads each row's whole
// capacity back (a Gather through slot_map when paged) and masks it by
// position, so positions not yet written are never seen, but they are
// multiplied by zero: a driver starts caches zeroed (or at least finite).
//
// # Rotary layouts
//
// llama.cpp's converter permutes the Q and K rows of "llama" models into
// adjacent rotary pairs, so GGUF llama runs with the interleaved (NORM)
// layout; qwen2, qwen3 and gemma GGUFs, and every Hugging Face checkpoint,
// run with NeoX. A Hugging Face Llama is therefore read as stored, with
// NeoX, and no permutation happens at load; writing a GGUF Llama as a
// Hugging Face directory applies the inverse permutation (HFWriter).
//
// # Containers
//
// A family's registry Row configures a model from a GGUF file's metadata and
// tensor table, or from a config.json. The model can write itself back
// either way (GGUFWriter, HFWriter), which is how the tests check that a
// safetensors directory gives the same logits as the GGUF it came from, and
// how a synthesiser writes random checkpoints of any family ([Tensors]
// reads the names, shapes and roles from the family's own trace).
package families
