// The 16-row transpose shared by the AVX-512 packing routines
// (gemm512_amd64.s, gemmq512_amd64.s).

// TRANS16X8 transposes 16 rows of eight 32-bit elements. On entry Z0-Z7
// hold rows r and r+8 (r = 0..7): elements 0-3 of row r in 128-bit lane 0,
// 4-7 in lane 1, row r+8's in lanes 2 and 3. On exit Z(8+k) holds element
// k of the 16 rows in the lane order 0-3, 8-11, 4-7, 12-15: a 4x4
// transpose in every 128-bit lane (unpack, shuffle), then VSHUFF32X4 joins
// the lanes of each element. Z0-Z7 are clobbered.
#define TRANS16X8 \
	VUNPCKLPS Z1, Z0, Z8 \
	VUNPCKHPS Z1, Z0, Z9 \
	VUNPCKLPS Z3, Z2, Z10 \
	VUNPCKHPS Z3, Z2, Z11 \
	VUNPCKLPS Z5, Z4, Z12 \
	VUNPCKHPS Z5, Z4, Z13 \
	VUNPCKLPS Z7, Z6, Z14 \
	VUNPCKHPS Z7, Z6, Z15 \
	VSHUFPS $0x44, Z10, Z8, Z0 \
	VSHUFPS $0xEE, Z10, Z8, Z1 \
	VSHUFPS $0x44, Z11, Z9, Z2 \
	VSHUFPS $0xEE, Z11, Z9, Z3 \
	VSHUFPS $0x44, Z14, Z12, Z4 \
	VSHUFPS $0xEE, Z14, Z12, Z5 \
	VSHUFPS $0x44, Z15, Z13, Z6 \
	VSHUFPS $0xEE, Z15, Z13, Z7 \
	VSHUFF32X4 $0x88, Z4, Z0, Z8 \
	VSHUFF32X4 $0xDD, Z4, Z0, Z12 \
	VSHUFF32X4 $0x88, Z5, Z1, Z9 \
	VSHUFF32X4 $0xDD, Z5, Z1, Z13 \
	VSHUFF32X4 $0x88, Z6, Z2, Z10 \
	VSHUFF32X4 $0xDD, Z6, Z2, Z14 \
	VSHUFF32X4 $0x88, Z7, Z3, Z11 \
	VSHUFF32X4 $0xDD, Z7, Z3, Z15
