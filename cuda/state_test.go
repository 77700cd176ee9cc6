package cuda

import (
	"fmt"
	"strings"
	"testing"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/tensor"
)

// TestHostStateHeld runs two sequences interleaved through one prefill and
// one decode executable of the host harness, each against the oracle on a
// state of its own: the state stays with the executable that ran it (no
// copy home), moves to the other executable by a device copy, is brought
// home when its executable runs a different State or closes, and is
// current on the host after Sync; a Discarded state starts over from its
// host tensors.
func TestHostStateHeld(t *testing.T) {
	host(t)
	r := openRef(t, "tiny-llama-f32.gguf")
	c, m := r.ckpt, r.model
	prompt := []int32{1, 5, 9, 13, 2}
	pg, pc := refStep(t, c, m, len(prompt), 16)
	dg, dc := refStep(t, c, m, 1, 16)
	in := HostInterpreter{CacheDir: testCache}
	px, err := in.CompileExec(pg, pc)
	if err != nil {
		t.Fatal(err)
	}
	defer px.Close()
	dx, err := in.CompileExec(dg, dc)
	if err != nil {
		t.Fatal(err)
	}
	defer dx.Close()
	po, _ := interp.Compile(pg, pc)
	do, _ := interp.Compile(dg, dc)
	soA, err := interp.NewState(pg)
	if err != nil {
		t.Fatal(err)
	}
	soB, scA, scB := soA.Clone(), soA.Clone(), soA.Clone()
	step := 0
	kept := map[*Exec][]tensor.Tensor{}
	run := func(x *Exec, o interp.Executable, sc, so *interp.State, toks []int32, start int) {
		t.Helper()
		step++
		s := stepSlots(t, toks, start)
		ro, err := o.Run(s, so)
		if err != nil {
			t.Fatal(err)
		}
		// Every other step downloads into tensors kept from the last.
		var rc []tensor.Tensor
		if step%2 == 0 && kept[x] != nil {
			rc = kept[x]
			err = x.RunInto(s, sc, rc)
		} else {
			rc, err = x.Run(s, sc)
			kept[x] = rc
		}
		if err != nil {
			t.Fatalf("step %d: %v", step, err)
		}
		if d := maxRelDiff(rc[0].F32(), ro[0].F32()); d > refTol {
			t.Errorf("step %d: logits differ by %.3g of their range", step, d)
		}
		if h, _ := sc.Holder().(*hold); h == nil || h.x != x {
			t.Errorf("step %d: the state is not held by the executable that ran it", step)
		}
	}
	home := func(what string, sc, so *interp.State) {
		t.Helper()
		if err := sc.Sync(); err != nil {
			t.Fatal(err)
		}
		if sc.Holder() != nil {
			t.Errorf("%s: still held after Sync", what)
		}
		for name, want := range so.Tensors {
			if d := maxRelDiff(sc.Tensors[name].F32(), want.F32()); d > refTol {
				t.Errorf("%s: state %s differs by %.3g of its range", what, name, d)
			}
		}
	}
	run(px, po, scA, soA, prompt, 0)
	run(px, po, scB, soB, []int32{3, 7, 11, 2, 9}, 0)
	if scA.Holder() != nil {
		t.Error("A is still held after its executable ran B")
	}
	home("A after px ran B", scA, soA)
	for i := range 3 {
		run(dx, do, scA, soA, []int32{int32(4 + i)}, len(prompt)+i) // uploaded, then held
		run(dx, do, scB, soB, []int32{int32(8 + i)}, len(prompt)+i) // A home, B uploaded
	}
	run(dx, do, scB, soB, []int32{6}, len(prompt)+3) // held already
	run(px, po, scB, soB, prompt, 0)                 // from dx by device copy
	run(dx, do, scB, soB, []int32{6}, len(prompt))   // and back
	home("B", scB, soB)
	home("A", scA, soA)
	// Emptied caches: the held values are dropped, the cleared host
	// tensors count.
	run(dx, do, scA, soA, []int32{5}, 0)
	scA.Discard()
	for _, s := range []*interp.State{scA, soA} {
		for _, t := range s.Tensors {
			clear(t.Data)
		}
	}
	run(dx, do, scA, soA, []int32{5}, 0)
	small, _ := tensor.New(poot.T(poot.F32, 3))
	if err := dx.RunInto(stepSlots(t, []int32{5}, 1), scA, []tensor.Tensor{small}); err == nil || !strings.Contains(err.Error(), "output 0 is") {
		t.Errorf("RunInto with a short output tensor: %v", err)
	}
	// Closing the holder brings its state home.
	run(px, po, scA, soA, prompt, 0)
	px.Close()
	if scA.Holder() != nil {
		t.Error("A is still held by a closed executable")
	}
	home(fmt.Sprintf("A after its executable closed"), scA, soA)
}
