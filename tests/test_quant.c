/* CPU reference of the GGUF block formats (src/quant/): known vectors built by hand from
 * the format definitions, quantize -> dequantize error bounds on random data, fp16
 * conversion exactness, edge cases and negative controls. Needs no device.
 *
 * Known vectors are written as raw bytes (little-endian fp16 scales included) and their
 * expected floats are stated literally or from the definition, never computed by the code
 * under test. docs/quant-formats.md is the definition they follow. */
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <setjmp.h>
#include <cmocka.h>

#include "motifcl.h"
#include "quant/quant.h"

/* Optional independent fp16 oracle: the compiler's own _Float16 conversions. */
#if defined(__FLT16_MAX__)
#define HAVE_FLOAT16_ORACLE 1
__extension__ typedef _Float16 oracle_half;
#endif

/* ---------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------- */

/* Count positions where got != want (NaN always counts); print the first few. This one
 * function decides every known-vector check, and the negative control feeds it a wrong
 * expected vector to show that it can fail. */
static int mismatches(const char *what, const float *got, const float *want, int n)
{
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (!(got[i] == want[i])) {
            if (bad < 4 && what)
                print_message("%s: element %d is %.9g, expected %.9g\n", what, i,
                              (double)got[i], (double)want[i]);
            bad++;
        }
    }
    return bad;
}

static uint64_t rng_state;

static uint64_t rng_next(void)
{
    /* splitmix64 */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static float rng_uniform(void) /* [0, 1) */
{
    return (float)(rng_next() >> 40) * 0x1p-24f;
}

static float rng_gauss(void)
{
    float u1 = 1.0f - rng_uniform(); /* (0, 1] */
    float u2 = rng_uniform();
    return sqrtf(-2.0f * logf(u1)) * cosf(6.28318530718f * u2);
}

static uint16_t rd16(const uint8_t *p)
{
    return (uint16_t)(p[0] | p[1] << 8);
}

/* The test's own reading of the K-quant 12-byte scale array, written from the byte table
 * in docs/quant-formats.md: three groups of four bytes A = s[0..3], B = s[4..7],
 * C = s[8..11]. Sub-block j < 4: scale A[j] & 63, min B[j] & 63. j >= 4 (i = j - 4): scale
 * = low nibble of C[i] plus the top two bits of A[i] as bits 4-5; min = high nibble of C[i]
 * plus the top two bits of B[i]. */
static void test_scale_min(const uint8_t *s, int j, int *sc, int *m)
{
    const uint8_t *a = s, *b = s + 4, *c = s + 8;
    if (j < 4) {
        *sc = a[j] & 0x3f;
        *m = b[j] & 0x3f;
    } else {
        int i = j - 4;
        *sc = (c[i] & 0x0f) + 16 * (a[i] >> 6);
        *m = (c[i] >> 4) + 16 * (b[i] >> 6);
    }
}

/* ---------------------------------------------------------------------------------------
 * Sizes and argument checks
 * ------------------------------------------------------------------------------------- */

static void row_sizes(void **state)
{
    (void)state;
    assert_int_equal(mcl_quant_row_size(MCL_DTYPE_Q8_0, 64), 68);
    assert_int_equal(mcl_quant_row_size(MCL_DTYPE_Q4_0, 32), 18);
    assert_int_equal(mcl_quant_row_size(MCL_DTYPE_Q4_K, 512), 288);
    assert_int_equal(mcl_quant_row_size(MCL_DTYPE_Q5_K, 256), 176);
    assert_int_equal(mcl_quant_row_size(MCL_DTYPE_Q6_K, 768), 630);
    assert_int_equal(mcl_quant_row_size(MCL_DTYPE_Q6_K, 0), 0);
    /* 64-bit sizes: 2^33 Q4_K weights are 4.5 GiB. */
    assert_true(mcl_quant_row_size(MCL_DTYPE_Q4_K, INT64_C(1) << 33) ==
                (size_t)(UINT64_C(1) << 25) * 144u);
    /* Refusals: not a multiple, negative, not a block type. */
    assert_int_equal(mcl_quant_row_size(MCL_DTYPE_Q8_0, 33), 0);
    assert_int_equal(mcl_quant_row_size(MCL_DTYPE_Q4_K, 255), 0);
    assert_int_equal(mcl_quant_row_size(MCL_DTYPE_Q6_K, 128), 0);
    assert_int_equal(mcl_quant_row_size(MCL_DTYPE_Q4_0, -32), 0);
    assert_int_equal(mcl_quant_row_size(MCL_DTYPE_F32, 32), 0);
    assert_int_equal(mcl_quant_row_size(MCL_DTYPE_F16, 256), 0);
    /* The table the sizes come from (core/dtype.h): GGUF's block shapes. */
    const mcl_dtype_traits *q5_k = mcl_dtype_traits_of(MCL_DTYPE_Q5_K);
    assert_non_null(q5_k);
    assert_true(q5_k->is_block);
    assert_int_equal(q5_k->block_weights, 256);
    assert_int_equal(q5_k->block_bytes, 176);
    assert_false(mcl_dtype_traits_of(MCL_DTYPE_I32)->is_block);
    assert_null(mcl_dtype_traits_of((mcl_dtype)77));
}

static void bad_arguments_are_refused_without_writing(void **state)
{
    (void)state;
    float x[512], y[512];
    uint8_t blocks[1024];
    for (int i = 0; i < 512; i++)
        x[i] = (float)i * 0.01f;
    memset(blocks, 0xA5, sizeof blocks);
    for (int i = 0; i < 512; i++)
        y[i] = 42.0f;

    const int invalid = MCL_ERROR_INVALID_ARGUMENT;
    assert_int_equal(mcl_quantize_row(MCL_DTYPE_Q4_K, x, blocks, 255), invalid);
    assert_int_equal(mcl_quantize_row(MCL_DTYPE_Q8_0, x, blocks, 31), invalid);
    assert_int_equal(mcl_quantize_row(MCL_DTYPE_Q4_0, x, blocks, -32), invalid);
    assert_int_equal(mcl_quantize_row(MCL_DTYPE_Q4_0, NULL, blocks, 32), invalid);
    assert_int_equal(mcl_quantize_row(MCL_DTYPE_Q4_0, x, NULL, 32), invalid);
    assert_int_equal(mcl_quantize_row(MCL_DTYPE_F32, x, blocks, 32), MCL_ERROR_UNSUPPORTED);
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q6_K, blocks, y, 100), invalid);
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q6_K, NULL, y, 256), invalid);
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_U8, blocks, y, 256), MCL_ERROR_UNSUPPORTED);

    /* Non-finite and out-of-range inputs: refused, and the block (first element fine, a
     * later one bad) is left untouched. */
    x[300] = NAN;
    assert_int_equal(mcl_quantize_row(MCL_DTYPE_Q5_K, x, blocks, 512), invalid);
    x[300] = INFINITY;
    assert_int_equal(mcl_quantize_row(MCL_DTYPE_Q8_0, x, blocks, 512), invalid);
    x[300] = MCL_Q4_0_MAX_ABS * 1.001f;
    assert_int_equal(mcl_quantize_row(MCL_DTYPE_Q4_0, x, blocks, 512), invalid);
    for (size_t i = 0; i < sizeof blocks; i++)
        assert_int_equal(blocks[i], 0xA5);
    for (int i = 0; i < 512; i++)
        assert_true(y[i] == 42.0f);

    /* n == 0 is a valid empty row. */
    assert_int_equal(mcl_quantize_row(MCL_DTYPE_Q4_K, x, blocks, 0), MCL_SUCCESS);
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q4_K, blocks, y, 0), MCL_SUCCESS);
}

