// The Q4_1 and Q5_1 tiles' definitions for gemmq8_amd64.h (see
// gemmq512_amd64.s; in a header of its own, as Q8SETUP reads the
// routines' last argument, which the Q8_0 tiles do not have).

#undef Q8FIN
#undef Q8ARGS
#undef Q8STRIDE
#undef Q8SETUP
#undef Q8MLOAD
#undef Q8MNEXT
#define Q8FIN(ad, as, acc, f) \
	VCVTDQ2PS acc, acc \
	VMULPS.BCST ad, Z13, Z14 \
	VFMADD231PS Z14, acc, f \
	VFMADD231PS.BCST as, Z15, f
#define Q8ARGS 96
#define Q8STRIDE 640
#define Q8SETUP \
	MOVQ as+88(FP), R13 \
	LEAQ (R13)(AX*1), R14
#define Q8MLOAD VMOVUPS 576(DX), Z15
#define Q8MNEXT \
	ADDQ $4, R13 \
	ADDQ $4, R14

