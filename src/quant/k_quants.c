/* K-quants: Q4_K, Q5_K and Q6_K, super-blocks of 256 weights (ggml's "k-quants").
 *
 * Layouts (docs/quant-formats.md has the byte map):
 *   Q4_K / Q5_K: 8 sub-blocks of 32, y = d*sc[s]*q - dmin*m[s], sc and m 6-bit, q 4 or 5 bits.
 *   Q6_K:       16 sub-blocks of 16, y = d*sc[s]*(q - 32), sc int8, q 6 bits.
 *
 * Quantization method (a straightforward min-max method, not ggml's weighted search; the
 * bytes differ from llama-quantize's, the format is the same):
 *
 *   Q4_K / Q5_K, nmax = 15 / 31. Per sub-block s: lo = min(min x, 0), hi = max x. The
 *   format can only subtract a non-negative offset (m >= 0, dmin >= 0), hence lo <= 0.
 *   1. Mins: dmin is the smallest fp16 with 63*dmin >= max_s(-lo_s); m[s] is the smallest
 *      integer with M_s = dmin*m[s] >= -lo_s. Rounding up puts -M_s at or below every x.
 *   2. Scales: the codes must reach from -M_s up to hi_s, so each step must be at least
 *      (hi_s + M_s) / nmax. d is the smallest fp16 with 63*d*nmax >= max_s(hi_s + M_s);
 *      sc[s] is the smallest integer with D_s = d*sc[s] satisfying D_s*nmax >= hi_s + M_s.
 *   3. Codes: q = round((x + M_s) / D_s), which lies in 0..nmax without clipping.
 *   Bound: |x - y| <= D_s/2 per element, with D_s < (hi_s - lo_s + dmin)/nmax + d.
 *
 *   Q6_K. Per sub-block s of 16: a_s = max |x|. d is the smallest fp16 with
 *   127*31*d >= max_s a_s; sc[s] the smallest integer with D_s = d*sc[s], 31*D_s >= a_s;
 *   q - 32 = round(x / D_s) in -31..31 (the code -32 is never produced, so the range is
 *   symmetric and nothing clips). Bound: |x - y| <= D_s/2 with D_s < a_s/31 + d.
 *
 * Rounding the sub-block scales and mins up (rather than to nearest) costs about one part in
 * 60 of step size and buys a guarantee: no element is ever clipped, so every element's error
 * is at most half of its sub-block's step. All products compared against are exact in
 * float (at most 23 significant bits), so the "smallest integer" searches are exact. */
#include <math.h>
#include <string.h>

#include "quant/quant_internal.h"

#define K_SUB_ASYM 32      /* weights per Q4_K / Q5_K sub-block */
#define K_NSUB_ASYM 8      /* sub-blocks per Q4_K / Q5_K super-block */
#define K_SUB_Q6 16        /* weights per Q6_K sub-block */
#define K_NSUB_Q6 16       /* sub-blocks per Q6_K super-block */
#define K_SCALE_MAX 63     /* 6-bit scales and mins */
#define Q6_SCALE_MAX 127   /* int8 scales, only the non-negative half used */
#define Q6_CODE_MAX 31     /* symmetric 6-bit codes used: -31..31 */
#define F16_MAX_FINITE_BITS 0x7bffu

/* ---------------------------------------------------------------------------------------
 * Scale packing: 8 pairs of 6-bit (scale, min) in 12 bytes.
 *   bytes 0..3:  bits 0-5 scale of sub-block 0..3, bits 6-7 high 2 bits of scale 4..7
 *   bytes 4..7:  bits 0-5 min   of sub-block 0..3, bits 6-7 high 2 bits of min   4..7
 *   bytes 8..11: bits 0-3 low 4 bits of scale 4..7, bits 4-7 low 4 bits of min 4..7
 * ------------------------------------------------------------------------------------- */

void mcl_k_scale_min_get(const uint8_t scales[MCL_K_SCALE_SIZE], int j, uint8_t *sc,
                         uint8_t *m)
{
    if (j < 4) {
        *sc = scales[j] & 63;
        *m = scales[j + 4] & 63;
    } else {
        *sc = (uint8_t)((scales[j + 4] & 0x0f) | (scales[j - 4] >> 6) << 4);
        *m = (uint8_t)((scales[j + 4] >> 4) | (scales[j] >> 6) << 4);
    }
}