/* The largest accepted magnitude quantizes to finite scales for every type. */
static void max_abs_inputs_stay_finite(void **state)
{
    (void)state;
    static const struct { mcl_dtype type; float max_abs; } cases[] = {
        {MCL_DTYPE_Q8_0, MCL_Q8_0_MAX_ABS}, {MCL_DTYPE_Q4_0, MCL_Q4_0_MAX_ABS},
        {MCL_DTYPE_Q4_K, MCL_K_MAX_ABS},    {MCL_DTYPE_Q5_K, MCL_K_MAX_ABS},
        {MCL_DTYPE_Q6_K, MCL_K_MAX_ABS},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int sign = -1; sign <= 1; sign += 2) {
            float x[256], y[256];
            uint8_t blocks[256 / 32 * 34 + 256];
            for (int i = 0; i < 256; i++)
                x[i] = (i % 3 == 0 ? (float)sign : -0.25f * (float)sign) * cases[c].max_abs;
            assert_int_equal(mcl_quantize_row(cases[c].type, x, blocks, 256), MCL_SUCCESS);
            assert_int_equal(mcl_dequantize_row(cases[c].type, blocks, y, 256), MCL_SUCCESS);
            for (int i = 0; i < 256; i++) {
                assert_true(isfinite(y[i]));
                assert_true(fabsf(y[i] - x[i]) <= 0.07f * cases[c].max_abs);
            }
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * Known vectors: dequantization of hand-built blocks
 * ------------------------------------------------------------------------------------- */

static void q8_0_known_vector(void **state)
{
    (void)state;
    /* d = 0.5 (fp16 0x3800, stored little-endian: 00 38), qs as signed bytes. */
    static const uint8_t block[34] = {
        0x00, 0x38,
        0x80, 0x7f, 0x00, 0x01, 0xff, 0x02, 0xfe, 0x03, /* -128 127 0 1 -1 2 -2 3 */
        0xfd, 0x04, 0xfc, 0x05, 0xfb, 0x06, 0xfa, 0x07, /* -3 4 -4 5 -5 6 -6 7 */
        0xf9, 0x08, 0xf8, 0x09, 0xf7, 0x0a, 0xf6, 0x0b, /* -7 8 -8 9 -9 10 -10 11 */
        0xf5, 0x0c, 0xf4, 0x0d, 0xf3, 0x0e, 0xf2, 0x40, /* -11 12 -12 13 -13 14 -14 64 */
    };
    static const float want[32] = {
        -64.0f, 63.5f, 0.0f, 0.5f, -0.5f, 1.0f, -1.0f, 1.5f,
        -1.5f, 2.0f, -2.0f, 2.5f, -2.5f, 3.0f, -3.0f, 3.5f,
        -3.5f, 4.0f, -4.0f, 4.5f, -4.5f, 5.0f, -5.0f, 5.5f,
        -5.5f, 6.0f, -6.0f, 6.5f, -6.5f, 7.0f, -7.0f, 32.0f,
    };
    float y[32];
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q8_0, block, y, 32), MCL_SUCCESS);
    assert_int_equal(mismatches("q8_0", y, want, 32), 0);

    /* A subnormal scale: d = 0x0001 = 2^-24; qs[0] = 100, qs[1] = -3, rest 0. */
    uint8_t tiny[34] = {0x01, 0x00, 100, 0xfd};
    float want_tiny[32] = {0};
    want_tiny[0] = 100.0f * 0x1p-24f; /* 5.9604645e-06 */
    want_tiny[1] = -3.0f * 0x1p-24f;
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q8_0, tiny, y, 32), MCL_SUCCESS);
    assert_int_equal(mismatches("q8_0 subnormal d", y, want_tiny, 32), 0);
}

static void q4_0_known_vector(void **state)
{
    (void)state;
    /* d = 0.5 (0x3800). qs[j] = j | (15 - j) << 4: element j (< 16) is the low nibble j,
     * giving (j - 8) * 0.5; element j + 16 is the high nibble 15 - j, giving (7 - j) * 0.5. */
    static const uint8_t block[18] = {
        0x00, 0x38,
        0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5, 0x96, 0x87,
        0x78, 0x69, 0x5a, 0x4b, 0x3c, 0x2d, 0x1e, 0x0f,
    };
    static const float want[32] = {
        -4.0f, -3.5f, -3.0f, -2.5f, -2.0f, -1.5f, -1.0f, -0.5f, /* low nibbles 0..7 */
        0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 2.5f, 3.0f, 3.5f,         /* low nibbles 8..15 */
        3.5f, 3.0f, 2.5f, 2.0f, 1.5f, 1.0f, 0.5f, 0.0f,         /* high nibbles 15..8 */
        -0.5f, -1.0f, -1.5f, -2.0f, -2.5f, -3.0f, -3.5f, -4.0f, /* high nibbles 7..0 */
    };
    float y[32];
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q4_0, block, y, 32), MCL_SUCCESS);
    assert_int_equal(mismatches("q4_0", y, want, 32), 0);
}

/* Scales and mins of the Q4_K / Q5_K vectors. Sub-blocks 4..7 have values >= 16 so their
 * top two bits land in bytes 0..7 bits 6-7; sub-blocks 0..3 include 63 so that masking the
 * borrowed bits is tested. */
static const int k_sc[8] = {1, 5, 10, 63, 16, 37, 50, 63};
static const int k_m[8] = {0, 3, 60, 7, 32, 21, 63, 1};
/* Packed by hand:
 *   byte j (j<4)   = sc[j] | (sc[j+4] >> 4) << 6: 1|1<<6=0x41, 5|2<<6=0x85, 10|3<<6=0xca,
 *                                                 63|3<<6=0xff
 *   byte j+4       = m[j]  | (m[j+4]  >> 4) << 6: 0|2<<6=0x80, 3|1<<6=0x43, 60|3<<6=0xfc,
 *                                                 7|0<<6=0x07
 *   byte j+8       = (sc[j+4] & 15) | (m[j+4] & 15) << 4: 0|0=0x00, 5|5<<4=0x55,
 *                                                 2|15<<4=0xf2, 15|1<<4=0x1f */
static const uint8_t k_scales_packed[12] = {0x41, 0x85, 0xca, 0xff, 0x80, 0x43,
                                            0xfc, 0x07, 0x00, 0x55, 0xf2, 0x1f};

/* 4-bit code of element 32s + l in the K vectors: depends on s, l and the 64-chunk
 * c = s / 2, so that swapping nibbles, chunks or byte order changes the result. */
static int k_code4(int s, int l)
{
    int c = s / 2;
    return (s % 2 == 0) ? (l + c) & 15 : (79 - l - 3 * c) & 15;
}

/* qs bytes for those codes, from the definition: byte 32c + l holds element 64c + l
 * (sub-block 2c) in its low nibble and element 64c + 32 + l (sub-block 2c + 1) in its high
 * nibble. */
static void k_fill_qs(uint8_t qs[128])
{
    for (int c = 0; c < 4; c++)
        for (int l = 0; l < 32; l++)
            qs[32 * c + l] = (uint8_t)(k_code4(2 * c, l) | k_code4(2 * c + 1, l) << 4);
}

static void k_scale_packing_matches_hand_packed_bytes(void **state)
{
    (void)state;
    uint8_t packed[12];
    memset(packed, 0, sizeof packed);
    for (int j = 0; j < 8; j++)
        mcl_k_scale_min_set(packed, j, (unsigned)k_sc[j], (unsigned)k_m[j]);
    assert_memory_equal(packed, k_scales_packed, 12);
    for (int j = 0; j < 8; j++) {
        uint8_t sc, m;
        mcl_k_scale_min_get(k_scales_packed, j, &sc, &m);
        assert_int_equal(sc, k_sc[j]);
        assert_int_equal(m, k_m[j]);
    }
    /* Every value in every slot, with the other slots full of ones (0x3f): set writes only
     * its own bits, get reads them back. */
    for (int j = 0; j < 8; j++) {
        for (unsigned v = 0; v < 64; v++) {
            uint8_t s[12];
            memset(s, 0, sizeof s);
            for (int k = 0; k < 8; k++)
                mcl_k_scale_min_set(s, k, 63, 63);
            mcl_k_scale_min_set(s, j, v, 63 - v);
            for (int k = 0; k < 8; k++) {
                uint8_t sc, m;
                int tsc, tm;
                mcl_k_scale_min_get(s, k, &sc, &m);
                test_scale_min(s, k, &tsc, &tm);
                assert_int_equal(sc, k == j ? v : 63);
                assert_int_equal(m, k == j ? 63 - v : 63);
                assert_int_equal(sc, tsc);
                assert_int_equal(m, tm);
            }
        }
    }
}

static void q4_k_build(uint8_t block[144])
{
    memset(block, 0, 144);
    block[0] = 0x00, block[1] = 0x3c; /* d = 1.0 */
    block[2] = 0x00, block[3] = 0x38; /* dmin = 0.5 */
    memcpy(block + 4, k_scales_packed, 12);
    k_fill_qs(block + 16);
}

