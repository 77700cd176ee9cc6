#include "textflag.h"

// func prefetchBytes(p unsafe.Pointer, n int)
// PREFETCHT0 every cache line of [p, p+n).
TEXT ·prefetchBytes(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JLE done
	LEAQ (SI)(CX*1), CX
	ANDQ $-64, SI
loop:
	PREFETCHT0 (SI)
	ADDQ $64, SI
	CMPQ SI, CX
	JLT loop
done:
	RET

// func prefetchL2(p unsafe.Pointer, n int)
// PREFETCHT1 every cache line of [p, p+n).
TEXT ·prefetchL2(SB), NOSPLIT, $0-16
	MOVQ p+0(FP), SI
	MOVQ n+8(FP), CX
	TESTQ CX, CX
	JLE done
	LEAQ (SI)(CX*1), CX
	ANDQ $-64, SI
loop:
	PREFETCHT1 (SI)
	ADDQ $64, SI
	CMPQ SI, CX
	JLT loop
done:
	RET
