/* Matrix products with a block-quantised weight (c = a W^T, W [N, K] as stored in a GGUF
 * file), and GPU dequantization.
 *
 * Three paths:
 *  - float (every format): the weights are dequantized in the shader and multiplied in f32.
 *    gemv_q for 1..8 rows of a (decode), gemm_q with W's tiles dequantized into shared
 *    memory for more. The path an RX 580 runs (it has no packed 8-bit dot product).
 *  - integer dot: quantize_q8_1 quantizes a to 8 bits per 32 values, then gemv_q_dot (every
 *    format) / gemm_q_dot (Q8_0, Q4_0; the K types' GEMM is the float one) multiply packed
 *    int8 codes. Taken where the device's integer dot product is enabled and accelerated, or
 *    where it is enabled and asked for (see mcl_quant_path_select).
 *  - matrix (the GEMM, every format): gemm_q_mma rounds a's tiles and W's dequantized tiles
 *    to f16 in shared memory and multiplies them on cooperative matrices, accumulating in
 *    f32. Taken for more than 8 rows of a where cooperative matrices are enabled (see
 *    mcl_quant_gemm_path_select).
 *
 * Weights are stored in the device layout (shaders/quant.glsl, src/quant/device_layout.c):
 * Q8_0, Q4_0 and Q6_K keep their fp16 d apart from the block bodies, so that every body is
 * 16-byte aligned. A kernel binds the bodies and the d values as two buffers (weight_part).
 *
 * The GEMVs (shaders/gemv_q.glsl) read each row of W along K with the lanes of a row group,
 * a piece of a block each; with several rows of x on the float path (and Q5_K at one) the
 * rounds of a workgroup go in step and the x of each round is staged in shared memory
 * (gemv_plan_for chooses).
 *
 * mcl_matmul_multi applies several weights to one input: on the integer-dot path that input is
 * quantized once for all, where each mcl_matmul quantizes its own and the GEMV then waits
 * for it.
 *
 * A weight larger than one binding (maxStorageBufferRange, or MOTIFCL_MAX_BINDING) is bound
 * in row ranges, views at offsets the device can bind; each writes its columns of c (the
 * kernels' ldc and c0), and the integer-dot path quantizes a once for all of them. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../core/env.h"
#include "../vk/context.h"
#include "ops_internal.h"
#include "quant/quant.h"

/* The block formats, in the order of quant.glsl's FMT_* constants. */
static const mcl_dtype quant_formats[] = {MCL_DTYPE_Q8_0, MCL_DTYPE_Q4_0, MCL_DTYPE_Q4_K,
                                          MCL_DTYPE_Q5_K, MCL_DTYPE_Q6_K};
#define FMT_Q8_0 0u
#define FMT_Q4_0 1u
#define FMT_Q4_K 2u
#define FMT_Q5_K 3u
#define FMT_Q6_K 4u

/* Weights per lane of the shaders' decoder (quant.glsl), and per block of quantized
 * activations (qdot.glsl). */
#define QUANT_LANE_WEIGHTS 32u
/* Words per 32 quantized activations: 8 of codes, a scale, a sum (qdot.glsl). */
#define ACT_WORDS_PER_BLOCK 10u

/* The GEMV kernels take up to this many rows of a (their accumulators are registers). */
#define QUANT_GEMV_MAX_ROWS 8u
/* The GEMV layout (gemv_q.comp, gemv_q_dot.comp; shaders/gemv_q.glsl): a row group of T lanes
 * reads each of its NR rows along K, U pieces per lane in flight.
 *
 * One row of x, and the integer-dot path: T starts at one subgroup and doubles (up to
 * MAX_LANES, and only while each lane still has MIN_ROUNDS rounds of U pieces in the row
 * after the doubling) while the grid would hold fewer than TARGET_LANES invocations: about
 * what an H200 keeps resident (132 multiprocessors x 2048), so that a 4096-row weight still
 * fills the GPU.
 *
 * Rounds: at K = 4096 the one-row integer-dot GEMV of Q4_0, Q4_K and Q5_K had doubled to 64
 * lanes, two rounds a lane; 32 lanes (four rounds) read 3-7 points more on the H200, kernels
 * alone, of stream read, 14336x4096, twice each (evidence/h200-75cec5a-rounds): Q4_0 86.0 /
 * 86.9% against 84.4 / 83.6%, Q4_K 86.3 / 86.1% against 79.6 / 80.0%, Q5_K 82.9 / 83.3%
 * against 79.6 / 79.0%; the float path there, one run each, read the same with 32 (Q8_0
 * 80.7 against 80.5% batched, Q4_0 55.3 against 55.2, Q4_K 44.0 against 44.7). At K = 14336
 * three and a half rounds were as good as seven (Q4_0 and Q5_K, 128 or 64 lanes) and Q8_0
 * read 1.8 points less with seven (32 lanes): three rounds keep those plans. */
#define QUANT_SPAN_MIN_ROUNDS 3u
#define QUANT_SPAN_LANES 32u
#define QUANT_SPAN_LANES_WAVE64 64u
#define QUANT_SPAN_MAX_LANES 256u
#define QUANT_SPAN_TARGET_LANES (1u << 18)
/* The integer-dot path at several rows of x aims at a quarter of that: a lane there holds the
 * sums of 4 rows of W by up to 8 rows of x, and fewer lanes stay resident. On the H200, Q8_0
 * at 8 rows, kernels alone, 14336x4096 / 4096x14336 (evidence/h200-3482289-q8rows): the lanes
 * this gives (32 and 64 per row group) read 61.9 and 63.1% of stream read, those of
 * QUANT_SPAN_TARGET_LANES (64 and 128) 56.6 / 56.6%. Every format at 8 rows with it
 * (evidence/h200-be4b810-rows8): Q8_0 61.9 / 63.2%, Q4_0 36.0 / 39.4% (32.2 / 34.9% before),
 * Q4_K 27.1 / 28.1% (24.8 / 25.8%), Q5_K 27.0 / 28.3% (26.0 / 27.4%); Q6_K's lanes, and its
 * 34.8 / 29.9%, did not change. */
#define QUANT_SPAN_TARGET_LANES_DOT_ROWS (1u << 16)
#define QUANT_SPAN_THREADS 128u
#define QUANT_SPAN_THREADS_WAVE64 256u
#define QUANT_SPAN_NR 2u
#define QUANT_SPAN_U 2u
/* The integer-dot path at one row of x: rows of W per row group, pieces in flight and bytes of
 * codes per piece, per format (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K). On the H200, the GEMV kernels
 * alone on a quantized input read, of stream read, 14336x4096 / 4096x14336
 * (evidence/h200-9baf3a8-plans, h200-889070b, h200-9b211f5-kpieces):
 *   Q8_0  1 row of W, 2 pieces: 92.4 / 91.5%   (2 and 2: 88.5 / 87.2%)
 *   Q4_0  2 rows, 1 piece:      86.2 / 87.2%   (2 and 2: 77.7 / 78.0%; 1 and 2: 86.4 / 85.9%;
 *                                               4 and 1: 75.6 / 76.0%)
 *   Q4_K  2 rows, 1 piece of 32 bytes: 80.1 / 85.8%   (pieces of 16 bytes, 4 rows: 77.7 /
 *                                               78.9% in the same run; 32 bytes and 4 rows
 *                                               72.8 / 69.4%, 2 rows and 2 pieces 49.8 /
 *                                               71.4%)
 *   Q5_K  4 rows, 1 piece of 32 bytes: 79.3 / 80.7%   (pieces of 16 bytes, 2 rows: 70.8 /
 *                                               72.3% in the same run; 32 bytes and 2 rows
 *                                               71.6 / 79.2%)
 *   Q6_K  2 rows, 1 piece       (one input: 76.5 / 75.0%; 2 and 2: 76.3 / 75.8%; 4 and 1: 73.8
 *                                / 71.9%; 1 and 2: 70.2 / 69.9%), 16 lanes along K (below)
 * At several rows of x: 4 rows of W, one piece. At 8 rows (evidence/h200-3ba84a6-lab, a
 * batch on one input) Q8_0 read 64.1 / 60.8% so against 53.5 / 40.6% with 2 rows, Q4_0 35.2 /
 * 32.9% against 29.6 / 22.0%. */
/* Q6_K at one row takes fewer lanes along K than the rule below gives (32 and 64 on the H200
 * at these shapes), the row groups per workgroup kept: with 16, kernels alone, of stream
 * read, 14336x4096 / 4096x14336, three runs alternated with the rule's (evidence/
 * h200-0370c8b-q6k-lanes): 80.2, 79.8, 80.8 / 82.5, 82.1, 82.4% against 79.6, 79.6, 79.3 /
 * 79.9, 79.9, 79.2%. A wave64 device keeps the rule's. */
#define QUANT_SPAN_DOT_Q6_K_LANES 16u
/* Q4_0 at one row where a lane's pieces are exactly four (K = 4096 at 32 lanes): the four in
 * one round rather than four rounds of one. On the H200 at 14336x4096 (evidence/
 * h200-19aba3a-chained, h200-19aba3a-plans), three calls each against the default: kernels
 * alone 88.1, 87.9, 87.8% of stream read against 85.9-86.4 and 85.8-86.3; batched calls 60.8,
 * 60.2, 60.0 against 56.4-57.4; chained (each waiting for the one before) kernels alone 61.5,
 * 61.5, 60.9 against 58.1-59.0. Two pieces a round over several rounds lost there (78.6), as
 * at 4096x14336 four pieces a lane in 3.5 rounds' worth of one partial round did (85.3 / 86.0
 * against 87.1 / 86.5), and Q4_K's two pieces in one round (70.8 against 86.2). */
