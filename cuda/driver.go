package cuda

import (
	"fmt"
	"os"
	"runtime"
	"strings"
	"sync"
	"unsafe"

	"github.com/ebitengine/purego"
)

// lib is a shared library opened through purego with the addresses of the
// functions it must have.
type lib struct {
	name string
	h    uintptr
	fn   map[string]uintptr
}

// openLib opens the first of names that loads and looks up every symbol;
// a failure is an *UnavailableError wrapping what.
func openLib(names, syms []string, what error) (*lib, error) {
	var tried []string
	for _, n := range names {
		h, err := purego.Dlopen(n, purego.RTLD_NOW|purego.RTLD_GLOBAL)
		if err != nil {
			tried = append(tried, err.Error())
			continue
		}
		l := &lib{name: n, h: h, fn: map[string]uintptr{}}
		for _, s := range syms {
			a, err := purego.Dlsym(h, s)
			if err != nil {
				return nil, &UnavailableError{What: what, Detail: fmt.Sprintf("%s lacks %s", n, s)}
			}
			l.fn[s] = a
		}
		return l, nil
	}
	return nil, &UnavailableError{What: what, Detail: strings.Join(tried, "; ")}
}

// call calls a function of the library. Like purego.SyscallN, it keeps
// the objects of pointer arguments converted to uintptr in its argument
// list alive, and on the heap, for the call.
//
//go:uintptrescapes
func (l *lib) call(name string, args ...uintptr) int32 {
	r, _, _ := purego.SyscallN(l.fn[name], args...)
	return int32(r)
}

// cString returns s as a NUL-terminated C string held by Go memory.
func cString(s string) *byte {
	b := make([]byte, len(s)+1)
	copy(b, s)
	return &b[0]
}

// goString copies the C string at p.
func goString(p uintptr) string {
	if p == 0 {
		return ""
	}
	var b []byte
	for i := uintptr(0); ; i++ {
		c := *(*byte)(unsafe.Add(*(*unsafe.Pointer)(unsafe.Pointer(&p)), i))
		if c == 0 {
			return string(b)
		}
		b = append(b, c)
	}
}

var driverSyms = []string{
	"cuInit", "cuDriverGetVersion", "cuDeviceGetCount", "cuDeviceGet", "cuDeviceGetAttribute", "cuDeviceGetName",
	"cuDevicePrimaryCtxRetain", "cuDevicePrimaryCtxRelease", "cuCtxSetCurrent", "cuCtxSynchronize",
	"cuMemAlloc_v2", "cuMemFree_v2", "cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2", "cuMemcpyDtoDAsync_v2", "cuMemsetD8_v2",
	"cuModuleLoadData", "cuModuleUnload", "cuModuleGetFunction", "cuLaunchKernel",
	"cuStreamCreate", "cuStreamDestroy_v2", "cuStreamSynchronize", "cuStreamBeginCapture_v2", "cuStreamEndCapture",
	"cuGraphInstantiateWithFlags", "cuGraphLaunch", "cuGraphExecDestroy", "cuGraphDestroy",
	"cuEventCreate", "cuEventRecord", "cuEventSynchronize", "cuEventElapsedTime", "cuEventDestroy_v2",
	"cuGetErrorString",
}

// Driver is an open CUDA driver with device 0's primary context current.
type Driver struct {
	lib *lib
	dev int32
	ctx uintptr
	// Name, Major and Minor describe the device (its compute capability);
	// Version is the driver's CUDA version (12040 for 12.4).
	Name         string
	Major, Minor int
	Version      int
}

// DriverError is a failed driver API or NVRTC call.
type DriverError struct {
	Call    string
	Code    int
	Message string
}

// Error names the call and the driver's message.
func (e *DriverError) Error() string {
	return fmt.Sprintf("cuda: %s failed: %s (%d)", e.Call, e.Message, e.Code)
}

func (d *Driver) check(call string, r int32) error {
	if r == 0 {
		return nil
	}
	var s uintptr
	d.lib.call("cuGetErrorString", uintptr(r), uintptr(unsafe.Pointer(&s)))
	return &DriverError{Call: call, Code: int(r), Message: goString(s)}
}

// do calls a driver function and checks its result (pointer arguments as
// for lib.call).
//
//go:uintptrescapes
func (d *Driver) do(name string, args ...uintptr) error {
	return d.check(name, d.lib.call(name, args...))
}

var (
	driversMu sync.Mutex
	drivers   = map[string]*Driver{}
)

