/* Plans of the quantized matmul: path choice, the GEMV plan table and its rule, the GEMM
 * tiles. Every number here is a kernel's shape or a tuning choice; docs/tuning.md holds the
 * measurements behind each (the section named beside it). */
#include "quant_plan.h"

#include <stdio.h>

#include "../vk/runtime.h"
#include "ops_internal.h"

static const mcl_dtype quant_formats[MCL_QFMT_COUNT] = {
    MCL_DTYPE_Q8_0, MCL_DTYPE_Q4_0, MCL_DTYPE_Q4_K, MCL_DTYPE_Q5_K, MCL_DTYPE_Q6_K};

int mcl_quant_format(mcl_dtype dtype)
{
    for (uint32_t i = 0; i < MCL_QFMT_COUNT; i++) {
        if (quant_formats[i] == dtype)
            return (int)i;
    }
    return -1;
}

mcl_dtype mcl_quant_format_dtype(uint32_t fmt)
{
    return quant_formats[fmt];
}

static uint32_t ceil_div(uint64_t a, uint64_t b)
{
    return (uint32_t)((a + b - 1) / b);
}

uint32_t mcl_quant_pieces(uint32_t fmt, uint32_t pb)
{
    switch (fmt) {
    case MCL_QFMT_Q8_0:
        return pb == 16 || pb == 32 ? 32 / pb : 0;
    case MCL_QFMT_Q4_0:
        return pb == 8 || pb == 16 ? 16 / pb : 0;
    case MCL_QFMT_Q6_K:
        return pb == 16 ? 4 : 0;
    default: /* Q4_K, Q5_K */
        return pb == 16 || pb == 32 ? 128 / pb : 0;
    }
}

/* ---- Shared memory of the GEMM kernels ------------------------------------------------- */

/* gemm_q_mma: rows of 40 halves (BK = 32, padded by 8) of a's and W's tiles, and 8 x 256
 * floats of results: 28 KiB at 128 x 128, 18 KiB at 64 x 64. */
static uint32_t mma_shared_bytes(uint32_t bm, uint32_t bn)
{
    return (bm + bn) * 40u * 2u + 8u * 256u * 4u;
}

/* gemm_q_dot, two blocks of 32 a stage: A's codes, scales and sums (128 rows), W's codes in
 * rows of three uvec4s and scales (64 rows): 16.5 KiB, past Vulkan's least
 * maxComputeSharedMemorySize (16 KiB). */
#define DOT_GEMM_SHARED_BYTES \
    (2u * (128u * 2u * 16u + 128u * 4u * 2u + 64u * 3u * 16u + 64u * 4u))

/* gemm_q's tiles: gemm_f32's, 16 values of K a step. */
static uint64_t float_gemm_shared(uint32_t bm, uint32_t bn)
{
    const mcl_gemm_config cfg = {.bm = bm, .bn = bn, .bk = 16};
    return mcl_gemm_shared_bytes(&cfg, 0);
}

static int dot_gemm_fits(const mcl_traits *t)
{
    return DOT_GEMM_SHARED_BYTES <= t->max_shared_bytes;
}

static int matrix_gemm_fits(const mcl_traits *t)
{
    return mma_shared_bytes(64, 64) <= t->max_shared_bytes;
}

/* ---- Paths ----------------------------------------------------------------------------- */

mcl_quant_path mcl_quant_path_select(const mcl_context *ctx, mcl_dtype dtype)
{
    if (!ctx || mcl_quant_format(dtype) < 0)
        return MCL_QUANT_PATH_FLOAT;
    return mcl_traits_of(ctx)->quant_dot ? MCL_QUANT_PATH_DOT : MCL_QUANT_PATH_FLOAT;
}

mcl_quant_path mcl_quant_gemm_path_select(const mcl_context *ctx, mcl_dtype dtype)
{
    int fmt = mcl_quant_format(dtype);
    if (!ctx || fmt < 0)
        return MCL_QUANT_PATH_FLOAT;
    const mcl_traits *t = mcl_traits_of(ctx);
    if (t->quant_matrix && matrix_gemm_fits(t))
        return MCL_QUANT_PATH_MATRIX;
    mcl_quant_path path = mcl_quant_path_select(ctx, dtype);
    /* The integer-dot GEMM takes Q8_0 and Q4_0; the K types' GEMM is the float one. */
    if (path == MCL_QUANT_PATH_DOT &&
        ((fmt != (int)MCL_QFMT_Q8_0 && fmt != (int)MCL_QFMT_Q4_0) || !dot_gemm_fits(t)))
        path = MCL_QUANT_PATH_FLOAT;
    return path;
}

