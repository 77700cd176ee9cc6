// Package tokenizer turns text into token ids and back for the vocabularies
// that language models ship with: SentencePiece-style BPE and GPT-2 byte-level
// BPE, read from GGUF metadata (FromGGUF), from a Hugging Face tokenizer.json
// (FromHFJSON, or FromHFDir for a directory holding tokenizer.json and
// tokenizer_config.json) or from a llama2.c tokenizer file (FromLlama2C).
//
// A tokenizer.json is run as Hugging Face's tokenizers library runs it:
// added tokens cut out as the file flags them (special ones only with
// EncodeOptions.ParseSpecial), then its normalizers (through
// golang.org/x/text), pre-tokenizers (Split expressions in Oniguruma syntax,
// run by regexp2 after a translation that keeps their meaning; see
// compileHFRegex), BPE model and post-processor, and its decoders for
// Decode. Components it does not implement are errors wrapping
// ErrUnsupported, never approximations.
//
// For GGUF and llama2.c vocabularies the reference for every behaviour is
// llama.cpp's tokenizer (llama-vocab.cpp and unicode.cpp): the same text gives
// the same ids, including the quirks, because a model only works with the ids
// it was trained on. In particular:
//
//   - SentencePiece vocabularies prepend a space to the text (and to the text
//     after each special token), write spaces as U+2581 "▁", merge the
//     adjacent pair whose merged piece has the highest score first (leftmost on
//     ties) and spell characters missing from the vocabulary as byte tokens
//     <0xNN>.
//   - GPT-2 vocabularies cut the text into words with the pre-tokenizer named
//     by tokenizer.ggml.pre, map every byte to a printable rune, and merge the
//     adjacent pair with the lowest merge rank first.
//   - Before either runs, the text is cut at special tokens: user-defined
//     tokens always, control tokens only when EncodeOptions.ParseSpecial is
//     set. Longer special tokens are looked for first.
//
// The GGUF pre-tokenizer expressions are written by hand as small matchers over
// runes (Go's regexp has no lookahead and its classes differ from PCRE's);
// each one is documented with the expression it implements. Supported
// tokenizer.ggml.pre values: default (also when absent, as for GPT-NeoX),
// gpt-2 and its aliases (mpt, olmo, phi-2, jais, …), llama-bpe/llama3 (and
// dbrx, smaug-bpe, chatglm-bpe), qwen2 (and stablelm2, deepseek-r1-qwen, …),
// deepseek-llm, deepseek-coder, falcon, starcoder (and refact, command-r,
// smollm, …), bloom/poro-chat, tekken and gpt-4o (llama4, …). Others
// (deepseek-v3, kimi-k2, …) are reported as ErrUnsupported rather than
// tokenized wrongly.
//
// Decode concatenates token texts exactly; it does not apply llama.cpp's
// optional clean-up of spaces before punctuation.
//
// What this package is not for: chat templates, sampling, or training
// tokenizers, nor the WordPiece and Unigram models. No third-party library
// reproduces llama.cpp's behaviour, so the algorithms are written here.
package tokenizer