// OpenDriver opens the CUDA driver (path "": libcuda.so.1 from the loader
// path) and device 0, once per process and path. With no driver or no
// device it returns an *UnavailableError wrapping ErrNoDriver or
// ErrNoDevice.
func OpenDriver(path string) (*Driver, error) {
	driversMu.Lock()
	defer driversMu.Unlock()
	if d := drivers[path]; d != nil {
		return d, nil
	}
	names := []string{"libcuda.so.1", "libcuda.so"}
	if path != "" {
		names = []string{path}
	}
	l, err := openLib(names, driverSyms, ErrNoDriver)
	if err != nil {
		return nil, err
	}
	d := &Driver{lib: l}
	const errNoDevice = 100
	if r := l.call("cuInit", 0); r == errNoDevice {
		return nil, &UnavailableError{What: ErrNoDevice, Detail: "cuInit reports no CUDA-capable device"}
	} else if err := d.check("cuInit", r); err != nil {
		return nil, &UnavailableError{What: ErrNoDevice, Detail: err.Error()}
	}
	var n, v int32
	if err := d.do("cuDeviceGetCount", uintptr(unsafe.Pointer(&n))); err != nil || n < 1 {
		return nil, &UnavailableError{What: ErrNoDevice, Detail: fmt.Sprintf("cuDeviceGetCount: %d devices (%v)", n, err)}
	}
	d.do("cuDriverGetVersion", uintptr(unsafe.Pointer(&v)))
	d.Version = int(v)
	if err := d.do("cuDeviceGet", uintptr(unsafe.Pointer(&d.dev)), 0); err != nil {
		return nil, err
	}
	var major, minor int32
	if err := d.do("cuDeviceGetAttribute", uintptr(unsafe.Pointer(&major)), 75, uintptr(d.dev)); err != nil {
		return nil, err
	}
	if err := d.do("cuDeviceGetAttribute", uintptr(unsafe.Pointer(&minor)), 76, uintptr(d.dev)); err != nil {
		return nil, err
	}
	d.Major, d.Minor = int(major), int(minor)
	name := make([]byte, 256)
	d.do("cuDeviceGetName", uintptr(unsafe.Pointer(&name[0])), uintptr(len(name)), uintptr(d.dev))
	d.Name = strings.TrimRight(string(name), "\x00")
	if err := d.do("cuDevicePrimaryCtxRetain", uintptr(unsafe.Pointer(&d.ctx)), uintptr(d.dev)); err != nil {
		return nil, err
	}
	drivers[path] = d
	return d, nil
}

// current makes the driver's context current on the calling OS thread,
// which the caller has locked.
func (d *Driver) current() error { return d.do("cuCtxSetCurrent", d.ctx) }

// gpuDevice is a device on a GPU: one stream, a module per executable, and
// the step captured as a CUDA graph on its first run and replayed after.
type gpuDevice struct {
	drv    *Driver
	nvrtc  *NVRTC
	cache  string
	stream uintptr
	mod    uintptr
	allocs []uint64
	graph  uintptr
	exec   uintptr
	// NoGraph launches the kernels one by one every step.
	noGraph bool
	// prof, under POOT_CUDA_PROFILE, times every launch (graphs off).
	prof *profile
}

func newGPUDevice(drv *Driver, nv *NVRTC, cache string, noGraph bool) (*gpuDevice, error) {
	d := &gpuDevice{drv: drv, nvrtc: nv, cache: cache, noGraph: noGraph}
	if os.Getenv("POOT_CUDA_PROFILE") != "" {
		d.prof, d.noGraph = &profile{ms: map[string]float64{}, count: map[string]int{}}, true
	}
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := drv.current(); err != nil {
		return nil, err
	}
	return d, drv.do("cuStreamCreate", uintptr(unsafe.Pointer(&d.stream)), 0)
}

// enter locks the OS thread and makes the context current; the caller
// defers runtime.UnlockOSThread.
func (d *gpuDevice) enter() error {
	runtime.LockOSThread()
	return d.drv.current()
}

// Arch is the NVRTC option that compiles for the driver's device.
func (d *Driver) Arch() string { return fmt.Sprintf("--gpu-architecture=sm_%d%d", d.Major, d.Minor) }

func (d *gpuDevice) load(m *Module) (map[string]uintptr, error) {
	cubin, err := d.nvrtc.CompileCached(prelude+m.Source(), []string{d.drv.Arch()}, d.cache)
	if err != nil {
		return nil, err
	}
	defer runtime.UnlockOSThread()
	if err := d.enter(); err != nil {
		return nil, err
	}
	if err := d.drv.do("cuModuleLoadData", uintptr(unsafe.Pointer(&d.mod)), uintptr(unsafe.Pointer(&cubin[0]))); err != nil {
		return nil, err
	}
	fns := map[string]uintptr{}
	for _, k := range m.Kernels {
		var f uintptr
		if err := d.drv.do("cuModuleGetFunction", uintptr(unsafe.Pointer(&f)), d.mod, uintptr(unsafe.Pointer(cString(k.Name)))); err != nil {
			return nil, fmt.Errorf("kernel %s: %w", k.Name, err)
		}
		fns[k.Name] = f
	}
	return fns, nil
}

