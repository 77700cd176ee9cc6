// Pieces of the tile kernels that several files share (Go assembly
// macros do not cross files; a header does).
//
// TRANSPOSE8 takes eight rows of eight dwords in Y0-Y7 (row j in Yj) to
// Y8-Y15 (Y(8+g) holds dword g of every row, row j in lane j): pairs of
// rows interleaved by element, then by pairs of elements, then the
// 128-bit halves gathered. It leaves Y0-Y7 changed.

#define TRANSPOSE8 \
	VUNPCKLPS Y1, Y0, Y8 \
	VUNPCKHPS Y1, Y0, Y9 \
	VUNPCKLPS Y3, Y2, Y10 \
	VUNPCKHPS Y3, Y2, Y11 \
	VUNPCKLPS Y5, Y4, Y12 \
	VUNPCKHPS Y5, Y4, Y13 \
	VUNPCKLPS Y7, Y6, Y14 \
	VUNPCKHPS Y7, Y6, Y15 \
	VSHUFPS $0x44, Y10, Y8, Y0 \
	VSHUFPS $0xEE, Y10, Y8, Y1 \
	VSHUFPS $0x44, Y11, Y9, Y2 \
	VSHUFPS $0xEE, Y11, Y9, Y3 \
	VSHUFPS $0x44, Y14, Y12, Y4 \
	VSHUFPS $0xEE, Y14, Y12, Y5 \
	VSHUFPS $0x44, Y15, Y13, Y6 \
	VSHUFPS $0xEE, Y15, Y13, Y7 \
	VPERM2F128 $0x20, Y4, Y0, Y8 \
	VPERM2F128 $0x20, Y5, Y1, Y9 \
	VPERM2F128 $0x20, Y6, Y2, Y10 \
	VPERM2F128 $0x20, Y7, Y3, Y11 \
	VPERM2F128 $0x31, Y4, Y0, Y12 \
	VPERM2F128 $0x31, Y5, Y1, Y13 \
	VPERM2F128 $0x31, Y6, Y2, Y14 \
	VPERM2F128 $0x31, Y7, Y3, Y15

// TILESCATTER(js) adds (or, where R10 is zero, writes) a broadcast tile's
// outputs into y: for each of R9 activation rows t, the R11 weight rows'
// sums, tile[j*js/4+t] for row j, go to y at DX+4j, DX stepping by R8 a
// row. AX points at the tile (column t at AX+4t); SI, DI and CX are
// scratch, X0 too.
#define TILESCATTER(js) \
tloop: \
	MOVQ AX, SI \
	MOVQ DX, DI \
	MOVQ R11, CX \
jloop: \
	VMOVSS (SI), X0 \
	TESTQ R10, R10 \
	JZ   2(PC) \
	VADDSS (DI), X0, X0 \
	VMOVSS X0, (DI) \
	ADDQ $js, SI \
	ADDQ $4, DI \
	DECQ CX \
	JNZ  jloop \
	ADDQ $4, AX \
	ADDQ R8, DX \
	DECQ R9 \
	JNZ  tloop
