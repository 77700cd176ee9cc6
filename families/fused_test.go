package families_test

import (
	"encoding/binary"
	"math"
	"path/filepath"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/families"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/load"
	"github.com/pootlabs/poot/safetensors"
)

// TestFuseRoundTrip writes canonical expert projections as the fused
// tensors their views describe (gate and up halves of a transposed stack,
// as Llama 4 stores them; interleaved rows, as gpt-oss does; a plain fused
// QKV) and reads them back through the loader: every canonical tensor must
// come back exactly.
func TestFuseRoundTrip(t *testing.T) {
	const e, f, d = 2, 3, 4
	specs := []families.TensorSpec{
		{Name: "blk.0.ffn_gate_exps.weight", Shape: poot.Shape{e, f, d}},
		{Name: "blk.0.ffn_up_exps.weight", Shape: poot.Shape{e, f, d}},
		{Name: "blk.1.ffn_gate_exps.weight", Shape: poot.Shape{e, f, d}},
		{Name: "blk.1.ffn_up_exps.weight", Shape: poot.Shape{e, f, d}},
		{Name: "blk.0.attn_q.weight", Shape: poot.Shape{2, d}},
		{Name: "blk.0.attn_k.weight", Shape: poot.Shape{1, d}},
		{Name: "blk.0.ffn_gate_exps.bias", Shape: poot.Shape{e, f}},
		{Name: "blk.0.ffn_up_exps.bias", Shape: poot.Shape{e, f}},
	}
	values := map[string][]float32{}
	for i, s := range specs {
		v := make([]float32, s.Shape.Size())
		for j := range v {
			v[j] = float32(i*100 + j)
		}
		values[s.Name] = v
	}
	layouts := map[string]families.WeightMap{
		"halves": {Views: map[string]load.Source{
			"ffn_gate_exps.weight": {Tensor: "gate_up_proj", Transposed: true, RowStart: 0, RowEnd: f},
			"ffn_up_exps.weight":   {Tensor: "gate_up_proj", Transposed: true, RowStart: f, RowEnd: 2 * f},
			"attn_q.weight":        {Tensor: "qkv_proj.weight", RowStart: 0, RowEnd: 2},
			"attn_k.weight":        {Tensor: "qkv_proj.weight", RowStart: 2, RowEnd: 3},
			"ffn_gate_exps.bias":   {Tensor: "gate_up_proj_bias", Columns: true, RowStart: 0, RowEnd: f},
			"ffn_up_exps.bias":     {Tensor: "gate_up_proj_bias", Columns: true, RowStart: f, RowEnd: 2 * f},
		}},
		"interleaved": {Views: map[string]load.Source{
			"ffn_gate_exps.weight": {Tensor: "gate_up_proj", Transposed: true, RowStart: 0, RowEnd: 2 * f, RowStep: 2},
			"ffn_up_exps.weight":   {Tensor: "gate_up_proj", Transposed: true, RowStart: 1, RowEnd: 2 * f, RowStep: 2},
			"attn_q.weight":        {Tensor: "qkv_proj.weight", RowStart: 0, RowEnd: 2},
			"attn_k.weight":        {Tensor: "qkv_proj.weight", RowStart: 2, RowEnd: 3},
			"ffn_gate_exps.bias":   {Tensor: "gate_up_proj_bias", Columns: true, RowStart: 0, RowEnd: 2 * f, RowStep: 2},
			"ffn_up_exps.bias":     {Tensor: "gate_up_proj_bias", Columns: true, RowStart: 1, RowEnd: 2 * f, RowStep: 2},
		}},
	}
	for name, w := range layouts {
		t.Run(name, func(t *testing.T) {
			w.Container, w.LayerPrefix = families.Safetensors, "model.layers."
			fused, err := w.Fuse(specs, func(n string) ([]float32, error) { return values[n], nil })
			if err != nil {
				t.Fatal(err)
			}
			if len(fused) != 4 || !fused[0].Shape.Equal(poot.Shape{e, d, 2 * f}) || !fused[2].Shape.Equal(poot.Shape{3, d}) || !fused[3].Shape.Equal(poot.Shape{e, 2 * f}) {
				t.Fatalf("fused %d tensors, first %v: want 4, [%d %d %d] then the layer 1 stack, qkv [3 %d] and the biases [%d %d]", len(fused), fused[0].Shape, e, d, 2*f, d, e, 2*f)
			}
			var ts []safetensors.WriterTensor
			for _, ft := range fused {
				data := make([]byte, 4*len(ft.Data))
				for i, x := range ft.Data {
					binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(x))
				}
				ts = append(ts, safetensors.WriterTensor{Name: ft.Name, DType: "F32", Shape: ft.Shape, Data: data})
			}
			dir := filepath.Join(t.TempDir(), "m")
			if err := safetensors.WriteDir(dir, []byte(`{"architectures":["Test"]}`), ts, 0); err != nil {
				t.Fatal(err)
			}
			c, err := load.Open(dir)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			b := poot.NewBuilder[struct{}](poot.Limits{})
			var outs []poot.Traced[struct{}]
			for _, s := range specs {
				outs = append(outs, b.Cast(b.Constant(s.Name, poot.T(poot.F32, s.Shape...)), poot.F32))
			}
			g, err := b.Finish(poot.Out(outs...))
			if err != nil {
				t.Fatal(err)
			}
			bg, consts, err := load.Bind(g, c, w.Resolver())
			if err != nil {
				t.Fatal(err)
			}
			res, err := interp.Eval(bg, interp.ConstMap(consts), nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			for i, s := range specs {
				got, want := res[i].F32(), values[s.Name]
				for j := range want {
					if got[j] != want[j] {
						t.Fatalf("%s: element %d is %v, want %v", s.Name, j, got[j], want[j])
					}
				}
			}
			if err := families.CheckTensors(viewModel{specs, w}, c); err != nil {
				t.Errorf("the tensor table check refuses the fused tensors: %v", err)
			}
		})
	}
}

// viewModel is a model that reads the given tensors and nothing else.
type viewModel struct {
	specs []families.TensorSpec
	w     families.WeightMap
}

func (m viewModel) Family() string              { return "view" }
func (m viewModel) Schema() families.Schema     { return families.Schema{Vocab: 1, Dim: 1, Layers: 2} }
func (m viewModel) Weights() families.WeightMap { return m.w }
func (m viewModel) Trace(families.StepSpec, poot.Limits) (*poot.Graph, error) {
	b := poot.NewBuilder[struct{}](poot.Limits{})
	var outs []poot.Traced[struct{}]
	for _, s := range m.specs {
		outs = append(outs, b.Cast(b.Constant(s.Name, poot.T(poot.F32, s.Shape...)), poot.F32))
	}
	return b.Finish(poot.Out(outs...))
}
