package hostexec

import (
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/pootlabs/poot"
)

func TestDivI32(t *testing.T) {
	for _, c := range []struct {
		x, y, want int32
		fault      bool
	}{
		{7, 2, 3, false},
		{-7, 2, -3, false}, // truncates toward zero
		{math.MinInt32, -1, math.MinInt32, false},
		{5, 0, 0, true},
	} {
		i32 := poot.T(poot.I32, 1)
		x, y, out := NewBuf(4), NewBuf(4), NewBuf(4)
		x.I32()[0], y.I32()[0] = c.x, c.y
		run, err := Compile(&Eqn{Op: poot.Div, In: []poot.TensorType{i32, i32}, Out: i32, Args: []Storage{x, y}, Res: out})
		if err != nil {
			t.Fatal(err)
		}
		err = run()
		if got := out.I32()[0]; got != c.want || (err != nil) != c.fault || c.fault && !errors.Is(err, ErrDivideByZero) {
			t.Errorf("%d / %d = %d, %v; want %d, fault %v", c.x, c.y, got, err, c.want, c.fault)
		}
	}
}

func TestF32ToI32(t *testing.T) {
	nan := float32(math.NaN())
	for _, c := range []struct {
		f    float32
		want int32
	}{
		{2.9, 2}, {-2.9, -2}, {nan, 0}, {3e9, math.MaxInt32}, {-3e9, math.MinInt32},
	} {
		if got := f32ToI32(c.f); got != c.want {
			t.Errorf("f32ToI32(%g) = %d, want %d", c.f, got, c.want)
		}
	}
}

func TestI32ToBF16RoundsOnce(t *testing.T) {
	// 2^24+2^16+1 lies just above the tie between two bfloat16 values;
	// rounding through float32 first would land on the tie and round to
	// even (down), rounding once goes up.
	v := int32(1<<24 + 1<<16 + 1)
	if got, want := i32ToBF16(v), uint16(0x4b81); got != want {
		t.Errorf("i32ToBF16(%d) = %#04x, want %#04x", v, got, want)
	}
	if got, want := i32ToBF16(-v), uint16(0xcb81); got != want {
		t.Errorf("i32ToBF16(%d) = %#04x, want %#04x", -v, got, want)
	}
}

func TestTopKOrder(t *testing.T) {
	nan := float32(math.NaN())
	row := []float32{1, nan, 3, 3, float32(math.Inf(1))}
	order := []int32{0, 1, 2, 3, 4}
	slices.SortFunc(order, func(a, b int32) int { return topKOrder(row[a], row[b], a, b) })
	if want := []int32{1, 4, 2, 3, 0}; !slices.Equal(order, want) {
		t.Errorf("order %v, want %v", order, want)
	}
	args := make([]int32, 1)
	reduceF32(poot.ArgMax, []float32{1, nan, nan, 2}, poot.Shape{4}, 0, nil, args)
	if args[0] != 1 {
		t.Errorf("ArgMax took index %d, want the first NaN", args[0])
	}
}

func TestIota(t *testing.T) {
	got := make([]int32, 6)
	iota(got, poot.Shape{2, 3}, 1)
	if want := []int32{0, 1, 2, 0, 1, 2}; !slices.Equal(got, want) {
		t.Errorf("Iota over axis 1: %v, want %v", got, want)
	}
	iota(got, poot.Shape{2, 3}, 0)
	if want := []int32{0, 0, 0, 1, 1, 1}; !slices.Equal(got, want) {
		t.Errorf("Iota over axis 0: %v, want %v", got, want)
	}
}

// TestWriteRowsParallel: a WriteRows large enough to split across workers
// writes what the serial copy writes, in place or not, for increasing
// indices (split by index) and for indices that repeat a row (copied in
// order, so the later source row wins).
func TestWriteRowsParallel(t *testing.T) {
	const rows, width, m = 600, 256, 300 // 300 rows of 1 KiB: past parallelCopy
	for _, name := range []string{"increasing", "repeating"} {
		idx := make([]int32, m)
		for i := range idx {
			idx[i] = int32(2*i + 1)
			if name == "repeating" {
				idx[i] = int32(i % 7 * 13)
			}
		}
		for _, inPlace := range []bool{false, true} {
			run := func(par Parallel) []float32 {
				dst, ix, src := NewBuf(rows*width*4), NewBuf(m*4), NewBuf(m*width*4)
				for i := range dst.F32() {
					dst.F32()[i] = -float32(i)
				}
				for i := range src.F32() {
					src.F32()[i] = float32(i)
				}
				copy(ix.I32(), idx)
				out := dst
				if !inPlace {
					out = NewBuf(rows * width * 4)
				}
				ty := poot.T(poot.F32, rows, width)
				f, err := Compile(&Eqn{Op: poot.WriteRows, Out: ty, Res: out, Par: par,
					In:   []poot.TensorType{ty, poot.T(poot.I32, m), poot.T(poot.F32, m, width)},
					Args: []Storage{dst, ix, src}})
				if err != nil {
					t.Fatal(err)
				}
				if err := f(); err != nil {
					t.Fatal(err)
				}
				return slices.Clone(out.F32())
			}
			want := make([]float32, rows*width)
			for i := range want {
				want[i] = -float32(i)
			}
			for i, r := range idx {
				for j := range width {
					want[int(r)*width+j] = float32(i*width + j)
				}
			}
			for _, par := range []Parallel{nil, Spawn(3)} {
				if got := run(par); !slices.Equal(got, want) {
					t.Errorf("%s, in place %v, %v workers: rows differ from the naive copy", name, inPlace, par)
				}
			}
		}
	}
}