#define QUANT_SPAN_DOT_Q4_0_ROUND 4u
static const uint8_t dot_nr[] = {1, 2, 2, 4, 2};
static const uint8_t dot_u[] = {2, 1, 1, 1, 1};
static const uint8_t dot_pb[] = {32, 16, 32, 32, 16};
#define QUANT_SPAN_DOT_ROWS_NR 4u
#define QUANT_SPAN_DOT_ROWS_U 1u
/* The float path, Q8_0 and Q4_0 at one row of x: more rows of W per row group, so that each
 * vec4 of x a lane loads serves more weights (reasoned, not profiled: a lane's pieces lie 64
 * bytes of x apart, so a subgroup's load of x touches a cache line per two lanes, and these
 * formats load the most x per byte of W). On the H200 (evidence/h200-a87cb91-plans, batched)
 * Q8_0 read 69.2 / 61.5% of stream read with 4 rows against 55.3 / 55.1% with 2, and Q4_0
 * 44.9 / 44.3% with 8 rows and one piece in flight against 35.7 / 35.6% (and whole blocks
 * then: QUANT_SPAN_PB_Q4_0_FLOAT1). Q6_K did not gain. */
#define QUANT_SPAN_FLOAT_Q8_0_NR 4u
#define QUANT_SPAN_FLOAT_Q4_0_NR 8u
#define QUANT_SPAN_FLOAT_Q4_0_U 1u
/* The float path at several rows of x: rounds in step and x staged in shared memory, 16
 * lanes, up to 16 row groups of 4 rows (64 rows of W share each staged x), one piece per
 * lane and round. At 8 rows on the H200 (evidence/h200-e4e5e06) 4 rows of W per row group
 * read Q8_0 at 14-17% of stream read and the other formats at 8-9%, against 13-14% and 5-8%
 * with 2: each x value loaded serves NR rows, and loads of x, not of W, bind there. A layout
 * with a lane per row of W (x loads uniform across the subgroup), since removed, read Q4_0
 * and Q4_K at 10-12% there, but its unrolled units took the NVIDIA compiler 6-29 s a
 * pipeline (evidence/h200-e4e5e06). */
#define QUANT_STAGE_LANES 16u
#define QUANT_STAGE_MIN_LANES 8u
#define QUANT_STAGE_GROUPS 16u
#define QUANT_STAGE_NR 4u
#define QUANT_STAGE_U 1u
/* Q6_K at several rows of x on the float path is not staged: its pieces are 64 weights, so a
 * staged round holds 4 KiB of x per row of x and 16 lanes; at 8 rows staged it read 6.6 / 6.3%
 * of stream read batched, x from memory with 4 rows of W per row group 13.8 / 11.9%, with 2
 * 8.6 / 8.7% (evidence/h200-9baf3a8-plans). */
#define QUANT_FLOAT_Q6_K_ROWS_NR 4u
#define QUANT_FLOAT_Q6_K_ROWS_U 1u
/* Q4_K at one row of x: 4 rows of W per row group, one piece in flight, x not staged; Q5_K
 * at one row: x staged, 64 lanes, 2 row groups of 4 rows, one piece. Staged, both had beaten
 * the plan of 2 rows and 2 pieces (evidence/h200-8bfc42c, p6). Unstaged with 4 rows and one
 * piece, Q4_K read 43.1 / 42.5% of stream read batched against 40.2 / 39.8% staged
 * (evidence/h200-db9f804-plans s13, h200-09bf3fc), but Q5_K 40.6 / 38.9% against 41.5 / 39.9%
 * (h200-09bf3fc, c5), and it lost alone (30.7 / 26.4% against 32.8 / 30.7%). */
#define QUANT_SPAN_FLOAT_Q4_K_NR 4u
#define QUANT_SPAN_FLOAT_Q4_K_U 1u
#define QUANT_STAGE1_LANES 64u
#define QUANT_STAGE1_GROUPS 2u
/* Shared memory of a span workgroup (partial sums, staged x), at most. A wave64 device (GCN:
 * 64 KiB of LDS a compute unit) gets half, so that two staged workgroups share a compute unit
 * (8 waves) rather than one; this is reasoned from the LDS size, not measured (no RX 580 ran
 * it). */
#define QUANT_SPAN_MAX_SHARED 49152u
#define QUANT_SPAN_MAX_SHARED_WAVE64 32768u
/* Bytes of codes per piece (quant.glsl's PB), per format; the K types' pieces are fixed (16
 * bytes of codes for Q4_K / Q5_K, 64 weights for Q6_K), their entries name that. The integer-dot
 * path takes whole blocks of Q8_0 and Q4_0 (on the H200 a lane per Q8_0 block read 92-96% of
 * stream read in a batch on one input, evidence/h200-3ba84a6-lab), and at one row of x whole
 * sub-block pairs of Q4_K and Q5_K (dot_pb). The float path takes half a
 * Q8_0 block (79 / 69% there, against 68 / 60% in the GGUF layout's best plan), and decodes
 * Q4_0 in pieces of 8 bytes at several rows of x: with 2 rows of W per row group it ran at 29%
 * of stream read so, 16% with whole blocks (16), whose 32 weights and 8 loads of x per lane
 * cost more than the longer pieces save. At one row with 8 rows of W per row group whole
 * blocks won: 48.4 / 48.8% batched against 45.0 / 44.4% (evidence/h200-db9f804-plans, s7). */
static const uint32_t span_pb_dot[] = {32, 16, 16, 16, 16};
static const uint32_t span_pb[] = {16, 16, 16, 16, 16};
#define QUANT_SPAN_PB_Q4_0_FLOAT 8u
#define QUANT_SPAN_PB_Q4_0_FLOAT1 16u
/* The piece size the public mcl_dequantize_tensor decodes with. */
#define QUANT_DEQUANT_PB 16u

/* Pieces per block of a plan (quant.glsl's PPB), 0 where pb does not fit fmt. */
static uint32_t span_pieces(uint32_t fmt, uint32_t pb)
{
    switch (fmt) {
    case FMT_Q8_0:
        return pb == 16 || pb == 32 ? 32 / pb : 0;
    case FMT_Q4_0:
        return pb == 8 || pb == 16 ? 16 / pb : 0;
    case FMT_Q6_K:
        return pb == 16 ? 4 : 0;
    default: /* Q4_K, Q5_K */
        return pb == 16 || pb == 32 ? 128 / pb : 0;
    }
}
/* gemm_q_mma: 256 invocations (8 subgroups of 32), tiles of 64 or 128 rows of a by 64 or 128
 * rows of W. The larger tile where the grid still holds QUANT_MMA_MIN_TILES of them. */
#define QUANT_MMA_THREADS 256u
#define QUANT_MMA_MIN_TILES 256u
/* Its shared memory (gemm_q_mma.comp): rows of 40 halves (BK = 32, padded by 8) of a's and W's
 * tiles, and 8 x 256 floats of results: 28 KiB at 128 x 128, 18 KiB at 64 x 64, both past
 * Vulkan's least limit (16 KiB). */
static uint32_t mma_shared_bytes(uint32_t bm, uint32_t bn)
{
    return (bm + bn) * 40u * 2u + 8u * 256u * 4u;
}
/* gemm_q_dot's fixed tile: 128 rows of a by 64 rows of W, 256 invocations. */
#define QUANT_DOT_TILE_M 128u
#define QUANT_DOT_TILE_N 64u
#define QUANT_DOT_THREADS 256u
/* Its shared memory (gemm_q_dot.comp, two blocks of 32 a stage): A's codes, scales and sums
 * (128 rows), W's codes in rows of three uvec4s and scales (64 rows): 16.5 KiB, past Vulkan's
 * least maxComputeSharedMemorySize (16 KiB). A device below it takes the float GEMM. */
#define QUANT_DOT_SHARED_BYTES \
    (2u * (128u * 2u * 16u + 128u * 4u * 2u + 64u * 3u * 16u + 64u * 4u))

/* Whether the device's shared memory holds the integer-dot GEMM's tile, and the matrix GEMM's
 * smallest (64 x 64). */
static int dot_gemm_fits(const mcl_context *ctx)
{
    return QUANT_DOT_SHARED_BYTES <= ctx->info.max_compute_shared_memory_size;
}

static int matrix_gemm_fits(const mcl_context *ctx)
{
    return mma_shared_bytes(64, 64) <= ctx->info.max_compute_shared_memory_size;
}
/* Element-wise kernels: invocations per workgroup. */
#define QUANT_THREADS 256u
/* Vulkan guarantees 65535 workgroups per dimension. */
#define QUANT_MAX_GROUPS 65535u

/* ldc, c0: the output's row stride and the column of this W's row 0 (a W split in row ranges
 * writes its columns of the whole output). */
typedef struct gemv_push {
    uint32_t n, k, has_bias, ldc, c0, dlo;
} gemv_push;

