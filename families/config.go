package families

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/pootlabs/poot/gguf"
)

// Sentinel causes wrapped by ConfigError; test with errors.Is.
var (
	// ErrMissing: a required hyperparameter is absent.
	ErrMissing = errors.New("missing")
	// ErrWrongType: a hyperparameter has the wrong type or an unusable
	// value (a fraction where an integer belongs, a negative count).
	ErrWrongType = errors.New("wrong type")
	// ErrInconsistent: hyperparameters that contradict each other or the
	// checkpoint's tensors.
	ErrInconsistent = errors.New("inconsistent")
	// ErrUnsupported: a valid setting this family does not implement.
	ErrUnsupported = errors.New("unsupported")
	// ErrUnknownArchitecture: no registered family matches the checkpoint.
	ErrUnknownArchitecture = errors.New("unknown architecture")
)

// ConfigError reports a hyperparameter that is missing, mistyped or
// inconsistent, naming the key as stored (the full GGUF key such as
// llama.attention.head_count, or the config.json key such as
// num_attention_heads).
type ConfigError struct {
	Source string // "gguf" or "config.json"
	Key    string
	Err    error // one of the sentinels above
	Detail string
}

// Error formats the error on one line.
func (e *ConfigError) Error() string {
	s := fmt.Sprintf("families: %s key %q: %v", e.Source, e.Key, e.Err)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns the sentinel cause.
func (e *ConfigError) Unwrap() error { return e.Err }

// Reader reads hyperparameters from one checkpoint's metadata: GGUF
// key/value pairs under an architecture prefix, or a Hugging Face
// config.json. Like the builder it keeps the first error, so a config reader
// is a list of reads followed by one Err check.
type Reader struct {
	source string
	prefix string
	get    func(key string) (any, bool)
	err    error
}

// GGUFReader reads the keys of f under the architecture prefix: Int
// ("embedding_length") reads "<arch>.embedding_length". Keys starting with
// "general." or "tokenizer." are read as given.
func GGUFReader(f *gguf.File, arch string) *Reader {
	return &Reader{source: "gguf", prefix: arch + ".", get: func(key string) (any, bool) {
		v, ok := f.Get(key)
		if !ok {
			return nil, false
		}
		return ggufValue(v), true
	}}
}

func ggufValue(v gguf.Value) any {
	if s, ok := v.AsString(); ok {
		return s
	}
	if b, ok := v.AsBool(); ok {
		return b
	}
	if i, ok := v.AsInt(); ok {
		return float64(i)
	}
	if u, ok := v.AsUint(); ok {
		return float64(u)
	}
	if x, ok := v.AsFloat(); ok {
		return x
	}
	if n := v.Len(); v.Type() == gguf.TypeArray {
		out := make([]any, n)
		for i := range n {
			e, _ := v.Index(i)
			out[i] = ggufValue(e)
		}
		return out
	}
	return nil
}

// HFReader reads a Hugging Face config.json decoded into a map. A dotted key
// ("rope_scaling.factor") descends into nested objects; a key absent at the
// top level is also looked up in "text_config", where multimodal
// checkpoints keep their language model's settings.
func HFReader(cfg map[string]any) *Reader {
	return &Reader{source: "config.json", get: func(key string) (any, bool) {
		if v, ok := lookupPath(cfg, key); ok {
			return v, true
		}
		if tc, ok := cfg["text_config"].(map[string]any); ok {
			return lookupPath(tc, key)
		}
		return nil, false
	}}
}

func lookupPath(m map[string]any, key string) (any, bool) {
	for {
		v, ok := m[key]
		if ok && v != nil {
			return v, true
		}
		i := strings.IndexByte(key, '.')
		if i < 0 {
			return nil, false
		}
		sub, ok := m[key[:i]].(map[string]any)
		if !ok {
			return nil, false
		}
		m, key = sub, key[i+1:]
	}
}

// Source is "gguf" or "config.json".
func (r *Reader) Source() string { return r.source }

// GGUF reports whether the reader reads GGUF metadata.
func (r *Reader) GGUF() bool { return r.source == "gguf" }

// Key returns the key as stored: the prefixed GGUF key, or key itself.
func (r *Reader) Key(key string) string {
	if r.prefix == "" || strings.HasPrefix(key, "general.") || strings.HasPrefix(key, "tokenizer.") {
		return key
	}
	return r.prefix + key
}

// Err returns the first error recorded, or nil.
func (r *Reader) Err() error { return r.err }

// Fail records a ConfigError for key (unless an error is recorded already).
func (r *Reader) Fail(key string, cause error, format string, args ...any) {
	if r.err == nil {
		r.err = &ConfigError{Source: r.source, Key: r.Key(key), Err: cause, Detail: fmt.Sprintf(format, args...)}
	}
}

// Has reports whether key is present.
func (r *Reader) Has(key string) bool {
	_, ok := r.get(r.Key(key))
	return ok
}

func (r *Reader) raw(key string, required bool) (any, bool) {
	v, ok := r.get(r.Key(key))
	if !ok && required {
		r.Fail(key, ErrMissing, "")
	}
	return v, ok
}

func (r *Reader) number(key string, v any) (float64, bool) {
	switch x := v.(type) {
	case float64:
		return x, true
	case int:
		return float64(x), true
	case int64:
		return float64(x), true
	}
	r.Fail(key, ErrWrongType, "want a number, got %T", v)
	return 0, false
}

func (r *Reader) integer(key string, v any) (int, bool) {
	x, ok := r.number(key, v)
	if !ok {
		return 0, false
	}
	if x != math.Trunc(x) || x < 0 || x > math.MaxInt32 {
		r.Fail(key, ErrWrongType, "want a non-negative integer, got %v", x)
		return 0, false
	}
	return int(x), true
}

// Int reads a required non-negative integer.
func (r *Reader) Int(key string) int {
	if v, ok := r.raw(key, true); ok {
		n, _ := r.integer(key, v)
		return n
	}
	return 0
}

// IntOr reads an optional non-negative integer, def when absent.
func (r *Reader) IntOr(key string, def int) int {
	if v, ok := r.raw(key, false); ok {
		if n, ok := r.integer(key, v); ok {
			return n
		}
	}
	return def
}

// Positive reads a required integer that must be at least 1.
func (r *Reader) Positive(key string) int {
	n := r.Int(key)
	if r.err == nil && n < 1 {
		r.Fail(key, ErrWrongType, "want at least 1, got %d", n)
	}
	return n
}

// PositiveAtMost reads a required integer in [1, limit]: a count (layers,
// experts) that sizes tables, which must be bounded before they are made.
// An out-of-range value is recorded as an error and read as 0.
func (r *Reader) PositiveAtMost(key string, limit int) int {
	n := r.Positive(key)
	if r.err == nil && n > limit {
		r.Fail(key, ErrWrongType, "%d is more than the %d poot accepts", n, limit)
	}
	if r.err != nil {
		return 0
	}
	return n
}

// Float reads a required number.
func (r *Reader) Float(key string) float64 {
	if v, ok := r.raw(key, true); ok {
		x, _ := r.number(key, v)
		return x
	}
	return 0
}

// FloatOr reads an optional number, def when absent.
func (r *Reader) FloatOr(key string, def float64) float64 {
	if v, ok := r.raw(key, false); ok {
		if x, ok := r.number(key, v); ok {
			return x
		}
	}
	return def
}

// BoolOr reads an optional bool, def when absent.
func (r *Reader) BoolOr(key string, def bool) bool {
	if v, ok := r.raw(key, false); ok {
		if b, ok := v.(bool); ok {
			return b
		}
		r.Fail(key, ErrWrongType, "want a bool, got %T", v)
	}
	return def
}

// StringOr reads an optional string, def when absent.
func (r *Reader) StringOr(key, def string) string {
	if v, ok := r.raw(key, false); ok {
		if s, ok := v.(string); ok {
			return s
		}
		r.Fail(key, ErrWrongType, "want a string, got %T", v)
	}
	return def
}

// Strings reads an optional array of strings (nil when absent).
func (r *Reader) Strings(key string) []string {
	v, ok := r.raw(key, false)
	if !ok {
		return nil
	}
	a, ok := v.([]any)
	if !ok {
		r.Fail(key, ErrWrongType, "want an array of strings, got %T", v)
		return nil
	}
	out := make([]string, len(a))
	for i, e := range a {
		s, ok := e.(string)
		if !ok {
			r.Fail(key, ErrWrongType, "element %d is %T, want a string", i, e)
			return nil
		}
		out[i] = s
	}
	return out
}

// Ints reads an optional array of non-negative integers (nil when absent).
func (r *Reader) Ints(key string) []int {
	v, ok := r.raw(key, false)
	if !ok {
		return nil
	}
	a, ok := v.([]any)
	if !ok {
		r.Fail(key, ErrWrongType, "want an array of integers, got %T", v)
		return nil
	}
	out := make([]int, len(a))
	for i, e := range a {
		n, ok := r.integer(key, e)
		if !ok {
			return nil
		}
		out[i] = n
	}
	return out
}

// IntOrPerLayer reads key as one integer or as an array of per-layer
// integers (GGUF stores head_count_kv either way), returning the per-layer
// values; def fills them when the key is absent.
func (r *Reader) IntOrPerLayer(key string, layers, def int) []int {
	out := make([]int, layers)
	v, ok := r.raw(key, false)
	if !ok {
		for i := range out {
			out[i] = def
		}
		return out
	}
	if a, isArr := v.([]any); isArr {
		if len(a) != layers {
			r.Fail(key, ErrInconsistent, "%d per-layer values for %d layers", len(a), layers)
			return out
		}
		for i, e := range a {
			out[i], _ = r.integer(key, e)
		}
		return out
	}
	n, _ := r.integer(key, v)
	for i := range out {
		out[i] = n
	}
	return out
}

// Floats reads an optional array of numbers (nil when absent): Phi-3's
// LongRoPE factor lists, say.
func (r *Reader) Floats(key string) []float64 {
	v, ok := r.raw(key, false)
	if !ok {
		return nil
	}
	a, ok := v.([]any)
	if !ok {
		r.Fail(key, ErrWrongType, "want an array of numbers, got %T", v)
		return nil
	}
	out := make([]float64, len(a))
	for i, e := range a {
		if out[i], ok = r.number(key, e); !ok {
			return nil
		}
	}
	return out
}
