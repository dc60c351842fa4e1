/* The backward pass of multi-head attention, flash-attention-2 style: the softmax is
 * recomputed in tiles from q and k, and no T x S matrix exists anywhere.
 *
 * Two dispatches:
 *  1. attention_backward_dq_f32.comp, one workgroup per BQ query rows of one (batch, kv head)
 *     (rows over the G query heads sharing the kv head, as in the forward): Di = dout . out,
 *     the rows' softmax max and sum over the visible keys (one sweep of the key tiles), then
 *     dS = P (dP - Di) and dq = scale dS k (a second sweep). The max, 1 / sum and Di go to a
 *     scratch tensor of B * Hq * T * 4 floats.
 *  2. attention_backward_dkdv_f32.comp, one workgroup per BK keys of one (batch, kv head),
 *     walking every query row of the group that sees them: dv = P^T dout, dk = scale dS^T q,
 *     with P and dS recomputed from the statistics.
 * Each output element has one owner that adds its terms in a fixed order, so there are no
 * float atomics and the same inputs give the same bits; the order depends on the shape and the
 * tile plan, which depends on the device's shared-memory and workgroup limits, not on its
 * subgroup size. */
#include <math.h>

#include "../vk/runtime.h"
#include "ops_internal.h"

/* Head dims the kernels accept (as the forward). */
#define MCL_ATTN_BWD_MAX_HEAD_DIM 256u
/* dq: query rows per workgroup and keys per tile, before shrinking to fit shared memory. */
#define MCL_ATTN_BWD_DQ_ROWS 32u
#define MCL_ATTN_BWD_DQ_KEYS 32u
/* dk / dv: keys per workgroup and query rows per tile, likewise. */
#define MCL_ATTN_BWD_KV_KEYS 32u
#define MCL_ATTN_BWD_KV_ROWS 32u
/* The tile walked in the inner loop shrinks to this before the workgroup's own tile does. */
#define MCL_ATTN_BWD_MIN_INNER 4u
/* Workgroup sizes: the widest of these that the device allows and that leaves no invocation
 * without an entry of the BQ x BK tile, not below the narrowest (a multiple of every subgroup
 * size in use: 8, 32, 64). Wide workgroups win: the tiles' shared memory bounds how many
 * workgroups a multiprocessor holds, so the invocations that share them are what hides the
 * latencies (docs/tuning.md, "Attention backward": on an H100 both kernels took 2.13 ms a
 * training step at 256 invocations, 5.68 with the same register tiles at 64). */
#define MCL_ATTN_BWD_WG_MAX 256u
#define MCL_ATTN_BWD_WG_MIN 64u
/* Accumulator vec4s an invocation may hold (dq, or each of dk and dv). */
#define MCL_ATTN_BWD_MAX_ACC 8u
/* maxComputeWorkGroupCount: the minimum Vulkan guarantees in each dimension. */
#define MCL_MAX_GROUPS 65535u
#define MCL_LOG2E 1.442695040888963407360

/* Push constants of both kernels (attention_backward_common.glsl). */
typedef struct attention_bwd_push {
    uint32_t seq_q, seq_kv, kv_len, heads_q, heads_kv, group, rows, causal;
    float scale_log2, scale;
} attention_bwd_push;

/* A kernel's plan: `outer` rows (dq) or keys (dk / dv) per workgroup, `inner` keys (dq) or
 * rows (dk / dv) per step of its loop; the product tile's rows mr and keys mk per invocation;
 * nb, the rows (dq) or keys (dk / dv) of the second product per invocation. */
typedef struct bwd_tiles {
    uint32_t wg, outer, inner, mr, mk, nb;
} bwd_tiles;

typedef enum { BWD_DQ, BWD_DKDV } bwd_kernel;

