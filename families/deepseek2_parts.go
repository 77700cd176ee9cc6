package families

import "github.com/pootlabs/poot/gguf"

// CheckLayerTensors fails key, a layer count read from f's metadata through
// r, when f holds no tensors of some layer below layers, naming the first
// such layer, and reports whether the count is usable. A family that reads
// its own GGUF keys (rather than through GGUFDecoder, which does this)
// calls it before sizing anything by the count; it costs time and memory in
// proportion to the tensor table, whatever the count says.
func CheckLayerTensors(f *gguf.File, r *Reader, model, key string, layers int) bool {
	return checkLayerTensors(f, r, model, key, layers)
}