typedef struct gemm_push {
    uint32_t m, n, k, has_bias, ldc, c0, dlo;
} gemm_push;

typedef struct blocks_push {
    uint32_t blocks;
} blocks_push;

typedef struct dequant_push {
    uint32_t blocks, dlo;
} dequant_push;

static int format_index(mcl_dtype dtype)
{
    for (int i = 0; i < (int)(sizeof quant_formats / sizeof quant_formats[0]); i++) {
        if (quant_formats[i] == dtype)
            return i;
    }
    return -1;
}

static uint32_t ceil_div(uint64_t a, uint64_t b)
{
    return (uint32_t)((a + b - 1) / b);
}

/* A grid of `count` workgroups for kernels that index them as x + y * (groups in x). */
static void grid_2d(uint32_t count, uint32_t *gx, uint32_t *gy)
{
    *gx = count < QUANT_MAX_GROUPS ? count : QUANT_MAX_GROUPS;
    *gy = ceil_div(count, *gx);
}

mcl_quant_path mcl_quant_path_select(const mcl_context *ctx, mcl_dtype dtype)
{
    if (!ctx || format_index(dtype) < 0)
        return MCL_QUANT_PATH_FLOAT;
    uint64_t features = ctx->info.features_enabled;
    if (!(features & MCL_FEATURE_INTEGER_DOT_PRODUCT))
        return MCL_QUANT_PATH_FLOAT;
    const char *want = mcl_env("MOTIFCL_QUANT_PATH");
    if (want && mcl_list_contains(want, "float"))
        return MCL_QUANT_PATH_FLOAT;
    if (want && mcl_list_contains(want, "dot"))
        return MCL_QUANT_PATH_DOT;
    if (features & MCL_FEATURE_INTEGER_DOT_ACCELERATED)
        return MCL_QUANT_PATH_DOT;
    /* MOTIFCL_FORCE=integer-dot keeps the feature on despite the quirk table, but on a device
     * that has it unaccelerated (Lavapipe) that leaves features_enabled unchanged: the
     * request is read here so that it means "use the integer-dot path". */
    if (mcl_list_contains(mcl_env("MOTIFCL_FORCE"), "integer-dot"))
        return MCL_QUANT_PATH_DOT;
    return MCL_QUANT_PATH_FLOAT;
}

mcl_quant_path mcl_quant_gemm_path_select(const mcl_context *ctx, mcl_dtype dtype)
{
    int fmt = format_index(dtype);
    if (!ctx || fmt < 0)
        return MCL_QUANT_PATH_FLOAT;
    const char *want = mcl_env("MOTIFCL_QUANT_PATH");
    int other = want && (mcl_list_contains(want, "float") || mcl_list_contains(want, "dot"));
    if ((ctx->info.features_enabled & MCL_FEATURE_COOPERATIVE_MATRIX) && !other &&
        matrix_gemm_fits(ctx))
        return MCL_QUANT_PATH_MATRIX;
    mcl_quant_path path = mcl_quant_path_select(ctx, dtype);
    if (path == MCL_QUANT_PATH_DOT &&
        ((fmt != (int)FMT_Q8_0 && fmt != (int)FMT_Q4_0) || !dot_gemm_fits(ctx)))
        path = MCL_QUANT_PATH_FLOAT;
    return path;
}

/* The two bindings of rows [r0, r0 + rows) of a quantized weight w (of n rows of k weights, a
 * root tensor) in the device layout: its block bodies, and its d values (for Q4_K and Q5_K,
 * any buffer: the bodies again), bound from an aligned offset below the first with dlo the
 * half where it starts. Views: the caller destroys them. */
typedef struct weight_part {
    mcl_tensor *body, *d;
    uint32_t dlo;
} weight_part;

static mcl_status weight_part_views(mcl_context *ctx, mcl_tensor *w, uint32_t n, uint32_t k,
                                    uint32_t r0, uint32_t rows, weight_part *out)
{
    mcl_quant_layout l;
    mcl_quant_layout_of(w->dtype, &l);
    *out = (weight_part){0};
    uint64_t nb = k / (uint64_t)mcl_dtype_block_weights(w->dtype);
    uint64_t row_body = nb * l.body_bytes;
    mcl_status status = mcl_tensor_bytes_view(w, r0 * row_body, rows * row_body, &out->body);
    if (status != MCL_SUCCESS || !l.split) {
        out->d = out->body;
        return status;
    }
    uint64_t align = ctx->info.min_storage_buffer_offset_alignment;
    if (align < 4)
        align = 4;
    uint64_t first = (uint64_t)n * row_body + 2 * r0 * nb;  /* byte of the part's first d */
    uint64_t at = first / align * align, end = (first + 2 * rows * nb + 3) / 4 * 4;
    out->dlo = (uint32_t)((first - at) / 2);
    status = mcl_tensor_bytes_view(w, at, end - at, &out->d);
    if (status != MCL_SUCCESS) {
        mcl_tensor_destroy(out->body);
        out->body = NULL;
    }
    return status;
}

static void weight_part_free(weight_part *wp)
{
    if (wp->d != wp->body)
        mcl_tensor_destroy(wp->d);
    mcl_tensor_destroy(wp->body);
    *wp = (weight_part){0};
}

/* Get a kernel and check that the device gave it the workgroup size its tiles assume. */
static mcl_status kernel_exact(mcl_context *ctx, const mcl_kernel_desc *desc,
                               const mcl_kernel **out)
{
    mcl_status status = mcl_kernel_get(ctx, desc, out);
    if (status == MCL_SUCCESS && (*out)->local_size_x != desc->local_size_x)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "quantized matmul needs %u invocations per "
                        "workgroup", desc->local_size_x);
    return status;
}