static uint64_t div_up(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

/* The BQ x BK tiles of a plan (dq's rows are its outer tile, dk / dv's its inner one). */
static uint32_t tile_rows(bwd_kernel kind, const bwd_tiles *t)
{
    return kind == BWD_DQ ? t->outer : t->inner;
}

static uint32_t tile_keys(bwd_kernel kind, const bwd_tiles *t)
{
    return kind == BWD_DQ ? t->inner : t->outer;
}

/* The padded stride of the P / dS tiles (PSTR in the kernels). */
static uint32_t p_stride(bwd_kernel kind, const bwd_tiles *t)
{
    uint32_t bq = tile_rows(kind, t), bk = tile_keys(kind, t), rga = bq / t->mr;
    if (kind == BWD_DQ)
        return bq + (rga % 32u + 32u - bq % 32u) % 32u;
    uint32_t psw = rga >= 32u ? 1u : 32u / rga;
    return bk + (psw + 32u - bk % 32u) % 32u;
}

/* Bytes of shared memory the kernel declares: four tiles of padded head vectors (q and dout,
 * k and v), then dq's dS tile, (max, sum) pairs, dout . out per vec4 and row state, or
 * dk / dv's P and dS tiles and row state. */
static uint64_t shared_bytes(bwd_kernel kind, const bwd_tiles *t, uint32_t d)
{
    uint64_t stride = (d + 3) / 4 + 1;
    uint64_t bq = tile_rows(kind, t), bk = tile_keys(kind, t);
    uint64_t tiles = 16u * stride * 2u * (bq + bk);
    if (kind == BWD_DQ)
        return tiles + 4u * (bk * p_stride(kind, t) + 2u * bq * (bk / t->mk) + bq * stride +
                             4u * bq);
    return tiles + 4u * (2u * bq * p_stride(kind, t) + 4u * bq);
}

/* The product tile: mr x mk entries per invocation, as few as cover the BQ x BK tile with
 * the workgroup, keys before rows (both are powers of two). */
static void plan_products(bwd_kernel kind, bwd_tiles *t)
{
    uint32_t bq = tile_rows(kind, t), bk = tile_keys(kind, t);
    t->mr = 1, t->mk = 1;
    while ((bq / t->mr) * (bk / t->mk) > t->wg) {
        if ((t->mk < t->mr * 2u || t->mr == bq) && t->mk < bk)
            t->mk *= 2u;
        else
            t->mr *= 2u;
    }
}

/* The second product: nb rows (dq) or keys (dk / dv) by nd4 vec4s per invocation. Shared
 * loads nb + nd4 for nb x nd4 vec4 FMAs: the nb whose larger of the two is least, the larger
 * nb on a tie. */
static void plan_second(uint32_t d, bwd_tiles *t)
{
    uint32_t n = t->outer, d4 = (d + 3) / 4;
    uint32_t best = 0, best_cost = UINT32_MAX;
    for (uint32_t nb = 1; nb <= n; nb *= 2u) {
        if (n / nb > t->wg)
            continue;
        uint32_t nd4 = (uint32_t)div_up(d4, t->wg / (n / nb));
        uint32_t cost = nb + nd4 > nb * nd4 ? nb + nd4 : nb * nd4;
        if (cost <= best_cost)
            best = nb, best_cost = cost;
    }
    t->nb = best;
}

static mcl_status plan_tiles(mcl_context *ctx, bwd_kernel kind, uint32_t d, bwd_tiles *out)
{
    uint32_t outer = kind == BWD_DQ ? MCL_ATTN_BWD_DQ_ROWS : MCL_ATTN_BWD_KV_KEYS;
    uint32_t inner = kind == BWD_DQ ? MCL_ATTN_BWD_DQ_KEYS : MCL_ATTN_BWD_KV_ROWS;
    uint32_t d4 = (d + 3) / 4;
    uint32_t widest = MCL_ATTN_BWD_WG_MAX;
    while (widest > MCL_ATTN_BWD_WG_MIN && widest > mcl_traits_of(ctx)->max_invocations)
        widest /= 2;
    for (;;) {
        bwd_tiles t = {.outer = outer, .inner = inner, .wg = widest};
        while (t.wg > MCL_ATTN_BWD_WG_MIN && t.wg > outer * inner)
            t.wg /= 2;
        plan_products(kind, &t);
        plan_second(d, &t);
        int acc_fits = div_up((uint64_t)outer * d4, t.wg) <= MCL_ATTN_BWD_MAX_ACC;
        if (acc_fits && shared_bytes(kind, &t, d) <= mcl_traits_of(ctx)->max_shared_bytes) {
            *out = t;
            return MCL_SUCCESS;
        }
        /* Too many accumulators: a smaller tile of the workgroup's own. Vulkan guarantees only
         * 16 KiB of shared memory: the inner tile shrinks first (more barriers, not more
         * loads), then the workgroup's own tile, then the inner tile to one. */
        if (!acc_fits && outer > 1)
            outer /= 2;
        else if (inner > MCL_ATTN_BWD_MIN_INNER)
            inner /= 2;
        else if (outer > 1)
            outer /= 2;
        else if (inner > 1)
            inner /= 2;
        else
            return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                            "mcl_attention_backward: head dim %u does not fit %u bytes of "
                            "shared memory", d, mcl_traits_of(ctx)->max_shared_bytes);
    }
}

