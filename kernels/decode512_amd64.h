// Macros shared by the AVX-512 decode kernels' files (decode512_amd64.s
// and decode32_amd64.s; Go assembly macros do not cross files).

// HSUM0 leaves in X0 the sum of the sixteen lanes of Z0, using Z15.
#define HSUM0 \
	VEXTRACTF64X4 $1, Z0, Y15 \
	VADDPS Y15, Y0, Y0 \
	VEXTRACTF128 $1, Y0, X15 \
	VADDPS X15, X0, X0 \
	VHADDPS X0, X0, X0 \
	VHADDPS X0, X0, X0

// Each weight stream asks for its cache lines some bytes ahead of its
// loads (PREFETCHT0): ·decodeAhead bytes in the quantized kernels
// (·decodeAheadNib in Q4_0's and MXFP4's, ·decodeAheadQ8 in Q8_0's),
// ·decodeAheadFloat in the float ones, read into a spare register at the
// start (see decodeAhead in decode512_amd64.go for the distances and why
// they depend on the CPU). PFn(b, r) asks for the n lines from r bytes
// past b: an iteration asks for at least as many bytes as it consumes, so
// every line ahead of the loads is asked for (prefetches never fault,
// past a row's or a buffer's end included). At a distance of 0 they ask
// for the lines being loaded, which costs next to nothing. The float
// kernels ask a second time, by PREFETCHNTA (PNn), ·decodeNTAFloat bytes
// ahead (in R14): each vendor asks at a distance of 0 for the hint it
// does not want.
#define PF2(b, r) PREFETCHT0 (b)(r*1); PREFETCHT0 64(b)(r*1)
#define PF3(b, r) PF2(b, r); PREFETCHT0 128(b)(r*1)
#define PF4(b, r) PF3(b, r); PREFETCHT0 192(b)(r*1)
#define PF9(b, r) PF4(b, r); PREFETCHT0 256(b)(r*1); PREFETCHT0 320(b)(r*1); PREFETCHT0 384(b)(r*1); PREFETCHT0 448(b)(r*1); PREFETCHT0 512(b)(r*1)
#define PF11(b, r) PF9(b, r); PREFETCHT0 576(b)(r*1); PREFETCHT0 640(b)(r*1)
#define PN2(b, r) PREFETCHNTA (b)(r*1); PREFETCHNTA 64(b)(r*1)
#define PN4(b, r) PN2(b, r); PREFETCHNTA 128(b)(r*1); PREFETCHNTA 192(b)(r*1)

#define PFF2(b) PF2(b, R9); PN2(b, R14)
#define PFF4(b) PF4(b, R9); PN4(b, R14)
#define PFN2(b) PN2(b, R14)
#define PFN4(b) PN4(b, R14)
#define PFQ9(b) PF9(b, R10)
#define PFQ11(b) PF11(b, R10)