const char *mcl_quant_path_refusal(const mcl_traits *t, mcl_quant_path path, uint32_t fmt,
                                   int gemv, char *why, size_t why_size)
{
    int dot_gemm = fmt == MCL_QFMT_Q8_0 || fmt == MCL_QFMT_Q4_0 || gemv;
    if (path == MCL_QUANT_PATH_DOT && !t->integer_dot)
        snprintf(why, why_size,
                 "the integer-dot path needs a device with integer dot product enabled");
    else if (path == MCL_QUANT_PATH_DOT && !dot_gemm)
        snprintf(why, why_size,
                 "the integer-dot path multiplies more than %u rows of a by Q8_0 and Q4_0 "
                 "weights only", MCL_QUANT_GEMV_MAX_ROWS);
    else if (path == MCL_QUANT_PATH_DOT && !gemv && !dot_gemm_fits(t))
        snprintf(why, why_size,
                 "the integer-dot GEMM needs %u bytes of shared memory, the device has %u",
                 DOT_GEMM_SHARED_BYTES, t->max_shared_bytes);
    else if (path == MCL_QUANT_PATH_MATRIX && !t->cooperative_matrix)
        snprintf(why, why_size,
                 "the matrix path needs a device with cooperative matrices enabled");
    else if (path == MCL_QUANT_PATH_MATRIX && gemv)
        snprintf(why, why_size, "the matrix path multiplies more than %u rows of a",
                 MCL_QUANT_GEMV_MAX_ROWS);
    else if (path == MCL_QUANT_PATH_MATRIX && !matrix_gemm_fits(t))
        snprintf(why, why_size,
                 "the matrix GEMM needs %u bytes of shared memory, the device has %u",
                 mma_shared_bytes(64, 64), t->max_shared_bytes);
    else
        return NULL;
    return why;
}

/* ---- The GEMV plan ---------------------------------------------------------------------- */

/* One entry of the plan table (docs/tuning.md, "Quantized GEMV plans"). */
typedef struct gemv_rule {
    uint8_t staged;    /* x staged in shared memory, the rounds of a workgroup in step */
    uint8_t nr, u;     /* rows of W per row group; pieces per lane in flight */
    uint8_t pb;        /* bytes of codes per piece */
    uint8_t pb_lanes;  /* span: the piece size lanes are counted on (0: pb) */
    uint8_t lanes;     /* staged: lanes along K per row group (doubled until pieces fit) */
    uint8_t groups;    /* staged: row groups per workgroup */
    uint8_t max_lanes; /* span: at most this many lanes, except in waves of 64 (0: no cap) */
    uint8_t one_round; /* span: where a lane's pieces are exactly this many, one round of them */
    uint8_t cvt;       /* codes to floats by conversion: 0 never, 1 where the device class
                        * converts bytes in one instruction (AMD), 2 on every device */
    uint8_t lanes_log2;/* span: lanes grow while the grid holds fewer than 2^this */
} gemv_rule;

