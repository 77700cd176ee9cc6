package cuda

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"unsafe"

	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/internal/hostexec"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
	"github.com/pootlabs/poot/tensor"
)

// device is where a plan's kernels run: a GPU through the driver API, or
// the CPU through the host harness. Addresses are device addresses.
type device interface {
	// load compiles (or fetches from the cache) and loads the module,
	// returning a handle per kernel name.
	load(m *Module) (map[string]uintptr, error)
	alloc(n int64) (uint64, error)
	upload(dst uint64, src []byte) error
	download(dst []byte, src uint64) error
	// step runs one step's work, which it may capture once and replay.
	step(work func() error) error
	launch(fn uintptr, l *Launch, params uintptr) error
	copyD(dst, src uint64, n int64) error
	// peer reports whether copyPeer may copy from o's memory into this
	// device's (two executables on one GPU), and copyPeer copies n bytes
	// at src on o to dst here.
	peer(o device) bool
	copyPeer(dst uint64, o device, src uint64, n int64) error
	close()
}

// Exec is a plan compiled for a device. It is not safe for concurrent use.
type Exec struct {
	plan   *lower.Plan
	mod    *Module
	dev    device
	g      *poot.Graph
	binds  *interp.Bindings
	addr   []uint64 // per value: its device address (0: not stored)
	fns    []uintptr
	faults uint64
	arena  uint64
	zeros  []byte
	// params holds, outside the Go heap, every launch's argument values
	// and the pointers to them that a launch hands the driver.
	params  []byte
	vals    []uint64
	ptrs    []uint64
	first   []int // per launch: its first argument in vals
	cleanup runtime.Cleanup
	ran     bool
	outputs []poot.ValueID
	// states lists the state inputs this executable stores; after a step
	// their values stay on the device, held for holding (see hold).
	states  []stateAt
	hold    *hold
	holding *interp.State
	words   []byte // the fault words read after a step
}

// stateAt is a state input and its device address.
type stateAt struct {
	name  string
	addr  uint64
	bytes int64
}

// hold is an executable's claim on the values of a State it ran: they
// stay in its storage after a step, so that a decode step does not copy
// the KV caches to the host and back, until the host asks for them
// (interp.State.Sync) or another executable on the same GPU copies them
// into its own storage.
type hold struct{ x *Exec }

// Release downloads the held values into s's host tensors.
func (h *hold) Release(s *interp.State) error {
	x := h.x
	if x.holding == s {
		x.holding = nil
	}
	if x.dev == nil {
		return errors.New("cuda: the executable holding the state is closed")
	}
	for _, st := range x.states {
		if err := x.dev.download(s.Tensors[st.name].Data, st.addr); err != nil {
			return err
		}
	}
	return nil
}

// takeState puts state's current values into the executable's storage:
// nothing to do when it holds them already, a device copy when another
// executable on the same GPU holding the same states does, an upload from
// the host otherwise. A different State the executable held is brought
// home first, since its values are about to be overwritten.
func (x *Exec) takeState(state *interp.State) error {
	if state == nil || len(x.states) == 0 {
		return nil
	}
	h, _ := state.Holder().(*hold)
	if h == x.hold {
		return nil
	}
	if o := x.holding; o != nil && o != state && o.Holder() == x.hold {
		if err := o.Sync(); err != nil {
			return err
		}
	}
	x.holding = nil
	if h != nil && h.x.dev != nil && x.dev.peer(h.x.dev) && sameStates(h.x.states, x.states) {
		for i, st := range x.states {
			if err := x.dev.copyPeer(st.addr, h.x.dev, h.x.states[i].addr, st.bytes); err != nil {
				return err
			}
		}
		if h.x.holding == state {
			h.x.holding = nil
		}
		state.Hold(x.hold)
		x.holding = state
		return nil
	}
	if err := state.Sync(); err != nil {
		return err
	}
	for _, st := range x.states {
		if err := x.dev.upload(st.addr, state.Tensors[st.name].Data); err != nil {
			return err
		}
	}
	return nil
}

// sameStates reports whether two executables store the same states in the
// same order with the same sizes.
func sameStates(a, b []stateAt) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].name != b[i].name || a[i].bytes != b[i].bytes {
			return false
		}
	}
	return true
}

