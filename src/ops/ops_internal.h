/* Operations the library uses itself and the test suites reach through the static library,
 * but which are not part of the public API. */
#ifndef MCL_OPS_INTERNAL_H
#define MCL_OPS_INTERNAL_H

#include "motifcl.h"

/* Fill a 4-byte-element tensor with mcl_hash(seed ^ mcl_hash(i)) for word i: a pattern
 * distinct per tensor and per word, for no-aliasing checks. */
mcl_status mcl_fill_pattern(mcl_context *ctx, mcl_tensor *tensor, uint32_t seed);

/* A GEMM tile shape (gemm_f32.comp's specialization): BM x BN per workgroup, TM x TN per
 * invocation (4 or 8 each), BK along K per shared-memory step. */
typedef struct mcl_gemm_config {
    uint32_t bm, bn, bk, tm, tn;
} mcl_gemm_config;

/* Record a GEMM with an explicit tile shape (the benchmark sweeps them). Shapes are those of
 * mcl_matmul after validation: c[batch][m][n]; strides in elements, 0 for a shared operand. */
mcl_status mcl_gemm_dispatch(mcl_context *ctx, const mcl_gemm_config *cfg, mcl_tensor *a,
                             int ta, mcl_tensor *b, int tb, mcl_tensor *bias, mcl_tensor *c,
                             uint32_t m, uint32_t n, uint32_t k, uint32_t batch,
                             uint32_t stride_a, uint32_t stride_b);

/* Whether the row kernels (softmax, reductions, norms) reduce with subgroup arithmetic (1)
 * or with the portable shared-memory tree (0) on this context. */
int mcl_rows_use_subgroup(const mcl_context *ctx);

/* mcl_matmul with a block-quantised b (matmul_quant.c). */
mcl_status mcl_matmul_quant(mcl_context *ctx, mcl_tensor *a, mcl_transpose ta, mcl_tensor *b,
                            mcl_transpose tb, mcl_tensor *bias, mcl_tensor *c);

#endif