/* [integer-dot][several rows of x][format]: Q8_0, Q4_0, Q4_K, Q5_K, Q6_K. */
static const gemv_rule gemv_rules[2][2][MCL_QFMT_COUNT] = {
    { /* float path */
        { /* one row of x ("Float path, one row of x") */
            {.nr = 4, .u = 2, .pb = 16, .cvt = 1, .lanes_log2 = 18},
            {.nr = 8, .u = 1, .pb = 16, .cvt = 1, .lanes_log2 = 18},
            {.nr = 4, .u = 1, .pb = 16, .cvt = 1, .lanes_log2 = 18},
            {.staged = 1, .nr = 4, .u = 1, .pb = 16, .lanes = 64, .groups = 2, .cvt = 2},
            {.nr = 2, .u = 2, .pb = 16, .cvt = 1, .lanes_log2 = 18},
        },
        { /* several rows ("Float path, several rows of x (staged x)") */
            {.staged = 1, .nr = 4, .u = 1, .pb = 16, .lanes = 16, .groups = 16},
            {.staged = 1, .nr = 4, .u = 1, .pb = 8, .lanes = 16, .groups = 16},
            {.staged = 1, .nr = 4, .u = 1, .pb = 16, .lanes = 16, .groups = 16},
            {.staged = 1, .nr = 4, .u = 1, .pb = 16, .lanes = 16, .groups = 16},
            {.nr = 4, .u = 1, .pb = 16, .lanes_log2 = 18},
        },
    },
    { /* integer-dot path */
        { /* one row ("Integer-dot path, one row of x") */
            {.nr = 1, .u = 2, .pb = 32, .lanes_log2 = 18},
            {.nr = 2, .u = 1, .pb = 16, .one_round = 4, .lanes_log2 = 18},
            {.nr = 2, .u = 1, .pb = 32, .pb_lanes = 16, .lanes_log2 = 18},
            {.nr = 4, .u = 1, .pb = 32, .pb_lanes = 16, .lanes_log2 = 18},
            {.nr = 2, .u = 1, .pb = 16, .max_lanes = 16, .lanes_log2 = 18},
        },
        { /* several rows ("Integer-dot path, several rows of x") */
            {.nr = 4, .u = 1, .pb = 32, .lanes_log2 = 16},
            {.nr = 4, .u = 1, .pb = 16, .lanes_log2 = 16},
            {.nr = 4, .u = 1, .pb = 16, .lanes_log2 = 16},
            {.nr = 4, .u = 1, .pb = 16, .lanes_log2 = 16},
            {.nr = 4, .u = 1, .pb = 16, .lanes_log2 = 16},
        },
    },
};

/* The span rule ("Lanes along K and rounds"): a row group starts at one subgroup of lanes and
 * doubles, up to SPAN_MAX_LANES, while the grid is small and each lane keeps SPAN_MIN_ROUNDS
 * rounds of pieces in the row. Workgroups of SPAN_THREADS invocations. */
#define SPAN_MIN_ROUNDS 3u
#define SPAN_LANES 32u
#define SPAN_LANES_WAVE64 64u
#define SPAN_MAX_LANES 256u
#define SPAN_THREADS 128u
#define SPAN_THREADS_WAVE64 256u
/* Staged plans shorten their rounds down to this many lanes before dropping row groups. */
#define STAGE_MIN_LANES 8u
/* A GEMV workgroup's shared memory, at most ("Shared-memory caps"). */
#define SPAN_MAX_SHARED 49152u
#define SPAN_MAX_SHARED_WAVE64 32768u

/* Shared memory of a plan at m rows of x: the partial sums, and with stage the x of a round
 * (padded as gemv_q.comp pads it). */
static uint64_t span_shared_bytes(uint32_t fmt, const mcl_gemv_plan *q, uint32_t m)
{
    uint64_t bytes = (uint64_t)q->t * q->g * q->nr * m * sizeof(float);
    uint32_t ppb = mcl_quant_pieces(fmt, q->pb);
    if (q->stage && ppb) {
        uint64_t qk = (uint64_t)mcl_dtype_block_weights(quant_formats[fmt]);
        uint64_t xch = (uint64_t)q->u * q->t * qk / ppb / 4;
        bytes += (uint64_t)m * (xch + xch / 8) * 16;
    } else {
        bytes += 16; /* gemv_q.comp declares one vec4 of staged x even when x is not staged */
    }
    return bytes;
}

uint64_t mcl_gemv_shared_bytes(uint32_t fmt, const mcl_gemv_plan *plan, uint32_t m)
{
    return span_shared_bytes(fmt, plan, m);
}

/* MOTIFCL_QUANT_GEMV_PLAN's keys applied to p where the result fits the kernels, the product
 * and the device (with `reserve` bytes of its shared memory taken); else p stays and a
 * warning says so. */
static void gemv_override(const mcl_context *ctx, int dot, uint32_t fmt, uint32_t m,
                          uint64_t reserve, mcl_gemv_plan *p)
{
    const mcl_traits *tr = mcl_traits_of(ctx);
    const mcl_gemv_override *o = &tr->gemv;
    if (!o->set)
        return;
    mcl_gemv_plan q = *p;
    uint32_t *fields[] = {&q.t, &q.g, &q.nr, &q.u, &q.pb, &q.stage, &q.cvt};
    const uint32_t values[] = {o->t, o->g, o->nr, o->u, o->pb, o->st, o->cvt};
    for (int i = 0; i < 7; i++) {
        if (o->set & (1u << i))
            *fields[i] = values[i];
    }
    uint32_t ppb = mcl_quant_pieces(fmt, q.pb);
    int ok = q.t >= 1 && q.t <= tr->max_workgroup_size[0] && q.g >= 1 &&
             q.g <= tr->max_workgroup_size[1] && (uint64_t)q.t * q.g <= tr->max_invocations &&
             (q.nr == 1 || q.nr == 2 || q.nr == 4 || q.nr == 8) && q.u >= 1 && q.u <= 8 && ppb &&
             q.t % ppb == 0 && !(q.stage && dot) && !(q.cvt && (dot || m > 1)) &&
             span_shared_bytes(fmt, &q, m) + reserve <= tr->max_shared_bytes;
    if (!ok) {
        mcl_ctx_log(ctx, MCL_LOG_WARNING,
                    "MOTIFCL_QUANT_GEMV_PLAN does not fit this product or device; ignored");
        return;
    }
    *p = q;
}