static void q4_k_known_vector(void **state)
{
    (void)state;
    uint8_t block[144];
    q4_k_build(block);
    float y[256], want[256];
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q4_K, block, y, 256), MCL_SUCCESS);

    /* Spot checks worked by hand, y = d*sc[s]*q - dmin*m[s] with d = 1, dmin = 0.5:
     *   e=0:   s=0 l=0  c=0 even q=(0+0)&15=0      -> 1*0 - 0.5*0       = 0
     *   e=32:  s=1 l=0  c=0 odd  q=79&15=15        -> 5*15 - 0.5*3      = 73.5
     *   e=100: s=3 l=4  c=1 odd  q=(79-4-3)&15=8   -> 63*8 - 0.5*7      = 500.5
     *   e=128: s=4 l=0  c=2 even q=2               -> 16*2 - 0.5*32     = 16
     *   e=160: s=5 l=0  c=2 odd  q=(79-6)&15=9     -> 37*9 - 0.5*21     = 322.5
     *   e=200: s=6 l=8  c=3 even q=(8+3)&15=11     -> 50*11 - 0.5*63    = 518.5
     *   e=255: s=7 l=31 c=3 odd  q=(79-31-9)&15=7  -> 63*7 - 0.5*1      = 440.5 */
    static const struct { int e; float v; } spot[] = {
        {0, 0.0f}, {32, 73.5f}, {100, 500.5f}, {128, 16.0f},
        {160, 322.5f}, {200, 518.5f}, {255, 440.5f},
    };
    for (size_t i = 0; i < sizeof spot / sizeof spot[0]; i++) {
        print_message("q4_k e=%d got %.9g want %.9g\n", spot[i].e, (double)y[spot[i].e],
                      (double)spot[i].v);
        assert_true(y[spot[i].e] == spot[i].v);
    }

    /* Every element, from the definition: the code placed at (s, l), the pair (sc, m) the
     * test chose for sub-block s. All values are exact in float. */
    for (int e = 0; e < 256; e++) {
        int s = e / 32, l = e % 32;
        want[e] = (float)(k_sc[s] * k_code4(s, l)) - 0.5f * (float)k_m[s];
    }
    assert_int_equal(mismatches("q4_k", y, want, 256), 0);
}

/* Q5_K high bits: qh[l] = l * 8 + 7, so bits 0-2 (sub-blocks 0..2) are always set and bit s
 * for s >= 3 is bit s - 3 of l. */
static int q5_high_bit(int s, int l)
{
    return s < 3 ? 1 : (l >> (s - 3)) & 1;
}

static void q5_k_build(uint8_t block[176])
{
    memset(block, 0, 176);
    block[0] = 0x00, block[1] = 0x40; /* d = 2.0 */
    block[2] = 0x00, block[3] = 0x34; /* dmin = 0.25 */
    memcpy(block + 4, k_scales_packed, 12);
    for (int l = 0; l < 32; l++)
        block[16 + l] = (uint8_t)(l * 8 + 7);
    k_fill_qs(block + 48);
}

static void q5_k_known_vector(void **state)
{
    (void)state;
    uint8_t block[176];
    q5_k_build(block);
    float y[256], want[256];
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q5_K, block, y, 256), MCL_SUCCESS);

    /* By hand, y = 2*sc[s]*q - 0.25*m[s], q = low nibble + 16 * (bit s of qh[l]):
     *   e=0:   s=0 l=0  low 0,  high 1      q=16 -> 2*1*16 - 0       = 32
     *   e=32:  s=1 l=0  low 15, high 1      q=31 -> 2*5*31 - 0.75    = 309.25
     *   e=70:  s=2 l=6  low 7,  high 1      q=23 -> 2*10*23 - 15     = 445
     *   e=100: s=3 l=4  low 8,  bit0(4)=0   q=8  -> 2*63*8 - 1.75    = 1006.25
     *   e=128: s=4 l=0  low 2,  bit1(0)=0   q=2  -> 2*16*2 - 8       = 56
     *   e=160: s=5 l=0  low 9,  bit2(0)=0   q=9  -> 2*37*9 - 5.25    = 660.75
     *   e=200: s=6 l=8  low 11, bit3(8)=1   q=27 -> 2*50*27 - 15.75  = 2684.25
     *   e=255: s=7 l=31 low 7,  bit4(31)=1  q=23 -> 2*63*23 - 0.25   = 2897.75 */
    static const struct { int e; float v; } spot[] = {
        {0, 32.0f}, {32, 309.25f}, {70, 445.0f}, {100, 1006.25f},
        {128, 56.0f}, {160, 660.75f}, {200, 2684.25f}, {255, 2897.75f},
    };
    for (size_t i = 0; i < sizeof spot / sizeof spot[0]; i++)
        assert_true(y[spot[i].e] == spot[i].v);

    for (int e = 0; e < 256; e++) {
        int s = e / 32, l = e % 32;
        int q = k_code4(s, l) + 16 * q5_high_bit(s, l);
        want[e] = (float)(2 * k_sc[s] * q) - 0.25f * (float)k_m[s];
    }
    assert_int_equal(mismatches("q5_k", y, want, 256), 0);
}

/* Q6_K, sparse vector: every code 0 (value -32) except the four elements that share
 * ql[l] / ql[32 + l] / qh[l] of each half for l = 0 and l = 5. */
static const int8_t q6_sc[16] = {1, -1, 2, -2, 3, -3, 4, -4, 127, -128, 10, -10, 64, -64, 5, 7};

static void q6_k_sparse_vector(void **state)
{
    (void)state;
    uint8_t block[210];
    memset(block, 0, sizeof block);
    uint8_t *ql = block, *qh = block + 128;
    /* First half, l = 0: ql[0] = 0x21, ql[32] = 0x43, qh[0] = 0xe4 = 11 10 01 00:
     *   e=0  : low  nibble of ql[0]  = 1, qh bits 0-1 = 0 -> q = 1  -> q-32 = -31
     *   e=32 : low  nibble of ql[32] = 3, qh bits 2-3 = 1 -> q = 19 -> -13
     *   e=64 : high nibble of ql[0]  = 2, qh bits 4-5 = 2 -> q = 34 -> 2
     *   e=96 : high nibble of ql[32] = 4, qh bits 6-7 = 3 -> q = 52 -> 20 */
    ql[0] = 0x21, ql[32] = 0x43, qh[0] = 0xe4;
    /* Second half, l = 5: ql[64+5] = 0xf0, ql[96+5] = 0x0f, qh[32+5] = 0x1b = 00 01 10 11:
     *   e=133: low  nibble of ql[69]  = 0,  bits 0-1 = 3 -> q = 48 -> 16
     *   e=165: low  nibble of ql[101] = 15, bits 2-3 = 2 -> q = 47 -> 15
     *   e=197: high nibble of ql[69]  = 15, bits 4-5 = 1 -> q = 31 -> -1
     *   e=229: high nibble of ql[101] = 0,  bits 6-7 = 0 -> q = 0  -> -32 */
    ql[69] = 0xf0, ql[101] = 0x0f, qh[37] = 0x1b;
    memcpy(block + 192, q6_sc, 16);
    block[208] = 0x00, block[209] = 0x38; /* d = 0.5 */

    float want[256];
    for (int e = 0; e < 256; e++) /* default code 0: 0.5 * sc * -32 = -16 * sc */
        want[e] = -16.0f * (float)q6_sc[e / 16];
    /* Sub-block of each special element is e / 16: 0, 2, 4, 6, 8, 10, 12, 14. */
    want[0] = 0.5f * 1 * -31;    /* -15.5 */
    want[32] = 0.5f * 2 * -13;   /* -13 */
    want[64] = 0.5f * 3 * 2;     /* 3 */
    want[96] = 0.5f * 4 * 20;    /* 40 */
    want[133] = 0.5f * 127 * 16; /* 1016 */
    want[165] = 0.5f * 10 * 15;  /* 75 */
    want[197] = 0.5f * 64 * -1;  /* -32 */
    want[229] = 0.5f * 5 * -32;  /* -80 (code 0, as the default) */
    float y[256];
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q6_K, block, y, 256), MCL_SUCCESS);
    assert_int_equal(mismatches("q6_k sparse", y, want, 256), 0);
    assert_true(y[0] == -15.5f && y[96] == 40.0f && y[133] == 1016.0f && y[197] == -32.0f);
}