// compile builds the plan of g, generates the kernels gen allows and
// loads them on dev, allocates the arena, constants, slots and states,
// computes the init kernels on the host and uploads them.
func compile(dev device, g *poot.Graph, consts interp.Consts, opts lower.Options, gen GenOptions) (*Exec, error) {
	if g == nil {
		return nil, &interp.Error{Eqn: -1, Err: fmt.Errorf("%w: nil graph", interp.ErrUnsupported)}
	}
	if err := interp.CheckConsts(g, consts); err != nil {
		return nil, err
	}
	plan, err := lower.Build(g, Target(), opts)
	if err != nil {
		var le *lower.LegalizeError
		if errors.As(err, &le) {
			return nil, &interp.Error{Eqn: le.Eqn, Op: le.Op, Scope: le.Scope, Err: fmt.Errorf("%w: %v", interp.ErrUnsupported, err)}
		}
		return nil, &interp.Error{Eqn: -1, Err: fmt.Errorf("%w: %v", interp.ErrUnsupported, err)}
	}
	mod, err := GenerateFor(plan, gen)
	if err != nil {
		var ue *UnsupportedError
		if errors.As(err, &ue) && len(plan.Kernels[ue.Step].Eqns) > 0 {
			i := plan.Kernels[ue.Step].Eqns[0]
			e := g.Eqn(i)
			return nil, &interp.Error{Eqn: i, Op: e.Op, Scope: g.Scope(e.Scope), Err: err}
		}
		return nil, &interp.Error{Eqn: -1, Err: err}
	}
	x := &Exec{plan: plan, mod: mod, dev: dev, g: g, binds: interp.NewBindings(g), addr: make([]uint64, g.NumValues()),
		outputs: g.Outputs()}
	x.hold = &hold{x}
	if err := x.allocate(consts); err != nil {
		x.Close()
		return nil, err
	}
	// States in name order, so that two executables of one model list
	// them alike.
	for _, id := range g.Inputs(poot.State) {
		if a := x.addr[id]; a != 0 {
			v := g.Value(id)
			x.states = append(x.states, stateAt{v.Name, a, v.Type.Bytes()})
		}
	}
	slices.SortFunc(x.states, func(a, b stateAt) int { return strings.Compare(a.name, b.name) })
	fns, err := dev.load(mod)
	if err != nil {
		x.Close()
		return nil, err
	}
	var vals []uint64
	for _, l := range mod.Launches {
		x.fns = append(x.fns, fns[l.Kernel])
		x.first = append(x.first, len(vals))
		for _, a := range l.Args {
			v := x.faults + 4*uint64(a.Fault)
			if a.Value == argScratch {
				v = x.arena + uint64(scratchOffset(x.plan))
			}
			if a.Value >= 0 {
				if v = x.addr[a.Value]; v == 0 {
					x.Close()
					return nil, fmt.Errorf("cuda: launch %s reads value %d, which has no storage", l.Kernel, a.Value)
				}
			}
			vals = append(vals, v)
		}
	}
	// The driver reads each argument through a pointer while a launch is
	// made (and a captured graph keeps none): values and pointers live in
	// memory the garbage collector does not manage.
	n := len(vals) + 1
	if x.params, err = syscall.Mmap(-1, 0, 16*n, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_ANON|syscall.MAP_PRIVATE); err != nil {
		x.Close()
		return nil, fmt.Errorf("cuda: launch parameters: %w", err)
	}
	words := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(x.params))), 2*n)
	x.vals, x.ptrs = words[:n], words[n:]
	copy(x.vals, vals)
	for i := range x.vals {
		x.ptrs[i] = uint64(uintptr(unsafe.Pointer(&x.vals[i])))
	}
	// An executable dropped without Close still releases its device.
	x.cleanup = runtime.AddCleanup(x, func(r release) { r.run() }, release{x.dev, x.params})
	return x, nil
}

// release frees what an executable holds outside the Go heap.
type release struct {
	dev    device
	params []byte
}

func (r release) run() {
	if r.dev != nil {
		r.dev.close()
	}
	if r.params != nil {
		syscall.Munmap(r.params)
	}
}

