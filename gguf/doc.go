// Package gguf reads and writes GGUF checkpoint files (versions 2 and 3), the
// container llama.cpp and ggml use for model weights and metadata.
//
// A GGUF file is a header, an ordered list of typed key/value pairs
// (metadata), a table of tensor descriptions, and an aligned data section that
// holds the tensors' bytes. [Open] maps the file into memory and [Parse] reads
// any byte slice; both validate the whole structure up front and return a
// [*FormatError] with the byte offset of the first problem. The file is
// treated as untrusted: every length and count is checked against the bytes
// that remain before anything is allocated, so a malformed file is an error,
// never a panic or an out-of-memory crash.
//
// Tensor data is never copied: [File.TensorData] returns a view into the map.
// Tensors whose ggml type poot cannot compute with (Q2_K, IQ*, I8, …) do not
// stop a file from opening; asking for their poot type or data is what fails,
// with an [*UnsupportedTypeError] naming the tensor.
//
// GGUF lists a tensor's dimensions innermost first (ne0 is the contiguous
// axis). poot lists them outermost first, so [TensorInfo.Shape] is the GGUF
// dims reversed: GGUF [64, 32] is poot [32, 64], 32 rows of 64 elements.
//
// [Write] produces GGUF v3 files, streaming tensor data from readers when
// asked so that large checkpoints need not sit in memory.
//
// This package knows the container, not the models: which keys a family
// needs, how tensors are named and how blocks are dequantized live elsewhere.
package gguf