void mcl_k_scale_min_set(uint8_t scales[MCL_K_SCALE_SIZE], int j, unsigned sc, unsigned m)
{
    sc &= 63;
    m &= 63;
    if (j < 4) {
        scales[j] = (uint8_t)((scales[j] & 0xc0) | sc);
        scales[j + 4] = (uint8_t)((scales[j + 4] & 0xc0) | m);
    } else {
        scales[j + 4] = (uint8_t)((sc & 0x0f) | (m & 0x0f) << 4);
        scales[j - 4] = (uint8_t)((scales[j - 4] & 0x3f) | (sc >> 4) << 6);
        scales[j] = (uint8_t)((scales[j] & 0x3f) | (m >> 4) << 6);
    }
}

/* ---------------------------------------------------------------------------------------
 * Helpers
 * ------------------------------------------------------------------------------------- */

/* The smallest fp16 d >= 0 with d * steps >= need (need >= 0, finite, and small enough for
 * the answer to be finite: quant.c's MCL_*_MAX_ABS guarantee that). d * steps is exact in
 * float because steps < 2^12 and d has 11 significant bits. */
static uint16_t covering_scale(float need, float steps)
{
    if (!(need > 0.0f))
        return 0;
    uint16_t h = mcl_fp32_to_fp16(need / steps);
    while (h > 0 && mcl_fp16_to_fp32((uint16_t)(h - 1)) * steps >= need)
        h--;
    while (h < F16_MAX_FINITE_BITS && mcl_fp16_to_fp32(h) * steps < need)
        h++;
    return h;
}

/* The smallest k in 0..kmax with unit * k * mult >= need (kmax if none). */
static unsigned covering_count(float need, float unit, float mult, unsigned kmax)
{
    if (!(need > 0.0f) || !(unit > 0.0f))
        return 0;
    float guess = ceilf(need / (unit * mult));
    unsigned k = guess < 0.0f ? 0u : guess > (float)kmax ? kmax : (unsigned)guess;
    while (k > 0 && unit * (float)(k - 1) * mult >= need)
        k--;
    while (k < kmax && unit * (float)k * mult < need)
        k++;
    return k;
}

static int clamp_int(float v, int lo, int hi)
{
    return v < (float)lo ? lo : v > (float)hi ? hi : (int)v;
}

/* ---------------------------------------------------------------------------------------
 * Q4_K and Q5_K share the scale selection; only the packing of the codes differs.
 * ------------------------------------------------------------------------------------- */

typedef struct k_asym_choice {
    uint16_t d, dmin;
    uint8_t scales[MCL_K_SCALE_SIZE];
    uint8_t codes[MCL_QK_K]; /* q per element, 0..nmax, in element order */
} k_asym_choice;

static void choose_k_asym(const float *x, int nmax, k_asym_choice *out)
{
    float hi[K_NSUB_ASYM], neg_lo[K_NSUB_ASYM];
    float max_neg_lo = 0.0f;
    for (int s = 0; s < K_NSUB_ASYM; s++) {
        const float *xs = x + s * K_SUB_ASYM;
        float mn = xs[0], mx = xs[0];
        for (int l = 1; l < K_SUB_ASYM; l++) {
            mn = fminf(mn, xs[l]);
            mx = fmaxf(mx, xs[l]);
        }
        hi[s] = mx;
        neg_lo[s] = -fminf(mn, 0.0f);
        max_neg_lo = fmaxf(max_neg_lo, neg_lo[s]);
    }

    /* 1. Mins, rounded up so that -M_s <= every x of the sub-block. */
    memset(out->scales, 0, sizeof out->scales);
    out->dmin = covering_scale(max_neg_lo, K_SCALE_MAX);
    const float dmin = mcl_fp16_to_fp32(out->dmin);
    unsigned mq[K_NSUB_ASYM];
    float offset[K_NSUB_ASYM], need[K_NSUB_ASYM];
    float max_need = 0.0f;
    for (int s = 0; s < K_NSUB_ASYM; s++) {
        mq[s] = covering_count(neg_lo[s], dmin, 1.0f, K_SCALE_MAX);
        offset[s] = dmin * (float)mq[s];
        need[s] = hi[s] + offset[s]; /* >= 0: hi >= lo >= -offset */
        max_need = fmaxf(max_need, need[s]);
    }

    /* 2. Scales, rounded up so that nmax steps reach from -M_s to hi_s. */
    out->d = covering_scale(max_need, (float)(K_SCALE_MAX * nmax));
    const float d = mcl_fp16_to_fp32(out->d);
    for (int s = 0; s < K_NSUB_ASYM; s++) {
        unsigned sc = covering_count(need[s], d, (float)nmax, K_SCALE_MAX);
        mcl_k_scale_min_set(out->scales, s, sc, mq[s]);

        /* 3. Codes against the scale and min exactly as the decoder will see them. */
        const float step = d * (float)sc;
        const float *xs = x + s * K_SUB_ASYM;
        for (int l = 0; l < K_SUB_ASYM; l++) {
            int q = step > 0.0f ? clamp_int(roundf((xs[l] + offset[s]) / step), 0, nmax) : 0;
            out->codes[s * K_SUB_ASYM + l] = (uint8_t)q;
        }
    }
}

