package quant

import (
	"encoding/binary"
	"fmt"
	"math"
	"os"

	"github.com/pootlabs/poot"
)

// This is a deliberately tiny GGUF v3 reader for the quantization fixtures.
// It lives in the tests so that quant does not depend on the real gguf
// package: it reads the header, skips every metadata value by its type,
// and returns each tensor's ggml type id and raw bytes.

type fixtureTensor struct {
	name  string
	dims  []uint64
	ggml  uint32 // ggml type id
	bytes []byte
}

// ggmlTypes maps the ggml type ids used by the fixtures to poot dtypes.
var ggmlTypes = map[uint32]poot.DType{
	0: poot.F32, 1: poot.F16, 2: poot.Q4_0, 3: poot.Q4_1, 6: poot.Q5_0, 7: poot.Q5_1,
	8: poot.Q8_0, 12: poot.Q4_K, 13: poot.Q5_K, 14: poot.Q6_K, 15: poot.Q8_K, 30: poot.BF16,
	39: poot.MXFP4,
}

type ggufReader struct {
	b   []byte
	off int
	err error
}

func (r *ggufReader) take(n uint64) []byte {
	if r.err != nil {
		return nil
	}
	if n > uint64(len(r.b)-r.off) {
		r.err = fmt.Errorf("gguf: truncated at offset %d (want %d bytes)", r.off, n)
		return nil
	}
	s := r.b[r.off : r.off+int(n)]
	r.off += int(n)
	return s
}

func (r *ggufReader) u32() uint32 {
	if s := r.take(4); s != nil {
		return binary.LittleEndian.Uint32(s)
	}
	return 0
}

func (r *ggufReader) u64() uint64 {
	if s := r.take(8); s != nil {
		return binary.LittleEndian.Uint64(s)
	}
	return 0
}

func (r *ggufReader) str() string { return string(r.take(r.u64())) }

// skipValue skips one metadata value of GGUF type typ, recursing into arrays.
func (r *ggufReader) skipValue(typ uint32, depth int) {
	sizes := map[uint32]uint64{0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}
	switch {
	case r.err != nil:
	case typ == 8:
		r.str()
	case typ == 9 && depth < 4:
		et, n := r.u32(), r.u64()
		for i := uint64(0); i < n && r.err == nil; i++ {
			r.skipValue(et, depth+1)
		}
	case sizes[typ] != 0:
		r.take(sizes[typ])
	default:
		r.err = fmt.Errorf("gguf: bad value type %d at offset %d", typ, r.off)
	}
}

// readFixture returns the tensors of a GGUF v3 file, in file order.
func readFixture(path string) ([]fixtureTensor, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	r := &ggufReader{b: b}
	if string(r.take(4)) != "GGUF" {
		return nil, fmt.Errorf("%s: not a GGUF file", path)
	}
	if v := r.u32(); v != 3 {
		return nil, fmt.Errorf("%s: GGUF version %d, want 3", path, v)
	}
	nt, nkv := r.u64(), r.u64()
	alignment := uint64(32)
	for i := uint64(0); i < nkv && r.err == nil; i++ {
		key := r.str()
		typ := r.u32()
		if key == "general.alignment" && typ == 4 {
			alignment = uint64(r.u32())
			continue
		}
		r.skipValue(typ, 0)
	}
	type info struct {
		fixtureTensor
		offset uint64
	}
	var infos []info
	for i := uint64(0); i < nt && r.err == nil; i++ {
		var t info
		t.name = r.str()
		nd := r.u32()
		for d := uint32(0); d < nd && d < 8; d++ {
			t.dims = append(t.dims, r.u64())
		}
		t.ggml = r.u32()
		t.offset = r.u64()
		infos = append(infos, t)
	}
	if r.err != nil {
		return nil, fmt.Errorf("%s: %w", path, r.err)
	}
	data := (uint64(r.off) + alignment - 1) / alignment * alignment
	var out []fixtureTensor
	for _, t := range infos {
		dt, ok := ggmlTypes[t.ggml]
		if !ok {
			return nil, fmt.Errorf("%s: tensor %q has ggml type %d", path, t.name, t.ggml)
		}
		n := uint64(1)
		for _, d := range t.dims {
			n *= d
		}
		size := dt.RowBytes(int64(n))
		start := data + t.offset
		if size < 0 || start+uint64(size) > uint64(len(b)) {
			return nil, fmt.Errorf("%s: tensor %q out of bounds", path, t.name)
		}
		t.bytes = b[start : start+uint64(size)]
		out = append(out, t.fixtureTensor)
	}
	return out, nil
}

// f32s decodes little-endian float32 bytes.
func f32s(b []byte) []float32 {
	out := make([]float32, len(b)/4)
	for i := range out {
		out[i] = math.Float32frombits(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return out
}
