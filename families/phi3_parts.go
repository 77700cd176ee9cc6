package families

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