void mcl_gemv_plan_reserving(const mcl_context *ctx, int dot, uint32_t fmt, uint32_t m,
                             uint32_t n, uint32_t k, uint64_t reserve, mcl_gemv_plan *p)
{
    const mcl_traits *tr = mcl_traits_of(ctx);
    const gemv_rule *r = &gemv_rules[dot != 0][m > 1][fmt];
    const int wave64 = tr->device_class == MCL_CLASS_AMD_WAVE64;
    const uint32_t nb = k / (uint32_t)mcl_dtype_block_weights(quant_formats[fmt]);
    uint64_t shared = wave64 ? SPAN_MAX_SHARED_WAVE64 : SPAN_MAX_SHARED;
    if (shared > tr->max_shared_bytes)
        shared = tr->max_shared_bytes;
    shared = shared > reserve ? shared - reserve : 0;
    uint32_t threads = wave64 ? SPAN_THREADS_WAVE64 : SPAN_THREADS;
    if (threads > tr->max_invocations)
        threads = tr->max_invocations;

    *p = (mcl_gemv_plan){.nr = r->nr, .u = r->u, .pb = r->pb, .stage = r->staged};
    p->cvt = !dot && m == 1 &&
             (r->cvt == 2 || (r->cvt == 1 && tr->device_class != MCL_CLASS_GENERIC));
    const uint32_t ppb = mcl_quant_pieces(fmt, p->pb);
    if (r->staged) {
        p->t = r->lanes;
        while (p->t % ppb != 0)
            p->t *= 2;
        p->g = r->groups;
    } else {
        uint32_t pieces_per_row = nb * mcl_quant_pieces(fmt, r->pb_lanes ? r->pb_lanes : r->pb);
        uint32_t t = wave64 ? SPAN_LANES_WAVE64 : SPAN_LANES;
        uint64_t target = UINT64_C(1) << r->lanes_log2;
        while (2 * t <= SPAN_MAX_LANES && 2 * t <= threads &&
               (uint64_t)ceil_div(n, p->nr) * t < target &&
               SPAN_MIN_ROUNDS * (2 * t) * p->u <= pieces_per_row)
            t *= 2;
        if (t > threads)
            t = threads;
        if (t > tr->max_workgroup_size[0])
            t = tr->max_workgroup_size[0];
        p->t = t;
        p->g = threads / t;
        if (r->max_lanes && !wave64 && p->t > r->max_lanes)
            p->t = r->max_lanes;
        if (r->one_round && nb * ppb == r->one_round * p->t)
            p->u = r->one_round;
    }
    /* Fewer row groups while the workgroup is beyond the device. */
    while (p->g > 1 && ((uint64_t)p->t * p->g > tr->max_invocations ||
                        p->g > tr->max_workgroup_size[1]))
        p->g /= 2;
    /* Beyond the shared memory: a staged plan first stages shorter rounds (fewer lanes, down
     * to STAGE_MIN_LANES), then fewer row groups; one that still does not fit streams x from
     * memory. */
    while (span_shared_bytes(fmt, p, m) > shared) {
        if (p->stage && p->t / 2 >= STAGE_MIN_LANES && (p->t / 2) % ppb == 0)
            p->t /= 2;
        else if (p->g > 1)
            p->g /= 2;
        else if (p->stage)
            p->stage = 0;
        else
            break;
    }
    gemv_override(ctx, dot, fmt, m, reserve, p);
}

void mcl_gemv_plan_for(const mcl_context *ctx, int dot, uint32_t fmt, uint32_t m, uint32_t n,
                       uint32_t k, mcl_gemv_plan *p)
{
    mcl_gemv_plan_reserving(ctx, dot, fmt, m, n, k, 0, p);
}