static uint32_t gcd_u32(uint32_t a, uint32_t b)
{
    while (b) {
        uint32_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* A device that runs compute in waves of 64 (GCN, and what the polaris profile stands for). */
static int gemv_wave64(const mcl_context *ctx)
{
    return strcmp(ctx->info.profile, "polaris") == 0 ||
           (ctx->info.vendor_id == 0x1002u && ctx->info.subgroup_size >= 64);
}

/* Shared memory of a plan at m rows of x: the partial sums, and with stage the x of a round
 * (padded as gemv_q.comp pads it). */
static uint64_t span_shared_bytes(uint32_t fmt, const mcl_gemv_plan *q, uint32_t m)
{
    uint64_t bytes = (uint64_t)q->t * q->g * q->nr * m * sizeof(float);
    uint32_t ppb = span_pieces(fmt, q->pb);
    if (q->stage && ppb) {
        uint64_t qk = (uint64_t)mcl_dtype_block_weights(quant_formats[fmt]);
        uint64_t xch = (uint64_t)q->u * q->t * qk / ppb / 4;
        bytes += (uint64_t)m * (xch + xch / 8) * 16;
    } else {
        bytes += 16; /* gemv_q.comp declares one vec4 of staged x even when x is not staged */
    }
    return bytes;
}

/* The device's shared memory for a GEMV workgroup, capped at QUANT_SPAN_MAX_SHARED(_WAVE64). */
static uint64_t span_shared_limit(const mcl_context *ctx)
{
    uint64_t limit = ctx->info.max_compute_shared_memory_size;
    uint64_t cap = gemv_wave64(ctx) ? QUANT_SPAN_MAX_SHARED_WAVE64 : QUANT_SPAN_MAX_SHARED;
    return limit < cap ? limit : cap;
}

/* MOTIFCL_QUANT_GEMV_PLAN, a tuning override: "key=value,..." with keys t (lanes along K),
 * g (row groups), nr (rows of W per row group), u (pieces in flight), pb (bytes of codes per
 * piece) and st (x staged: 0 or 1, float path only). An override the kernels cannot take, or
 * beyond the device's workgroup and shared-memory limits, is ignored with a warning and the
 * plan stays as chosen. */
static void gemv_plan_override(const mcl_context *ctx, int dot, uint32_t fmt, uint32_t m,
                               mcl_gemv_plan *p)
{
    const char *spec = mcl_env("MOTIFCL_QUANT_GEMV_PLAN");
    if (!spec)
        return;
    mcl_gemv_plan q = *p;
    int ok = 1;
    for (const char *c = spec; *c && ok;) {
        char key[8] = {0};
        unsigned value = 0;
        int used = 0;
        if (sscanf(c, "%7[a-z]=%u%n", key, &value, &used) != 2) {
            ok = 0;
            break;
        }
        c += used;
        if (*c == ',')
            c++;
        if (strcmp(key, "t") == 0)
            q.t = value;
        else if (strcmp(key, "g") == 0)
            q.g = value;
        else if (strcmp(key, "nr") == 0)
            q.nr = value;
        else if (strcmp(key, "u") == 0)
            q.u = value;
        else if (strcmp(key, "pb") == 0)
            q.pb = value;
        else if (strcmp(key, "st") == 0)
            q.stage = value != 0;
        else if (strcmp(key, "cvt") == 0)
            q.cvt = value != 0;
        else
            ok = 0;
    }
    uint32_t ppb = span_pieces(fmt, q.pb);
    ok = ok && q.t >= 1 && q.t <= ctx->info.max_compute_workgroup_size[0] && q.g >= 1 &&
         q.g <= ctx->info.max_compute_workgroup_size[1] &&
         (uint64_t)q.t * q.g <= ctx->info.max_compute_workgroup_invocations &&
         (q.nr == 1 || q.nr == 2 || q.nr == 4 || q.nr == 8) && q.u >= 1 && q.u <= 8 && ppb &&
         q.t % ppb == 0 && !(q.stage && dot) && !(q.cvt && (dot || m > 1)) &&
         span_shared_bytes(fmt, &q, m) <= ctx->info.max_compute_shared_memory_size;
    if (!ok) {
        mcl_log(&ctx->log, MCL_LOG_WARNING,
                "MOTIFCL_QUANT_GEMV_PLAN=%s does not fit this product or device; ignored", spec);
        return;
    }
    *p = q;
}

/* The parameters of a GEMV of `m` rows of x against W [n, k] of format `fmt`. */
static void gemv_plan_for(const mcl_context *ctx, int dot, uint32_t fmt, uint32_t m,
                          uint32_t n, uint32_t k, mcl_gemv_plan *p)
{
    const int wave64 = gemv_wave64(ctx);
    const uint32_t nb = k / (uint32_t)mcl_dtype_block_weights(quant_formats[fmt]);
    const uint64_t shared = span_shared_limit(ctx);
    uint32_t threads = wave64 ? QUANT_SPAN_THREADS_WAVE64 : QUANT_SPAN_THREADS;
    if (threads > ctx->info.max_compute_workgroup_invocations)
        threads = ctx->info.max_compute_workgroup_invocations;
    /* AMD converts a byte to a float in one full-rate instruction (v_cvt_f32_ubyte0..3),
     * where or-ing codes into a float's mantissa takes three; NVIDIA converts at a fraction
     * of its rate (gemv_q.comp, cvt_bytes). The float path at one row of x, the RX 580's
     * decode, converts on AMD and under the polaris profile; Q5_K everywhere: on the H200 it
     * read 43.4 / 42.3% of stream read batched converted against 41.0-41.3 / 40.0-40.2% (twice
     * each, alternated), where Q4_0 and Q4_K lost 1-4 points and Q8_0 moved -0.3 / +2.4
     * (evidence/h200-d42c63c-polaris, h200-f279e9e-cvt). */
    p->cvt = !dot && m == 1 &&
             (strcmp(ctx->info.profile, "polaris") == 0 || ctx->info.vendor_id == 0x1002u ||
              fmt == FMT_Q5_K);
    p->pb = dot ? span_pb_dot[fmt] : span_pb[fmt];
    if (fmt == FMT_Q4_0 && !dot)
        p->pb = m > 1 ? QUANT_SPAN_PB_Q4_0_FLOAT : QUANT_SPAN_PB_Q4_0_FLOAT1;
    const uint32_t ppb = span_pieces(fmt, p->pb);

    if (!dot && ((m > 1 && fmt != FMT_Q6_K) || fmt == FMT_Q5_K)) {
        /* Float path, several rows of x (and Q5_K at one): x staged (QUANT_STAGE*). */
        p->stage = 1;
        p->u = QUANT_STAGE_U;
        p->nr = QUANT_STAGE_NR;
        p->t = m > 1 ? QUANT_STAGE_LANES : QUANT_STAGE1_LANES;
        while (p->t % ppb != 0)
            p->t *= 2;
        p->g = m > 1 ? QUANT_STAGE_GROUPS : QUANT_STAGE1_GROUPS;
    } else {
        /* One subgroup of lanes per row group, more while the grid is small. */
        p->stage = 0;
        p->u = QUANT_SPAN_U;
        p->nr = QUANT_SPAN_NR;
        if (dot && m > 1) {
            p->u = QUANT_SPAN_DOT_ROWS_U;
            p->nr = QUANT_SPAN_DOT_ROWS_NR;
        } else if (dot) {
            p->u = dot_u[fmt];
            p->nr = dot_nr[fmt];
        } else if (fmt == FMT_Q6_K && m > 1) {
            /* Float path, Q6_K at several rows of x: not staged. */
            p->u = QUANT_FLOAT_Q6_K_ROWS_U;
            p->nr = QUANT_FLOAT_Q6_K_ROWS_NR;
        } else if (!dot && fmt == FMT_Q8_0) {
            p->nr = QUANT_SPAN_FLOAT_Q8_0_NR;
        } else if (!dot && fmt == FMT_Q4_0) {
            p->nr = QUANT_SPAN_FLOAT_Q4_0_NR;
            p->u = QUANT_SPAN_FLOAT_Q4_0_U;
        } else if (!dot && fmt == FMT_Q4_K) {
            p->nr = QUANT_SPAN_FLOAT_Q4_K_NR;
            p->u = QUANT_SPAN_FLOAT_Q4_K_U;
        }
        uint32_t pieces_per_row = nb * ppb;
        uint32_t t = wave64 ? QUANT_SPAN_LANES_WAVE64 : QUANT_SPAN_LANES;
        uint32_t target = dot && m > 1 ? QUANT_SPAN_TARGET_LANES_DOT_ROWS
                                       : QUANT_SPAN_TARGET_LANES;
        while (2 * t <= QUANT_SPAN_MAX_LANES && 2 * t <= threads &&
               (uint64_t)ceil_div(n, p->nr) * t < target &&
               QUANT_SPAN_MIN_ROUNDS * (2 * t) * p->u <= pieces_per_row)
            t *= 2;
        if (t > threads)
            t = threads;
        if (t > ctx->info.max_compute_workgroup_size[0])
            t = ctx->info.max_compute_workgroup_size[0];
        p->t = t;
        p->g = threads / t;
        /* Lanes are counted on pieces of 16 bytes, as the H200 sweeps of dot_pb counted them
         * (evidence/h200-9b211f5-kpieces): the longer pieces then leave each lane fewer
         * rounds. */
        if (dot && m == 1)
            p->pb = dot_pb[fmt];
        if (dot && m == 1 && fmt == FMT_Q6_K && !wave64 && p->t > QUANT_SPAN_DOT_Q6_K_LANES)
            p->t = QUANT_SPAN_DOT_Q6_K_LANES;
        /* Q4_0 whose row is one round of QUANT_SPAN_DOT_Q4_0_ROUND pieces a lane: all of them
         * in flight at once, no loop. */
        if (dot && m == 1 && fmt == FMT_Q4_0 &&
            nb * span_pieces(fmt, p->pb) == QUANT_SPAN_DOT_Q4_0_ROUND * p->t)
            p->u = QUANT_SPAN_DOT_Q4_0_ROUND;
    }
    /* Fewer row groups while the workgroup is beyond the device. */
    while (p->g > 1 && ((uint64_t)p->t * p->g > ctx->info.max_compute_workgroup_invocations ||
                        p->g > ctx->info.max_compute_workgroup_size[1]))
        p->g /= 2;
    /* Beyond the shared memory: a staged plan first stages shorter rounds (fewer lanes, down
     * to QUANT_STAGE_MIN_LANES), then fewer row groups; one that still does not fit streams x
     * from memory. (Q6_K's pieces are 64 weights: at 8 rows of x and 16 lanes a round's x is
     * 36 KiB.) */
    while (span_shared_bytes(fmt, p, m) > shared) {
        if (p->stage && p->t / 2 >= QUANT_STAGE_MIN_LANES && (p->t / 2) % ppb == 0)
            p->t /= 2;
        else if (p->g > 1)
            p->g /= 2;
        else if (p->stage)
            p->stage = 0;
        else
            break;
    }
    gemv_plan_override(ctx, dot, fmt, m, p);
}

mcl_status mcl_quant_gemv_plan(const mcl_context *ctx, int dot, mcl_dtype dtype, uint32_t m,
                               uint32_t n, uint32_t k, mcl_gemv_plan *plan)
{
    int fmt = format_index(dtype);
    if (!ctx || !plan || fmt < 0 || m < 1 || m > QUANT_GEMV_MAX_ROWS || n == 0 || k == 0 ||
        k % (uint32_t)mcl_dtype_block_weights(dtype) != 0)
        return MCL_ERROR_INVALID_ARGUMENT;
    gemv_plan_for(ctx, dot, (uint32_t)fmt, m, n, k, plan);
    return MCL_SUCCESS;
}

/* The GEMV (float or integer dot): `x` is a (float) or its quantized form (dot). */
static mcl_status gemv_dispatch(mcl_context *ctx, int dot, uint32_t fmt, mcl_tensor *x,
                                const weight_part *w, mcl_tensor *bias, mcl_tensor *y,
                                uint32_t rows, uint32_t n, uint32_t k, uint32_t ldc, uint32_t c0)
{
    mcl_gemv_plan plan;
    gemv_plan_for(ctx, dot, fmt, rows, n, k, &plan);
    mcl_log(&ctx->log, MCL_LOG_DEBUG,
            "gemv %s %ux%u, %u rows, %s: t=%u g=%u nr=%u u=%u pb=%u st=%u cvt=%u",
            mcl_dtype_name(quant_formats[fmt]), n, k, rows, dot ? "dot" : "float", plan.t, plan.g,
            plan.nr, plan.u, plan.pb, plan.stage, plan.cvt);
    mcl_kernel_desc desc = {
        .id = dot ? MCL_KERNEL_GEMV_Q_DOT : MCL_KERNEL_GEMV_Q,
        .binding_count = 5,
        .push_size = sizeof(gemv_push),
        .local_size_x = plan.t,
        .spec_count = dot ? 6 : 8,
        .spec = {fmt, rows, plan.nr, plan.g, plan.u, plan.pb, plan.stage, plan.cvt},
    };
    const mcl_kernel *kernel;
    mcl_status status = kernel_exact(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    gemv_push push = {.n = n, .k = k, .has_bias = bias != NULL, .ldc = ldc, .c0 = c0,
                      .dlo = w->dlo};
    uint32_t gx, gy;
    grid_2d(ceil_div(n, (uint64_t)plan.g * plan.nr), &gx, &gy);
    mcl_tensor *reads[4] = {x, w->body, w->d, bias ? bias : x};
    return mcl_stream_dispatch(ctx, kernel, reads, 4, &y, 1, &push, gx, gy, 1);
}

/* Records a GEMM kernel (gemm_push, bindings: `in`, W's bodies and d values, bias, c) over
 * tiles of tile_m rows of a by tile_n rows of W. */
static mcl_status gemm_record(mcl_context *ctx, const mcl_kernel_desc *desc, mcl_tensor *in,
                              const weight_part *w, mcl_tensor *bias, mcl_tensor *c, uint32_t m,
                              uint32_t n, uint32_t k, uint32_t ldc, uint32_t c0, uint32_t tile_m,
                              uint32_t tile_n)
{
    const mcl_kernel *kernel;
    mcl_status status = kernel_exact(ctx, desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    uint32_t gx = ceil_div(n, tile_n), gy = ceil_div(m, tile_m);
    if (gx > QUANT_MAX_GROUPS || gy > QUANT_MAX_GROUPS)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "matmul grid beyond 65535 workgroups");
    gemm_push push = {.m = m, .n = n, .k = k, .has_bias = bias != NULL, .ldc = ldc, .c0 = c0,
                      .dlo = w->dlo};
    mcl_tensor *reads[4] = {in, w->body, w->d, bias ? bias : in};
    return mcl_stream_dispatch(ctx, kernel, reads, 4, &c, 1, &push, gx, gy, 1);
}

/* The float GEMM: gemm_f32's tile shapes, 128 x 128 where there are enough tiles, and its
 * split of K where the tiles are few (a 512 x 4096 product is 128 tiles of 128 x 128: one
 * workgroup per multiprocessor of an H200, too few to hide its latencies): as many slices as
 * the f32 GEMM would take (mcl_gemm_slices). The slices' partial tiles go to scratch and
 * gemm_reduce_f32 sums them (and adds the bias); a W bound in row ranges (ldc != n) is not
 * split. MOTIFCL_QUANT_GEMM_SLICES=<1..16> (a tuning override) sets the number of slices. On
 * the H200 at that shape (4 slices, evidence/h200-e76b619-gemm-slices) Q4_K and Q5_K ran at
 * 27.3 TFLOP/s against 21.5-21.8 unsplit; Q4_0, Q8_0 and Q6_K lost under 1% (32.4 / 31.9 /
 * 30.7 against 32.6 / 32.1 / 30.9). */
#define QUANT_GEMM_MAX_SLICES 16u  /* of the override */

typedef struct gemm_q_push {
    uint32_t m, n, k, has_bias, ldc, c0, dlo, kc, kz;
} gemm_q_push;

/* A tuning override of `name`, a number in [lo, hi] (and a power of two where pow2): the value
 * when it is one, else `fallback`, with a warning when the variable is set. */
static uint32_t tuning_override(const mcl_context *ctx, const char *name, uint32_t fallback,
                                uint32_t lo, uint32_t hi, int pow2)
{
    const char *forced = mcl_env(name);
    if (!forced)
        return fallback;
    unsigned long v = strtoul(forced, NULL, 10);
    if (v >= lo && v <= hi && (!pow2 || (v & (v - 1)) == 0))
        return (uint32_t)v;
    mcl_log(&ctx->log, MCL_LOG_WARNING, "%s=%s is not %s%u..%u; ignored", name, forced,
            pow2 ? "a power of two in " : "", lo, hi);
    return fallback;
}

static uint32_t gemm_float_slices(const mcl_context *ctx, uint64_t tiles, uint32_t m,
                                  uint32_t n, uint32_t k, uint32_t ldc)
{
    uint32_t slices = tuning_override(ctx, "MOTIFCL_QUANT_GEMM_SLICES", mcl_gemm_slices(tiles, k),
                                      1, QUANT_GEMM_MAX_SLICES, 0);
    if (ldc != n || (uint64_t)slices * m * n * 4 > ctx->info.max_storage_buffer_range)
        slices = 1;
    return slices;
}

/* gemm_q's inner loop over a tile's 16 values of K is unrolled this many at a time. On the
 * H200 at 512x14336 by (4096x14336)^T (evidence/h200-d2be805-unroll), TFLOP/s and seconds to
 * create the 128 x 128 pipeline:
 *   4:  Q4_0 34.7, Q8_0 33.7, Q4_K 28.7, Q5_K 27.9, Q6_K 32.4; 1.5-2.4 s
 *   8:  Q4_0 38.6, Q8_0 37.1, Q4_K 33.9, Q5_K 33.1, Q6_K 35.8; 6.3-9.7 s
 *   16: Q4_0 38.6; 64 s
 * 8 it is: the rate of 16 for a tenth of its compile (the driver's shader cache keeps it for
 * the next process). MOTIFCL_QUANT_GEMM_UNROLL=<1|2|4|8|16> chooses (a tuning override).
 * K steps of 32 instead of gemm_q's 16 lost on every format there (Q4_0 33.4, Q8_0 31.6, Q4_K
 * 27.2; 167 registers against 145, evidence/h200-d729482-gemm-bk). */
#define QUANT_GEMM_UNROLL 8u

/* A tile override `name`=<BM>x<BN> (a tuning variable), each side 64, 128 or 256 up to
 * max_side, BM x BN below 256 x 256: 1 with the tile in *bm, *bn when the variable is one, 0
 * when it is unset or not one (with a warning). */
static int tile_override(const mcl_context *ctx, const char *name, uint32_t max_side,
                         uint32_t *bm, uint32_t *bn)
{
    const char *tile = mcl_env(name);
    if (!tile)
        return 0;
    unsigned tm = 0, tn = 0;
    char end = 0;
    if (sscanf(tile, "%ux%u%c", &tm, &tn, &end) == 2 && (tm == 64 || tm == 128 || tm == 256) &&
        (tn == 64 || tn == 128 || tn == 256) && tm <= max_side && tn <= max_side &&
        tm * tn < 256u * 256u) {
        *bm = tm;
        *bn = tn;
        return 1;
    }
    mcl_log(&ctx->log, MCL_LOG_WARNING, "%s=%s is not <BM>x<BN>, sides 64..%u, powers of two%s; "
            "ignored", name, tile, max_side, max_side >= 256 ? ", not 256x256" : "");
    return 0;
}

/* Shared memory of gemm_q's tiles: gemm_f32's, 16 values of K a step. */
static uint64_t gemm_float_shared(uint32_t bm, uint32_t bn)
{
    const mcl_gemm_config cfg = {.bm = bm, .bn = bn, .bk = 16};
    return mcl_gemm_shared_bytes(&cfg, 0);
}

/* gemm_q's tile: BM rows of a by BN rows of W, 256 invocations of BM / 16 x BN / 16 each.
 * MOTIFCL_QUANT_GEMM_FLOAT_TILE=<BM>x<BN> (64, 128 or 256 each, not 256x256: 256 accumulators
 * an invocation), a tuning override. A taller tile decodes each weight of W for more rows of
 * a, 256 rows half as often as 128, but on the H200 at 512x14336 by (4096x14336)^T it lost on
 * every format (evidence/h200-08d43f0-gemm-tile): 256 x 128, unrolled 4, Q4_0 33.8 TFLOP/s
 * against 38.6, Q8_0 32.1 against 37.1, Q4_K 28.3 against 33.9, with 222-229 registers
 * against 128-145 (the occupancy the same: one workgroup a multiprocessor); 128 x 256 ran at
 * 2.3 in 246 registers. */
void mcl_quant_gemm_float_tile(const mcl_context *ctx, uint32_t m, uint32_t n, uint32_t *bm,
                               uint32_t *bn)
{
    const uint64_t limit = ctx->info.max_compute_shared_memory_size;
    *bm = *bn = 64; /* 8.5 KiB: within Vulkan's least limit, 16 KiB */
    if ((uint64_t)ceil_div(m, 128) * ceil_div(n, 128) >= 96 && gemm_float_shared(128, 128) <= limit)
        *bm = *bn = 128;
    uint32_t tm, tn;
    if (!tile_override(ctx, "MOTIFCL_QUANT_GEMM_FLOAT_TILE", 256, &tm, &tn))
        return;
    if (gemm_float_shared(tm, tn) > limit) {
        mcl_log(&ctx->log, MCL_LOG_WARNING,
                "MOTIFCL_QUANT_GEMM_FLOAT_TILE: %ux%u needs %llu bytes of shared memory, the "
                "device has %llu; ignored", tm, tn, (unsigned long long)gemm_float_shared(tm, tn),
                (unsigned long long)limit);
        return;
    }
    *bm = tm;
    *bn = tn;
}

static mcl_status gemm_float(mcl_context *ctx, uint32_t fmt, mcl_tensor *a, const weight_part *w,
                             mcl_tensor *bias, mcl_tensor *c, uint32_t m, uint32_t n, uint32_t k,
                             uint32_t ldc, uint32_t c0)
{
    uint32_t bm, bn;
    mcl_quant_gemm_float_tile(ctx, m, n, &bm, &bn);
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_GEMM_Q,
        .binding_count = 5,
        .push_size = sizeof(gemm_q_push),
        .local_size_x = 256,
        .spec_count = 6,
        .spec = {fmt, bm, bn, bm / 16, bn / 16,
                 tuning_override(ctx, "MOTIFCL_QUANT_GEMM_UNROLL", QUANT_GEMM_UNROLL, 1, 16, 1)},
    };
    const mcl_kernel *kernel;
    mcl_status status = kernel_exact(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    uint32_t gx = ceil_div(n, bn), gy = ceil_div(m, bm);
    if (gx > QUANT_MAX_GROUPS || gy > QUANT_MAX_GROUPS)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "matmul grid beyond 65535 workgroups");
    uint32_t slices = gemm_float_slices(ctx, (uint64_t)gx * gy, m, n, k, ldc);
    /* Slices of whole K steps (gemm_q's BK = 16); the last may be shorter. */
    uint32_t kc = (ceil_div(k, slices) + 15) / 16 * 16;
    slices = ceil_div(k, kc);
    mcl_tensor *partial = NULL;
    if (slices > 1) {
        mcl_tensor_desc scratch = {.size = sizeof scratch, .dtype = MCL_DTYPE_F32, .ndim = 1,
                                   .shape = {(int64_t)slices * m * n},
                                   .memory_class = MCL_MEMORY_SCRATCH};
        if ((status = mcl_tensor_create_ex(ctx, &scratch, &partial)) != MCL_SUCCESS)
            return status;
    }
    mcl_log(&ctx->log, MCL_LOG_DEBUG, "gemm %s %ux%u by %u rows, float: %ux%u tiles, %u slices",
            mcl_dtype_name(quant_formats[fmt]), n, k, m, bm, bn, slices);
    gemm_q_push push = {.m = m, .n = n, .k = k, .has_bias = bias != NULL && !partial,
                        .ldc = ldc, .c0 = c0, .dlo = w->dlo, .kc = kc, .kz = m * n};
    mcl_tensor *reads[4] = {a, w->body, w->d, bias ? bias : a};
    mcl_tensor *out = partial ? partial : c;
    status = mcl_stream_dispatch(ctx, kernel, reads, 4, &out, 1, &push, gx, gy, slices);
    if (status == MCL_SUCCESS && partial)
        status = mcl_gemm_reduce(ctx, partial, bias, c, m * n, n, slices);
    /* Safe at once: scratch memory stays reserved until the recorded work has run. */
    mcl_tensor_destroy(partial);
    return status;
}

static mcl_status gemm_dot(mcl_context *ctx, uint32_t fmt, mcl_tensor *act, const weight_part *w,
                           mcl_tensor *bias, mcl_tensor *c, uint32_t m, uint32_t n, uint32_t k,
                           uint32_t ldc, uint32_t c0)
{
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_GEMM_Q_DOT,
        .binding_count = 5,
        .push_size = sizeof(gemm_push),
        .local_size_x = QUANT_DOT_THREADS,
        .spec_count = 1,
        .spec = {fmt},
    };
    return gemm_record(ctx, &desc, act, w, bias, c, m, n, k, ldc, c0, QUANT_DOT_TILE_M,
                       QUANT_DOT_TILE_N);
}

/* The matrix GEMM's tile. MOTIFCL_QUANT_GEMM_TILE=<BM>x<BN> (64 or 128 each), a tuning
 * override, sets it where it fits the device's shared memory. */
void mcl_quant_gemm_matrix_tile(const mcl_context *ctx, uint32_t m, uint32_t n, uint32_t *out_bm,
                                uint32_t *out_bn)
{
    uint32_t bm = 128, bn = 128;
    if ((uint64_t)ceil_div(m, bm) * ceil_div(n, bn) < QUANT_MMA_MIN_TILES)
        bm = 64;
    if ((uint64_t)ceil_div(m, bm) * ceil_div(n, bn) < QUANT_MMA_MIN_TILES)
        bn = 64;
    /* A device with less shared memory than the tile: a side of 64 first (a's, then W's). */
    const uint32_t limit = ctx->info.max_compute_shared_memory_size;
    while (mma_shared_bytes(bm, bn) > limit && (bm > 64 || bn > 64)) {
        if (bm >= bn)
            bm = 64;
        else
            bn = 64;
    }
    uint32_t om = bm, on = bn;
    if (tile_override(ctx, "MOTIFCL_QUANT_GEMM_TILE", 128, &om, &on)) {
        if (mma_shared_bytes(om, on) <= limit) {
            bm = om;
            bn = on;
        } else {
            mcl_log(&ctx->log, MCL_LOG_WARNING,
                    "MOTIFCL_QUANT_GEMM_TILE: %ux%u needs %u bytes of shared memory, the device "
                    "has %u; ignored", om, on, mma_shared_bytes(om, on), limit);
        }
    }
    *out_bm = bm;
    *out_bn = bn;
}

static mcl_status gemm_matrix(mcl_context *ctx, uint32_t fmt, mcl_tensor *a, const weight_part *w,
                              mcl_tensor *bias, mcl_tensor *c, uint32_t m, uint32_t n,
                              uint32_t k, uint32_t ldc, uint32_t c0)
{
    uint32_t bm = 128, bn = 128;
    mcl_quant_gemm_matrix_tile(ctx, m, n, &bm, &bn);
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_GEMM_Q_MMA,
        .binding_count = 5,
        .push_size = sizeof(gemm_push),
        .local_size_x = QUANT_MMA_THREADS,
        .spec_count = 3,
        .spec = {fmt, bm, bn},
        .required_subgroup_size =
            (ctx->info.features_enabled & MCL_FEATURE_SUBGROUP_SIZE_CONTROL) ? 32u : 0u,
    };
    return gemm_record(ctx, &desc, a, w, bias, c, m, n, k, ldc, c0, bm, bn);
}

