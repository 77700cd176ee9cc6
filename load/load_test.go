package load_test

import (
	"errors"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/quant"
	"github.com/pootlabs/poot/safetensors"
	"github.com/pootlabs/poot/tensor"
)

func refmodel(t *testing.T, name string) string {
	t.Helper()
	p := filepath.Join("..", "..", "shared", "refmodels", name)
	if _, err := os.Stat(p); err != nil {
		t.Skipf("reference model %s not found (../shared absent): %v", p, err)
	}
	return p
}

type brand struct{}

// headGraph reads the token embedding through a gather, scales it by the
// final norm and applies the output matrix: three readers of three kinds.
func headGraph(t *testing.T) *poot.Graph {
	b := poot.NewBuilder[brand](poot.Limits{})
	tok := b.Slot(poot.SlotToken, poot.Shape{3}, 0, 511)
	emb := b.Constant("token_embd.weight", poot.T(poot.F32, 512, 64))
	norm := b.Constant("output_norm.weight", poot.T(poot.F32, 64))
	out := b.Constant("output.weight", poot.T(poot.F32, 512, 64))
	x := b.Gather(emb, tok)
	x = b.Mul(x, b.Broadcast(b.Reshape(norm, 1, 64), 3, 64))
	g, err := b.Finish(poot.Out(b.MatMul(x, out)))
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// naiveHead computes the same with float64 over dequantized weights.
func naiveHead(t *testing.T, c *load.Checkpoint, toks []int32) []float64 {
	deq := func(name string) []float32 {
		tt, err := c.Tensor(name)
		if err != nil {
			t.Fatal(err)
		}
		v, err := tt.ToF32()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	emb, norm, out := deq("token_embd.weight"), deq("output_norm.weight"), deq("output.weight")
	var res []float64
	for _, tk := range toks {
		for n := range 512 {
			s := 0.0
			for k := range 64 {
				x := float32(emb[int(tk)*64+k] * norm[k])
				s += float64(x) * float64(out[n*64+k])
			}
			res = append(res, s)
		}
	}
	return res
}

func TestBindAsStored(t *testing.T) {
	for _, name := range []string{"stories260K-f32.gguf", "stories260K-q8_0.gguf", "stories260K-q4_0.gguf"} {
		t.Run(name, func(t *testing.T) {
			c, err := load.Open(refmodel(t, name))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			g, consts, err := load.Bind(headGraph(t), c, nil)
			if err != nil {
				t.Fatal(err)
			}
			embType, _ := c.TensorType("token_embd.weight")
			id, _ := g.Lookup("token_embd.weight")
			if g.Type(id).DType != embType.DType {
				t.Fatalf("bound embedding is %v, stored %v", g.Type(id), embType)
			}
			text := g.String()
			if embType.DType != poot.F32 && !strings.Contains(text, embType.DType.String()+"[3,64] = gather") {
				t.Errorf("the gather does not read stored rows:\n%s", text)
			}
			toks := []int32{1, 403, 511}
			tk, _ := tensor.FromI32(poot.Shape{3}, toks)
			outs, err := interp.Eval(g, interp.ConstMap(consts), interp.Slots{"token": tk}, nil)
			if err != nil {
				t.Fatal(err)
			}
			got := outs[0].F32()
			want := naiveHead(t, c, toks)
			for i := range want {
				if d := math.Abs(float64(got[i]) - want[i]); d > 1e-4*(1+math.Abs(want[i])) {
					t.Fatalf("logit %d = %v, want %v", i, got[i], want[i])
				}
			}
		})
	}
}

func TestBindErrors(t *testing.T) {
	c, err := load.Open(refmodel(t, "stories260K-f32.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	g := headGraph(t)
	cases := map[string]struct {
		resolve load.Resolver
		want    error
		mention []string
	}{
		"unmapped": {func(n string) (load.Source, bool) { return load.Source{Tensor: n}, n != "output.weight" }, load.ErrUnmapped, []string{`constant "output.weight"`}},
		"missing":  {func(n string) (load.Source, bool) { return load.Source{Tensor: n + ".x"}, true }, load.ErrMissing, []string{`tensor "token_embd.weight.x"`}},
		"shape": {func(n string) (load.Source, bool) {
			if n == "output.weight" {
				return load.Source{Tensor: "blk.0.attn_k.weight"}, true
			}
			return load.Source{Tensor: n}, true
		}, load.ErrShape, []string{"f32[512,64]", "f32[32,64]", `"output.weight"`}},
		"rows": {func(n string) (load.Source, bool) {
			return load.Source{Tensor: n, RowStart: 0, RowEnd: 10000}, true
		}, load.ErrShape, []string{"rows [0, 10000)"}},
	}
	for name, c2 := range cases {
		_, _, err := load.Bind(g, c, c2.resolve)
		var be *load.BindError
		if !errors.Is(err, c2.want) || !errors.As(err, &be) {
			t.Errorf("%s: err = %v, want %v", name, err, c2.want)
			continue
		}
		for _, m := range c2.mention {
			if !strings.Contains(err.Error(), m) {
				t.Errorf("%s: %q does not mention %q", name, err, m)
			}
		}
	}
}

func TestOpenErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := load.Open(filepath.Join(dir, "nope.gguf")); err == nil {
		t.Error("a missing file opened")
	}
	txt := filepath.Join(dir, "notes.txt")
	os.WriteFile(txt, []byte("hello, world"), 0o644)
	if _, err := load.Open(txt); !errors.Is(err, load.ErrFormat) {
		t.Errorf("a text file: %v", err)
	}
	bad := filepath.Join(dir, "bad.gguf")
	os.WriteFile(bad, []byte("GGUF\x03\x00\x00\x00\xff\xff"), 0o644)
	if _, err := load.Open(bad); err == nil || !strings.Contains(err.Error(), "byte 8") {
		t.Errorf("a truncated GGUF: %v", err)
	}
	if _, err := load.Open(dir); err == nil {
		t.Error("an empty directory opened as a safetensors model")
	}
}

// TestLayouts: stacks of parts, row ranges, transposes and row orders are
// rearranged at load in the stored dtype.
func TestLayouts(t *testing.T) {
	dir := t.TempDir()
	f16 := func(v ...float32) []byte {
		out := make([]byte, 2*len(v))
		quant.F32RowToF16(out, v)
		return out
	}
	ts := []safetensors.WriterTensor{
		{Name: "e0", DType: safetensors.F16, Shape: poot.Shape{2, 2}, Data: f16(1, 2, 3, 4)},
		{Name: "e1", DType: safetensors.F16, Shape: poot.Shape{2, 2}, Data: f16(5, 6, 7, 8)},
		{Name: "qkv", DType: safetensors.F16, Shape: poot.Shape{3, 2}, Data: f16(1, 2, 3, 4, 5, 6)},
		{Name: "t", DType: safetensors.F16, Shape: poot.Shape{2, 3}, Data: f16(1, 2, 3, 4, 5, 6)},
		// Two experts' fused [in 2, out 4] gate_up projections: out
		// columns 0-1 are the gate, 2-3 the up.
		{Name: "gu", DType: safetensors.F16, Shape: poot.Shape{2, 2, 4}, Data: f16(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)},
	}
	if err := safetensors.WriteDir(dir, []byte(`{"architectures":["Test"]}`), ts, 0); err != nil {
		t.Fatal(err)
	}
	c, err := load.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if c.Format() != load.Safetensors || c.HFConfig()["architectures"] == nil {
		t.Fatal("directory not read as safetensors with its config")
	}
	b := poot.NewBuilder[brand](poot.Limits{})
	stack := b.Constant("stack", poot.T(poot.F32, 2, 2, 2))
	k := b.Constant("k", poot.T(poot.F32, 1, 2))
	tr := b.Constant("tr", poot.T(poot.F32, 3, 2))
	ro := b.Constant("ro", poot.T(poot.F32, 3, 2))
	up := b.Constant("up", poot.T(poot.F32, 2, 2, 2))
	odd := b.Constant("odd", poot.T(poot.F32, 2, 2, 2))
	g, err := b.Finish(poot.Out(b.Cast(stack, poot.F32), b.Cast(k, poot.F32), b.Cast(tr, poot.F32), b.Cast(ro, poot.F32),
		b.Cast(up, poot.F32), b.Cast(odd, poot.F32)))
	if err != nil {
		t.Fatal(err)
	}
	src := map[string]load.Source{
		"stack": {Parts: []string{"e0", "e1"}},
		"k":     {Tensor: "qkv", RowStart: 1, RowEnd: 2},
		"tr":    {Tensor: "t", Transposed: true},
		"ro":    {Tensor: "qkv", RowOrder: []int{2, 0, 1}},
		"up":    {Tensor: "gu", Transposed: true, RowStart: 2, RowEnd: 4},
		"odd":   {Tensor: "gu", Transposed: true, RowStart: 1, RowEnd: 4, RowStep: 2},
	}
	bg, consts, err := load.Bind(g, c, func(n string) (load.Source, bool) { s, ok := src[n]; return s, ok })
	if err != nil {
		t.Fatal(err)
	}
	for n, tt := range consts {
		if tt.Type.DType != poot.F16 {
			t.Errorf("%s bound as %v, want the stored f16", n, tt.Type)
		}
	}
	outs, err := interp.Eval(bg, interp.ConstMap(consts), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]float32{{1, 2, 3, 4, 5, 6, 7, 8}, {3, 4}, {1, 4, 2, 5, 3, 6}, {5, 6, 1, 2, 3, 4},
		{3, 7, 4, 8, 11, 15, 12, 16}, // each expert's up rows [out, in]
		{2, 6, 4, 8, 10, 14, 12, 16}} // each expert's odd rows (interleaved)
	for i, w := range want {
		got := outs[i].F32()
		for j := range w {
			if got[j] != w[j] {
				t.Errorf("output %d = %v, want %v", i, got, w)
				break
			}
		}
	}
}
