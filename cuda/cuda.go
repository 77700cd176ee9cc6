package cuda

import (
	"github.com/pootlabs/poot"
	"github.com/pootlabs/poot/interp"
	"github.com/pootlabs/poot/lower"
)

// Interpreter compiles graphs for the GPU. Its zero value uses device 0,
// the libraries on the loader path, every pass and CUDA graphs.
type Interpreter struct {
	// Options switch planner passes off.
	Options lower.Options
	// CacheDir keeps compiled modules (default: the user cache
	// directory's poot/cuda).
	CacheDir string
	// Driver and NVRTC are the library paths ("": found by the loader).
	Driver, NVRTC string
	// NoGraph launches every kernel each step instead of replaying a
	// captured CUDA graph.
	NoGraph bool
	// NoTensorCores keeps prefill's MatMuls on the f32 GEMV (see
	// GenOptions).
	NoTensorCores bool
}

// Name returns "cuda".
func (Interpreter) Name() string { return "cuda" }

// Open opens the driver, device 0 and NVRTC, or returns an
// *UnavailableError saying which is missing.
func (in Interpreter) Open() (*Driver, *NVRTC, error) {
	d, err := OpenDriver(in.Driver)
	if err != nil {
		return nil, nil, err
	}
	n, err := OpenNVRTC(in.NVRTC)
	if err != nil {
		return nil, nil, err
	}
	return d, n, nil
}

// Available reports whether the zero Interpreter can run here: nil, or
// the *UnavailableError naming what is missing.
func Available() error {
	_, _, err := Interpreter{}.Open()
	return err
}

// Compile plans g, generates its kernels, compiles them for the device
// and uploads the constants.
func (in Interpreter) Compile(g *poot.Graph, consts interp.Consts) (interp.Executable, error) {
	return in.CompileExec(g, consts)
}

// CompileExec is Compile returning the concrete executable.
func (in Interpreter) CompileExec(g *poot.Graph, consts interp.Consts) (*Exec, error) {
	d, n, err := in.Open()
	if err != nil {
		return nil, err
	}
	dev, err := newGPUDevice(d, n, in.CacheDir, in.NoGraph)
	if err != nil {
		return nil, err
	}
	// The device's capability decides the kernels: below sm_80 there is no
	// tensor-core GEMM (GenOptions.gemm).
	return compile(dev, g, consts, in.Options, GenOptions{SM: 10*d.Major + d.Minor, NoTensorCores: in.NoTensorCores})
}