/* Q6_K, dense vector: code(e) = (7e + 3) & 63 placed per the definition. */
static int q6_code(int e)
{
    return (7 * e + 3) & 63;
}

static void q6_k_build(uint8_t block[210])
{
    memset(block, 0, 210);
    uint8_t *ql = block, *qh = block + 128;
    for (int e = 0; e < 256; e++) {
        int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
        int code = q6_code(e);
        /* quarters 0,1 use low nibbles of ql[0..31], ql[32..63]; quarters 2,3 the high
         * nibbles of the same bytes; qh[l] holds quarter k's top two bits at bits 2k. */
        ql[64 * half + 32 * (quarter % 2) + l] |= (uint8_t)((code & 15) << (quarter < 2 ? 0 : 4));
        qh[32 * half + l] |= (uint8_t)((code >> 4) << (2 * quarter));
    }
    memcpy(block + 192, q6_sc, 16);
    block[208] = 0x00, block[209] = 0x34; /* d = 0.25 */
}

static void q6_k_dense_vector(void **state)
{
    (void)state;
    uint8_t block[210];
    q6_k_build(block);
    float y[256], want[256];
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q6_K, block, y, 256), MCL_SUCCESS);
    /* By hand: e=1: code 10 -> 0.25*1*(10-32) = -5.5;  e=150: 1053&63 = 29, sub-block 9
     * (sc -128) -> 0.25*-128*(29-32) = 96;  e=255: 1788&63 = 60, sc 7 -> 0.25*7*28 = 49. */
    assert_true(y[1] == -5.5f);
    assert_true(y[150] == 96.0f);
    assert_true(y[255] == 49.0f);
    for (int e = 0; e < 256; e++)
        want[e] = 0.25f * (float)(q6_sc[e / 16] * (q6_code(e) - 32));
    assert_int_equal(mismatches("q6_k dense", y, want, 256), 0);
}

/* Rows of several blocks: block b's bytes start at b * block_bytes, and unaligned block
 * pointers work. */
static void multi_block_rows_and_unaligned_pointers(void **state)
{
    (void)state;
    uint8_t storage[1 + 3 * 176];
    uint8_t *row = storage + 1; /* odd address on purpose */
    uint8_t one[176];
    float y[768], want[256];

    q5_k_build(one);
    for (int b = 0; b < 3; b++) {
        memcpy(row + b * 176, one, 176);
        row[b * 176 + 1] = (uint8_t)(0x40 + 4 * b); /* d = 2, 4, 8 for blocks 0, 1, 2 */
    }
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q5_K, row, y, 768), MCL_SUCCESS);
    for (int b = 0; b < 3; b++) {
        float d = (float)(2 << b);
        for (int e = 0; e < 256; e++) {
            int s = e / 32, l = e % 32;
            int q = k_code4(s, l) + 16 * q5_high_bit(s, l);
            want[e] = d * (float)(k_sc[s] * q) - 0.25f * (float)k_m[s];
        }
        assert_int_equal(mismatches("q5_k row", y + 256 * b, want, 256), 0);
    }
}

/* Quantizers that follow ggml's reference exactly, on inputs where every rounding is
 * exact: the bytes are those ggml's rules give. */
static void q8_0_and_q4_0_quantize_known_bytes(void **state)
{
    (void)state;
    /* Q8_0: amax = 127 -> d = 1 (0x3c00), q = roundf(x) with halves away from zero. */
    float x8[32] = {127.0f, -126.6f, 0.4f, 0.5f, -0.5f, 2.49f, -3.51f, 1.5f};
    static const uint8_t want8[34] = {0x00, 0x3c, 127, (uint8_t)-127, 0, 1, (uint8_t)-1, 2,
                                      (uint8_t)-4, 2};
    uint8_t got8[34];
    assert_int_equal(mcl_quantize_row(MCL_DTYPE_Q8_0, x8, got8, 32), MCL_SUCCESS);
    assert_memory_equal(got8, want8, 34);

    /* Q4_0: x = -8..7 then 7..-8. The first value of largest magnitude is -8, so
     * d = -8 / -8 = 1 (0x3c00) and q = trunc(x + 8.5) = x + 8. */
    float x4[32];
    for (int j = 0; j < 16; j++) {
        x4[j] = (float)(j - 8);
        x4[j + 16] = (float)(7 - j);
    }
    static const uint8_t want4[18] = {0x00, 0x3c, 0xf0, 0xe1, 0xd2, 0xc3, 0xb4, 0xa5,
                                      0x96, 0x87, 0x78, 0x69, 0x5a, 0x4b, 0x3c, 0x2d,
                                      0x1e, 0x0f};
    uint8_t got4[18];
    assert_int_equal(mcl_quantize_row(MCL_DTYPE_Q4_0, x4, got4, 32), MCL_SUCCESS);
    assert_memory_equal(got4, want4, 18);

    /* Sign convention: when the largest magnitude is positive, d is negative. x = +8 first:
     * d = 8 / -8 = -1 (0xbc00), q(8) = trunc(-8 + 8.5) = 0, q(-8) = 16 -> clipped to 15. */
    float xs[32] = {8.0f, -8.0f, 1.0f};
    uint8_t gots[18];
    assert_int_equal(mcl_quantize_row(MCL_DTYPE_Q4_0, xs, gots, 32), MCL_SUCCESS);
    assert_int_equal(rd16(gots), 0xbc00);
    assert_int_equal(gots[2], 0x0 | 8 << 4);  /* x[0] = 8 -> 0; x[16] = 0 -> 8 */
    assert_int_equal(gots[3], 0xf | 8 << 4);  /* x[1] = -8 -> 15 (clipped); x[17] = 0 -> 8 */
    assert_int_equal(gots[4], 0x7 | 8 << 4);  /* x[2] = 1 -> trunc(-1 + 8.5) = 7 */
}

/* ---------------------------------------------------------------------------------------
 * Round trips with error bounds
 * ------------------------------------------------------------------------------------- */

enum { RT_ROWS = 48, RT_COLS = 4096, RT_N = RT_ROWS * RT_COLS };

typedef enum { DIST_GAUSS, DIST_UNIFORM, DIST_LAPLACE, DIST_MIXED_SCALE, DIST_COUNT } dist;
static const char *const dist_names[DIST_COUNT] = {"gauss", "uniform", "laplace", "mixed"};

static void fill(float *x, int64_t n, dist kind, uint64_t seed)
{
    rng_state = seed;
    float scale = 1.0f;
    for (int64_t i = 0; i < n; i++) {
        if (kind == DIST_MIXED_SCALE && i % 256 == 0) /* 10^-4 .. 10^3 per 256 weights */
            scale = powf(10.0f, -4.0f + 7.0f * rng_uniform());
        switch (kind) {
        case DIST_GAUSS: x[i] = rng_gauss(); break;
        case DIST_UNIFORM: x[i] = 2.0f * rng_uniform() - 1.0f; break;
        case DIST_LAPLACE: {
            float u = rng_uniform() - 0.5f;
            x[i] = (u < 0 ? 1.0f : -1.0f) * logf(1.0f - 2.0f * fabsf(u));
            break;
        }
        default: x[i] = scale * rng_gauss(); break;
        }
    }
}

typedef struct rt_stats {
    double rel_rms;      /* sqrt(sum (x-y)^2 / sum x^2) */
    double worst_ratio;  /* max over elements of |x-y| / (its bound) */
    int64_t violations;  /* elements over their bound */
} rt_stats;

/* Per-element bound of each format (quant.h), evaluated from x and the block bytes.
 * `slack` absorbs float rounding (a few ulp of the block's magnitude). */
static void check_q8_0(const float *x, const float *y, const uint8_t *blocks, int64_t n,
                       rt_stats *st)
{
    for (int64_t b = 0; b < n / 32; b++) {
        const float *xb = x + 32 * b, *yb = y + 32 * b;
        float amax = 0.0f;
        for (int j = 0; j < 32; j++)
            amax = fmaxf(amax, fabsf(xb[j]));
        float d32 = amax / 127.0f;
        float d = mcl_fp16_to_fp32(rd16(blocks + 34 * b));
        double bound = d32 / 2.0 + 127.0 * fabs((double)d32 - d) + 4.0 * FLT_EPSILON * amax;
        for (int j = 0; j < 32; j++) {
            double err = fabs((double)xb[j] - yb[j]);
            if (err > bound)
                st->violations++;
            if (bound > 0)
                st->worst_ratio = fmax(st->worst_ratio, err / bound);
        }
    }
}