mcl_status mcl_quantize_activations(mcl_context *ctx, mcl_tensor *a, uint32_t rows, uint32_t k,
                                    mcl_tensor *act)
{
    uint64_t blocks = (uint64_t)rows * (k / QUANT_LANE_WEIGHTS);
    if (!ctx || !a || !act || a->dtype != MCL_DTYPE_F32 || k % QUANT_LANE_WEIGHTS != 0 ||
        (uint64_t)rows * k * 4 > a->nbytes || blocks * ACT_WORDS_PER_BLOCK * 4 > act->nbytes)
        return MCL_ERROR_INVALID_ARGUMENT;
    const mcl_kernel *kernel;
    mcl_kernel_desc desc = {.id = MCL_KERNEL_QUANTIZE_Q8_1, .binding_count = 2,
                            .push_size = sizeof(blocks_push), .local_size_x = QUANT_THREADS};
    mcl_status status = mcl_kernel_get(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    blocks_push push = {.blocks = (uint32_t)blocks};
    /* Eight invocations a block (quantize_q8_1.comp). */
    uint32_t groups = ceil_div(blocks * 8, kernel->local_size_x);
    if (groups > QUANT_MAX_GROUPS)
        groups = QUANT_MAX_GROUPS;  /* the kernel loops over the rest */
    return mcl_stream_dispatch(ctx, kernel, &a, 1, &act, 1, &push, groups, 1, 1);
}

/* Rows of W per binding: all of them where W's block bodies fit one storage-buffer binding,
 * else the most whose bodies fit one and start every part at an offset the device can bind (a
 * multiple of minStorageBufferOffsetAlignment and of 4 bytes). (The d values of a part take
 * an eighth of its bodies' bytes at most, bound on their own.) MOTIFCL_MAX_BINDING (bytes)
 * lowers the limit, so that the split is tested on any device. */
static mcl_status rows_per_part(mcl_context *ctx, const mcl_tensor *w, uint32_t n,
                                uint32_t *out)
{
    uint64_t limit = ctx->info.max_storage_buffer_range;
    const char *forced = mcl_env("MOTIFCL_MAX_BINDING");
    if (forced) {
        unsigned long long v = strtoull(forced, NULL, 10);
        if (v > 0 && v < limit)
            limit = v;
    }
    mcl_quant_layout l;
    mcl_quant_layout_of(w->dtype, &l);
    uint64_t row_bytes = w->nbytes / n / l.block_bytes * l.body_bytes;
    *out = n;
    if (row_bytes * n <= limit)
        return MCL_SUCCESS;
    uint64_t align = ctx->info.min_storage_buffer_offset_alignment;
    if (align < 4)
        align = 4;
    /* Rows whose bytes are a multiple of align. */
    uint64_t step = align / gcd_u32((uint32_t)(row_bytes % align), (uint32_t)align);
    uint64_t rows = limit / row_bytes / step * step;
    if (rows == 0)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                        "quantized matmul: a part of W must hold a multiple of %llu rows of "
                        "%llu bytes to start at a multiple of %llu bytes; one storage-buffer "
                        "binding of %llu bytes holds fewer",
                        (unsigned long long)step, (unsigned long long)row_bytes,
                        (unsigned long long)align, (unsigned long long)limit);
    *out = (uint32_t)rows;
    return MCL_SUCCESS;
}

