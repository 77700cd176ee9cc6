package cuda

import (
	"fmt"
	"runtime"
	"unsafe"
)

// CopyBandwidth measures the device's memory bandwidth in GB/s: a
// device-to-device copy of 1 GiB, many times the size of any GPU's L2,
// timed with events, the best of ten after two warm-ups, counting the
// bytes read and the bytes written. Decode's fraction of the memory
// limit is its bytes read per second over this figure.
func (in Interpreter) CopyBandwidth() (float64, error) {
	d, err := OpenDriver(in.Driver)
	if err != nil {
		return 0, err
	}
	return d.copyBandwidth(1<<30, 10)
}

// copyBandwidth times reps copies of n bytes (after two untimed ones)
// and returns the best rate, 2n bytes a copy, in GB/s.
func (d *Driver) copyBandwidth(n int64, reps int) (bw float64, err error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	if err := d.current(); err != nil {
		return 0, err
	}
	var stream, start, end uintptr
	var src, dst uint64
	defer func() {
		for _, p := range []uint64{src, dst} {
			if p != 0 {
				d.do("cuMemFree_v2", uintptr(p))
			}
		}
		for _, e := range []uintptr{start, end} {
			if e != 0 {
				d.do("cuEventDestroy_v2", e)
			}
		}
		if stream != 0 {
			d.do("cuStreamDestroy_v2", stream)
		}
	}()
	for _, p := range []*uint64{&src, &dst} {
		if err := d.do("cuMemAlloc_v2", uintptr(unsafe.Pointer(p)), uintptr(n)); err != nil {
			return 0, fmt.Errorf("cuda: copy bandwidth: %w", err)
		}
	}
	// Random-looking bytes, not zeros: the copy must not meet a
	// compressible or untouched buffer.
	if err := d.do("cuMemsetD8_v2", uintptr(src), 0x5a, uintptr(n)); err != nil {
		return 0, err
	}
	if err := d.do("cuStreamCreate", uintptr(unsafe.Pointer(&stream)), 0); err != nil {
		return 0, err
	}
	for _, e := range []*uintptr{&start, &end} {
		if err := d.do("cuEventCreate", uintptr(unsafe.Pointer(e)), 0); err != nil {
			return 0, err
		}
	}
	for i := range reps + 2 {
		if err := d.do("cuEventRecord", start, stream); err != nil {
			return 0, err
		}
		if err := d.do("cuMemcpyDtoDAsync_v2", uintptr(dst), uintptr(src), uintptr(n), stream); err != nil {
			return 0, err
		}
		if err := d.do("cuEventRecord", end, stream); err != nil {
			return 0, err
		}
		if err := d.do("cuEventSynchronize", end); err != nil {
			return 0, err
		}
		var ms float32
		if err := d.do("cuEventElapsedTime", uintptr(unsafe.Pointer(&ms)), start, end); err != nil {
			return 0, err
		}
		if i < 2 || ms <= 0 {
			continue
		}
		bw = max(bw, 2*float64(n)/(float64(ms)*1e-3)/1e9)
	}
	if bw == 0 {
		return 0, fmt.Errorf("cuda: copy bandwidth: the events timed no copy")
	}
	return bw, nil
}

// Device names device 0: its name, compute capability and the driver's
// CUDA version.
func (in Interpreter) Device() (string, error) {
	d, err := OpenDriver(in.Driver)
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("%s, sm_%d%d, CUDA driver %d.%d", d.Name, d.Major, d.Minor, d.Version/1000, d.Version%1000/10), nil
}