static void check_q4_0(const float *x, const float *y, const uint8_t *blocks, int64_t n,
                       rt_stats *st)
{
    for (int64_t b = 0; b < n / 32; b++) {
        const float *xb = x + 32 * b, *yb = y + 32 * b;
        float amax = 0.0f, max = 0.0f;
        for (int j = 0; j < 32; j++) {
            if (amax < fabsf(xb[j])) {
                amax = fabsf(xb[j]);
                max = xb[j];
            }
        }
        float d32 = max / -8.0f;
        float id = d32 != 0.0f ? 1.0f / d32 : 0.0f;
        float d = mcl_fp16_to_fp32(rd16(blocks + 18 * b));
        double fp16_term = 8.0 * fabs((double)d32 - d) + 4.0 * FLT_EPSILON * amax;
        for (int j = 0; j < 32; j++) {
            int clipped = xb[j] * id + 8.5f >= 16.0f;
            double bound = fabs(d32) * (clipped ? 1.0 : 0.5) + fp16_term;
            double err = fabs((double)xb[j] - yb[j]);
            if (err > bound)
                st->violations++;
            if (bound > 0)
                st->worst_ratio = fmax(st->worst_ratio, err / bound);
        }
    }
}

/* Q4_K / Q5_K: |x - y| <= d*sc[s]/2; block layout offsets: d 0, dmin 2, scales 4. */
static void check_k_asym(const float *x, const float *y, const uint8_t *blocks, int64_t n,
                         size_t block_bytes, rt_stats *st)
{
    for (int64_t b = 0; b < n / 256; b++) {
        const uint8_t *blk = blocks + block_bytes * b;
        float d = mcl_fp16_to_fp32(rd16(blk)), dmin = mcl_fp16_to_fp32(rd16(blk + 2));
        float amax = 0.0f;
        for (int e = 0; e < 256; e++)
            amax = fmaxf(amax, fabsf(x[256 * b + e]));
        for (int s = 0; s < 8; s++) {
            int sc, m;
            test_scale_min(blk + 4, s, &sc, &m);
            double bound = d * sc / 2.0 + 8.0 * FLT_EPSILON * (amax + dmin * m);
            for (int l = 0; l < 32; l++) {
                int64_t i = 256 * b + 32 * s + l;
                double err = fabs((double)x[i] - y[i]);
                if (err > bound)
                    st->violations++;
                if (bound > 0)
                    st->worst_ratio = fmax(st->worst_ratio, err / bound);
            }
        }
    }
}

/* Q6_K: |x - y| <= d*sc[s]/2; sc at offset 192, d at 208. */
static void check_q6_k(const float *x, const float *y, const uint8_t *blocks, int64_t n,
                       rt_stats *st)
{
    for (int64_t b = 0; b < n / 256; b++) {
        const uint8_t *blk = blocks + 210 * b;
        float d = mcl_fp16_to_fp32(rd16(blk + 208));
        float amax = 0.0f;
        for (int e = 0; e < 256; e++)
            amax = fmaxf(amax, fabsf(x[256 * b + e]));
        for (int s = 0; s < 16; s++) {
            int sc = (int8_t)blk[192 + s];
            double bound = fabs(d * sc) / 2.0 + 8.0 * FLT_EPSILON * amax;
            for (int l = 0; l < 16; l++) {
                int64_t i = 256 * b + 16 * s + l;
                double err = fabs((double)x[i] - y[i]);
                if (err > bound)
                    st->violations++;
                if (bound > 0)
                    st->worst_ratio = fmax(st->worst_ratio, err / bound);
            }
        }
    }
}

static void check_bounds(mcl_dtype type, const float *x, const float *y, const uint8_t *blocks,
                         int64_t n, rt_stats *st)
{
    switch (type) {
    case MCL_DTYPE_Q8_0: check_q8_0(x, y, blocks, n, st); break;
    case MCL_DTYPE_Q4_0: check_q4_0(x, y, blocks, n, st); break;
    case MCL_DTYPE_Q4_K: check_k_asym(x, y, blocks, n, 144, st); break;
    case MCL_DTYPE_Q5_K: check_k_asym(x, y, blocks, n, 176, st); break;
    case MCL_DTYPE_Q6_K: check_q6_k(x, y, blocks, n, st); break;
    default: fail_msg("no bound for dtype %d", (int)type);
    }
}

static rt_stats round_trip(mcl_dtype type, const float *x, float *y, uint8_t *blocks, int64_t n)
{
    rt_stats st = {0, 0, 0};
    assert_int_equal(mcl_quantize_row(type, x, blocks, n), MCL_SUCCESS);
    assert_int_equal(mcl_dequantize_row(type, blocks, y, n), MCL_SUCCESS);
    double se = 0, sx = 0;
    for (int64_t i = 0; i < n; i++) {
        assert_true(isfinite(y[i]));
        se += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
        sx += (double)x[i] * x[i];
    }
    st.rel_rms = sx > 0 ? sqrt(se / sx) : 0.0;
    check_bounds(type, x, y, blocks, n, &st);
    return st;
}

/* Relative RMS error limits on unit-scale data, per format and distribution: the value this
 * test measured (gcc 12, x86-64) times about 1.2. With 196608 samples per case the
 * statistical spread is well under 1%, so the margin is for a different libm's logf / cosf
 * (other data, same statistics) and small method changes. For comparison, a uniform
 * quantizer with step D has rms error D / sqrt(12).
 *                 measured: gauss    uniform  laplace */
typedef struct rms_limit {
    mcl_dtype type;
    const char *name;
    double limit[3]; /* gauss, uniform, laplace */
} rms_limit;

static const rms_limit rms_limits[] = {
    {MCL_DTYPE_Q8_0, "q8_0", {0.0065, 0.0045, 0.0081}}, /* 0.00537  0.00376  0.00672 */
    {MCL_DTYPE_Q4_0, "q4_0", {0.104, 0.079, 0.129}},    /* 0.0862   0.0652   0.1068  */
    {MCL_DTYPE_Q4_K, "q4_k", {0.096, 0.075, 0.113}},    /* 0.0799   0.0620   0.0936  */
    {MCL_DTYPE_Q5_K, "q5_k", {0.047, 0.037, 0.056}},    /* 0.0393   0.0303   0.0460  */
    {MCL_DTYPE_Q6_K, "q6_k", {0.024, 0.018, 0.029}},    /* 0.0197   0.0150   0.0235  */
};

static void round_trip_error_bounds(void **state)
{
    (void)state;
    float *x = malloc(sizeof(float) * RT_N);
    float *y = malloc(sizeof(float) * RT_N);
    uint8_t *blocks = malloc(mcl_quant_row_size(MCL_DTYPE_Q8_0, RT_N)); /* the largest */
    assert_non_null(x);
    assert_non_null(y);
    assert_non_null(blocks);

    for (size_t f = 0; f < sizeof rms_limits / sizeof rms_limits[0]; f++) {
        for (int k = 0; k < DIST_COUNT; k++) {
            fill(x, RT_N, (dist)k, 0x5eed0000u + (uint64_t)k);
            rt_stats st = {0, 0, 0};
            /* Row by row, as a tensor is quantized. */
            for (int r = 0; r < RT_ROWS; r++) {
                int64_t off = (int64_t)r * RT_COLS;
                size_t boff = mcl_quant_row_size(rms_limits[f].type, off);
                rt_stats row = round_trip(rms_limits[f].type, x + off, y + off, blocks + boff,
                                          RT_COLS);
                st.violations += row.violations;
                st.worst_ratio = fmax(st.worst_ratio, row.worst_ratio);
            }
            double se = 0, sx = 0;
            for (int64_t i = 0; i < RT_N; i++) {
                se += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
                sx += (double)x[i] * x[i];
            }
            st.rel_rms = sqrt(se / sx);
            print_message("%s %-8s rel_rms %.5f  worst |err|/bound %.4f  violations %lld\n",
                          rms_limits[f].name, dist_names[k], st.rel_rms, st.worst_ratio,
                          (long long)st.violations);
            assert_int_equal(st.violations, 0);
            assert_true(st.worst_ratio <= 1.0);
            if (k < 3)
                assert_true(st.rel_rms < rms_limits[f].limit[k]);
        }
    }
    free(x);
    free(y);
    free(blocks);
}

