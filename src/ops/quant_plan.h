/* Plans of the quantized matmul: which path multiplies a block-quantised weight, and the
 * kernel and specialization each path records, chosen from tables of format x rows x device
 * traits. Pure: nothing here records work. The measured reasons behind every entry are in
 * docs/tuning.md. */
#ifndef MCL_OPS_QUANT_PLAN_H
#define MCL_OPS_QUANT_PLAN_H

#include <stdint.h>

#include "motifcl.h"
#include "../vk/traits.h"

/* The block formats, in the order of quant.glsl's FMT_* constants. */
#define MCL_QFMT_Q8_0 0u
#define MCL_QFMT_Q4_0 1u
#define MCL_QFMT_Q4_K 2u
#define MCL_QFMT_Q5_K 3u
#define MCL_QFMT_Q6_K 4u
#define MCL_QFMT_COUNT 5u

/* quant.glsl's FMT_* index of a block type, or -1 for any other dtype. */
int mcl_quant_format(mcl_dtype dtype);
/* The block type of a format index. */
mcl_dtype mcl_quant_format_dtype(uint32_t fmt);

/* The GEMV kernels take up to this many rows of a (their accumulators are registers). */
#define MCL_QUANT_GEMV_MAX_ROWS 8u
/* Weights per lane of the shaders' decoder (quant.glsl), and per block of quantized
 * activations (qdot.glsl). */
#define MCL_QUANT_LANE_WEIGHTS 32u
/* Words per 32 quantized activations: 8 of codes, a scale, a sum (qdot.glsl). */
#define MCL_QUANT_ACT_WORDS 10u

/* Which path multiplies a block-quantised weight. */
typedef enum mcl_quant_path {
    MCL_QUANT_PATH_AUTO = 0,  /* mcl_quant_path_select()'s choice */
    MCL_QUANT_PATH_FLOAT = 1, /* weights dequantized in the shader, f32 arithmetic (any format) */
    MCL_QUANT_PATH_DOT = 2,   /* a quantized to 8 bits, packed int8 dot products (the GEMV: any
                               * format; the GEMM: Q8_0, Q4_0) */
    MCL_QUANT_PATH_MATRIX = 3 /* the GEMM only (more rows of a than the GEMV takes), any format:
                               * a and the dequantized W rounded to f16, cooperative-matrix
                               * products accumulated in f32 */
} mcl_quant_path;

/* The path of the GEMV (up to 8 rows of a) for a weight of `dtype`: DOT where the traits say
 * the quantized GEMV takes the integer-dot path (quant_dot), else FLOAT. */
mcl_quant_path mcl_quant_path_select(const mcl_context *ctx, mcl_dtype dtype);

/* The path of the GEMM (more rows): MATRIX where the traits allow it (quant_matrix) and the
 * device's shared memory holds its smallest tile; else mcl_quant_path_select's choice, FLOAT
 * for a K type where that is DOT or where the integer-dot GEMM's tile does not fit. */
mcl_quant_path mcl_quant_gemm_path_select(const mcl_context *ctx, mcl_dtype dtype);

/* Why an explicitly asked path cannot run on these traits (NULL when it can): integer dot or
 * cooperative matrices off, a K type's integer-dot GEMM, a tile beyond the shared memory, the
 * matrix path for the GEMV's rows. `gemv`: the product has at most 8 rows of a. */
const char *mcl_quant_path_refusal(const mcl_traits *traits, mcl_quant_path path, uint32_t fmt,
                                   int gemv, char *why, size_t why_size);

/* How the GEMV kernels (gemv_q.comp, gemv_q_dot.comp) split and stream a product: their
 * specialization. */
typedef struct mcl_gemv_plan {
    uint32_t t;     /* lanes along K per row group (local_size_x) */
    uint32_t g;     /* row groups per workgroup (local_size_y) */
    uint32_t nr;    /* rows of W per row group */
    uint32_t u;     /* pieces per row and lane in flight */
    uint32_t pb;    /* bytes of codes per piece */
    uint32_t stage; /* float path: rounds in step, their x staged in shared memory */
    uint32_t cvt;   /* float path, one row of x: codes to floats by conversion */
} mcl_gemv_plan;