mcl_status mcl_quant_gemv_plan(const mcl_context *ctx, int dot, mcl_dtype dtype, uint32_t m,
                               uint32_t n, uint32_t k, mcl_gemv_plan *plan)
{
    int fmt = mcl_quant_format(dtype);
    if (!ctx || !plan || fmt < 0 || m < 1 || m > MCL_QUANT_GEMV_MAX_ROWS || n == 0 || k == 0 ||
        k % (uint32_t)mcl_dtype_block_weights(dtype) != 0)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_gemv_plan_for(ctx, dot, (uint32_t)fmt, m, n, k, plan);
    return MCL_SUCCESS;
}

/* ---- The GEMM tiles ---------------------------------------------------------------------- */

/* gemm_q ("Float path (gemm_q)"): 64 x 64 (8.5 KiB, within Vulkan's least limit), 128 x 128
 * where the grid holds at least FLOAT_BIG_TILES of them; unrolled FLOAT_UNROLL. */
#define FLOAT_BIG_TILES 96u
#define FLOAT_UNROLL 8u

void mcl_quant_gemm_float_tile(const mcl_context *ctx, uint32_t m, uint32_t n, uint32_t *bm,
                               uint32_t *bn)
{
    const mcl_traits *t = mcl_traits_of(ctx);
    const uint64_t limit = t->max_shared_bytes;
    *bm = *bn = 64;
    if ((uint64_t)ceil_div(m, 128) * ceil_div(n, 128) >= FLOAT_BIG_TILES &&
        float_gemm_shared(128, 128) <= limit)
        *bm = *bn = 128;
    uint32_t tm = t->gemm_float_tile[0], tn = t->gemm_float_tile[1];
    if (!tm)
        return;
    if (float_gemm_shared(tm, tn) > limit) {
        mcl_ctx_log(ctx, MCL_LOG_WARNING,
                    "MOTIFCL_QUANT_GEMM_FLOAT_TILE: %ux%u needs %llu bytes of shared memory, "
                    "the device has %llu; ignored", tm, tn,
                    (unsigned long long)float_gemm_shared(tm, tn), (unsigned long long)limit);
        return;
    }
    *bm = tm;
    *bn = tn;
}

uint32_t mcl_quant_gemm_unroll(const mcl_context *ctx)
{
    uint32_t unroll = mcl_traits_of(ctx)->gemm_unroll;
    return unroll ? unroll : FLOAT_UNROLL;
}

uint32_t mcl_quant_gemm_slices(const mcl_context *ctx, uint64_t tiles, uint32_t m, uint32_t n,
                               uint32_t k, uint32_t ldc)
{
    const mcl_traits *t = mcl_traits_of(ctx);
    uint32_t slices = t->gemm_slices ? t->gemm_slices : mcl_gemm_slices(tiles, k);
    if (ldc != n || (uint64_t)slices * m * n * 4 > t->max_binding_bytes)
        slices = 1;
    return slices;
}

/* gemm_q_mma ("Matrix path (gemm_q_mma)"): 128 rows of a by 64 of W where a has more than 64
 * rows, 64 x 64 otherwise. */
#define MMA_TALL_ROWS 64u

void mcl_quant_gemm_matrix_tile(const mcl_context *ctx, uint32_t m, uint32_t *out_bm,
                                uint32_t *out_bn)
{
    const mcl_traits *t = mcl_traits_of(ctx);
    uint32_t bm = m > MMA_TALL_ROWS ? 128 : 64, bn = 64;
    /* A device with less shared memory than the tile: a side of 64 first (a's, then W's). */
    const uint32_t limit = t->max_shared_bytes;
    while (mma_shared_bytes(bm, bn) > limit && (bm > 64 || bn > 64)) {
        if (bm >= bn)
            bm = 64;
        else
            bn = 64;
    }
    uint32_t om = t->gemm_matrix_tile[0], on = t->gemm_matrix_tile[1];
    if (om) {
        if (mma_shared_bytes(om, on) <= limit) {
            bm = om;
            bn = on;
        } else {
            mcl_ctx_log(ctx, MCL_LOG_WARNING,
                        "MOTIFCL_QUANT_GEMM_TILE: %ux%u needs %u bytes of shared memory, the "
                        "device has %u; ignored", om, on, mma_shared_bytes(om, on), limit);
        }
    }
    *out_bm = bm;
    *out_bn = bn;
}
