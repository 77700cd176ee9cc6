// Constants and the scale unpacking shared by the Q4_K kernels
// (kquant_amd64.s, kquant4_amd64.s); each file that includes this gets its
// own copy of the tables.

// Constants for the Q4_K kernels. k4shift and k4mask turn the dwords
// [D0, D2, D1, D2] of the twelve scale bytes (D0 = bytes 0-3, ...) into the
// low bits of the 8 scales and 8 mins; k4high masks the top two bits that
// bytes 0-7 give scales and mins 4-7 (shifted down by 2 from [D0, D0, D1,
// D1]). With the 16 resulting bytes [scales, mins] in both 128-bit lanes,
// VPSHUFB with k4sc+64c (+32) spreads scale 2c (2c+1) over every int16
// lane and with k4min makes the int16 pairs (m_j, m_j) that VPMADDWD takes
// against the 16-element activation sums.
DATA k4shift<>+0(SB)/8, $0
DATA k4shift<>+8(SB)/8, $0x0000000400000000
GLOBL k4shift<>(SB), RODATA|NOPTR, $16
DATA k4mask<>+0(SB)/8, $0x0f0f0f0f3f3f3f3f
DATA k4mask<>+8(SB)/8, $0x0f0f0f0f3f3f3f3f
GLOBL k4mask<>(SB), RODATA|NOPTR, $16
DATA k4high<>+0(SB)/8, $0x3030303000000000
DATA k4high<>+8(SB)/8, $0x3030303000000000
GLOBL k4high<>(SB), RODATA|NOPTR, $16
DATA k4min<>+0(SB)/8, $0x8009800980088008
DATA k4min<>+8(SB)/8, $0x800b800b800a800a
DATA k4min<>+16(SB)/8, $0x800d800d800c800c
DATA k4min<>+24(SB)/8, $0x800f800f800e800e
GLOBL k4min<>(SB), RODATA|NOPTR, $32
#define K4SC(off, j) \
	DATA k4sc<>+(off)(SB)/8, $(0x8000800080008000 + j*0x0001000100010001) \
	DATA k4sc<>+(off+8)(SB)/8, $(0x8000800080008000 + j*0x0001000100010001) \
	DATA k4sc<>+(off+16)(SB)/8, $(0x8000800080008000 + j*0x0001000100010001) \
	DATA k4sc<>+(off+24)(SB)/8, $(0x8000800080008000 + j*0x0001000100010001)
K4SC(0, 0)
K4SC(32, 1)
K4SC(64, 2)
K4SC(96, 3)
K4SC(128, 4)
K4SC(160, 5)
K4SC(192, 6)
K4SC(224, 7)
GLOBL k4sc<>(SB), RODATA|NOPTR, $256
// Sign mask for lanes 2 and 3 of each 128-bit lane.
DATA k4neg<>+0(SB)/8, $0
DATA k4neg<>+8(SB)/8, $0x8000000080000000
DATA k4neg<>+16(SB)/8, $0
DATA k4neg<>+24(SB)/8, $0x8000000080000000
GLOBL k4neg<>(SB), RODATA|NOPTR, $32

// K4UNPACK(base, x, t) sets x to the 8 scales and 8 mins of the Q4_K
// super-block at (base) as bytes [scales, mins], with t as scratch; the
// upper bits of the register are zeroed.
#define K4UNPACK(base, x, t) \
	VMOVDQU 4(base), x \
	VPSHUFD $0x50, x, t \
	VPSHUFD $0x98, x, x \
	VPSRLVD k4shift<>(SB), x, x \
	VPAND k4mask<>(SB), x, x \
	VPSRLD $2, t, t \
	VPAND k4high<>(SB), t, t \
	VPOR t, x, x

