/* CPU reference of the counter-state linear layer (MEMORY_NATIVE.md section 1), in the float
 * operation order of shaders/counter_*.comp, so that the packed state after an update can be
 * compared byte for byte. Compiled with -ffp-contract=off (tests/CMakeLists.txt): every
 * product and sum is rounded on its own, as the shaders' `precise` asks. */
#ifndef MCL_TEST_REF_COUNTER_H
#define MCL_TEST_REF_COUNTER_H

#include <stddef.h>
#include <stdint.h>

/* Codes and their packing: code = (t + 1)(2C - 1) + (c + C - 1), four codes in three bytes. */
uint8_t ref_counter_encode(int t, int c, uint32_t C);
int ref_counter_t(uint8_t code, uint32_t C);
int ref_counter_c(uint8_t code, uint32_t C);
void ref_counter_pack(const uint8_t *codes, size_t n, uint8_t *bytes);
void ref_counter_unpack(const uint8_t *bytes, size_t n, uint8_t *codes);

/* G [out, in] = grad_out^T x: each element from +0.0, adding grad_out[n, o] * x[n, i] for
 * n = 0..N-1 (counter_grad.glsl's order). */
void ref_counter_grad(const float *x, const float *grad_out, int64_t N, int64_t out,
                      int64_t in, float *G);

typedef struct ref_counter_hyper {
    float lr, lr_scale, beta, eps;
    uint32_t seed;
} ref_counter_hyper;

/* The row step (counter_stats_f32 + counter_rows_f32): s and v updated in place, factors
 * [out, 2] = (s / s', (-lr / D)(C / s')). */
void ref_counter_rows(const float *G, const uint8_t *codes, int64_t out, int64_t in,
                      uint32_t C, const ref_counter_hyper *hyper, float *s, float *v,
                      float *factors);

/* What the weight step did, for the tests to show their inputs reach each branch. */
typedef struct ref_counter_counts {
    uint64_t carried;    /* |carry| >= 1 without reaching a wall */
    uint64_t walled;     /* t + carry clamped: rem set to sign(r) (C - 1) */
    uint64_t rounded_up; /* the stochastic rounding went up */
    uint64_t changed;    /* the code changed */
} ref_counter_counts;

/* Which hash the weight step uses: the spec's, or (a negative control) one whose first
 * multiplier has its lowest bit cleared. */
enum { REF_COUNTER_HASH_SPEC = 0, REF_COUNTER_HASH_WRONG_BIT = 1 };

/* The weight step (counter_apply_f32) over codes [out, in] in place, with the row factors
 * [out, 2] of ref_counter_rows (or the device's). counts may be NULL. */
void ref_counter_apply(const float *G, uint8_t *codes, int64_t out, int64_t in, uint32_t C,
                       uint32_t seed, const float *factors, int hash_variant,
                       ref_counter_counts *counts);

#endif
