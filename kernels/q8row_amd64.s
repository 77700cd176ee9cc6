#include "textflag.h"

// func q8ToF32Row(dst *float32, src *byte, blocks int)
// Each block: the binary16 scale widened and broadcast, the 32 quants
// sign-extended eight at a time, converted and scaled.
TEXT ·q8ToF32Row(SB), NOSPLIT, $0-24
	MOVQ dst+0(FP), DI
	MOVQ src+8(FP), SI
	MOVQ blocks+16(FP), CX
	TESTQ CX, CX
	JZ done
loop:
	MOVWLZX (SI), AX
	VMOVD AX, X0
	VCVTPH2PS X0, X0
	VBROADCASTSS X0, Y0
	VPMOVSXBD 2(SI), Y1
	VPMOVSXBD 10(SI), Y2
	VPMOVSXBD 18(SI), Y3
	VPMOVSXBD 26(SI), Y4
	VCVTDQ2PS Y1, Y1
	VCVTDQ2PS Y2, Y2
	VCVTDQ2PS Y3, Y3
	VCVTDQ2PS Y4, Y4
	VMULPS Y0, Y1, Y1
	VMULPS Y0, Y2, Y2
	VMULPS Y0, Y3, Y3
	VMULPS Y0, Y4, Y4
	VMOVUPS Y1, (DI)
	VMOVUPS Y2, 32(DI)
	VMOVUPS Y3, 64(DI)
	VMOVUPS Y4, 96(DI)
	ADDQ $34, SI
	ADDQ $128, DI
	DECQ CX
	JNZ loop
done:
	VZEROUPPER
	RET
