/* The quantized matmul's pieces that the other matrix-product files reuse (linear.c's
 * mcl_matmul_multi, dequantize.c): checked products, their recording, the weight's bindings.
 * Internal to src/ops. */
#ifndef MCL_OPS_MATMUL_QUANT_H
#define MCL_OPS_MATMUL_QUANT_H

#include "../vk/runtime.h"
#include "ops_internal.h"
#include "quant_plan.h"

/* The two bindings of rows [r0, r0 + rows) of a quantized weight w (of n rows of k weights, a
 * root tensor) in the device layout: its block bodies, and its d values (for Q4_K and Q5_K,
 * any buffer: the bodies again), bound from an aligned offset below the first with dlo the
 * half where it starts. Views: mcl_weight_part_free destroys them. */
typedef struct weight_part {
    mcl_tensor *body, *d;
    uint32_t dlo;
} weight_part;

/* The push constants of the GEMV kernels (gemv_q.comp, gemv_q_dot.comp; the same order as
 * their pc). ldc, c0: the output's row stride and the column of this W's row 0 (a W split in
 * row ranges writes its columns of the whole output). The rest is the experts modes' (moe.c),
 * zero otherwise: the experts the part binds [e_lo, e_lo + e_n), the pairs per row of x
 * (xdiv), the rows of x (xrows), ids' first element (ids0), the pairs (grouped mode scans
 * them). dlo_u: the fused gate and up GEMV's second weight's dlo. */
typedef struct mcl_gemv_push {
    uint32_t n, k, has_bias, ldc, c0, dlo;
    uint32_t e_lo, e_n, xdiv, xrows, ids0, pairs;
    uint32_t dlo_u; /* gemv_q_dot_glu: W_up's dlo */
    float eps;      /* gemv_q_dot_rms: the norm's epsilon */
} mcl_gemv_push;


/* Get a kernel and check that the device gave it the workgroup size its tiles assume
 * (MCL_ERROR_UNSUPPORTED where it did not). */
mcl_status mcl_kernel_exact(mcl_context *ctx, const mcl_kernel_desc *desc,
                            const mcl_kernel **out);

mcl_status mcl_weight_part_views(mcl_context *ctx, mcl_tensor *w, uint32_t n, uint32_t k,
                                 uint32_t r0, uint32_t rows, weight_part *out);
void mcl_weight_part_free(weight_part *wp);

/* Rows of a quantized tensor w of n rows per binding: all of them where w's block bodies fit
 * one storage-buffer binding, else the most whose bodies fit one and start every part at an
 * offset the device can bind (a multiple of minStorageBufferOffsetAlignment and of 4 bytes).
 * (The d values of a part take an eighth of its bodies' bytes at most, bound on their own.)
 * MOTIFCL_MAX_BINDING (bytes) lowers the limit, so that the split is tested on any device.
 * MCL_ERROR_TOO_LARGE (the message naming `op`) where one binding holds fewer rows than one
 * aligned step. */
mcl_status mcl_weight_part_rows(mcl_context *ctx, const char *op, const mcl_tensor *w,
                                uint32_t n, uint32_t *out);

/* A checked product c = a W^T with a block-quantised W: its format, path, rows of a, N, K,
 * and the rows of W per binding. */
typedef struct quant_product {
    uint32_t fmt, rows, n, k, part_rows;
    mcl_quant_path path;
} quant_product;

/* The shapes of c = a W^T (+ bias) for a 2-D W [N, K]: a [..., K] of rank >= 2, c [..., N]
 * with a's batch dimensions, bias of N elements. */
mcl_status mcl_linear_shapes_check(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *w,
                                   const mcl_tensor *bias, const mcl_tensor *c);

/* Checks a product as mcl_matmul_quant_ex takes it and chooses its path (AUTO: the plan's
 * choice); records nothing. */
mcl_status mcl_quant_check(mcl_context *ctx, mcl_tensor *a, mcl_transpose ta, mcl_tensor *b,
                           mcl_transpose tb, mcl_tensor *bias, mcl_tensor *c,
                           mcl_quant_path path, quant_product *p);

/* a quantized for the integer-dot path into a new scratch tensor *act (the caller destroys it:
 * at once is safe, scratch memory stays reserved until the recorded work has run). */
mcl_status mcl_quantize_into_scratch(mcl_context *ctx, mcl_tensor *a, uint32_t rows, uint32_t k,
                                     mcl_tensor **act);

/* The fused gate, up and SwiGLU GEMV's plan (gemv_q_dot_glu) for a checked product p of
 * W_gate (W_up alike; rms: the norm folded), its lanes sized for a grid of grid_rows rows of
 * W; 0 where the fusion does not apply (matmul_quant.c says when). */
int mcl_glu_plan(mcl_context *ctx, const quant_product *p, uint32_t grid_rows, int rms,
                 mcl_gemv_plan *plan);
/* Records a checked product; act holds a quantized where p->path is DOT and fold (NULL:
 * none) has no norm. A fold needs a product that mcl_matmul_folds accepts. */
mcl_status mcl_quant_record(mcl_context *ctx, const quant_product *p, mcl_tensor *a,
                            mcl_tensor *act, mcl_tensor *b, mcl_tensor *bias, mcl_tensor *c,
                            const mcl_gemv_fold *fold);

#endif