func (x *Exec) allocate(consts interp.Consts) error {
	g, plan := x.g, x.plan
	var err error
	if x.arena, err = x.dev.alloc(max(scratchOffset(plan)+x.mod.Scratch, 64)); err != nil {
		return err
	}
	x.zeros = make([]byte, 4*max(x.mod.Faults, 1))
	if x.faults, err = x.dev.alloc(int64(len(x.zeros))); err != nil {
		return err
	}
	roots := map[poot.ValueID]uint64{}
	for id, l := range plan.Locs {
		switch l.Space {
		case lower.None:
			continue
		case lower.Arena:
			x.addr[id] = x.arena + uint64(l.Offset)
			continue
		}
		if a, ok := roots[l.Root]; ok {
			x.addr[id] = a
			continue
		}
		rt := g.Type(l.Root)
		a, err := x.dev.alloc(max(rt.Bytes(), 4))
		if err != nil {
			return err
		}
		roots[l.Root], x.addr[id] = a, a
		if l.Space == lower.ConstSpace {
			t, _ := consts.Lookup(g.Value(l.Root).Name)
			if err := x.dev.upload(a, t.Data); err != nil {
				return err
			}
		}
	}
	for _, k := range plan.Inits {
		id := k.Outputs[0]
		if x.addr[id] == 0 {
			continue
		}
		e := g.Eqn(k.Eqns[0])
		res := hostexec.NewBuf(g.Type(id).Bytes())
		run, err := hostexec.Compile(&hostexec.Eqn{Op: e.Op, Params: e.Params, Out: g.Type(id), Res: res})
		if err == nil && run != nil { // a nil run has filled the value already
			err = run()
		}
		if err == nil {
			err = x.dev.upload(x.addr[id], res.Bytes())
		}
		if err != nil {
			return &interp.Error{Eqn: k.Eqns[0], Op: e.Op, Scope: g.Scope(e.Scope), Err: err}
		}
	}
	return nil
}

// scratchOffset is where the module's scratch starts in the arena: after
// the plan's values, aligned to 256 bytes.
func scratchOffset(plan *lower.Plan) int64 { return (plan.ArenaBytes + 255) &^ 255 }

// Plan returns the plan the executable runs.
func (x *Exec) Plan() *lower.Plan { return x.plan }

// Module returns the generated kernels and launches.
func (x *Exec) Module() *Module { return x.mod }

// Close releases the device.
func (x *Exec) Close() {
	if x.dev != nil && x.holding != nil && x.holding.Holder() == x.hold {
		// The values of the state it holds live only here.
		_ = x.holding.Sync()
	}
	x.holding = nil
	x.cleanup.Stop()
	release{x.dev, x.params}.run()
	x.dev, x.params = nil, nil
}

// Run executes one step (see interp.Executable): slots are uploaded, and
// the state unless this executable holds it already, the step's launches
// run (captured once and replayed on a GPU) and the outputs are
// downloaded. The new state stays on the device, held (see
// interp.State.Hold) until the host syncs it or another executable takes
// it.
func (x *Exec) Run(slots interp.Slots, state *interp.State) ([]tensor.Tensor, error) {
	res := make([]tensor.Tensor, len(x.outputs))
	for i, id := range x.outputs {
		t, err := tensor.New(x.g.Type(id))
		if err != nil {
			return nil, err
		}
		res[i] = t
	}
	if err := x.RunInto(slots, state, res); err != nil {
		return nil, err
	}
	return res, nil
}

