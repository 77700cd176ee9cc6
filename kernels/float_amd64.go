package kernels

import "unsafe"

// The assembly in float_amd64.s. k counts elements and is rounded down to
// the kernel's step (8 for the 4x3 tile, 16 otherwise); the caller adds the
// tail. ldx and ldw are row strides in bytes.

//go:noescape
func dotF32x4x3(x *float32, ldx int, w unsafe.Pointer, ldw int, k int, y *float32, ldy int, add int)

//go:noescape
func dotF16x4x3(x *float32, ldx int, w unsafe.Pointer, ldw int, k int, y *float32, ldy int, add int)

//go:noescape
func dotBF16x4x3(x *float32, ldx int, w unsafe.Pointer, ldw int, k int, y *float32, ldy int, add int)

//go:noescape
func dotF32x1x4(x *float32, w unsafe.Pointer, ldw int, k int, out *[4]float32)

//go:noescape
func dotF16x1x4(x *float32, w unsafe.Pointer, ldw int, k int, out *[4]float32)

//go:noescape
func dotBF16x1x4(x *float32, w unsafe.Pointer, ldw int, k int, out *[4]float32)

//go:noescape
func dotF32x1x1(x *float32, w unsafe.Pointer, k int) float32

//go:noescape
func dotF16x1x1(x *float32, w unsafe.Pointer, k int) float32

//go:noescape
func dotBF16x1x1(x *float32, w unsafe.Pointer, k int) float32

func unsafePointer(p *float32) unsafe.Pointer { return unsafe.Pointer(p) }