static mcl_status tile_kernel(mcl_context *ctx, bwd_kernel kind, const bwd_tiles *t, uint32_t d,
                              int stats_given, const mcl_kernel **out)
{
    mcl_kernel_desc desc = {
        .id = kind == BWD_DQ ? MCL_KERNEL_ATTENTION_BACKWARD_DQ_F32
                             : MCL_KERNEL_ATTENTION_BACKWARD_DKDV_F32,
        .binding_count = 7,
        .push_size = sizeof(attention_bwd_push),
        .local_size_x = t->wg,
        .spec_count = kind == BWD_DQ ? 7 : 6,
        /* Constants D, BQ (query rows per tile), BK (keys per tile), MR, MK, NB; dq's
         * STATS_GIVEN. */
        .spec = {d, tile_rows(kind, t), tile_keys(kind, t), t->mr, t->mk, t->nb,
                 stats_given ? 1u : 0u},
    };
    mcl_status status = mcl_kernel_get(ctx, &desc, out);
    /* The plan's product and dq / dk / dv invocations assume exactly wg invocations. */
    if (status == MCL_SUCCESS && mcl_kernel_local_size(*out) != t->wg)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "mcl_attention_backward: the device allows fewer than %u invocations "
                        "per workgroup", t->wg);
    return status;
}

mcl_status mcl_attention_backward(mcl_context *ctx, const mcl_tensor *q, const mcl_tensor *k,
                                  const mcl_tensor *v, const mcl_tensor *out,
                                  const mcl_tensor *dout, const mcl_attention_desc *desc,
                                  mcl_tensor *dq, mcl_tensor *dk, mcl_tensor *dv)
{
    return mcl_attention_backward_stats(ctx, q, k, v, out, dout, desc, dq, dk, dv, NULL, 0);
}

