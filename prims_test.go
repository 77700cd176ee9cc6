package poot

import (
	"math"
	"testing"
)

func TestTypeRules(t *testing.T) {
	f := func(dims ...int) TensorType { return T(F32, dims...) }
	i := func(dims ...int) TensorType { return T(I32, dims...) }
	bo := func(dims ...int) TensorType { return T(Bool, dims...) }
	cases := []struct {
		name string
		op   Op
		p    Params
		in   []TensorType
		want TensorType // zero DType: the rule must reject
	}{
		{"neg f32", Neg, Params{}, []TensorType{f(2, 3)}, f(2, 3)},
		{"neg i32", Neg, Params{}, []TensorType{i(4)}, i(4)},
		{"neg bool", Neg, Params{}, []TensorType{bo(4)}, TensorType{}},
		{"exp", Exp, Params{}, []TensorType{f(4)}, f(4)},
		{"pow", Pow, Params{}, []TensorType{f(4), f(4)}, f(4)},
		{"exp i32", Exp, Params{}, []TensorType{i(4)}, TensorType{}},
		{"exp f16", Exp, Params{}, []TensorType{T(F16, 4)}, TensorType{}},
		{"sqrt scalar", Sqrt, Params{}, []TensorType{f()}, f()},
		{"not", Not, Params{}, []TensorType{bo(3)}, bo(3)},
		{"not f32", Not, Params{}, []TensorType{f(3)}, TensorType{}},
		{"unary arity", Exp, Params{}, []TensorType{f(3), f(3)}, TensorType{}},
		{"add", Add, Params{}, []TensorType{f(2, 3), f(2, 3)}, f(2, 3)},
		{"add shapes", Add, Params{}, []TensorType{f(2, 3), f(1, 3)}, TensorType{}},
		{"add dtypes", Add, Params{}, []TensorType{f(3), i(3)}, TensorType{}},
		{"add rank", Add, Params{}, []TensorType{f(3), f(1, 3)}, TensorType{}},
		{"div i32", Div, Params{}, []TensorType{i(3), i(3)}, i(3)},
		{"pow i32", Pow, Params{}, []TensorType{i(3), i(3)}, TensorType{}},
		{"lt", Lt, Params{}, []TensorType{f(3), f(3)}, bo(3)},
		{"lt bool", Lt, Params{}, []TensorType{bo(3), bo(3)}, TensorType{}},
		{"eq bool", Eq, Params{}, []TensorType{bo(3), bo(3)}, bo(3)},
		{"and", And, Params{}, []TensorType{bo(3), bo(3)}, bo(3)},
		{"and f32", And, Params{}, []TensorType{f(3), f(3)}, TensorType{}},
		{"select", Select, Params{}, []TensorType{bo(2), f(2), f(2)}, f(2)},
		{"select cond dtype", Select, Params{}, []TensorType{f(2), f(2), f(2)}, TensorType{}},
		{"select branches", Select, Params{}, []TensorType{bo(2), f(2), i(2)}, TensorType{}},
		{"select shape", Select, Params{}, []TensorType{bo(3), f(2), f(2)}, TensorType{}},
		{"reduce_sum", ReduceSum, Params{Axis: 1}, []TensorType{f(2, 3)}, f(2, 1)},
		{"reduce_sum axis", ReduceSum, Params{Axis: 2}, []TensorType{f(2, 3)}, TensorType{}},
		{"reduce_sum negative axis", ReduceSum, Params{Axis: -1}, []TensorType{f(2, 3)}, TensorType{}},
		{"reduce_max i32", ReduceMax, Params{Axis: 0}, []TensorType{i(2, 3)}, i(1, 3)},
		{"reduce bool", ReduceMax, Params{Axis: 0}, []TensorType{bo(2)}, TensorType{}},
		{"argmax", ArgMax, Params{Axis: 1}, []TensorType{f(2, 3)}, i(2, 1)},
		{"argtopk", ArgTopK, Params{K: 2}, []TensorType{f(4, 8)}, i(4, 2)},
		{"argtopk k=n", ArgTopK, Params{K: 8}, []TensorType{f(4, 8)}, i(4, 8)},
		{"argtopk k>n", ArgTopK, Params{K: 9}, []TensorType{f(4, 8)}, TensorType{}},
		{"argtopk k=0", ArgTopK, Params{K: 0}, []TensorType{f(4, 8)}, TensorType{}},
		{"argtopk scalar", ArgTopK, Params{K: 1}, []TensorType{f()}, TensorType{}},
		{"matmul weight", MatMul, Params{}, []TensorType{f(3, 64), f(32, 64)}, f(3, 32)},
		{"matmul batched weight", MatMul, Params{}, []TensorType{f(2, 3, 64), f(32, 64)}, f(2, 3, 32)},
		{"matmul batched", MatMul, Params{}, []TensorType{f(4, 1, 8), f(4, 16, 8)}, f(4, 1, 16)},
		{"matmul batch mismatch", MatMul, Params{}, []TensorType{f(4, 1, 8), f(2, 16, 8)}, TensorType{}},
		{"matmul k mismatch", MatMul, Params{}, []TensorType{f(3, 64), f(32, 63)}, TensorType{}},
		{"matmul rank 1", MatMul, Params{}, []TensorType{f(64), f(32, 64)}, TensorType{}},
		{"matmul q8_0", MatMul, Params{}, []TensorType{f(1, 64), T(Q8_0, 32, 64)}, f(1, 32)},
		{"matmul q4_K", MatMul, Params{}, []TensorType{f(1, 256), T(Q4_K, 32, 256)}, f(1, 32)},
		{"matmul f16", MatMul, Params{}, []TensorType{f(1, 64), T(F16, 32, 64)}, f(1, 32)},
		{"matmul f16 lhs", MatMul, Params{}, []TensorType{T(F16, 1, 64), f(32, 64)}, TensorType{}},
		{"matmul i32 rhs", MatMul, Params{}, []TensorType{f(1, 64), i(32, 64)}, TensorType{}},
		{"indexed", IndexedMatMul, Params{}, []TensorType{f(6, 64), T(Q8_0, 8, 32, 64), i(6)}, f(6, 32)},
		{"indexed count", IndexedMatMul, Params{}, []TensorType{f(6, 64), f(8, 32, 64), i(5)}, TensorType{}},
		{"indexed k", IndexedMatMul, Params{}, []TensorType{f(6, 64), f(8, 32, 32), i(6)}, TensorType{}},
		{"indexed idx dtype", IndexedMatMul, Params{}, []TensorType{f(6, 64), f(8, 32, 64), f(6)}, TensorType{}},
		{"reshape", Reshape, Params{Shape: Shape{6}}, []TensorType{f(2, 3)}, f(6)},
		{"reshape count", Reshape, Params{Shape: Shape{7}}, []TensorType{f(2, 3)}, TensorType{}},
		{"reshape zero extent", Reshape, Params{Shape: Shape{0, 6}}, []TensorType{f(2, 3)}, TensorType{}},
		{"reshape scalar", Reshape, Params{Shape: Shape{}}, []TensorType{f(1, 1)}, f()},
		{"reshape packed keeps last", Reshape, Params{Shape: Shape{2, 4, 64}}, []TensorType{T(Q8_0, 8, 64)}, T(Q8_0, 2, 4, 64)},
		{"reshape packed last", Reshape, Params{Shape: Shape{4, 128}}, []TensorType{T(Q8_0, 8, 64)}, TensorType{}},
		{"broadcast", Broadcast, Params{Shape: Shape{4, 3}}, []TensorType{f(1, 3)}, f(4, 3)},
		{"broadcast mismatch", Broadcast, Params{Shape: Shape{4, 3}}, []TensorType{f(2, 3)}, TensorType{}},
		{"broadcast rank", Broadcast, Params{Shape: Shape{4, 3}}, []TensorType{f(3)}, TensorType{}},
		{"broadcast packed", Broadcast, Params{Shape: Shape{2, 64}}, []TensorType{T(Q8_0, 1, 64)}, TensorType{}},
		{"transpose", Transpose, Params{Perm: []int{1, 0}}, []TensorType{f(2, 3)}, f(3, 2)},
		{"transpose dup", Transpose, Params{Perm: []int{0, 0}}, []TensorType{f(2, 3)}, TensorType{}},
		{"transpose rank", Transpose, Params{Perm: []int{0}}, []TensorType{f(2, 3)}, TensorType{}},
		{"transpose range", Transpose, Params{Perm: []int{0, 2}}, []TensorType{f(2, 3)}, TensorType{}},
		{"slice", Slice, Params{Start: []int{0, 1}, Limit: []int{2, 3}}, []TensorType{f(2, 3)}, f(2, 2)},
		{"slice empty", Slice, Params{Start: []int{0, 1}, Limit: []int{2, 1}}, []TensorType{f(2, 3)}, TensorType{}},
		{"slice beyond", Slice, Params{Start: []int{0, 1}, Limit: []int{2, 4}}, []TensorType{f(2, 3)}, TensorType{}},
		{"slice negative", Slice, Params{Start: []int{-1, 0}, Limit: []int{2, 3}}, []TensorType{f(2, 3)}, TensorType{}},
		{"slice rank", Slice, Params{Start: []int{0}, Limit: []int{2}}, []TensorType{f(2, 3)}, TensorType{}},
		{"slice packed rows", Slice, Params{Start: []int{2, 0}, Limit: []int{4, 64}}, []TensorType{T(Q4_0, 8, 64)}, T(Q4_0, 2, 64)},
		{"slice packed cols", Slice, Params{Start: []int{0, 0}, Limit: []int{8, 32}}, []TensorType{T(Q4_0, 8, 64)}, TensorType{}},
		{"concat", Concat, Params{Axis: 1}, []TensorType{f(2, 3), f(2, 5)}, f(2, 8)},
		{"concat one", Concat, Params{Axis: 0}, []TensorType{f(2, 3)}, f(2, 3)},
		{"concat none", Concat, Params{Axis: 0}, nil, TensorType{}},
		{"concat off-axis", Concat, Params{Axis: 1}, []TensorType{f(2, 3), f(3, 5)}, TensorType{}},
		{"concat dtype", Concat, Params{Axis: 1}, []TensorType{f(2, 3), i(2, 5)}, TensorType{}},
		{"gather", Gather, Params{}, []TensorType{f(512, 64), i(3)}, f(3, 64)},
		{"gather 2d idx", Gather, Params{}, []TensorType{f(512, 64), i(2, 3)}, f(2, 3, 64)},
		{"gather scalar idx", Gather, Params{}, []TensorType{f(512, 64), i()}, f(64)},
		{"gather f16", Gather, Params{}, []TensorType{T(F16, 512, 64), i(3)}, T(F16, 3, 64)},
		{"gather q8_0", Gather, Params{}, []TensorType{T(Q8_0, 512, 64), i(3)}, T(Q8_0, 3, 64)},
		{"gather f32 idx", Gather, Params{}, []TensorType{f(512, 64), f(3)}, TensorType{}},
		{"gather scalar table", Gather, Params{}, []TensorType{f(), i(3)}, TensorType{}},
		{"write_rows", WriteRows, Params{}, []TensorType{f(16, 8), i(2), f(2, 8)}, f(16, 8)},
		{"write_rows f16", WriteRows, Params{}, []TensorType{T(F16, 16, 8), i(2), T(F16, 2, 8)}, T(F16, 16, 8)},
		{"write_rows dtype", WriteRows, Params{}, []TensorType{T(F16, 16, 8), i(2), f(2, 8)}, TensorType{}},
		{"write_rows count", WriteRows, Params{}, []TensorType{f(16, 8), i(3), f(2, 8)}, TensorType{}},
		{"write_rows idx rank", WriteRows, Params{}, []TensorType{f(16, 8), i(2, 1), f(2, 8)}, TensorType{}},
		{"iota", Iota, Params{Shape: Shape{2, 5}, Axis: 1, DType: I32}, nil, i(2, 5)},
		{"iota f32", Iota, Params{Shape: Shape{5}, Axis: 0, DType: F32}, nil, f(5)},
		{"iota bool", Iota, Params{Shape: Shape{5}, Axis: 0, DType: Bool}, nil, TensorType{}},
		{"iota axis", Iota, Params{Shape: Shape{5}, Axis: 1, DType: I32}, nil, TensorType{}},
		{"literal", Literal, Params{Shape: Shape{2}, DType: F32, Value: math.Inf(-1)}, nil, f(2)},
		{"literal i32", Literal, Params{Shape: Shape{2}, DType: I32, Value: 7}, nil, i(2)},
		{"literal i32 fraction", Literal, Params{Shape: Shape{2}, DType: I32, Value: 0.5}, nil, TensorType{}},
		{"literal i32 range", Literal, Params{Shape: Shape{2}, DType: I32, Value: 1 << 40}, nil, TensorType{}},
		{"literal bool", Literal, Params{Shape: Shape{2}, DType: Bool, Value: 1}, nil, bo(2)},
		{"literal bool 2", Literal, Params{Shape: Shape{2}, DType: Bool, Value: 2}, nil, TensorType{}},
		{"literal packed", Literal, Params{Shape: Shape{32}, DType: Q8_0}, nil, TensorType{}},
		{"literal arity", Literal, Params{Shape: Shape{2}, DType: F32}, []TensorType{f(2)}, TensorType{}},
		{"cast", Cast, Params{DType: F16}, []TensorType{f(2)}, T(F16, 2)},
		{"cast bool", Cast, Params{DType: F32}, []TensorType{bo(2)}, f(2)},
		{"cast packed", Cast, Params{DType: F32}, []TensorType{T(Q4_K, 2, 256)}, f(2, 256)},
		{"cast packed to f16", Cast, Params{DType: F16}, []TensorType{T(Q4_K, 2, 256)}, TensorType{}},
		{"cast to q8_0", Cast, Params{DType: Q8_0}, []TensorType{f(2, 32)}, T(Q8_0, 2, 32)},
		{"cast to q8_0 part block", Cast, Params{DType: Q8_0}, []TensorType{f(2, 40)}, TensorType{}},
		{"cast f16 to q8_0", Cast, Params{DType: Q8_0}, []TensorType{T(F16, 2, 32)}, TensorType{}},
		{"cast to q4_0", Cast, Params{DType: Q4_0}, []TensorType{f(2, 32)}, TensorType{}},
		{"write packed rows", WriteRows, Params{}, []TensorType{T(Q8_0, 4, 64), T(I32, 2), T(Q8_0, 2, 64)}, T(Q8_0, 4, 64)},
		{"write rows of another packed dtype", WriteRows, Params{}, []TensorType{T(Q8_0, 4, 64), T(I32, 2), T(Q4_0, 2, 64)}, TensorType{}},
		{"cast invalid", Cast, Params{DType: Invalid}, []TensorType{f(2)}, TensorType{}},
		{"operand invalid dtype", Neg, Params{}, []TensorType{{Shape: Shape{2}}}, TensorType{}},
		{"operand zero extent", Neg, Params{}, []TensorType{f(0)}, TensorType{}},
		{"packed bad block", Cast, Params{DType: F32}, []TensorType{T(Q8_0, 2, 33)}, TensorType{}},
		{"invalid op", opInvalid, Params{}, nil, TensorType{}},
		{"op out of range", numOps, Params{}, nil, TensorType{}},
	}
	covered := map[Op]bool{}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := c.op.Infer(c.p, c.in...)
			if c.want.DType == Invalid {
				if err == nil {
					t.Fatalf("%v%v accepted, gave %v", c.op, c.in, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("%v%v: %v", c.op, c.in, err)
			}
			if !got.Equal(c.want) {
				t.Fatalf("%v%v = %v, want %v", c.op, c.in, got, c.want)
			}
		})
		if c.want.DType != Invalid {
			covered[c.op] = true
		}
	}
	for _, op := range Ops() {
		if !covered[op] && op != Log && op != Rsqrt && op != Tanh && op != Erf && op != Sin && op != Cos && op != Abs &&
			op != Sub && op != Mul && op != Max && op != Min && op != Le && op != Gt && op != Ge && op != Ne && op != Or {
			t.Errorf("no valid case for %v", op)
		}
	}
}