func (d *gpuDevice) alloc(n int64) (uint64, error) {
	defer runtime.UnlockOSThread()
	if err := d.enter(); err != nil {
		return 0, err
	}
	var p uint64
	if err := d.drv.do("cuMemAlloc_v2", uintptr(unsafe.Pointer(&p)), uintptr(n)); err != nil {
		return 0, err
	}
	d.allocs = append(d.allocs, p)
	return p, d.drv.do("cuMemsetD8_v2", uintptr(p), 0, uintptr(n))
}

func (d *gpuDevice) upload(dst uint64, src []byte) error {
	if len(src) == 0 {
		return nil
	}
	defer runtime.UnlockOSThread()
	if err := d.enter(); err != nil {
		return err
	}
	return d.drv.do("cuMemcpyHtoD_v2", uintptr(dst), uintptr(unsafe.Pointer(&src[0])), uintptr(len(src)))
}

func (d *gpuDevice) download(dst []byte, src uint64) error {
	if len(dst) == 0 {
		return nil
	}
	defer runtime.UnlockOSThread()
	if err := d.enter(); err != nil {
		return err
	}
	return d.drv.do("cuMemcpyDtoH_v2", uintptr(unsafe.Pointer(&dst[0])), uintptr(src), uintptr(len(dst)))
}

func (d *gpuDevice) copyD(dst, src uint64, n int64) error {
	defer runtime.UnlockOSThread()
	if err := d.enter(); err != nil {
		return err
	}
	if err := d.drv.do("cuMemcpyDtoDAsync_v2", uintptr(dst), uintptr(src), uintptr(n), d.stream); err != nil {
		return err
	}
	return d.drv.do("cuStreamSynchronize", d.stream)
}

func (d *gpuDevice) launch(fn uintptr, l *Launch, params uintptr) error {
	if d.prof != nil {
		if err := d.prof.mark(d, l.Kernel); err != nil {
			return err
		}
	}
	g, b := l.Grid, l.Block
	return d.drv.do("cuLaunchKernel", fn, uintptr(g[0]), uintptr(g[1]), uintptr(g[2]),
		uintptr(b[0]), uintptr(b[1]), uintptr(b[2]), 0, d.stream, params, 0)
}

// step runs the launches: the first time inside a stream capture that
// becomes the executable's CUDA graph, then by replaying the graph.
func (d *gpuDevice) step(work func() error) error {
	defer runtime.UnlockOSThread()
	if err := d.enter(); err != nil {
		return err
	}
	if d.noGraph {
		if err := work(); err != nil {
			return err
		}
		if d.prof != nil {
			return d.prof.end(d)
		}
		return d.drv.do("cuStreamSynchronize", d.stream)
	}
	if d.exec == 0 {
		const relaxed = 2 // CU_STREAM_CAPTURE_MODE_RELAXED
		if err := d.drv.do("cuStreamBeginCapture_v2", d.stream, relaxed); err != nil {
			return err
		}
		werr := work()
		err := d.drv.do("cuStreamEndCapture", d.stream, uintptr(unsafe.Pointer(&d.graph)))
		if werr != nil {
			return werr
		}
		if err != nil {
			return err
		}
		if err := d.drv.do("cuGraphInstantiateWithFlags", uintptr(unsafe.Pointer(&d.exec)), d.graph, 0); err != nil {
			d.exec = 0
			return err
		}
	}
	if err := d.drv.do("cuGraphLaunch", d.exec, d.stream); err != nil {
		return err
	}
	return d.drv.do("cuStreamSynchronize", d.stream)
}

func (d *gpuDevice) close() {
	defer runtime.UnlockOSThread()
	if d.enter() != nil {
		return
	}
	if d.prof != nil {
		d.prof.report(os.Stderr)
		for _, e := range d.prof.events {
			d.drv.do("cuEventDestroy_v2", e)
		}
		d.prof = nil
	}
	if d.exec != 0 {
		d.drv.do("cuGraphExecDestroy", d.exec)
		d.drv.do("cuGraphDestroy", d.graph)
		d.exec, d.graph = 0, 0
	}
	for _, p := range d.allocs {
		d.drv.do("cuMemFree_v2", uintptr(p))
	}
	d.allocs = nil
	if d.mod != 0 {
		d.drv.do("cuModuleUnload", d.mod)
		d.mod = 0
	}
	if d.stream != 0 {
		d.drv.do("cuStreamDestroy_v2", d.stream)
		d.stream = 0
	}
}

// peer: every executable on the GPU shares the driver's primary context,
// so device copies between their allocations are valid.
func (d *gpuDevice) peer(o device) bool {
	p, ok := o.(*gpuDevice)
	return ok && p.drv == d.drv
}

func (d *gpuDevice) copyPeer(dst uint64, _ device, src uint64, n int64) error {
	return d.copyD(dst, src, n)
}
