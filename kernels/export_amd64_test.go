package kernels

// SetFloatDotChunks sets whether the avx512 F16/BF16 products take their
// activation rows in chunks (floatDotChunks) and returns a function that
// restores the setting.
func SetFloatDotChunks(on bool) (restore func()) {
	old := floatDotChunks
	floatDotChunks = on
	return func() { floatDotChunks = old }
}