/* The plan of the GEMV of m (1..8) rows of a by a weight [n, k] of format `fmt` on the
 * integer-dot path (dot != 0) or the float path (MOTIFCL_QUANT_GEMV_PLAN applied where it
 * fits, with a warning where it does not). */
void mcl_gemv_plan_for(const mcl_context *ctx, int dot, uint32_t fmt, uint32_t m, uint32_t n,
                       uint32_t k, mcl_gemv_plan *plan);

/* The same with `reserve` bytes of the workgroup's shared memory kept for the caller's use
 * of the kernel (experts grouped mode's list of pairs). */
void mcl_gemv_plan_reserving(const mcl_context *ctx, int dot, uint32_t fmt, uint32_t m,
                             uint32_t n, uint32_t k, uint64_t reserve, mcl_gemv_plan *plan);

/* The shared memory a GEMV plan takes at m rows of x, less what an experts mode adds. */
uint64_t mcl_gemv_shared_bytes(uint32_t fmt, const mcl_gemv_plan *plan, uint32_t m);

/* Experts grouped mode (gemv_q.glsl's GEMV_WINDOW): the pairs one scan of the ids covers, and
 * the shared memory its list takes at m rows of x (a window's matches, fewer than m carried
 * over, and the count). */
#define MCL_GEMV_GROUPED_WINDOW 1024u
#define MCL_GEMV_GROUPED_SHARED(m) ((MCL_GEMV_GROUPED_WINDOW + (uint64_t)(m) + 1u) * 4u)

/* The same for a dtype, checked, so that the tests can hold the rule to the plans it was
 * measured with. MCL_ERROR_INVALID_ARGUMENT for a dtype that is not a block type, m outside
 * 1..8, n = 0 or k not a whole number of blocks. */
mcl_status mcl_quant_gemv_plan(const mcl_context *ctx, int dot, mcl_dtype dtype, uint32_t m,
                               uint32_t n, uint32_t k, mcl_gemv_plan *plan);

/* Pieces per block of `pb` bytes of codes (quant.glsl's PPB), 0 where pb does not fit fmt. */
uint32_t mcl_quant_pieces(uint32_t fmt, uint32_t pb);

/* The piece size the public mcl_dequantize_tensor decodes with. */
#define MCL_QUANT_DEQUANT_PB 16u

/* The tile of the float-path GEMM (gemm_q.comp) of m rows of a by a weight of n rows: bm rows
 * of a by bn rows of W (MOTIFCL_QUANT_GEMM_FLOAT_TILE applied), within the device's shared
 * memory. */
void mcl_quant_gemm_float_tile(const mcl_context *ctx, uint32_t m, uint32_t n, uint32_t *bm,
                               uint32_t *bn);
/* Its inner loop's unroll over a tile's 16 values of K (MOTIFCL_QUANT_GEMM_UNROLL applied). */
uint32_t mcl_quant_gemm_unroll(const mcl_context *ctx);
/* Its slices of K for `tiles` workgroups (MOTIFCL_QUANT_GEMM_SLICES applied); 1 where W is
 * bound in row ranges (ldc != n) or the partial tiles would not fit one binding. */
uint32_t mcl_quant_gemm_slices(const mcl_context *ctx, uint64_t tiles, uint32_t m, uint32_t n,
                               uint32_t k, uint32_t ldc);

/* The same for the matrix GEMM (gemm_q_mma.comp, MOTIFCL_QUANT_GEMM_TILE applied), by a's rows
 * m. */
void mcl_quant_gemm_matrix_tile(const mcl_context *ctx, uint32_t m, uint32_t *bm, uint32_t *bn);
/* gemm_q_mma's workgroup: 8 subgroups of 32. */
#define MCL_QUANT_MMA_THREADS 256u
#define MCL_QUANT_MMA_SUBGROUP 32u

/* gemm_q_dot's fixed tile: 128 rows of a by 64 rows of W, 256 invocations. */
#define MCL_QUANT_DOT_TILE_M 128u
#define MCL_QUANT_DOT_TILE_N 64u
#define MCL_QUANT_DOT_THREADS 256u

#endif