/* c[:, c0 .. c0 + n) = a W^T (+ bias) for the part of W of n rows that `w` binds: the integer-dot
 * path (a already quantized into `act`), the matrix GEMM, the GEMV, or the float GEMM. */
static mcl_status matmul_part(mcl_context *ctx, mcl_quant_path path, uint32_t fmt, mcl_tensor *a,
                              mcl_tensor *act, const weight_part *w, mcl_tensor *bias,
                              mcl_tensor *c, uint32_t rows, uint32_t n, uint32_t k, uint32_t ldc,
                              uint32_t c0)
{
    if (path == MCL_QUANT_PATH_DOT)
        return rows <= QUANT_GEMV_MAX_ROWS
                   ? gemv_dispatch(ctx, 1, fmt, act, w, bias, c, rows, n, k, ldc, c0)
                   : gemm_dot(ctx, fmt, act, w, bias, c, rows, n, k, ldc, c0);
    if (path == MCL_QUANT_PATH_MATRIX)
        return gemm_matrix(ctx, fmt, a, w, bias, c, rows, n, k, ldc, c0);
    if (rows <= QUANT_GEMV_MAX_ROWS)
        return gemv_dispatch(ctx, 0, fmt, a, w, bias, c, rows, n, k, ldc, c0);
    return gemm_float(ctx, fmt, a, w, bias, c, rows, n, k, ldc, c0);
}