func TestOpNames(t *testing.T) {
	seen := map[string]bool{}
	for _, op := range Ops() {
		n := op.String()
		if n == "" || seen[n] {
			t.Errorf("op %d has name %q (empty or duplicate)", op, n)
		}
		seen[n] = true
	}
	if Op(200).String() != "op(200)" || Op(200).Valid() {
		t.Error("an undefined op prints or validates wrongly")
	}
	if !Reshape.Metadata() || MatMul.Metadata() {
		t.Error("Metadata flags are wrong")
	}
}

func TestDTypeGeometry(t *testing.T) {
	cases := []struct {
		d      DType
		elems  int
		bytes  int
		packed bool
	}{
		{F32, 1, 4, false}, {F16, 1, 2, false}, {BF16, 1, 2, false}, {I32, 1, 4, false}, {Bool, 1, 1, false},
		{Q8_0, 32, 34, true}, {Q4_0, 32, 18, true}, {Q4_1, 32, 20, true}, {Q5_0, 32, 22, true}, {Q5_1, 32, 24, true},
		{Q4_K, 256, 144, true}, {Q5_K, 256, 176, true}, {Q6_K, 256, 210, true}, {Q8_K, 256, 292, true},
		{MXFP4, 32, 17, true},
	}
	for _, c := range cases {
		if c.d.BlockElems() != c.elems || c.d.BlockBytes() != c.bytes || c.d.Packed() != c.packed {
			t.Errorf("%v: geometry %d/%d/%v", c.d, c.d.BlockElems(), c.d.BlockBytes(), c.d.Packed())
		}
		p, err := ParseDType(c.d.String())
		if err != nil || p != c.d {
			t.Errorf("ParseDType(%q) = %v, %v", c.d.String(), p, err)
		}
	}
	if got := T(Q4_K, 3, 512).Bytes(); got != 3*2*144 {
		t.Errorf("q4_K[3,512] bytes = %d", got)
	}
	if got := T(Q4_K, 3, 100).Bytes(); got != -1 {
		t.Errorf("q4_K[3,100] bytes = %d, want -1", got)
	}
	if got := T(F16, 3, 5).String(); got != "f16[3,5]" {
		t.Errorf("String = %q", got)
	}
	if _, err := ParseDType("q9_9"); err == nil {
		t.Error("ParseDType accepted q9_9")
	}
	if (Shape{1 << 40, 1 << 40}).Size() != -1 {
		t.Error("Size did not detect overflow")
	}
}
