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
    uint32_t db; /* double-buffered shared tiles (twice the shared memory) */
} mcl_gemm_config;

/* Shared memory of gemm_f32 with tile shape cfg, single- or double-buffered. */
uint32_t mcl_gemm_shared_bytes(const mcl_gemm_config *cfg, uint32_t db);

/* Record a GEMM with an explicit tile shape (the benchmark sweeps them). Shapes are those of
 * mcl_matmul after validation: c[batch][m][n]; strides in elements, 0 for a shared operand. */
mcl_status mcl_gemm_dispatch(mcl_context *ctx, const mcl_gemm_config *cfg, mcl_tensor *a,
                             int ta, mcl_tensor *b, int tb, mcl_tensor *bias, mcl_tensor *c,
                             uint32_t m, uint32_t n, uint32_t k, uint32_t batch,
                             uint32_t stride_a, uint32_t stride_b);

/* Whether the row kernels (softmax, reductions, norms) reduce with subgroup arithmetic (1)
 * or with the portable shared-memory tree (0) on this context. */
int mcl_rows_use_subgroup(const mcl_context *ctx);

/* How the GEMV kernels (gemv_q.comp, gemv_q_dot.comp) split and stream a product: their
 * specialization, as matmul_quant.c's plan rule chooses it. */
typedef struct mcl_gemv_plan {
    uint32_t t;     /* lanes along K per row group (local_size_x) */
    uint32_t g;     /* row groups per workgroup (local_size_y) */
    uint32_t nr;    /* rows of W per row group */
    uint32_t u;     /* pieces per row and lane in flight */
    uint32_t pb;    /* bytes of codes per piece */
    uint32_t stage; /* float path: rounds in step, their x staged in shared memory */
    uint32_t cvt;   /* float path, one row of x: codes to floats by conversion (AMD, Q5_K) */
} mcl_gemv_plan;

/* The plan of the GEMV of m (1..8) rows of a by a weight [n, k] of block type `dtype` on the
 * integer-dot path (dot != 0) or the float path, on ctx (MOTIFCL_QUANT_GEMV_PLAN applied), so
 * that the tests can hold the rule to the plans it was measured with. It records nothing.
 * MCL_ERROR_INVALID_ARGUMENT for a dtype that is not a block type, m outside 1..8, n = 0 or
 * k not a whole number of blocks. */
mcl_status mcl_quant_gemv_plan(const mcl_context *ctx, int dot, mcl_dtype dtype, uint32_t m,
                               uint32_t n, uint32_t k, mcl_gemv_plan *plan);

/* The tile of the float-path GEMM (gemm_q.comp) of m rows of a by a weight of n rows: bm rows
 * of a by bn rows of W (MOTIFCL_QUANT_GEMM_FLOAT_TILE applied), within the device's shared
 * memory. It records nothing. */
void mcl_quant_gemm_float_tile(const mcl_context *ctx, uint32_t m, uint32_t n, uint32_t *bm,
                               uint32_t *bn);

/* The same for the matrix GEMM (gemm_q_mma.comp, MOTIFCL_QUANT_GEMM_TILE applied). */
void mcl_quant_gemm_matrix_tile(const mcl_context *ctx, uint32_t m, uint32_t n, uint32_t *bm,
                                uint32_t *bn);

/* mcl_attention with the key split forced (0: the library chooses, 1: never split) and the
 * split count that ran reported: the test suite covers both paths on every shape. */
mcl_status mcl_attention_ex(mcl_context *ctx, const mcl_tensor *q, const mcl_tensor *k,
                            const mcl_tensor *v, const mcl_attention_desc *desc,
                            uint32_t force_splits, uint32_t *splits_used, mcl_tensor *out);

/* mcl_matmul with a block-quantised b (matmul_quant.c). */
mcl_status mcl_matmul_quant(mcl_context *ctx, mcl_tensor *a, mcl_transpose ta, mcl_tensor *b,
                            mcl_transpose tb, mcl_tensor *bias, mcl_tensor *c);

/* Quantized matmul (matmul_quant.c): which path multiplies a block-quantised weight. */
typedef enum mcl_quant_path {
    MCL_QUANT_PATH_AUTO = 0,  /* mcl_quant_path_select()'s choice */
    MCL_QUANT_PATH_FLOAT = 1, /* weights dequantized in the shader, f32 arithmetic (any format) */
    MCL_QUANT_PATH_DOT = 2,   /* a quantized to 8 bits, packed int8 dot products (the GEMV: any
                               * format; the GEMM: Q8_0, Q4_0) */
    MCL_QUANT_PATH_MATRIX = 3 /* the GEMM only (more rows of a than the GEMV takes), any format:
                               * a and the dequantized W rounded to f16, cooperative-matrix
                               * products accumulated in f32 */
} mcl_quant_path;

/* The path mcl_matmul takes for a weight of `dtype` on ctx, at up to 8 rows of a (the GEMV):
 * DOT for a block type where integer dot product is enabled (not masked by the profile, the
 * quirk table or MOTIFCL_DISABLE) and either accelerated, or asked for by
 * MOTIFCL_QUANT_PATH=dot or MOTIFCL_FORCE naming integer-dot; MOTIFCL_QUANT_PATH=float forces
 * FLOAT. Else FLOAT. */
mcl_quant_path mcl_quant_path_select(const mcl_context *ctx, mcl_dtype dtype);

/* The same for more rows (the GEMM): MATRIX where cooperative matrices are enabled, unless
 * MOTIFCL_QUANT_PATH names float or dot; else mcl_quant_path_select's choice, FLOAT for a K
 * type where that is DOT (the integer-dot GEMM takes Q8_0 and Q4_0). */
