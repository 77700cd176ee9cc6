package sim

import (
	"encoding/binary"
	"math"
	"reflect"
	"testing"

	"github.com/pootlabs/poot/rdu/bundle"
)

// TestSlicesJoin: a chip's slices of a weight are read run by run and
// joined along the stored axis they cut: runs of stored rows one after
// another, runs of stored columns side by side in every row.
func TestSlicesJoin(t *testing.T) {
	data := make([]byte, 4*6*4) // a 4 by 6 tensor of F32 holding 0 … 23
	for i := range 24 {
		binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(i)))
	}
	cols := func(from, n int) bundle.Slice {
		return bundle.Slice{Axis: "cols", From: from, N: n, Shape: []int{4, n}, Offset: int64(4 * from), Bytes: int64(4 * n), Count: 4, Stride: 24}
	}
	rows := func(from, n int) bundle.Slice {
		return bundle.Slice{Axis: "cols", From: from, N: n, Shape: []int{n, 6}, Offset: int64(24 * from), Bytes: int64(24 * n), Count: 1, Stride: 24}
	}
	for _, c := range []struct {
		name string
		b    bundle.Binding
		want []float32
	}{
		{"stored columns", bundle.Binding{Name: "W", DType: "f32", Shape: []int{4, 6}, Bytes: 96, Slices: []bundle.Slice{cols(0, 2), cols(4, 2)}},
			[]float32{0, 1, 4, 5, 6, 7, 10, 11, 12, 13, 16, 17, 18, 19, 22, 23}},
		{"stored rows", bundle.Binding{Name: "W", DType: "f32", Shape: []int{4, 6}, Bytes: 96, Transposed: true, Slices: []bundle.Slice{rows(1, 1), rows(3, 1)}},
			[]float32{6, 7, 8, 9, 10, 11, 18, 19, 20, 21, 22, 23}},
	} {
		raw, err := runs(c.b, data)
		if err != nil {
			t.Fatal(err)
		}
		got, err := decode(c.b, raw)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		if shape, ok := c.b.StoredShape(); !ok || shape[0]*shape[1] != len(c.want) {
			t.Errorf("%s: stored shape %v (%v)", c.name, shape, ok)
		}
	}
	bad := bundle.Binding{Name: "W", DType: "f32", Shape: []int{4, 6}, Bytes: 96, Slices: []bundle.Slice{cols(4, 2), {Axis: "cols", From: 0, N: 2, Shape: []int{4, 2}, Offset: 90, Bytes: 8, Count: 4, Stride: 24}}}
	if _, err := runs(bad, data); err == nil {
		t.Error("a slice past its tensor's bytes reads")
	}
	if _, ok := (bundle.Binding{Shape: []int{4, 6}, Slices: []bundle.Slice{cols(0, 2), {Axis: "cols", Shape: []int{3, 2}}}}).StoredShape(); ok {
		t.Error("slices of unequal rows join")
	}
}