// RunInto is Run downloading the outputs into outs, tensors of the
// outputs' types the caller keeps from step to step: a decode step then
// allocates no logits (half a megabyte at a vocabulary of 128k).
func (x *Exec) RunInto(slots interp.Slots, state *interp.State, outs []tensor.Tensor) error {
	if x.dev == nil {
		return &interp.Error{Eqn: -1, Err: errors.New("cuda: the executable is closed")}
	}
	if len(outs) != len(x.outputs) {
		return fmt.Errorf("cuda: %d output tensors for %d outputs", len(outs), len(x.outputs))
	}
	for i, id := range x.outputs {
		if want := x.g.Type(id); !outs[i].Type.Equal(want) || int64(len(outs[i].Data)) != want.Bytes() {
			return fmt.Errorf("cuda: output %d is %v, want %v", i, outs[i].Type, want)
		}
	}
	if err := x.binds.Check(slots, state); err != nil {
		return err
	}
	x.ran = false
	g := x.g
	for _, id := range g.Inputs(poot.Slot) {
		if a := x.addr[id]; a != 0 {
			if err := x.dev.upload(a, slots[g.Value(id).Name].Data); err != nil {
				return err
			}
		}
	}
	if err := x.takeState(state); err != nil {
		return err
	}
	if err := x.dev.upload(x.faults, x.zeros); err != nil {
		return err
	}
	if err := x.dev.step(x.launches); err != nil {
		return err
	}
	if len(x.words) != len(x.zeros) {
		x.words = make([]byte, len(x.zeros))
	}
	if err := x.dev.download(x.words, x.faults); err != nil {
		return err
	}
	if err := x.fault(x.words); err != nil {
		return err
	}
	for i, id := range x.outputs {
		if x.addr[id] == 0 {
			return fmt.Errorf("cuda: value %d has no storage", id)
		}
		if err := x.dev.download(outs[i].Data, x.addr[id]); err != nil {
			return err
		}
	}
	if err := x.writeback(); err != nil {
		return err
	}
	x.ran = true
	if state != nil && len(x.states) > 0 {
		state.Hold(x.hold)
		x.holding = state
	}
	return nil
}

// launches runs the step's kernels.
func (x *Exec) launches() error {
	for i := range x.mod.Launches {
		l := &x.mod.Launches[i]
		if err := x.dev.launch(x.fns[i], l, uintptr(unsafe.Pointer(&x.ptrs[x.first[i]]))); err != nil {
			return fmt.Errorf("cuda: launch %d (%s): %w", i, l.Kernel, err)
		}
	}
	return nil
}

// writeback copies the state outputs that were not written in place into
// their states' storage, after the outputs are read (an output may be a
// state's old value).
func (x *Exec) writeback() error {
	wbs := x.plan.Writebacks
	for _, wb := range wbs {
		if wb.Staged {
			if err := x.dev.copyD(x.arena+uint64(wb.Stage), x.addr[wb.Out], x.g.Type(wb.Out).Bytes()); err != nil {
				return err
			}
		}
	}
	for _, wb := range wbs {
		src := x.addr[wb.Out]
		if wb.Staged {
			src = x.arena + uint64(wb.Stage)
		}
		if err := x.dev.copyD(x.addr[wb.In], src, x.g.Type(wb.Out).Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// fault turns the first fault word set into the error of its equation.
func (x *Exec) fault(words []byte) error {
	for i, l := range x.mod.Launches {
		for _, a := range l.Args {
			if a.Value != argFault {
				continue
			}
			code := binary.LittleEndian.Uint32(words[4*a.Fault:])
			if code == 0 {
				continue
			}
			kind := interp.ErrIndexRange
			switch code {
			case faultDivide:
				kind = interp.ErrDivideByZero
			case faultHalfRange:
				kind = ErrHalfRange
			}
			eq := x.plan.Kernels[a.Step].Eqns[0]
			e := x.g.Eqn(eq)
			return &interp.Error{Eqn: eq, Op: e.Op, Scope: x.g.Scope(e.Scope), Err: fmt.Errorf("%w (launch %d, %s)", kind, i, l.Kernel)}
		}
	}
	return nil
}

func (x *Exec) read(id poot.ValueID) (tensor.Tensor, error) {
	t, err := tensor.New(x.g.Type(id))
	if err != nil {
		return t, err
	}
	if x.addr[id] == 0 {
		return t, fmt.Errorf("cuda: value %d has no storage", id)
	}
	return t, x.dev.download(t.Data, x.addr[id])
}

// Witness returns a copy of the named witness of the last successful Run.
func (x *Exec) Witness(name string) (tensor.Tensor, bool) {
	if !x.ran || x.dev == nil {
		return tensor.Tensor{}, false
	}
	for _, w := range x.g.Witnesses() {
		if w.Name == name {
			t, err := x.read(w.Value)
			return t, err == nil
		}
	}
	return tensor.Tensor{}, false
}