/* ---------------------------------------------------------------------------------------
 * Edge cases
 * ------------------------------------------------------------------------------------- */

static const mcl_dtype all_types[] = {MCL_DTYPE_Q8_0, MCL_DTYPE_Q4_0, MCL_DTYPE_Q4_K,
                                      MCL_DTYPE_Q5_K, MCL_DTYPE_Q6_K};
#define N_TYPES (sizeof all_types / sizeof all_types[0])

static void all_zero_blocks(void **state)
{
    (void)state;
    float x[512] = {0}, y[512];
    uint8_t blocks[1024];
    for (size_t t = 0; t < N_TYPES; t++) {
        memset(blocks, 0xA5, sizeof blocks);
        for (int i = 0; i < 512; i++)
            y[i] = NAN;
        assert_int_equal(mcl_quantize_row(all_types[t], x, blocks, 512), MCL_SUCCESS);
        assert_int_equal(mcl_dequantize_row(all_types[t], blocks, y, 512), MCL_SUCCESS);
        for (int i = 0; i < 512; i++)
            assert_true(y[i] == 0.0f); /* also false for NaN */
    }
    /* Negative zeros are zeros too. */
    for (int i = 0; i < 512; i++)
        x[i] = -0.0f;
    for (size_t t = 0; t < N_TYPES; t++) {
        assert_int_equal(mcl_quantize_row(all_types[t], x, blocks, 512), MCL_SUCCESS);
        assert_int_equal(mcl_dequantize_row(all_types[t], blocks, y, 512), MCL_SUCCESS);
        for (int i = 0; i < 512; i++)
            assert_true(y[i] == 0.0f);
    }
    /* Zero sub-blocks next to non-zero ones: x = 0 on [64, 96) and [300, 512). A sub-block
     * (or Q8_0 / Q4_0 block) that is all zero decodes to exact zeros in every format; the
     * symmetric formats also decode every zero inside a mixed block (288..319, and Q6_K's
     * 288..303) exactly, since 0 is one of their levels. */
    for (int i = 0; i < 512; i++)
        x[i] = (i >= 64 && i < 96) || i >= 300 ? 0.0f : sinf((float)i);
    for (size_t t = 0; t < N_TYPES; t++) {
        int asym = all_types[t] == MCL_DTYPE_Q4_K || all_types[t] == MCL_DTYPE_Q5_K;
        assert_int_equal(mcl_quantize_row(all_types[t], x, blocks, 512), MCL_SUCCESS);
        assert_int_equal(mcl_dequantize_row(all_types[t], blocks, y, 512), MCL_SUCCESS);
        for (int i = 0; i < 512; i++) {
            int zero_sub = (i >= 64 && i < 96) || i >= 320;
            if (x[i] == 0.0f && (zero_sub || !asym))
                assert_true(y[i] == 0.0f);
        }
    }
}

static const char *const type_names[] = {"q8_0", "q4_0", "q4_k", "q5_k", "q6_k"};

static void constant_blocks(void **state)
{
    (void)state;
    /* Values whose block scales are normal fp16 numbers in every format: one fp16 rounding
     * of a scale, at most, separates the constant from its image (relative 2^-10, checked
     * at 2^-9). Below that range the scales become fp16 subnormals with an absolute spacing
     * of 2^-24, and only the per-element bound holds: checked with the tiny values. */
    static const float normal[] = {0.7f, -0.7f, 3.0f, -1234.5f, 40000.0f};
    static const float tiny[] = {1e-3f, -2.5e-6f, 1e-7f};
    float x[256], y[256];
    uint8_t blocks[272];
    for (size_t t = 0; t < N_TYPES; t++) {
        for (size_t v = 0; v < sizeof normal / sizeof normal[0]; v++) {
            for (int i = 0; i < 256; i++)
                x[i] = normal[v];
            rt_stats st = round_trip(all_types[t], x, y, blocks, 256);
            assert_int_equal(st.violations, 0);
            for (int i = 0; i < 256; i++)
                assert_true(fabsf(y[i] - x[i]) <= fabsf(x[i]) * 0x1p-9f);
        }
        for (size_t v = 0; v < sizeof tiny / sizeof tiny[0]; v++) {
            for (int i = 0; i < 256; i++)
                x[i] = tiny[v];
            rt_stats st = round_trip(all_types[t], x, y, blocks, 256);
            assert_int_equal(st.violations, 0);
        }
    }
}