mcl_status mcl_attention_backward_stats(mcl_context *ctx, const mcl_tensor *q,
                                        const mcl_tensor *k, const mcl_tensor *v,
                                        const mcl_tensor *out, const mcl_tensor *dout,
                                        const mcl_attention_desc *desc, mcl_tensor *dq,
                                        mcl_tensor *dk, mcl_tensor *dv, mcl_tensor *scratch,
                                        int stats_given)
{
    static const char op[] = "mcl_attention_backward";
    const mcl_tensor *t[8] = {q, k, v, out, dout, dq, dk, dv};
    mcl_status status = mcl_ops_check_f32(ctx, op, t, 8);
    if (status != MCL_SUCCESS)
        return status;
    for (uint32_t i = 0; i < 8; i++) {
        if (t[i]->ndim != 4)
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "%s: q, out, dout, dq are [B, T, Hq, D], k, v, dk, dv [B, S, Hkv, D]",
                            op);
    }
    if (!mcl_tensor_same_shape(q, out) || !mcl_tensor_same_shape(q, dout) ||
        !mcl_tensor_same_shape(q, dq))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "%s: out, dout and dq must have q's shape", op);
    if (!mcl_tensor_same_shape(k, v) || !mcl_tensor_same_shape(k, dk) ||
        !mcl_tensor_same_shape(k, dv))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: v, dk and dv must have k's shape",
                        op);
    int64_t batch = q->shape[0], seq_q = q->shape[1], heads_q = q->shape[2], d = q->shape[3];
    int64_t seq_kv = k->shape[1], heads_kv = k->shape[2];
    if (k->shape[0] != batch || k->shape[3] != d || heads_q % heads_kv != 0)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "%s: batch and head dim must agree and Hq (%lld) be a multiple of Hkv "
                        "(%lld)", op, (long long)heads_q, (long long)heads_kv);
    if (desc && desc->size < offsetof(mcl_attention_desc, reserved))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: desc->size is not set (sizeof(mcl_attention_desc))", op);
    float scale = desc ? desc->scale : 0.0f;
    int64_t kv_len = desc && desc->kv_length ? desc->kv_length : seq_kv;
    if (!isfinite(scale))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: scale is not finite", op);
    if (kv_len < 0 || kv_len > seq_kv)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: kv_length %lld outside [0, S = %lld]",
                        op, (long long)kv_len, (long long)seq_kv);
    /* Outputs are written while inputs are still read (dq's scratch feeds dk and dv), and dk,
     * dv share no storage with anything. */
    const mcl_tensor *inputs[5] = {q, k, v, out, dout};
    const mcl_tensor *outputs[3] = {dq, dk, dv};
    for (uint32_t o = 0; o < 3; o++) {
        for (uint32_t i = 0; i < 5; i++) {
            if (outputs[o] == inputs[i])
                return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                                "%s: dq, dk and dv must not alias q, k, v, out or dout", op);
        }
    }
    if (dq == dk || dq == dv || dk == dv)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: dq, dk and dv must be distinct",
                        op);
    if (d > (int64_t)MCL_ATTN_BWD_MAX_HEAD_DIM)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "%s: head dim %lld above %u", op,
                        (long long)d, MCL_ATTN_BWD_MAX_HEAD_DIM);
    /* The statistics scratch holds 4 floats per query row. */
    if (mcl_tensor_numel(q) > (int64_t)UINT32_MAX || mcl_tensor_numel(k) > (int64_t)UINT32_MAX ||
        batch * seq_q * heads_q * 4 > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "%s: more than 2^32-1 elements", op);
    if (scale == 0.0f)
        scale = (float)(1.0 / sqrt((double)d));

    bwd_tiles dq_tiles, kv_tiles;
    if ((status = plan_tiles(ctx, BWD_DQ, (uint32_t)d, &dq_tiles)) != MCL_SUCCESS ||
        (status = plan_tiles(ctx, BWD_DKDV, (uint32_t)d, &kv_tiles)) != MCL_SUCCESS)
        return status;
    int64_t group = heads_q / heads_kv;
    uint64_t rows = (uint64_t)(seq_q * group);
    uint64_t row_tiles = div_up(rows, dq_tiles.outer);
    uint64_t key_tiles = div_up((uint64_t)seq_kv, kv_tiles.outer);
    if (row_tiles > MCL_MAX_GROUPS || key_tiles > MCL_MAX_GROUPS ||
        heads_kv > (int64_t)MCL_MAX_GROUPS || batch > (int64_t)MCL_MAX_GROUPS)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                        "%s: %llu row tiles, %llu key tiles, %lld kv heads or %lld batches "
                        "exceed the 65535 workgroups per dimension", op,
                        (unsigned long long)row_tiles, (unsigned long long)key_tiles,
                        (long long)heads_kv, (long long)batch);

    const mcl_kernel *dq_kernel, *kv_kernel;
    if (stats_given && !scratch)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: given statistics need their "
                        "scratch", op);
    if ((status = tile_kernel(ctx, BWD_DQ, &dq_tiles, (uint32_t)d, stats_given, &dq_kernel)) !=
            MCL_SUCCESS ||
        (status = tile_kernel(ctx, BWD_DKDV, &kv_tiles, (uint32_t)d, 0, &kv_kernel)) !=
            MCL_SUCCESS)
        return status;

    attention_bwd_push push = {
        .seq_q = (uint32_t)seq_q,
        .seq_kv = (uint32_t)seq_kv,
        .kv_len = (uint32_t)kv_len,
        .heads_q = (uint32_t)heads_q,
        .heads_kv = (uint32_t)heads_kv,
        .group = (uint32_t)group,
        .rows = (uint32_t)rows,
        .causal = desc && desc->causal,
        .scale_log2 = (float)((double)scale * MCL_LOG2E),
        .scale = scale,
    };
    mcl_tensor *stats = NULL, *made = NULL;
    if (scratch) {
        const mcl_tensor *sc[1] = {scratch};
        if ((status = mcl_ops_check_f32(ctx, op, sc, 1)) != MCL_SUCCESS)
            return status;
        if (mcl_tensor_numel(scratch) < batch * heads_q * seq_q * 4)
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: scratch holds fewer than "
                            "B x Hq x T x 4 floats", op);
        for (uint32_t i = 0; i < 8; i++) {
            if (t[i] == scratch)
                return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: scratch aliases an "
                                "argument", op);
        }
        stats = scratch;
    } else {
        mcl_tensor_desc sd = {.size = sizeof sd, .dtype = MCL_DTYPE_F32, .ndim = 2,
                              .shape = {batch * heads_q * seq_q, 4},
                              .memory_class = MCL_MEMORY_SCRATCH};
        if ((status = mcl_tensor_create_ex(ctx, &sd, &made)) != MCL_SUCCESS)
            return status;
        stats = made;
    }
    mcl_tensor *dq_reads[5] = {(mcl_tensor *)q, (mcl_tensor *)k, (mcl_tensor *)v,
                               (mcl_tensor *)out, (mcl_tensor *)dout};
    mcl_tensor *dq_writes[2] = {dq, stats};
    /* Per visible (row, key) pair, products of D multiply-adds: dq's S, dP and dS k (and S
     * once more where it finds the statistics), dk / dv's S, dP, P^T dout and dS^T q. */
    double pairs = mcl_attention_pairs(batch, seq_q, kv_len, heads_q, push.causal);
    double row_bytes = 16.0 * (double)(batch * heads_q * seq_q);
    mcl_profile_op(ctx, "attention backward dq",
                   (double)(q->nbytes + k->nbytes + v->nbytes + out->nbytes + dout->nbytes +
                            dq->nbytes) + row_bytes,
                   (stats_given ? 6.0 : 8.0) * (double)d * pairs);
    status = mcl_dispatch(ctx, dq_kernel, dq_reads, 5, dq_writes, 2, &push,
                                 (uint32_t)row_tiles, (uint32_t)heads_kv, (uint32_t)batch);
    if (status == MCL_SUCCESS) {
        mcl_tensor *kv_reads[5] = {(mcl_tensor *)q, (mcl_tensor *)k, (mcl_tensor *)v,
                                   (mcl_tensor *)dout, stats};
        mcl_tensor *kv_writes[2] = {dk, dv};
        mcl_profile_op(ctx, "attention backward dk dv",
                       (double)(q->nbytes + k->nbytes + v->nbytes + dout->nbytes + dk->nbytes +
                                dv->nbytes) + row_bytes,
                       8.0 * (double)d * pairs);
        status = mcl_dispatch(ctx, kv_kernel, kv_reads, 5, kv_writes, 2, &push,
                              (uint32_t)key_tiles, (uint32_t)heads_kv, (uint32_t)batch);
    }
    /* Safe with the dispatches still recorded: the memory is held until they have run. */
    mcl_tensor_destroy(made);
    return status;
}
