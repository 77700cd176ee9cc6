package gguf

import (
	"bytes"
	"fmt"
	"testing"

	"github.com/pootlabs/poot"
	"pgregory.net/rapid"
)

// genValue draws a metadata value of any type, nesting arrays up to depth.
func genValue(t *rapid.T, depth int) Value {
	maxType := int(TypeFloat64)
	kind := ValueType(rapid.IntRange(0, maxType).Draw(t, "type"))
	if kind == TypeArray && depth >= 3 {
		kind = TypeString
	}
	switch kind {
	case TypeUint8:
		return ValueOf(rapid.Uint8().Draw(t, "v"))
	case TypeInt8:
		return ValueOf(rapid.Int8().Draw(t, "v"))
	case TypeUint16:
		return ValueOf(rapid.Uint16().Draw(t, "v"))
	case TypeInt16:
		return ValueOf(rapid.Int16().Draw(t, "v"))
	case TypeUint32:
		return ValueOf(rapid.Uint32().Draw(t, "v"))
	case TypeInt32:
		return ValueOf(rapid.Int32().Draw(t, "v"))
	case TypeFloat32:
		return ValueOf(rapid.Float32().Draw(t, "v"))
	case TypeBool:
		return ValueOf(rapid.Bool().Draw(t, "v"))
	case TypeString:
		return ValueOf(rapid.String().Draw(t, "v"))
	case TypeUint64:
		return ValueOf(rapid.Uint64().Draw(t, "v"))
	case TypeInt64:
		return ValueOf(rapid.Int64().Draw(t, "v"))
	case TypeFloat64:
		return ValueOf(rapid.Float64().Draw(t, "v"))
	}
	switch rapid.IntRange(0, 4).Draw(t, "array kind") {
	case 0:
		return ArrayOf(rapid.SliceOf(rapid.String()).Draw(t, "strings"))
	case 1:
		return ArrayOf(rapid.SliceOf(rapid.Float32()).Draw(t, "floats"))
	case 2:
		return ArrayOf(rapid.SliceOf(rapid.Int32()).Draw(t, "ints"))
	case 3:
		return ArrayOf(rapid.SliceOf(rapid.Bool()).Draw(t, "bools"))
	}
	n := rapid.IntRange(0, 3).Draw(t, "nested len")
	var elems []Value
	for range n {
		elems = append(elems, genArray(t, depth+1))
	}
	return ArrayOfArrays(elems...)
}

func genArray(t *rapid.T, depth int) Value {
	for {
		if v := genValue(t, depth); v.Type() == TypeArray {
			return v
		}
		if depth >= 3 {
			return ArrayOf(rapid.SliceOf(rapid.Uint64()).Draw(t, "u64s"))
		}
	}
}

// TestPropertyRoundTrip: for any metadata and any F32/Q8_0 tensor table,
// Parse(Write(x)) gives back x, and writing it again gives the same bytes.
func TestPropertyRoundTrip(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		nKV := rapid.IntRange(0, 6).Draw(t, "kvs")
		var kvs []KV
		for i := range nKV {
			kvs = append(kvs, KV{Key: fmt.Sprintf("k%d.%s", i, rapid.StringN(0, 8, 8).Draw(t, "key")), Value: genValue(t, 0)})
		}
		nT := rapid.IntRange(0, 4).Draw(t, "tensors")
		var tensors []WriterTensor
		for i := range nT {
			rows := rapid.IntRange(0, 3).Draw(t, "rows")
			blocks := rapid.IntRange(0, 2).Draw(t, "blocks")
			d := rapid.SampledFrom([]poot.DType{poot.F32, poot.Q8_0, poot.Q4_K, poot.BF16}).Draw(t, "dtype")
			tt := poot.T(d, rows, blocks*d.BlockElems())
			data := rapid.SliceOfN(rapid.Byte(), int(tt.Bytes()), int(tt.Bytes())).Draw(t, "data")
			tensors = append(tensors, WriterTensor{Name: fmt.Sprintf("t%d", i), DType: d, Shape: tt.Shape, Data: data})
		}
		align := rapid.SampledFrom([]int{0, 8, 32, 256}).Draw(t, "align")
		var buf bytes.Buffer
		if err := Write(&buf, kvs, tensors, align); err != nil {
			t.Fatal(err)
		}
		f, err := Parse(buf.Bytes())
		if err != nil {
			t.Fatal(err)
		}
		got := f.KVs()
		if align != 0 && align != DefaultAlignment {
			got = got[:len(got)-1]
		}
		// Compare encodings: DeepEqual would fail on NaN floats.
		for i := range kvs {
			a, _ := appendValue(nil, kvs[i].Value, 0)
			b, _ := appendValue(nil, got[i].Value, 0)
			if got[i].Key != kvs[i].Key || got[i].Value.Type() != kvs[i].Value.Type() || !bytes.Equal(a, b) {
				t.Fatalf("kv %d: got %s=%v, want %s=%v", i, got[i].Key, got[i].Value, kvs[i].Key, kvs[i].Value)
			}
		}
		for _, wt := range tensors {
			ti, ok := f.Tensor(wt.Name)
			data, err := f.TensorData(wt.Name)
			if !ok || err != nil || !ti.Shape().Equal(wt.Shape) || !bytes.Equal(data, wt.Data) {
				t.Fatalf("%s: %v %v", wt.Name, ti, err)
			}
		}
		again, ok := rewrite(f)
		if !ok || !bytes.Equal(again, buf.Bytes()) {
			t.Fatalf("rewriting changed the bytes")
		}
	})
}
