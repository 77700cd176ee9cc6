#include "textflag.h"

// PREFETCH_RANGE(INSTR) issues INSTR for every cache line of [p, p+n).
#define PREFETCH_RANGE(INSTR) \
	MOVQ p+0(FP), SI \
	MOVQ n+8(FP), CX \
	TESTQ CX, CX \
	JLE done \
	LEAQ (SI)(CX*1), CX \
	ANDQ $-64, SI \
loop: \
	INSTR (SI) \
	ADDQ $64, SI \
	CMPQ SI, CX \
	JLT loop \
done: \
	RET

// func prefetchBytes(p unsafe.Pointer, n int)
TEXT ·prefetchBytes(SB), NOSPLIT, $0-16
	PREFETCH_RANGE(PREFETCHT0)

// func prefetchL2(p unsafe.Pointer, n int)
TEXT ·prefetchL2(SB), NOSPLIT, $0-16
	PREFETCH_RANGE(PREFETCHT1)