/* A checked product c = a W^T with a block-quantised W: its format, path, rows of a, N, K,
 * and the rows of W per binding (rows_per_part). */
typedef struct quant_product {
    uint32_t fmt, rows, n, k, part_rows;
    mcl_quant_path path;
} quant_product;

/* The shapes of c = a W^T (+ bias) for a 2-D W [N, K]: a [..., K] of rank >= 2, c [..., N]
 * with a's batch dimensions, bias of N elements. */
static mcl_status linear_shapes_check(mcl_context *ctx, const mcl_tensor *a,
                                      const mcl_tensor *w, const mcl_tensor *bias,
                                      const mcl_tensor *c)
{
    if (a->ndim < 2 || c->ndim != a->ndim)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_matmul: a and c need the same rank >= 2");
    int64_t k = a->shape[a->ndim - 1], n = w->shape[0];
    if (w->shape[1] != k || c->shape[c->ndim - 1] != n)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_matmul: a is [..., %lld], W [%lld, %lld], c [..., %lld]",
                        (long long)k, (long long)n, (long long)w->shape[1],
                        (long long)c->shape[c->ndim - 1]);
    for (uint32_t i = 0; i + 1 < a->ndim; i++) {
        if (a->shape[i] != c->shape[i])
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "mcl_matmul: a and c differ in dimension %u", i);
    }
    if (bias && mcl_tensor_numel(bias) != n)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_matmul: bias has %lld elements, not %lld",
                        (long long)mcl_tensor_numel(bias), (long long)n);
    return MCL_SUCCESS;
}

/* Checks a product as mcl_matmul_quant_ex takes it and chooses its path; records nothing. */
static mcl_status quant_check(mcl_context *ctx, mcl_tensor *a, mcl_transpose ta, mcl_tensor *b,
                              mcl_transpose tb, mcl_tensor *bias, mcl_tensor *c,
                              mcl_quant_path path, quant_product *p)
{
    if (!ctx || !a || !b || !c)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (a->ctx != ctx || b->ctx != ctx || c->ctx != ctx || (bias && bias->ctx != ctx))
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_matmul: tensor of another context");
    int fmt = format_index(b->dtype);
    if (fmt < 0)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_matmul: b is not block-quantised");
    if (a->dtype != MCL_DTYPE_F32 || c->dtype != MCL_DTYPE_F32 ||
        (bias && bias->dtype != MCL_DTYPE_F32))
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_matmul with a %s weight takes f32 a, bias and c",
                        mcl_dtype_name(b->dtype));
    if ((ta != MCL_NO_TRANSPOSE && ta != MCL_TRANSPOSE) ||
        (tb != MCL_NO_TRANSPOSE && tb != MCL_TRANSPOSE))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_matmul: bad transpose flag");
    if ((unsigned)path > MCL_QUANT_PATH_MATRIX)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "quantized matmul: unknown path %d",
                        (int)path);
    if (tb != MCL_TRANSPOSE || ta != MCL_NO_TRANSPOSE || b->ndim != 2)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "mcl_matmul: a %s b must be the 2-D [N, K] weight with tb = "
                        "MCL_TRANSPOSE (c = a W^T), and a not transposed",
                        mcl_dtype_name(b->dtype));
    if (c == a || c == bias)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_matmul: c aliases an input");
    mcl_status status = linear_shapes_check(ctx, a, b, bias, c);
    if (status != MCL_SUCCESS)
        return status;
    int64_t k = a->shape[a->ndim - 1], n = b->shape[0];
    /* a's batch dimensions fold into rows: a and c are contiguous and W is shared. */
    uint32_t rows = (uint32_t)(mcl_tensor_numel(a) / k);
    /* The integer-dot GEMM takes Q8_0 and Q4_0: the K types' GEMM is another one, which the
     * library's own choice takes quietly and an explicit request for the dot path refuses. */
    int gemv = rows <= QUANT_GEMV_MAX_ROWS;
    int dot_gemm = fmt == (int)FMT_Q8_0 || fmt == (int)FMT_Q4_0 || gemv;
    if (path == MCL_QUANT_PATH_AUTO)
        path = gemv ? mcl_quant_path_select(ctx, b->dtype)
                    : mcl_quant_gemm_path_select(ctx, b->dtype);
    if (path == MCL_QUANT_PATH_DOT && !(ctx->info.features_enabled & MCL_FEATURE_INTEGER_DOT_PRODUCT))
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "the integer-dot path needs a device with integer dot product enabled");
    if (path == MCL_QUANT_PATH_DOT && !dot_gemm)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "the integer-dot path multiplies more than %u rows of a by Q8_0 and Q4_0 "
                        "weights only", QUANT_GEMV_MAX_ROWS);
    if (path == MCL_QUANT_PATH_DOT && !gemv && !dot_gemm_fits(ctx))
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "the integer-dot GEMM needs %u bytes of shared memory, the device has %u",
                        QUANT_DOT_SHARED_BYTES, ctx->info.max_compute_shared_memory_size);
    if (path == MCL_QUANT_PATH_MATRIX &&
        !(ctx->info.features_enabled & MCL_FEATURE_COOPERATIVE_MATRIX))
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "the matrix path needs a device with cooperative matrices enabled");
    if (path == MCL_QUANT_PATH_MATRIX && gemv)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "the matrix path multiplies more than %u rows of a", QUANT_GEMV_MAX_ROWS);
    if (path == MCL_QUANT_PATH_MATRIX && !matrix_gemm_fits(ctx))
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "the matrix GEMM needs %u bytes of shared memory, the device has %u",
                        mma_shared_bytes(64, 64), ctx->info.max_compute_shared_memory_size);
    *p = (quant_product){.fmt = (uint32_t)fmt, .rows = rows, .n = (uint32_t)n, .k = (uint32_t)k,
                         .path = path};
    return rows_per_part(ctx, b, p->n, &p->part_rows);
}

/* a quantized for the integer-dot path into a new scratch tensor *act (the caller destroys it:
 * at once is safe, scratch memory stays reserved until the recorded work has run). */
static mcl_status quantize_into_scratch(mcl_context *ctx, mcl_tensor *a, uint32_t rows,
                                        uint32_t k, mcl_tensor **act)
{
    uint64_t words = (uint64_t)rows * (k / QUANT_LANE_WEIGHTS) * ACT_WORDS_PER_BLOCK;
    mcl_tensor_desc desc = {.size = sizeof desc, .dtype = MCL_DTYPE_I32, .ndim = 1,
                            .shape = {(int64_t)words}, .memory_class = MCL_MEMORY_SCRATCH};
    mcl_status status = mcl_tensor_create_ex(ctx, &desc, act);
    if (status == MCL_SUCCESS)
        status = mcl_quantize_activations(ctx, a, rows, k, *act);
    return status;
}

/* Records a checked product; act holds a quantized where p->path is DOT. */
static mcl_status quant_record(mcl_context *ctx, const quant_product *p, mcl_tensor *a,
                               mcl_tensor *act, mcl_tensor *b, mcl_tensor *bias, mcl_tensor *c)
{
    /* W in parts of part_rows rows (one part where it fits one binding), each two views. */
    mcl_status status = MCL_SUCCESS;
    for (uint32_t c0 = 0; status == MCL_SUCCESS && c0 < p->n; c0 += p->part_rows) {
        uint32_t part = p->n - c0 < p->part_rows ? p->n - c0 : p->part_rows;
        weight_part w;
        status = weight_part_views(ctx, b, p->n, p->k, c0, part, &w);
        if (status != MCL_SUCCESS)
            break;
        status = matmul_part(ctx, p->path, p->fmt, a, act, &w, bias, c, p->rows, part, p->k,
                             p->n, c0);
        weight_part_free(&w);
    }
    return status;
}

