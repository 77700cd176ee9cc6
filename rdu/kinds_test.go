package rdu

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/driver/synth"
	"github.com/pootlabs/poot/families"
)

// traceTiny traces a decode (or prefill) step of family's tiny synth
// preset, unbound (every constant F32).
func traceTiny(t testing.TB, family string, newTokens, ctx int) *poot.Graph {
	t.Helper()
	p, err := synth.FindPreset(family, "tiny")
	if err != nil {
		t.Fatal(err)
	}
	m, err := synth.Model(p.Family, p.Config)
	if err != nil {
		t.Fatal(err)
	}
	g, err := m.Trace(families.StepSpec{Program: families.Decode, Shape: families.StepShape{Rows: 1, New: newTokens, Capacity: ctx}}, poot.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func layersOf(ks []Kind) [][]int {
	var out [][]int
	for _, k := range ks {
		out = append(out, k.Layers)
	}
	return out
}

// TestLayerKindsOfFamilies: the tiny presets group as their architectures
// say: llama one kind, gemma3 its sliding-window layers and its global
// layer, llama4 its rotary dense, rotary routed and global routed layers,
// gpt-oss its windowed and its full layer; and a prefill step groups as the
// decode step does.
func TestLayerKindsOfFamilies(t *testing.T) {
	for _, c := range []struct {
		family string
		want   [][]int
	}{
		{"llama", [][]int{{0, 1}}},
		{"gemma3", [][]int{{0, 1}, {2}}},
		{"llama4", [][]int{{0, 2}, {1}, {3}}},
		{"gpt-oss", [][]int{{0}, {1}}},
		{"mixtral", [][]int{{0, 1}}},
		{"qwen3moe", [][]int{{0, 1}}},
		{"phi2", [][]int{{0, 1}}},
		{"falcon", [][]int{{0, 1}}},
	} {
		for _, n := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/new%d", c.family, n), func(t *testing.T) {
				ks, err := LayerKinds(traceTiny(t, c.family, n, 16))
				if err != nil {
					t.Fatal(err)
				}
				if got := layersOf(ks); !slices.EqualFunc(got, c.want, slices.Equal) {
					t.Fatalf("kinds %v, want %v", got, c.want)
				}
				for i, k := range ks {
					if k.Name != fmt.Sprintf("kind%d", i) {
						t.Errorf("kind %d is named %q", i, k.Name)
					}
				}
			})
		}
	}
}

// TestRenamings: the renaming of a kind maps every tensor of its first
// layer onto the same role in each other layer, and is the identity on the
// first.
func TestRenamings(t *testing.T) {
	ks, err := LayerKinds(traceTiny(t, "llama", 1, 16))
	if err != nil {
		t.Fatal(err)
	}
	k := ks[0]
	if len(k.Renamings) != 2 {
		t.Fatalf("%d renamings for 2 layers", len(k.Renamings))
	}
	for from, to := range k.Renamings[0] {
		if from != to {
			t.Errorf("layer 0 renames %q to %q", from, to)
		}
	}
	if len(k.Renamings[1]) != 11 {
		t.Errorf("layer 1 renames %d tensors, want 9 weights and 2 caches: %v", len(k.Renamings[1]), k.Renamings[1])
	}
	for from, to := range k.Renamings[1] {
		want := strings.Replace(strings.Replace(from, "blk.0.", "blk.1.", 1), ".0", ".1", 1)
		if to != want {
			t.Errorf("layer 1: %q renamed to %q, want %q", from, to, want)
		}
	}
}

// TestMixedDTypesSplit: a layer whose weights are stored in another dtype
// is of another kind; storing every layer alike joins them again.
func TestMixedDTypesSplit(t *testing.T) {
	g := traceTiny(t, "llama", 1, 16)
	retype := func(layers ...int) *poot.Graph {
		dt := map[string]poot.DType{}
		for _, id := range g.Inputs(poot.Const) {
			name := g.Value(id).Name
			for _, l := range layers {
				if strings.HasPrefix(name, fmt.Sprintf("blk.%d.", l)) && strings.HasSuffix(name, "_q.weight") {
					dt[name] = poot.Q8_0
				} else if strings.HasPrefix(name, fmt.Sprintf("blk.%d.", l)) && strings.Contains(name, "ffn_") && !strings.Contains(name, "norm") {
					dt[name] = poot.F16
				}
			}
		}
		bg, err := g.RetypeConstants(dt)
		if err != nil {
			t.Fatal(err)
		}
		return bg
	}
	for _, c := range []struct {
		layers []int
		want   [][]int
	}{
		{nil, [][]int{{0, 1}}},
		{[]int{1}, [][]int{{0}, {1}}},
		{[]int{0}, [][]int{{0}, {1}}},
		{[]int{0, 1}, [][]int{{0, 1}}},
	} {
		ks, err := LayerKinds(retype(c.layers...))
		if err != nil {
			t.Fatal(err)
		}
		if got := layersOf(ks); !slices.EqualFunc(got, c.want, slices.Equal) {
			t.Errorf("layers %v stored otherwise: kinds %v, want %v", c.layers, got, c.want)
		}
	}
}

// TestNotStreamed: a graph without layer scopes, and one whose weights are
// read outside every program, are structure errors.
func TestNotStreamed(t *testing.T) {
	b := poot.NewBuilder[struct{}](poot.Limits{})
	x := b.SlotNamed("x", poot.T(poot.F32, 1, 4))
	w := b.Constant("w", poot.T(poot.F32, 4, 4))
	y := b.MatMul(x, w)
	g, err := b.Finish(poot.Out(y))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LayerKinds(g); !errors.Is(err, ErrStructure) {
		t.Errorf("no layers: %v", err)
	}
	b = poot.NewBuilder[struct{}](poot.Limits{})
	x = b.Constant("x", poot.T(poot.F32, 1, 4))
	w = b.Constant("w", poot.T(poot.F32, 4, 4))
	var h poot.Traced[struct{}]
	b.Scope("layer.0", func() { h = b.Exp(x) })
	y = b.MatMul(h, w)
	b.Scope("layer.1", func() { y = b.Exp(y) })
	g, err = b.Finish(poot.Out(y))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := LayerKinds(g); !errors.Is(err, ErrStructure) {
		t.Errorf("weights read between layers: %v", err)
	}
}
