package quant

import (
	"encoding/binary"
	"math"
	"testing"
)

// FuzzRows feeds arbitrary bytes to every entry point, as stored rows and
// as float32 source data, with right and wrong sizes: nothing may panic,
// and a correctly sized call must succeed.
func FuzzRows(f *testing.F) {
	f.Add(uint8(0), []byte{0, 0, 0x80, 0x3f})
	f.Add(uint8(8), make([]byte, 144))
	f.Add(uint8(10), []byte{0xff, 0xff, 0x7f, 0x7f, 1, 2, 3})
	f.Fuzz(func(t *testing.T, typ uint8, data []byte) {
		dt := allTypes[int(typ)%len(allTypes)]
		be, bb := dt.BlockElems(), dt.BlockBytes()
		blocks := len(data) / bb
		n := blocks * be
		y := make([]float32, n)
		if err := DequantizeRow(dt, y, data[:blocks*bb]); err != nil {
			t.Fatalf("%v: %d whole blocks: %v", dt, blocks, err)
		}
		if _, err := DotRow(dt, data[:blocks*bb], y); err != nil {
			t.Fatal(err)
		}
		_ = DequantizeRow(dt, y, data) // may be the wrong size
		_ = DequantizeRow(dt, y[:n/2], data)

		x := make([]float32, len(data)/4/be*be)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(data[4*i:]))
		}
		q := make([]byte, dt.RowBytes(int64(len(x))))
		if err := QuantizeRow(dt, q, x); err != nil {
			t.Fatalf("%v: %d elements: %v", dt, len(x), err)
		}
		_ = QuantizeRow(dt, q[:len(q)/2], x)
	})
}
