// Package safetensors reads and writes safetensors checkpoints, the format
// Hugging Face uses for model weights, and the model directories built
// around them (config.json, one file or an index of shards, tokenizer.json).
//
// A safetensors file is an 8-byte little-endian header length, a JSON header
// describing each tensor (dtype, shape, byte range) plus an optional
// "__metadata__" string map, and a data section. [Parse] and [Open] validate
// the whole header up front: ranges inside the data section, begin <= end, no
// two tensors overlapping, sizes matching shape and dtype. Problems are a
// [*FormatError] with the byte offset. Tensor data is a zero-copy view into
// the memory map. Dtypes poot cannot compute with (I64, U8, F8_E4M3, …) do
// not stop a file from opening; requesting such a tensor's poot type or data
// fails with an [*UnsupportedDTypeError].
//
// Shapes in safetensors are already outermost first, as in poot.
//
// The package knows the container, not the models: mapping Hugging Face
// tensor names and config keys onto a family belongs to the family readers.
package safetensors