/* Q4_K / Q5_K code placement: element 32s + l has its low 4 bits in qs[32*(s/2) + l],
 * low nibble for even s, high nibble for odd s; Q5_K's fifth bit is bit s of qh[l]. */
static size_t k_asym_byte(int s, int l)
{
    return (size_t)(K_SUB_ASYM * (s / 2) + l);
}

void mcl_q4_k_quantize(const float *x, void *blocks, int64_t nblocks)
{
    unsigned char *out = blocks;
    for (int64_t b = 0; b < nblocks; b++, x += MCL_QK_K) {
        k_asym_choice c;
        choose_k_asym(x, 15, &c);
        mcl_block_q4_k blk;
        blk.d = c.d;
        blk.dmin = c.dmin;
        memcpy(blk.scales, c.scales, sizeof blk.scales);
        memset(blk.qs, 0, sizeof blk.qs);
        for (int s = 0; s < K_NSUB_ASYM; s++) {
            for (int l = 0; l < K_SUB_ASYM; l++) {
                unsigned q = c.codes[s * K_SUB_ASYM + l];
                blk.qs[k_asym_byte(s, l)] |= (uint8_t)(q << (4 * (s & 1)));
            }
        }
        memcpy(out + b * MCL_BLOCK_Q4_K_BYTES, &blk, sizeof blk);
    }
}

void mcl_q5_k_quantize(const float *x, void *blocks, int64_t nblocks)
{
    unsigned char *out = blocks;
    for (int64_t b = 0; b < nblocks; b++, x += MCL_QK_K) {
        k_asym_choice c;
        choose_k_asym(x, 31, &c);
        mcl_block_q5_k blk;
        blk.d = c.d;
        blk.dmin = c.dmin;
        memcpy(blk.scales, c.scales, sizeof blk.scales);
        memset(blk.qh, 0, sizeof blk.qh);
        memset(blk.qs, 0, sizeof blk.qs);
        for (int s = 0; s < K_NSUB_ASYM; s++) {
            for (int l = 0; l < K_SUB_ASYM; l++) {
                unsigned q = c.codes[s * K_SUB_ASYM + l];
                blk.qs[k_asym_byte(s, l)] |= (uint8_t)((q & 0x0f) << (4 * (s & 1)));
                blk.qh[l] |= (uint8_t)((q >> 4) << s);
            }
        }
        memcpy(out + b * MCL_BLOCK_Q5_K_BYTES, &blk, sizeof blk);
    }
}

/* Shared decoder. `qh` is NULL for Q4_K. */
static void dequantize_k_asym(uint16_t d16, uint16_t dmin16,
                              const uint8_t scales[MCL_K_SCALE_SIZE], const uint8_t *qs,
                              const uint8_t *qh, float *y)
{
    const float d = mcl_fp16_to_fp32(d16);
    const float dmin = mcl_fp16_to_fp32(dmin16);
    for (int s = 0; s < K_NSUB_ASYM; s++) {
        uint8_t sc, m;
        mcl_k_scale_min_get(scales, s, &sc, &m);
        const float step = d * (float)sc;
        const float offset = dmin * (float)m;
        for (int l = 0; l < K_SUB_ASYM; l++) {
            unsigned q = (qs[k_asym_byte(s, l)] >> (4 * (s & 1))) & 0x0f;
            if (qh)
                q |= ((qh[l] >> s) & 1u) << 4;
            y[s * K_SUB_ASYM + l] = step * (float)q - offset;
        }
    }
}

void mcl_q4_k_dequantize(const void *blocks, float *y, int64_t nblocks)
{
    const unsigned char *in = blocks;
    for (int64_t b = 0; b < nblocks; b++, y += MCL_QK_K) {
        mcl_block_q4_k blk;
        memcpy(&blk, in + b * MCL_BLOCK_Q4_K_BYTES, sizeof blk);
        dequantize_k_asym(blk.d, blk.dmin, blk.scales, blk.qs, NULL, y);
    }
}

