// Package cuda is poot's GPU backend: it lowers a graph through the
// planner (package lower), writes CUDA C for every kernel of the plan,
// compiles it at run time with NVRTC for the device's compute capability
// (cached on disk by a hash of the source and options), and runs a step
// through the CUDA driver API, captured once as a CUDA graph and replayed
// with the slot buffers rewritten in place.
//
// Nothing here needs cgo: the driver API (libcuda.so.1) and NVRTC
// (libnvrtc.so) are opened at run time through purego. Where either, or a
// GPU, is missing, [Interpreter].Compile returns an *[UnavailableError]
// wrapping [ErrNoDriver], [ErrNoDevice] or [ErrNoNVRTC], and the driver
// lists "cuda" as unavailable with that error.
//
// # Kernels
//
// Each plan kernel becomes one or two __global__ functions whose shapes,
// strides and constants are baked into the text (a kernel's name is a
// prefix and a hash of its text, so the layers of a model share one):
// elementwise programs one thread per element; Reduce and Rows kernels
// (RMSNorm, softmax) one block per row, sums in double; contractions a
// GEMV, one warp per output, reading F32, F16, BF16, Q8_0, Q4_0, Q4_1,
// Q5_0, Q5_1, Q4_K, Q5_K, Q6_K and MXFP4 weights as stored: for F32, F16
// and BF16 rows of whole 16-byte units, Q8_0, Q4_0, Q4_K, Q5_K and Q6_K, each lane
// dots whole units (eight halves, a block, 64 elements of a super-block)
// read with 16-byte or halfword loads, eight units a lane in flight;
// for the other dtypes each lane decodes its element from the block as
// GGUF lays it out (the same decoders serve batched MatMuls and casts to
// F32). Half conversions use the conversion instructions on the GPU and
// the same rounding by bit manipulation in the host harness; fused attention one
// warp per query row and head over the KV cache (n_rep query heads per
// K/V head), reading F16 and Q8_0 caches in place (lower.Target.NarrowKV:
// the planner drops their casts), a Q8_0 cache's new rows quantized one
// thread per block; every other primitive one thread per output
// element. Index faults and I32 division
// by zero set a fault word per launch, read after the step and reported as
// the equation's interp.Error.
//
// # Tensor cores
//
// A MatMul with a rank-2 weight and at least 16 activation rows (prefill;
// the rows count every leading axis, so latent attention's per-head
// products qualify in decode too) is instead a tiled GEMM on
// mma.sync.m16n8k16 (inline PTX, f32 accumulators): 64×64 output tiles per
// block of four warps, the activations and the weights staged 32 along K
// at a time through two shared buffers (the next step read into
// registers while the tensor cores work on the current one; one barrier
// a step), rounded to f16 for F16 weights (read exactly) and to bf16 for
// every other weight (f32's range). Where K is whole steps the
// activations and F32/F16/BF16 weights come by 16-byte loads (F16 and
// BF16 words are already fragment pairs), Q8_0, Q4_K and Q6_K sixteen
// elements a decode; other packed formats, and K not a multiple of 32,
// element by element. Its precision contract, with u
// the unit roundoff of the half type (2⁻⁸ bf16, 2⁻¹¹ f16) for each operand
// not exact in it: |y − y_oracle| ≤ (u_x + u_w + u_x·u_w + K·2⁻²²)·Σ|x_k·w_k|
// (plus 2⁻²⁵·Σ|w_k| for f16 activations under 2⁻¹⁴; a finite activation
// beyond f16's range faults the step with [ErrHalfRange] instead of
// turning infinite); the tests hold every output to it, and the logits
// of reference prefills of 20 tokens to 1.5% of their range (measured:
// up to 0.63% with bf16, 0.05% with f16). Decode's GEMV stays f32. The
// choice is made per kernel by [GenOptions]: a device below sm_80 (no
// m16n8k16, no bf16 mma) or [Interpreter].NoTensorCores keeps the GEMV
// everywhere. In the host
// harness mma.sync is the PTX ISA's fragment layout executed by the warp
// together, so the kernel's fragment loads are checked as on a GPU.
//
// # Without a GPU
//
// [HostInterpreter] compiles the same kernel text with the system C++
// compiler against a shim header (host.h): blocks run one after another,
// the threads of a block are fibers switched at __syncthreads and at the
// warp barriers of shuffles and votes. Its results are held to the oracle
// on random graphs and on the reference models. The purego bindings are
// tested against a fake libcuda built from C at test time.
//
// # Split-K decode attention
//
// A decode step (one query row per sequence) over a cache of 64
// positions or more runs as two kernels instead: blocks over (chunk of
// 32 positions, K/V head, sequence), a warp per query head (for heads up
// to 128 wide the block stages the chunk in shared memory and each lane
// scores one position, as tiled prefill does; wider heads walk the chunk
// a position at a time with a warp sum each), write each
// chunk's maximum score, sum of exponentials and weighted sum of V rows
// to a scratch region the module places after the plan's arena
// ([Module].Scratch); a combine kernel, a warp per sequence and head,
// rescales the chunks by exp(m_c − max) (the sink entering the
// denominator there, once) and writes the output. Masked positions
// contribute nothing, NaN and infinities propagate as in the one-pass
// kernel, and a row that sees no position is NaN. Below two chunks the
// one-pass kernel's serial walk is short and the extra launch would not
// pay. Chunks of 256 left a Llama-3.2-1B decode step 24 blocks a layer on
// an H200 (230 µs a layer); chunks of 32, 34 µs.
//
// # Tiled prefill attention
//
// Prefill (several query rows) with head dimensions up to 128 runs one
// kernel over chunks of 32 cache positions: a block per sequence, K/V head
// and eight (query row, query head) pairs sharing it, which stages each
// chunk's K and V rows in shared memory as f32 (from F32, F16 or Q8_0
// caches) and flags its non-finite V rows. A lane scores one position
// against its warp's query; the warp folds the chunk into a running
// maximum, sum of exponentials and weighted sum of V (rescaling by
// exp(m_old − m_new) when the maximum rises, weights 0 while it is −Inf),
// and applies lower.Attention's NaN rule for hidden V rows from the flags.
// The one-pass kernel walked every position per warp with a warp sum per
// score (30 of the 100 ms of a 512-token Llama-3.2-1B prefill on an
// H200; the split kernels' chunks, walked the same way, 0.65 of a 3.2 ms
// decode step); the staged chunks are checked in the host harness
// (flashCases: sinks of ±Inf, scores of −Inf in the first chunk, NaN in
// visible, hidden-but-seen and unseen V rows) and by NVRTC, not yet timed
// on a GPU. Wider heads keep the one-pass kernel.
//
// # Fused launches
//
// Consecutive kernels of a step that are independent (none writes storage
// another reads or writes, by the plan's arena offsets and roots) and
// alike (the same block size, a grid along x only, no shared memory or
// scratch) run as one launch whose blocks run each kernel's blocks in
// turn ([Launch].Fused lists the plan kernels besides [Launch].Step; each
// keeps its own fault word). A decode step's Q, K and V products, gate and
// up, and the two cache appends fuse this way (and the two rotary kernels
// where the memory plan has not placed one's output over the other's
// input): 15 launches a Llama layer become 11 or 12. Not yet timed on a
// GPU.
//
// # State on the device
//
// A step's state (the KV caches) stays in the executable's device memory
// after the step: the executable holds the interp.State (State.Hold)
// instead of downloading it, the next step of the same executable uploads
// nothing, and an executable on the same GPU that runs the State next
// (decode after prefill) takes it by a device-to-device copy. The host
// gets the values back when it asks (State.Sync, which every other
// interpreter calls before reading them), when the executable runs a
// different State or when it closes. Copying 35 MB of f32 caches each
// way every token had held a Llama-3.2-1B decode to 50 tokens/s. RunInto
// downloads the outputs into tensors the caller keeps.
//
// # Measuring
//
// [Interpreter.CopyBandwidth] times a device-to-device copy of 1 GiB
// (poot bench divides decode's read rate by it), and with
// POOT_CUDA_PROFILE set every GPU executable times each launch with
// events (CUDA graphs off) and prints, when it closes, the time a step
// by kernel kind. scripts/cuda-check.sh runs the GPU tests, the
// benchmarks and the transformers peer (scripts/hf-bench.py) in one go.
//
// What is not done: cp.async or ldmatrix pipelining of the GEMM, tensor
// cores for IndexedMatMul (experts) and batched MatMuls, tensor cores for
// prefill attention, Q8_K weights (the planner refuses a MatMul
// over them with a *lower.LegalizeError, and a plan that still holds one is an
// *[UnsupportedError], an interp.ErrUnsupported), Broadcast, Transpose,
// Slice and Concat of packed data (also an *[UnsupportedError]), unit
// GEMVs for Q4_1, Q5_0, Q5_1 and MXFP4, and timings of the GEMM's vector
// staging on a GPU (written and checked in the host harness and by NVRTC
// without one; on the one GPU run it had, the element-by-element staging,
// not the tensor cores, bounded prefill).
//
// Every weight dtype the GEMV reads has a host-harness test of its MatMul
// (GEMV and tensor-core GEMM), IndexedMatMul and cast against the oracle
// and package quant on random weights, and its kernels are compiled for
// sm_80 and sm_90 by scripts/cuda-compile.sh.
package cuda

import (
	"errors"
)

// Reasons the backend cannot run.
var (
	// ErrNoDriver: libcuda.so.1 could not be opened or lacks a function.
	ErrNoDriver = errors.New("cuda: no CUDA driver")
	// ErrNoDevice: the driver reports no usable GPU.
	ErrNoDevice = errors.New("cuda: no CUDA device")
	// ErrNoNVRTC: no NVRTC library could be opened.
	ErrNoNVRTC = errors.New("cuda: no NVRTC")
)

// UnavailableError says why the backend cannot run here: What is one of
// the sentinel errors, Detail what was tried.
type UnavailableError struct {
	What   error
	Detail string
}

// Error joins the reason and the detail.
func (e *UnavailableError) Error() string { return e.What.Error() + ": " + e.Detail }

// Unwrap returns the sentinel.
func (e *UnavailableError) Unwrap() error { return e.What }
