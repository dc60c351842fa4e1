/* CPU reference of the counter-state linear layer's codes and update (ref_counter.h). Float
 * arithmetic in the shaders' order; see shaders/counter_grad.glsl, counter_stats_f32.comp,
 * counter_rows_f32.comp and counter_apply_f32.comp for the sequence this repeats. */
#include <math.h>

#include "ref.h"
#include "ref_counter.h"

/* The shaders' tile: 64 columns, four groups of 16 (counter_grad.glsl). */
#define TILE_COLS 64
#define GROUP 16

uint8_t ref_counter_encode(int t, int c, uint32_t C)
{
    return (uint8_t)((uint32_t)(t + 1) * (2 * C - 1) + (uint32_t)(c + (int)C - 1));
}

int ref_counter_t(uint8_t code, uint32_t C)
{
    return (int)(code / (2 * C - 1)) - 1;
}

int ref_counter_c(uint8_t code, uint32_t C)
{
    return (int)(code % (2 * C - 1)) - (int)(C - 1);
}

void ref_counter_pack(const uint8_t *codes, size_t n, uint8_t *bytes)
{
    for (size_t g = 0; g < n / 4; g++) {
        const uint8_t *k = codes + 4 * g;
        bytes[3 * g] = (uint8_t)(k[0] | (k[1] & 3) << 6);
        bytes[3 * g + 1] = (uint8_t)(((k[1] >> 2) & 15) | (k[2] & 15) << 4);
        bytes[3 * g + 2] = (uint8_t)(((k[2] >> 4) & 3) | k[3] << 2);
    }
}

void ref_counter_unpack(const uint8_t *bytes, size_t n, uint8_t *codes)
{
    for (size_t g = 0; g < n / 4; g++) {
        const uint8_t *b = bytes + 3 * g;
        codes[4 * g] = b[0] & 63;
        codes[4 * g + 1] = (uint8_t)(b[0] >> 6 | (b[1] & 15) << 2);
        codes[4 * g + 2] = (uint8_t)(b[1] >> 4 | (b[2] & 3) << 4);
        codes[4 * g + 3] = b[2] >> 2;
    }
}

void ref_counter_grad(const float *x, const float *grad_out, int64_t N, int64_t out,
                      int64_t in, float *G)
{
    /* Four segments of ceil(N / 4) batch rows, each summed in order from +0.0, then added
     * in segment order (counter_grad.glsl). */
    const int64_t seg = (N + 3) / 4;
    for (int64_t o = 0; o < out; o++) {
        for (int64_t i = 0; i < in; i++) {
            float total = 0.0f;
            for (int64_t k = 0; k < 4; k++) {
                float acc = 0.0f;
                for (int64_t n = k * seg; n < (k + 1) * seg && n < N; n++) {
                    const float p = grad_out[n * out + o] * x[n * in + i];
                    acc = acc + p;
                }
                total = k == 0 ? acc : total + acc;
            }
            G[o * in + i] = total;
        }
    }
}

void ref_counter_rows(const float *G, const uint8_t *codes, int64_t out, int64_t in,
                      uint32_t C, const ref_counter_hyper *hyper, float *s, float *v,
                      float *factors)
{
    for (int64_t o = 0; o < out; o++) {
        float sq = 0.0f, gt = 0.0f;
        for (int64_t i0 = 0; i0 < in; i0 += TILE_COLS) {
            float tile_sq = 0.0f, tile_gt = 0.0f;
            for (int64_t i1 = i0; i1 < i0 + TILE_COLS && i1 < in; i1 += GROUP) {
                float group_sq = 0.0f, group_gt = 0.0f;
                for (int64_t i = i1; i < i1 + GROUP; i++) {
                    const float g = G[o * in + i];
                    const float t = (float)ref_counter_t(codes[o * in + i], C);
                    const float g2 = g * g, g_t = g * t;
                    group_sq = group_sq + g2;
                    group_gt = group_gt + g_t;
                }
                tile_sq = tile_sq + group_sq;
                tile_gt = tile_gt + group_gt;
            }
            sq = sq + tile_sq;
            gt = gt + tile_gt;
        }
        const float n_in = (float)in;
        const float gsq = sq / n_in;
        const float decayed = hyper->beta * v[o], fresh = (1.0f - hyper->beta) * gsq;
        const float vo = decayed + fresh;
        const float d = fmaxf(sqrtf(vo), hyper->eps);
        const float gs = gt / sqrtf(n_in);
        const float step = hyper->lr_scale * gs;
        const float sn = fminf(fmaxf(s[o] - step, 1e-5f), 10.0f);
        factors[2 * o] = s[o] / sn;
        factors[2 * o + 1] = (-hyper->lr / d) * ((float)C / sn);
        v[o] = vo;
        s[o] = sn;
    }
}

static uint32_t hash_wrong_bit(uint32_t x)
{
    x ^= x >> 16;
    x *= 0x7feb352cu; /* 0x7feb352d with its lowest bit cleared */
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}

void ref_counter_apply(const float *G, uint8_t *codes, int64_t out, int64_t in, uint32_t C,
                       uint32_t seed, const float *factors, int hash_variant,
                       ref_counter_counts *counts)
{
    const int Ci = (int)C;
    const float limit = (float)(3 * Ci);
    for (int64_t o = 0; o < out; o++) {
        const float ratio = factors[2 * o], k = factors[2 * o + 1];
        for (int64_t i = 0; i < in; i++) {
            const uint32_t e = (uint32_t)(o * in + i);
            const uint8_t code = codes[e];
            const int t = ref_counter_t(code, C), c = ref_counter_c(code, C);
            const float kept = (float)c * ratio, tick = G[e] * k;
            float val = kept + tick;
            val = fminf(fmaxf(val, -limit), limit);
            const float fl = floorf(val);
            const float frac = val - fl;
            const uint32_t h = hash_variant == REF_COUNTER_HASH_WRONG_BIT
                                   ? hash_wrong_bit(seed ^ hash_wrong_bit(e))
                                   : ref_hash(seed ^ ref_hash(e));
            const float u = (float)(h & 0xffffffu) * (1.0f / 16777216.0f);
            const int up = u < frac;
            const int r = (int)fl + up;
            const int carry = r >= 0 ? r / Ci : -((-r) / Ci);
            int rem = r - carry * Ci;
            int tn = t + carry;
            int walled = 0;
            if (tn > 1 || tn < -1) {
                tn = tn > 1 ? 1 : -1;
                rem = r > 0 ? Ci - 1 : -(Ci - 1);
                walled = 1;
            }
            const int cn = rem > Ci - 1 ? Ci - 1 : rem < -(Ci - 1) ? -(Ci - 1) : rem;
            codes[e] = ref_counter_encode(tn, cn, C);
            if (counts) {
                counts->walled += (uint64_t)walled;
                counts->carried += (uint64_t)(!walled && carry != 0);
                counts->rounded_up += (uint64_t)up;
                counts->changed += (uint64_t)(codes[e] != code);
            }
        }
    }
}