void mcl_q5_k_dequantize(const void *blocks, float *y, int64_t nblocks)
{
    const unsigned char *in = blocks;
    for (int64_t b = 0; b < nblocks; b++, y += MCL_QK_K) {
        mcl_block_q5_k blk;
        memcpy(&blk, in + b * MCL_BLOCK_Q5_K_BYTES, sizeof blk);
        dequantize_k_asym(blk.d, blk.dmin, blk.scales, blk.qs, blk.qh, y);
    }
}

/* ---------------------------------------------------------------------------------------
 * Q6_K
 * ------------------------------------------------------------------------------------- */

/* Where element e (0..255) of a Q6_K super-block keeps its bits. The block is two halves
 * of 128; each half is four quarters of 32 that share the bytes ql[0..63] and qh[0..31] of
 * the half: quarter k takes ql[32*(k & 1) + l], low nibble for k < 2, high for k >= 2, and
 * bits 2k..2k+1 of qh[l]. */
typedef struct q6_place {
    size_t ql;          /* index into ql[] */
    unsigned ql_shift;  /* 0 (low nibble) or 4 (high nibble) */
    size_t qh;          /* index into qh[] */
    unsigned qh_shift;  /* 0, 2, 4 or 6 */
} q6_place;

static q6_place q6_place_of(int e)
{
    int half = e / 128, quarter = (e % 128) / 32, l = e % 32;
    q6_place p;
    p.ql = (size_t)(64 * half + 32 * (quarter & 1) + l);
    p.ql_shift = quarter >= 2 ? 4u : 0u;
    p.qh = (size_t)(32 * half + l);
    p.qh_shift = 2u * (unsigned)quarter;
    return p;
}

void mcl_q6_k_quantize(const float *x, void *blocks, int64_t nblocks)
{
    unsigned char *out = blocks;
    for (int64_t b = 0; b < nblocks; b++, x += MCL_QK_K) {
        float amax[K_NSUB_Q6];
        float max_amax = 0.0f;
        for (int s = 0; s < K_NSUB_Q6; s++) {
            amax[s] = 0.0f;
            for (int l = 0; l < K_SUB_Q6; l++)
                amax[s] = fmaxf(amax[s], fabsf(x[s * K_SUB_Q6 + l]));
            max_amax = fmaxf(max_amax, amax[s]);
        }

        mcl_block_q6_k blk;
        memset(&blk, 0, sizeof blk);
        blk.d = covering_scale(max_amax, (float)(Q6_SCALE_MAX * Q6_CODE_MAX));
        const float d = mcl_fp16_to_fp32(blk.d);
        for (int s = 0; s < K_NSUB_Q6; s++) {
            unsigned sc = covering_count(amax[s], d, (float)Q6_CODE_MAX, Q6_SCALE_MAX);
            blk.scales[s] = (int8_t)sc;
            const float step = d * (float)sc;
            for (int l = 0; l < K_SUB_Q6; l++) {
                int e = s * K_SUB_Q6 + l;
                int q = step > 0.0f
                            ? clamp_int(roundf(x[e] / step), -Q6_CODE_MAX, Q6_CODE_MAX)
                            : 0;
                unsigned code = (unsigned)(q + 32);
                q6_place p = q6_place_of(e);
                blk.ql[p.ql] |= (uint8_t)((code & 0x0f) << p.ql_shift);
                blk.qh[p.qh] |= (uint8_t)((code >> 4) << p.qh_shift);
            }
        }
        memcpy(out + b * MCL_BLOCK_Q6_K_BYTES, &blk, sizeof blk);
    }
}

void mcl_q6_k_dequantize(const void *blocks, float *y, int64_t nblocks)
{
    const unsigned char *in = blocks;
    for (int64_t b = 0; b < nblocks; b++, y += MCL_QK_K) {
        mcl_block_q6_k blk;
        memcpy(&blk, in + b * MCL_BLOCK_Q6_K_BYTES, sizeof blk);
        const float d = mcl_fp16_to_fp32(blk.d);
        for (int e = 0; e < MCL_QK_K; e++) {
            q6_place p = q6_place_of(e);
            int code = ((blk.ql[p.ql] >> p.ql_shift) & 0x0f) |
                       ((blk.qh[p.qh] >> p.qh_shift) & 3) << 4;
            y[e] = d * (float)blk.scales[e / K_SUB_Q6] * (float)(code - 32);
        }
    }
}