static void one_huge_outlier(void **state)
{
    (void)state;
    float x[1024], y[1024], y_clean[1024];
    uint8_t blocks[1024 / 32 * 34];
    for (size_t t = 0; t < N_TYPES; t++) {
        fill(x, 1024, DIST_GAUSS, 77);
        round_trip(all_types[t], x, y_clean, blocks, 1024);
        for (int sign = -1; sign <= 1; sign += 2) {
            fill(x, 1024, DIST_GAUSS, 77);
            x[300] = 1000.0f * (float)sign; /* super-block 1: Q4_K sub-block 1, Q6_K 2 */
            rt_stats st = round_trip(all_types[t], x, y, blocks, 1024);
            assert_int_equal(st.violations, 0);
            float rel = fabsf(y[300] - x[300]) / 1000.0f;
            /* Blocks are independent: outside the outlier's block nothing changes. */
            int lo = all_types[t] == MCL_DTYPE_Q8_0 || all_types[t] == MCL_DTYPE_Q4_0 ? 288 : 256;
            int hi = lo == 288 ? 320 : 512;
            assert_int_equal(mismatches(NULL, y, y_clean, lo), 0);
            assert_int_equal(mismatches(NULL, y + hi, y_clean + hi, 1024 - hi), 0);
            /* Inside it, the other elements lose precision; how much is the format's. */
            double inside = 0;
            for (int i = lo; i < hi; i++)
                if (i != 300)
                    inside = fmax(inside, fabs((double)x[i] - y[i]));
            print_message("%s outlier %+5.0f: its rel err %.5f, max err of the other "
                          "elements of its block %.4f\n",
                          type_names[t], 1000.0 * sign, (double)rel, inside);
            /* The outlier sets its (sub-)block's range: the K formats reproduce it within
             * one super-scale step (<= 1/63 of the range); Q8_0 / Q4_0 within fp16
             * rounding of d. */
            assert_true(rel <= 1.0f / 60.0f);
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * fp16
 * ------------------------------------------------------------------------------------- */

static uint32_t fbits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bitsf(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void fp16_known_values(void **state)
{
    (void)state;
    assert_true(mcl_fp16_to_fp32(0x3c00) == 1.0f);
    assert_true(mcl_fp16_to_fp32(0xc000) == -2.0f);
    assert_true(mcl_fp16_to_fp32(0x3800) == 0.5f);
    assert_true(mcl_fp16_to_fp32(0x3555) == 0x1.554p-2f); /* 0.333251953125 */
    assert_true(mcl_fp16_to_fp32(0x7bff) == 65504.0f);
    assert_true(mcl_fp16_to_fp32(0x0400) == 0x1p-14f);  /* smallest normal */
    assert_true(mcl_fp16_to_fp32(0x03ff) == 0x3ffp-24f); /* largest subnormal */
    assert_true(mcl_fp16_to_fp32(0x0001) == 0x1p-24f);  /* smallest subnormal */
    assert_true(mcl_fp16_to_fp32(0x8001) == -0x1p-24f);
    assert_int_equal(fbits(mcl_fp16_to_fp32(0x8000)), 0x80000000u); /* -0 */
    assert_true(mcl_fp16_to_fp32(0x7c00) == INFINITY);
    assert_true(mcl_fp16_to_fp32(0xfc00) == -INFINITY);
    assert_true(isnan(mcl_fp16_to_fp32(0x7e00)));
    assert_true(isnan(mcl_fp16_to_fp32(0x7c01))); /* signalling NaN stays NaN */

    assert_int_equal(mcl_fp32_to_fp16(1.0f), 0x3c00);
    assert_int_equal(mcl_fp32_to_fp16(-2.0f), 0xc000);
    assert_int_equal(mcl_fp32_to_fp16(65504.0f), 0x7bff);
    assert_int_equal(mcl_fp32_to_fp16(0x1p-24f), 0x0001);
    assert_int_equal(mcl_fp32_to_fp16(-0.0f), 0x8000);
    assert_int_equal(mcl_fp32_to_fp16(1.0f / 3.0f), 0x3555);
}

static void fp16_all_halves_round_trip(void **state)
{
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = mcl_fp16_to_fp32((uint16_t)h);
        assert_int_equal(mcl_fp32_to_fp16(f), h);
#ifdef HAVE_FLOAT16_ORACLE
        oracle_half o;
        uint16_t hb = (uint16_t)h;
        memcpy(&o, &hb, 2);
        float of = (float)o;
        if (isnan(of))
            assert_true(isnan(f));
        else
            assert_int_equal(fbits(f), fbits(of));
#endif
    }
    /* Decoding is strictly increasing over the positive finite halves. */
    for (uint32_t h = 0; h < 0x7bff; h++)
        assert_true(mcl_fp16_to_fp32((uint16_t)h) < mcl_fp16_to_fp32((uint16_t)(h + 1)));
}

static void fp16_ties_round_to_even(void **state)
{
    (void)state;
    /* For every pair of adjacent finite halves, the float exactly halfway between them
     * rounds to the one with an even mantissa; one float ulp either side rounds to the
     * nearer. Both signs. */
    for (uint32_t h = 0; h < 0x7bff; h++) {
        float lo = mcl_fp16_to_fp32((uint16_t)h), hi = mcl_fp16_to_fp32((uint16_t)(h + 1));
        float mid = (lo + hi) * 0.5f;
        assert_true(mid - lo == hi - mid); /* exactly halfway */
        uint16_t even = (h & 1) ? (uint16_t)(h + 1) : (uint16_t)h;
        for (int sign = 0; sign < 2; sign++) {
            float s = sign ? -1.0f : 1.0f;
            uint16_t sb = sign ? 0x8000 : 0;
            assert_int_equal(mcl_fp32_to_fp16(s * mid), sb | even);
            assert_int_equal(mcl_fp32_to_fp16(s * nextafterf(mid, INFINITY)), sb | (h + 1));
            assert_int_equal(mcl_fp32_to_fp16(s * nextafterf(mid, 0.0f)), sb | h);
        }
    }
    /* Specific ties: 2^-25 (between 0 and the least subnormal) -> 0; 1 + 2^-11 -> 1;
     * 1 + 3*2^-11 -> 1 + 2^-9 (0x3c02). */
    assert_int_equal(mcl_fp32_to_fp16(0x1p-25f), 0x0000);
    assert_int_equal(mcl_fp32_to_fp16(0x3p-25f), 0x0002);
    assert_int_equal(mcl_fp32_to_fp16(1.0f + 0x1p-11f), 0x3c00);
    assert_int_equal(mcl_fp32_to_fp16(1.0f + 0x3p-11f), 0x3c02);
}

static void fp16_overflow_underflow_nan(void **state)
{
    (void)state;
    /* 65520 is halfway between 65504 (0x7bff, odd) and 2^16 (would be 0x7c00): ties to
     * even -> inf. Anything below stays finite. */
    assert_int_equal(mcl_fp32_to_fp16(65520.0f), 0x7c00);
    assert_int_equal(mcl_fp32_to_fp16(nextafterf(65520.0f, 0.0f)), 0x7bff);
    assert_int_equal(mcl_fp32_to_fp16(65519.0f), 0x7bff);
    assert_int_equal(mcl_fp32_to_fp16(-65520.0f), 0xfc00);
    assert_int_equal(mcl_fp32_to_fp16(1e9f), 0x7c00);
    assert_int_equal(mcl_fp32_to_fp16(FLT_MAX), 0x7c00);
    assert_int_equal(mcl_fp32_to_fp16(-FLT_MAX), 0xfc00);
    assert_int_equal(mcl_fp32_to_fp16(INFINITY), 0x7c00);
    assert_int_equal(mcl_fp32_to_fp16(-INFINITY), 0xfc00);
    /* Underflow: below 2^-25 is 0, just above it is the least subnormal; float subnormals
     * become signed zeros. */
    assert_int_equal(mcl_fp32_to_fp16(nextafterf(0x1p-25f, 1.0f)), 0x0001);
    assert_int_equal(mcl_fp32_to_fp16(0x1p-26f), 0x0000);
    assert_int_equal(mcl_fp32_to_fp16(-0x1p-26f), 0x8000);
    assert_int_equal(mcl_fp32_to_fp16(FLT_MIN), 0x0000);
    assert_int_equal(mcl_fp32_to_fp16(bitsf(0x00000001u)), 0x0000);
    assert_int_equal(mcl_fp32_to_fp16(-bitsf(0x00000001u)), 0x8000);
    /* Subnormal halves from normal floats, rounding up into the normal range. */
    assert_int_equal(mcl_fp32_to_fp16(0x3ffp-24f), 0x03ff);
    assert_int_equal(mcl_fp32_to_fp16(0x7ffp-25f), 0x0400); /* 1023.5 units -> even 1024 */
    /* NaNs stay NaNs, even when the payload lives only in bits that fp16 drops. */
    uint16_t n1 = mcl_fp32_to_fp16(bitsf(0x7f800001u));
    uint16_t n2 = mcl_fp32_to_fp16(bitsf(0xffc00000u));
    assert_int_equal(n1 & 0x7c00, 0x7c00);
    assert_true((n1 & 0x03ff) != 0);
    assert_int_equal(n2, 0xfe00);
    assert_int_equal(mcl_fp32_to_fp16(NAN) & 0x7e00, 0x7e00);
}

#ifdef HAVE_FLOAT16_ORACLE
/* Random float bit patterns (all exponents) against the compiler's conversion. */
static void fp16_matches_compiler_conversion(void **state)
{
    (void)state;
    rng_state = 12345;
    for (int i = 0; i < (1 << 21); i++) {
        uint32_t u = (uint32_t)rng_next();
        if (i & 1) /* half of the samples near fp16's range, where rounding matters */
            u = (u & 0x807fffffu) | (uint32_t)(100 + (u >> 23) % 45) << 23;
        float f = bitsf(u);
        if (isnan(f))
            continue;
        oracle_half o = (oracle_half)f;
        uint16_t ob;
        memcpy(&ob, &o, 2);
        assert_int_equal(mcl_fp32_to_fp16(f), ob);
    }
}
#endif

/* ---------------------------------------------------------------------------------------
 * Negative controls
 * ------------------------------------------------------------------------------------- */

/* The comparison used by every known-vector test catches a one-ulp error and a swapped pair. */
static void wrong_expected_vector_is_detected(void **state)
{
    (void)state;
    uint8_t block[144];
    q4_k_build(block);
    float y[256], want[256];
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q4_K, block, y, 256), MCL_SUCCESS);
    for (int e = 0; e < 256; e++) {
        int s = e / 32, l = e % 32;
        want[e] = (float)(k_sc[s] * k_code4(s, l)) - 0.5f * (float)k_m[s];
    }
    assert_int_equal(mismatches(NULL, y, want, 256), 0);
    want[77] = nextafterf(want[77], INFINITY);
    assert_int_equal(mismatches(NULL, y, want, 256), 1);
    want[77] = y[77];
    float t = want[10];
    want[10] = want[42]; /* same l, the other nibble of the same byte */
    want[42] = t;
    assert_int_equal(mismatches(NULL, y, want, 256), 2);

    /* And the bound checker catches an output one step off. */
    float x[256], yq[256];
    uint8_t qb[176];
    fill(x, 256, DIST_GAUSS, 99);
    rt_stats st = round_trip(MCL_DTYPE_Q5_K, x, yq, qb, 256);
    assert_int_equal(st.violations, 0);
    int sc, m;
    test_scale_min(qb + 4, 3, &sc, &m);
    /* Element 100 (sub-block 3) one step further from x: an off-by-one code. */
    float step = mcl_fp16_to_fp32(rd16(qb)) * (float)sc;
    yq[100] += x[100] >= yq[100] ? -step : step;
    rt_stats bad = {0, 0, 0};
    check_bounds(MCL_DTYPE_Q5_K, x, yq, qb, 256, &bad);
    assert_true(bad.violations >= 1);
}

/* One flipped bit in a scale changes exactly the sub-block it belongs to. */
static void corrupted_scale_bit_changes_output(void **state)
{
    (void)state;
    float good[256], bad[256];

    /* Q4_K: bit 6 of scales byte 1 is bit 4 of sub-block 5's scale (37 -> 53). */
    uint8_t q4[144];
    q4_k_build(q4);
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q4_K, q4, good, 256), MCL_SUCCESS);
    q4[4 + 1] ^= 0x40;
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q4_K, q4, bad, 256), MCL_SUCCESS);
    int changed = mismatches(NULL, bad, good, 256);
    assert_true(changed > 0);
    assert_int_equal(mismatches(NULL, bad, good, 160), 0);         /* sub-blocks 0..4 */
    assert_int_equal(mismatches(NULL, bad + 192, good + 192, 64), 0); /* sub-blocks 6, 7 */
    /* Elements of sub-block 5 with code 0 do not depend on the scale: (9 - l) & 15 == 0 at
     * l = 9 and 25, so 30 of 32 change. */
    assert_int_equal(changed, 30);

    /* Q4_K: bit 7 of byte 4 is bit 5 of sub-block 4's min (32 -> 0): all 32 change. */
    q4_k_build(q4);
    q4[4 + 4] ^= 0x80;
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q4_K, q4, bad, 256), MCL_SUCCESS);
    assert_int_equal(mismatches(NULL, bad, good, 256), 32);
    assert_int_equal(mismatches(NULL, bad + 128, good + 128, 32), 32);

    /* Q6_K: the sign bit of sub-block 3's int8 scale. */
    uint8_t q6[210];
    q6_k_build(q6);
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q6_K, q6, good, 256), MCL_SUCCESS);
    q6[192 + 3] ^= 0x80;
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q6_K, q6, bad, 256), MCL_SUCCESS);
    assert_true(mismatches(NULL, bad + 48, good + 48, 16) > 0);
    assert_int_equal(mismatches(NULL, bad, good, 48), 0);
    assert_int_equal(mismatches(NULL, bad + 64, good + 64, 192), 0);

    /* Q8_0: one bit of d changes every non-zero element. */
    uint8_t q8[34] = {0x00, 0x38, 1, 2, 3};
    float g8[32], b8[32];
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q8_0, q8, g8, 32), MCL_SUCCESS);
    q8[0] ^= 0x01;
    assert_int_equal(mcl_dequantize_row(MCL_DTYPE_Q8_0, q8, b8, 32), MCL_SUCCESS);
    assert_int_equal(mismatches(NULL, b8, g8, 32), 3);
}

