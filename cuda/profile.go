package cuda

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"unsafe"
)

// profile times each launch of a GPU executable's steps with events when
// POOT_CUDA_PROFILE is set (CUDA graphs are then off, so launch gaps
// count too), adding the times up by kernel kind (the kernel's name less
// its hash), and reports them when the executable closes: where a step's
// time goes without a profiler on the machine.
type profile struct {
	events  []uintptr // recorded before each launch and after the last
	n       int       // events recorded in this step
	kernels []string  // the kind of each launch in this step
	ms      map[string]float64
	count   map[string]int
	steps   int
	stepMs  float64
}

// mark records the event before a launch of kernel.
func (p *profile) mark(d *gpuDevice, kernel string) error {
	if i := strings.LastIndexByte(kernel, '_'); i > 0 {
		kernel = kernel[:i]
	}
	p.kernels = append(p.kernels, kernel)
	return p.record(d)
}

func (p *profile) record(d *gpuDevice) error {
	if p.n == len(p.events) {
		var e uintptr
		if err := d.drv.do("cuEventCreate", uintptr(unsafe.Pointer(&e)), 0); err != nil {
			return err
		}
		p.events = append(p.events, e)
	}
	err := d.drv.do("cuEventRecord", p.events[p.n], d.stream)
	p.n++
	return err
}

// end records the step's last event, waits for it and adds up the
// launches' times.
func (p *profile) end(d *gpuDevice) error {
	defer func() { p.n, p.kernels = 0, p.kernels[:0] }()
	if err := p.record(d); err != nil {
		return err
	}
	if err := d.drv.do("cuEventSynchronize", p.events[p.n-1]); err != nil {
		return err
	}
	for i, k := range p.kernels {
		var ms float32
		if err := d.drv.do("cuEventElapsedTime", uintptr(unsafe.Pointer(&ms)), p.events[i], p.events[i+1]); err != nil {
			return err
		}
		p.ms[k] += float64(ms)
		p.count[k]++
		p.stepMs += float64(ms)
	}
	p.steps++
	return nil
}

// report writes the kinds by time, the largest first.
func (p *profile) report(w io.Writer) {
	if p.steps == 0 {
		return
	}
	kinds := make([]string, 0, len(p.ms))
	for k := range p.ms {
		kinds = append(kinds, k)
	}
	slices.SortFunc(kinds, func(a, b string) int {
		if p.ms[a] != p.ms[b] {
			if p.ms[a] > p.ms[b] {
				return -1
			}
			return 1
		}
		return strings.Compare(a, b)
	})
	launches := 0
	for _, c := range p.count {
		launches += c
	}
	fmt.Fprintf(w, "cuda profile: %d steps of %d launches, %.3f ms a step on the GPU\n", p.steps, launches/p.steps, p.stepMs/float64(p.steps))
	for _, k := range kinds {
		fmt.Fprintf(w, "  %-28s %5d launches a step %9.3f ms a step %5.1f%%\n", k, p.count[k]/p.steps, p.ms[k]/float64(p.steps), 100*p.ms[k]/p.stepMs)
	}
}