mcl_status mcl_matmul_quant_ex(mcl_context *ctx, mcl_tensor *a, mcl_transpose ta, mcl_tensor *b,
                               mcl_transpose tb, mcl_tensor *bias, mcl_tensor *c,
                               mcl_quant_path path, mcl_quant_path *ran)
{
    quant_product p;
    mcl_status status = quant_check(ctx, a, ta, b, tb, bias, c, path, &p);
    if (status != MCL_SUCCESS)
        return status;
    /* The integer-dot path quantizes a once, into scratch, for every part of W. */
    mcl_tensor *act = NULL;
    if (p.path == MCL_QUANT_PATH_DOT)
        status = quantize_into_scratch(ctx, a, p.rows, p.k, &act);
    if (status == MCL_SUCCESS)
        status = quant_record(ctx, &p, a, act, b, bias, c);
    mcl_tensor_destroy(act);
    if (status == MCL_SUCCESS && ran)
        *ran = p.path;
    return status;
}

/* Checks c = a W^T for an f32 W as mcl_matmul takes it in mcl_matmul_multi (W 2-D [N, K] and
 * transposed, a [..., K]); records nothing. */
static mcl_status f32_check(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *w,
                            const mcl_tensor *bias, const mcl_tensor *c)
{
    if (a->ctx != ctx || w->ctx != ctx || c->ctx != ctx || (bias && bias->ctx != ctx))
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_matmul: tensor of another context");
    if (a->dtype != MCL_DTYPE_F32 || c->dtype != MCL_DTYPE_F32 ||
        (bias && bias->dtype != MCL_DTYPE_F32))
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_matmul takes f32 tensors");
    if (w->ndim != 2)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_matmul_multi: W must be 2-D");
    return linear_shapes_check(ctx, a, w, bias, c);
}

mcl_status mcl_matmul_multi_ex(mcl_context *ctx, const mcl_tensor *ca, uint32_t count,
                               const mcl_tensor *const *w, const mcl_tensor *const *bias,
                               mcl_tensor *const *c, mcl_quant_path path)
{
    mcl_tensor *a = (mcl_tensor *)ca;
    if (!ctx || !a || !w || !c || count == 0 || count > MCL_MATMUL_MULTI_MAX)
        return MCL_ERROR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < count; i++) {
        if (!w[i] || !c[i])
            return MCL_ERROR_INVALID_ARGUMENT;
        int aliased = c[i] == a;
        for (uint32_t j = 0; j < count; j++)
            aliased |= c[i] == w[j] || (bias && c[i] == bias[j]) || (j < i && c[i] == c[j]);
        if (aliased)
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "mcl_matmul_multi: output %u is also an input or another output", i);
    }
    quant_product p[MCL_MATMUL_MULTI_MAX];
    int dot = 0;
    for (uint32_t i = 0; i < count; i++) {
        mcl_tensor *wi = (mcl_tensor *)w[i], *bi = bias ? (mcl_tensor *)bias[i] : NULL;
        mcl_status status;
        if (wi->dtype == MCL_DTYPE_F32) {
            status = f32_check(ctx, a, wi, bi, c[i]);
        } else if (format_index(wi->dtype) < 0) {
            status = mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                              "mcl_matmul_multi: weight %u is %s, not f32 or block-quantised", i,
                              mcl_dtype_name(wi->dtype));
        } else {
            status = quant_check(ctx, a, MCL_NO_TRANSPOSE, wi, MCL_TRANSPOSE, bi, c[i], path,
                                 &p[i]);
            dot |= p[i].path == MCL_QUANT_PATH_DOT;
        }
        if (status != MCL_SUCCESS)
            return status;
    }
    /* One quantization of a serves every product on the integer-dot path. */
    mcl_tensor *act = NULL;
    mcl_status status = MCL_SUCCESS;
    for (uint32_t i = 0; i < count && status == MCL_SUCCESS; i++) {
        mcl_tensor *bi = bias ? (mcl_tensor *)bias[i] : NULL;
        if (w[i]->dtype == MCL_DTYPE_F32) {
            status = mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, w[i], MCL_TRANSPOSE, bi, c[i]);
            continue;
        }
        if (p[i].path == MCL_QUANT_PATH_DOT && !act)
            status = quantize_into_scratch(ctx, a, p[i].rows, p[i].k, &act);
        if (status == MCL_SUCCESS)
            status = quant_record(ctx, &p[i], a, act, (mcl_tensor *)w[i], bi, c[i]);
    }
    mcl_tensor_destroy(act);
    return status;
}

mcl_status mcl_matmul_quantized_input(mcl_context *ctx, mcl_tensor *a, mcl_tensor *act,
                                      mcl_tensor *w, mcl_tensor *c)
{
    quant_product p;
    mcl_status status = quant_check(ctx, a, MCL_NO_TRANSPOSE, w, MCL_TRANSPOSE, NULL, c,
                                    MCL_QUANT_PATH_DOT, &p);
    if (status != MCL_SUCCESS)
        return status;
    if (!act || act->ctx != ctx ||
        act->nbytes < (uint64_t)p.rows * (p.k / QUANT_LANE_WEIGHTS) * ACT_WORDS_PER_BLOCK * 4)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_matmul_quantized_input: act is too small for a's quantization");
    return quant_record(ctx, &p, a, act, w, NULL, c);
}

mcl_status mcl_matmul_multi(mcl_context *ctx, const mcl_tensor *a, uint32_t count,
                            const mcl_tensor *const *w, const mcl_tensor *const *bias,
                            mcl_tensor *const *c)
{
    return mcl_matmul_multi_ex(ctx, a, count, w, bias, c, MCL_QUANT_PATH_AUTO);
}

mcl_status mcl_matmul_quant(mcl_context *ctx, mcl_tensor *a, mcl_transpose ta, mcl_tensor *b,
                            mcl_transpose tb, mcl_tensor *bias, mcl_tensor *c)
{
    return mcl_matmul_quant_ex(ctx, a, ta, b, tb, bias, c, MCL_QUANT_PATH_AUTO, NULL);
}

mcl_status mcl_dequantize_tensor_ex(mcl_context *ctx, const mcl_tensor *cq, mcl_tensor *out,
                                    uint32_t pb)
{
    mcl_tensor *q = (mcl_tensor *)cq;
    if (!ctx || !q || !out)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (q->ctx != ctx || out->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT,
                        "mcl_dequantize_tensor: tensor of another context");
    int fmt = format_index(q->dtype);
    if (fmt < 0 || out->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_dequantize_tensor takes a block-quantised q and an f32 out");
    int same = q->ndim == out->ndim;
    for (uint32_t i = 0; same && i < q->ndim; i++)
        same = q->shape[i] == out->shape[i];
    if (!same)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_dequantize_tensor: out must have q's shape");
    if (q->nbytes > ctx->info.max_storage_buffer_range)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                        "mcl_dequantize_tensor: a %s tensor of %llu bytes is larger than one "
                        "storage-buffer binding", mcl_dtype_name(q->dtype),
                        (unsigned long long)q->nbytes);
    /* Q6_K has one piece size: any non-zero pb means it. */
    uint32_t spec_pb = fmt == (int)FMT_Q6_K || !pb ? QUANT_DEQUANT_PB : pb;
    uint32_t ppb = pb ? span_pieces((uint32_t)fmt, spec_pb) : 0;
    if (pb && !ppb)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_dequantize_tensor: no pieces of %u bytes in %s", pb,
                        mcl_dtype_name(q->dtype));

    uint64_t per_block = (uint64_t)mcl_dtype_block_weights(q->dtype);
    uint64_t blocks = (uint64_t)mcl_tensor_numel(q) / per_block;
    uint64_t units = blocks * (pb ? ppb : per_block / 4);
    uint32_t k = (uint32_t)q->shape[q->ndim - 1];
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_DEQUANT_Q,
        .binding_count = 3,
        .push_size = sizeof(dequant_push),
        .local_size_x = QUANT_THREADS,
        .spec_count = 3,
        .spec = {(uint32_t)fmt, pb != 0, spec_pb},
    };
    weight_part w;
    mcl_status status = weight_part_views(ctx, q, (uint32_t)(mcl_tensor_numel(q) / k), k, 0,
                                          (uint32_t)(mcl_tensor_numel(q) / k), &w);
    if (status != MCL_SUCCESS)
        return status;
    const mcl_kernel *kernel;
    status = mcl_kernel_get(ctx, &desc, &kernel);
    if (status == MCL_SUCCESS) {
        dequant_push push = {.blocks = (uint32_t)blocks, .dlo = w.dlo};
        uint32_t groups = ceil_div(units, kernel->local_size_x);
        if (groups > QUANT_MAX_GROUPS)
            groups = QUANT_MAX_GROUPS;  /* the kernel loops over the rest */
        mcl_tensor *reads[2] = {w.body, w.d};
        status = mcl_stream_dispatch(ctx, kernel, reads, 2, &out, 1, &push, groups, 1, 1);
    }
    weight_part_free(&w);
    return status;
}

mcl_status mcl_dequantize_tensor(mcl_context *ctx, const mcl_tensor *q, mcl_tensor *out)
{
    return mcl_dequantize_tensor_ex(ctx, q, out, QUANT_DEQUANT_PB);
}