#define LAYOUT_BLOCKS 7

/* device_layout_round_trip's checks of a split type: `map` gives each GGUF byte's device
 * offset, `hand` the device bytes written out from it. */
static void check_split(const mcl_quant_layout *l, const uint8_t *gguf, const uint64_t *map,
                        uint8_t *hand, uint8_t *dev, uint8_t *back)
{
    size_t n = LAYOUT_BLOCKS * (size_t)l->block_bytes;
    uint64_t d_area = LAYOUT_BLOCKS * (uint64_t)l->body_bytes;
    mcl_quant_split(l, 0, gguf, n, dev);
    assert_memory_equal(dev, hand, n);
    for (size_t lo = 0; lo < n; lo += 3) {
        for (size_t hi = lo + 1; hi <= n; hi += 5) {
            uint64_t body_at, body_bytes, d_at, d_bytes;
            mcl_quant_device_ranges(l, LAYOUT_BLOCKS, lo, hi - lo, &body_at, &body_bytes, &d_at,
                                    &d_bytes);
            /* Each GGUF byte of the range lands in one of the two device ranges, in order,
             * and in the split's part for it. */
            mcl_quant_split(l, lo, gguf + lo, hi - lo, dev);
            uint64_t nb = 0, nd = 0;
            for (size_t i = lo; i < hi; i++) {
                int in_d = map[i] >= d_area;
                uint64_t want = in_d ? d_at + nd : body_at + nb;
                assert_int_equal(map[i], want);
                assert_int_equal(dev[in_d ? body_bytes + nd : nb], gguf[i]);
                nd += in_d;
                nb += !in_d;
            }
            assert_int_equal(nb, body_bytes);
            assert_int_equal(nd, d_bytes);
            memset(back, 0, n);
            mcl_quant_merge(l, lo, dev, hi - lo, back);
            assert_memory_equal(back, gguf + lo, hi - lo);
        }
    }
    /* Control: a layout with the d values of blocks 1 and 2 swapped differs. */
    uint8_t tmp[2] = {hand[d_area + 2], hand[d_area + 3]};
    memcpy(hand + d_area + 2, hand + d_area + 4, 2);
    memcpy(hand + d_area + 4, tmp, 2);
    mcl_quant_split(l, 0, gguf, n, dev);
    assert_true(memcmp(dev, hand, n) != 0);
}

/* The device layout: for every format, every byte range of a tensor of 7 blocks (an odd count)
 * splits into the body and d ranges that a byte-by-byte mapping gives, split then merge
 * restores the bytes, and the split of the whole tensor is the layout written out by hand
 * (bodies, then the d values); Q4_K and Q5_K are not split. Control: the hand layout with two
 * d values swapped is not what the split makes. */
static void device_layout_round_trip(void **state)
{
    (void)state;
    static const mcl_dtype types[] = {MCL_DTYPE_Q8_0, MCL_DTYPE_Q4_0, MCL_DTYPE_Q4_K,
                                      MCL_DTYPE_Q5_K, MCL_DTYPE_Q6_K};
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        mcl_quant_layout l;
        assert_true(mcl_quant_layout_of(types[t], &l));
        int split = types[t] == MCL_DTYPE_Q8_0 || types[t] == MCL_DTYPE_Q4_0 ||
                    types[t] == MCL_DTYPE_Q6_K;
        assert_int_equal(l.split, split);
        assert_int_equal(l.body_bytes % 16, 0);
        size_t bb = l.block_bytes, n = LAYOUT_BLOCKS * bb;
        uint8_t *gguf = malloc(n), *dev = malloc(n), *back = malloc(n), *hand = malloc(n);
        uint64_t *map = malloc(n * sizeof *map);
        assert_true(gguf && dev && back && hand && map);
        for (size_t i = 0; i < n; i++) {
            size_t b = i / bb, j = i % bb;
            int in_d = split && j >= l.d_at && j < l.d_at + 2;
            gguf[i] = (uint8_t)(i * 131 + 7);
            map[i] = !split ? i
                     : in_d ? LAYOUT_BLOCKS * l.body_bytes + 2 * b + (j - l.d_at)
                            : b * l.body_bytes + (j < l.d_at ? j : j - 2);
            hand[map[i]] = gguf[i];
        }
        if (split)
            check_split(&l, gguf, map, hand, dev, back);
        free(gguf);
        free(dev);
        free(back);
        free(hand);
        free(map);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(row_sizes),
        cmocka_unit_test(bad_arguments_are_refused_without_writing),
        cmocka_unit_test(max_abs_inputs_stay_finite),
        cmocka_unit_test(q8_0_known_vector),
        cmocka_unit_test(q4_0_known_vector),
        cmocka_unit_test(k_scale_packing_matches_hand_packed_bytes),
        cmocka_unit_test(q4_k_known_vector),
        cmocka_unit_test(q5_k_known_vector),
        cmocka_unit_test(q6_k_sparse_vector),
        cmocka_unit_test(q6_k_dense_vector),
        cmocka_unit_test(multi_block_rows_and_unaligned_pointers),
        cmocka_unit_test(q8_0_and_q4_0_quantize_known_bytes),
        cmocka_unit_test(round_trip_error_bounds),
        cmocka_unit_test(all_zero_blocks),
        cmocka_unit_test(constant_blocks),
        cmocka_unit_test(one_huge_outlier),
        cmocka_unit_test(fp16_known_values),
        cmocka_unit_test(fp16_all_halves_round_trip),
        cmocka_unit_test(fp16_ties_round_to_even),
        cmocka_unit_test(fp16_overflow_underflow_nan),
#ifdef HAVE_FLOAT16_ORACLE
        cmocka_unit_test(fp16_matches_compiler_conversion),
#endif
        cmocka_unit_test(wrong_expected_vector_is_detected),
        cmocka_unit_test(corrupted_scale_bit_changes_output),
        cmocka_unit_test(device_layout_round_trip),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