mcl_quant_path mcl_quant_gemm_path_select(const mcl_context *ctx, mcl_dtype dtype);

/* mcl_attention with the key split forced (0: the library chooses, 1: never split) and the
 * split count that ran reported: the test suite covers both paths on every shape. */
mcl_status mcl_attention_ex(mcl_context *ctx, const mcl_tensor *q, const mcl_tensor *k,
                            const mcl_tensor *v, const mcl_attention_desc *desc,
                            uint32_t force_splits, uint32_t *splits_used, mcl_tensor *out);

/* mcl_matmul with a block-quantised b along `path` (AUTO: mcl_quant_path_select for the GEMV,
 * mcl_quant_gemm_path_select for the GEMM). `ran`, if not NULL, receives the path recorded.
 * A path where it cannot run is MCL_ERROR_UNSUPPORTED: DOT without integer dot product or for a
 * K type's GEMM, MATRIX without cooperative matrices or for the GEMV's rows. */
mcl_status mcl_matmul_quant_ex(mcl_context *ctx, mcl_tensor *a, mcl_transpose ta, mcl_tensor *b,
                               mcl_transpose tb, mcl_tensor *bias, mcl_tensor *c,
                               mcl_quant_path path, mcl_quant_path *ran);

/* mcl_matmul_multi along `path` (AUTO: each weight's mcl_quant_path_select), for the tests. */
mcl_status mcl_matmul_multi_ex(mcl_context *ctx, const mcl_tensor *a, uint32_t count,
                               const mcl_tensor *const *w, const mcl_tensor *const *bias,
                               mcl_tensor *const *c, mcl_quant_path path);

/* mcl_dequantize_tensor with quant.glsl's piece decoder (pb: bytes of codes per piece, 8, 16
 * or 32 as the format takes, any non-zero value for Q6_K; mcl_dequantize_tensor decodes
 * pieces of 16) or, with pb = 0, the GEMM's 4-weight decoder, so that a test can hold each to
 * the CPU reference. MCL_ERROR_INVALID_ARGUMENT for a piece size the format has not. */
mcl_status mcl_dequantize_tensor_ex(mcl_context *ctx, const mcl_tensor *q, mcl_tensor *out,
                                    uint32_t pb);

/* How many slices of K a GEMM of `tiles` output tiles (workgroups) gets: split until the grid
 * holds about 512 workgroups, no slice under 256 values of K, at most 16 slices (matmul.c). */
uint32_t mcl_gemm_slices(uint64_t tiles, uint32_t k);

/* The second step of a split-K GEMM (gemm_reduce_f32.comp): c[i] = sum over the slices s of
 * partial[s * total + i] (+ bias[i % n]), i < total. */
mcl_status mcl_gemm_reduce(mcl_context *ctx, mcl_tensor *partial, mcl_tensor *bias,
                           mcl_tensor *c, uint32_t total, uint32_t n, uint32_t slices);

/* c = a W^T on the integer-dot path with a already quantized into act (mcl_quantize_activations
 * of a's rows and K): the products alone, for motifcl-bench to time the GEMV kernels without
 * the quantization and its wait. Checked as mcl_matmul_quant_ex checks (a gives the shapes). */
mcl_status mcl_matmul_quantized_input(mcl_context *ctx, mcl_tensor *a, mcl_tensor *act,
                                      mcl_tensor *w, mcl_tensor *c);

/* The integer-dot path's first step: the first `rows` rows of K values of a (f32, K a multiple
 * of 32) quantized per 32 values into act (4-byte elements, at least rows * K / 32 * 10 of
 * them): all codes (8 words of 4 signed bytes per block), then the f32 scales, then the i32
 * code sums (shaders/qdot.glsl). */
mcl_status mcl_quantize_activations(mcl_context *ctx, mcl_tensor *a, uint32_t rows, uint32_t k,
                                    mcl_tensor *act);

/* The checks most operations start with: every tensor present, of ctx, f32. */
mcl_status mcl_ops_check_f32(mcl_context *ctx, const char *op, const mcl_tensor *const *t,
                             uint32_t count);

/* Workgroup size for a row kernel whose rows take `units` loads: a power of two (the
 * reduction tree halves it), enough to give each invocation work, within the device's limit
 * and reduce.glsl's scratch. */
uint32_t mcl_row_local_size(const mcl_context *ctx, uint64_t units);

/* The fused optimizer step of the model (adamw_fused_f32.comp): AdamW over one flat
 * parameter buffer with hyper-parameters read from the device tensor `hyper` (filled by
 * mcl_adamw_hyper), gradients scaled by min(1, max_norm / norm[0]) on the fly, weight decay
 * on elements [0, decay_end) only. */
#define MCL_ADAMW_HYPER_COUNT 8
mcl_status mcl_adamw_fused(mcl_context *ctx, mcl_tensor *params, mcl_tensor *grads,
                           mcl_tensor *m, mcl_tensor *v, mcl_tensor *hyper, mcl_tensor *norm,
                           uint64_t decay_end);
/* Check desc as mcl_adamw_step() does (messages name `op`) and fill the hyper tensor's
 * values: lr, betas and eps with defaults filled, weight decay, bias corrections for
 * desc->step, and a clipping norm (0 when max_grad_norm is 0, negative or not finite: no
 * clipping). */
mcl_status mcl_adamw_hyper(mcl_context *ctx, const char *op, const mcl_adamw_desc *desc,
                           float max_grad_norm, float hyper[MCL_ADAMW_HYPER_COUNT]);

#endif
