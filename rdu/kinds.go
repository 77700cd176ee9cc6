package rdu

import (
	"fmt"

	"github.com/pootlabs/poot"
)

// Kind is one layer kind of a step: the layers whose programs are one
// program up to the names of the constants and states they read.
type Kind struct {
	// Name names the kind in a bundle: "kind0", "kind1", … in the order
	// their first layers appear.
	Name string
	// Layers lists the kind's layers in increasing order; Layers[0] is the
	// layer its program is written for.
	Layers []int
	// Renamings[i] maps each constant and state name read by layer
	// Layers[0] to the name layer Layers[i] reads at the same place
	// (Renamings[0] is the identity).
	Renamings []map[string]string
}

// LayerKinds groups the layers of a traced step into kinds, in the order
// their first layers appear. Two layers are of one kind when their
// programs are one program up to the names of the constants and states
// they read: the same primitives, parameters, types and composites with
// their attributes, the same step tables (the same attention mask and
// rotary tables), and weights of the same stored dtypes, so that a layer
// whose checkpoint stores Q8_0 where another stores F16 is of another kind.
// A graph without the streamed shape is a *StructureError.
func LayerKinds(g *poot.Graph) ([]Kind, error) {
	v, err := analyse(g)
	if err != nil {
		return nil, err
	}
	return v.kinds()
}

func (v *stepView) kinds() ([]Kind, error) {
	type seen struct {
		kind  int
		named []poot.ValueID
	}
	byDigest := map[[32]byte]seen{}
	var kinds []Kind
	for l, eqns := range v.layers {
		d, named := v.programDigest(eqns)
		s, ok := byDigest[d]
		if !ok {
			s = seen{kind: len(kinds), named: named}
			byDigest[d] = s
			kinds = append(kinds, Kind{Name: fmt.Sprintf("kind%d", len(kinds))})
		}
		k := &kinds[s.kind]
		if len(named) != len(s.named) {
			return nil, structureErr("layers %d and %d share a digest but read %d and %d tensors", k.Layers[0], l, len(s.named), len(named))
		}
		ren := make(map[string]string, len(named))
		for i, id := range s.named {
			from, to := v.g.Value(id).Name, v.g.Value(named[i]).Name
			if prev, ok := ren[from]; ok && prev != to {
				return nil, structureErr("layer %d reads %q where layer %d reads both %q and %q", k.Layers[0], from, l, prev, to)
			}
			ren[from] = to
		}
		k.Layers = append(k.Layers, l)
		k.Renamings = append(k.Renamings, ren)
	}
	return kinds, nil
}
