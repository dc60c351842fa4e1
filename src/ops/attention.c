/* Multi-head attention: a tiled flash-style kernel, and a split-key path for decode.
 *
 * Both run attention_tile.glsl: a workgroup owns BQ query rows of one (batch, kv head), the
 * rows being (t, g) pairs over the G query heads that share the kv head, so grouped-query
 * attention reads each K/V tile once for all of them. It walks key tiles of BK with an online
 * softmax; no T x S score matrix exists anywhere.
 *
 * That grid has ceil(T G / BQ) x Hkv x B workgroups: plenty for a prefill, but a single
 * decode token (T = 1) gives Hkv of them, a handful, each walking the whole cache. The split
 * path then cuts the keys into slices, one workgroup per (rows, kv head, slice), writing each
 * slice's unnormalised output with its max and sum into scratch tensors; a combine kernel
 * merges the slices. The split count is chosen to fill the device, never giving a slice fewer
 * than MCL_ATTN_MIN_SPLIT_KEYS keys (below that the combine costs more than it saves). */
#include <math.h>

#include "../vk/runtime.h"
#include "matmul_quant.h"
#include "ops_internal.h"

/* Head dims the kernels accept: the per-invocation accumulator is BQ * D / WG floats. */
#define MCL_ATTN_MAX_HEAD_DIM 256u
/* Query rows per workgroup: 32 rows amortise a K/V tile (fewer when there are fewer rows); on
 * an H100 the 7B q4_0 prefill of 512 tokens ran at 6,200 and 6,231 tokens/s against 5,829 and
 * 5,715 with 16 (evidence/h100-08a7b98-prefill). */
#define MCL_ATTN_MAX_ROWS 32u
/* Keys per tile, before shrinking to fit shared memory. */
#define MCL_ATTN_KEYS 32u
#define MCL_ATTN_MIN_KEYS 8u
/* Workgroup sizes: multiples of every subgroup size in use (8, 32, 64), 8 invocations a row:
 * a 32-row tile gets 256 where the device allows (more invocations share each workgroup's
 * shared memory: the attention backward's reason, docs/tuning.md, "Attention backward"), a
 * 16-row tile 128 (the invocations Vulkan guarantees), smaller ones 64. The decode kernels'
 * few rows get 256 where the device allows, 128 for head dims of 128 and more: their
 * slices are one or a few key tiles, whose time is the length of each invocation's serial
 * work, not the device's throughput. On H100s the 7B q4_0 step's attention (head dim 128)
 * took 0.92 ms at 64, 0.58 at 128 and 0.69 at 256 (ca2cd54:evidence/h100-5793ad7-lease), and
 * 0.65 at 128 against 0.78 at 256 (d439ddb:evidence/h100-73d1970-ab); the 1B (head dim 64) decoded
 * 702, 673 and 726 tokens/s at 64, 128 and 256 (docs/inference.md). */
#define MCL_ATTN_WG_FULL 256u
#define MCL_ATTN_WG_HALF 128u
#define MCL_ATTN_WG_SMALL 64u
#define MCL_ATTN_WG_DECODE 256u
#define MCL_ATTN_WG_DECODE_WIDE 128u /* head dims of MCL_ATTN_WIDE_DIM and more */
#define MCL_ATTN_WIDE_DIM 128u
/* Split heuristics. The target is a few workgroups per compute unit on the GPUs in view
 * (RX 580: 36 CUs; large NVIDIA parts: ~130 SMs); Vulkan does not report the count. */
#define MCL_ATTN_TARGET_GROUPS 256u
#define MCL_ATTN_MIN_SPLIT_KEYS 128u
#define MCL_ATTN_MAX_SPLITS MCL_ATTENTION_DECODE_MAX_SPLITS
/* maxComputeWorkGroupCount: the minimum Vulkan guarantees in each dimension. */
#define MCL_MAX_GROUPS 65535u
#define MCL_LOG2E 1.442695040888963407360

/* Push constants of attention_f32.comp and attention_split_f32.comp (attention_tile.glsl). */
typedef struct attention_push {
    uint32_t seq_q, seq_kv, kv_len, heads_q, heads_kv, group, rows, causal;
    float scale_log2;
    uint32_t keys_per_split, splits;
    uint32_t len_slot, seq_slot;
    uint32_t act_blocks, act_first; /* the decode kernels' quantized output, 0 blocks: none */
    uint32_t pos_slot, split_half;  /* attention_decode_rope's positions and pairs */
} attention_push;

typedef struct combine_push {
    uint32_t n, dim, seq_q, heads_q, heads_kv, group, splits;
} combine_push;

typedef struct attention_plan {
    uint32_t wg, rows_per_group, keys_per_tile;
    uint32_t row_tiles;
    uint32_t splits, keys_per_split;
} attention_plan;


static uint64_t div_up(uint64_t a, uint64_t b)
{
    return (a + b - 1) / b;
}

/* Bytes of shared memory attention_tile.glsl declares: Q and K/V tiles of vec4s (head
 * vectors padded to whole vec4s, K/V rows by one more), scores, reductions, row state. */
static uint64_t tile_shared_bytes(uint32_t wg, uint32_t d, uint32_t bq, uint32_t bk,
                                  int combine)
{
    uint64_t d4 = (d + 3) / 4;
    uint64_t bytes = 16u * ((uint64_t)bq * d4 + (uint64_t)bk * (d4 + 1)) +
                     4u * ((uint64_t)bq * bk + 2u * wg + 4u * bq);
    /* The decode kernels' combine (attention_split.glsl, SPLIT_COMBINE): its quantization
     * (8 WG), its count, and each slice's max and sum per row (2 x 64 x BQ floats). */
    if (combine)
        bytes += 8u * wg + 4u + 8u * MCL_ATTN_MAX_SPLITS * (uint64_t)bq;
    return bytes;
}

/* `combine`: the decode kernels' plan. */
static mcl_status make_plan(mcl_context *ctx, uint32_t rows, uint32_t d, uint32_t kv_len,
                            uint32_t heads_kv, uint32_t batch, uint32_t force_splits,
                            int combine, attention_plan *plan)
{
    uint32_t bq = 1;
    while (bq < rows && bq < MCL_ATTN_MAX_ROWS)
        bq *= 2;
    uint32_t wg = bq >= MCL_ATTN_MAX_ROWS         ? MCL_ATTN_WG_FULL
                  : bq * 2 >= MCL_ATTN_MAX_ROWS   ? MCL_ATTN_WG_HALF
                                                  : MCL_ATTN_WG_SMALL;
    const mcl_traits *traits = mcl_traits_of(ctx);
    while (wg > traits->max_invocations && wg > MCL_ATTN_WG_SMALL)
        wg /= 2;
    /* The decode kernels' workgroup (MOTIFCL_ATTENTION_WG where set), within the device's. */
    if (combine) {
        wg = traits->attention_wg          ? traits->attention_wg
             : d >= MCL_ATTN_WIDE_DIM      ? MCL_ATTN_WG_DECODE_WIDE
                                           : MCL_ATTN_WG_DECODE;
        while (wg > traits->max_invocations && wg > MCL_ATTN_WG_SMALL)
            wg /= 2;
    }
    uint32_t bk = MCL_ATTN_KEYS;
    /* Vulkan guarantees only 16 KiB of shared memory; large head dims shrink the key tile
     * first (it costs more barriers, not more loads), then the query tile. */
    while (tile_shared_bytes(wg, d, bq, bk, combine) > traits->max_shared_bytes) {
        if (bk > MCL_ATTN_MIN_KEYS)
            bk /= 2;
        else if (bq > 1)
            bq /= 2;
        else
            return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                            "mcl_attention: head dim %u does not fit %u bytes of shared memory",
                            d, traits->max_shared_bytes);
    }
    uint64_t row_tiles = div_up(rows, bq);
    if (row_tiles > MCL_MAX_GROUPS || heads_kv > MCL_MAX_GROUPS || batch > MCL_MAX_GROUPS)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                        "mcl_attention: %llu row tiles x %u kv heads x %u batches exceed the "
                        "65535 workgroups per dimension", (unsigned long long)row_tiles,
                        heads_kv, batch);

    uint64_t splits = force_splits;
    if (splits == 0) {
        uint64_t groups = row_tiles * heads_kv * batch;
        splits = div_up(MCL_ATTN_TARGET_GROUPS, groups);
        if (splits > div_up(kv_len, MCL_ATTN_MIN_SPLIT_KEYS))
            splits = div_up(kv_len, MCL_ATTN_MIN_SPLIT_KEYS);
        if (splits > MCL_ATTN_MAX_SPLITS)
            splits = MCL_ATTN_MAX_SPLITS;
    }
    /* A slice holds at least one key tile, and batch x slices fits the z dimension. */
    if (splits > div_up(kv_len, bk))
        splits = div_up(kv_len, bk);
    if (splits > MCL_MAX_GROUPS / batch)
        splits = MCL_MAX_GROUPS / batch;
    uint64_t keys_per_split = kv_len;
    if (splits > 1) {
        keys_per_split = div_up(div_up(kv_len, splits), bk) * bk;
        splits = div_up(kv_len, keys_per_split);  /* no empty slice at the end */
    }
    *plan = (attention_plan){
        .wg = wg,
        .rows_per_group = bq,
        .keys_per_tile = bk,
        .row_tiles = (uint32_t)row_tiles,
        .splits = splits < 1 ? 1 : (uint32_t)splits,
        .keys_per_split = (uint32_t)keys_per_split,
    };
    return MCL_SUCCESS;
}

/* q and out f32; k and v both f32, or both f16 where the device stores 16-bit values. */
static mcl_status kv_check(mcl_context *ctx, const char *op, const mcl_tensor *q,
                           const mcl_tensor *k, const mcl_tensor *v, const mcl_tensor *out)
{
    if (q->dtype != MCL_DTYPE_F32 || out->dtype != MCL_DTYPE_F32 || k->dtype != v->dtype ||
        (k->dtype != MCL_DTYPE_F32 && k->dtype != MCL_DTYPE_F16))
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "%s takes f32 q and out, and k and v both f32 or both f16", op);
    if (k->dtype == MCL_DTYPE_F16 &&
        !(mcl_traits_of(ctx)->features & MCL_FEATURE_STORAGE_16BIT))
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "%s: f16 k and v need 16-bit storage, which this device lacks", op);
    return MCL_SUCCESS;
}

static mcl_status tile_kernel(mcl_context *ctx, mcl_kernel_id id, uint32_t bindings,
                              const attention_plan *plan, uint32_t d, const mcl_kernel **out)
{
    mcl_kernel_desc desc = {
        .id = id,
        .binding_count = bindings,
        .push_size = sizeof(attention_push),
        .local_size_x = plan->wg,
        .spec_count = 3,
        .spec = {d, plan->rows_per_group, plan->keys_per_tile},
    };
    mcl_status status = mcl_kernel_get(ctx, &desc, out);
    /* The shader's row reductions assume exactly wg invocations. */
    if (status == MCL_SUCCESS && mcl_kernel_local_size(*out) != plan->wg)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "mcl_attention: the device allows fewer than %u invocations per "
                        "workgroup", plan->wg);
    return status;
}

/* The split path: slices of the keys into scratch tensors, then the combine. `reads` are q,
 * k and v, and for attention_decode_f32 the lengths; `scratch`, where not NULL, the caller's
 * two scratch tensors (large enough), else they are made here. */
static mcl_status attend_split(mcl_context *ctx, mcl_kernel_id id, mcl_tensor *const *reads,
                               uint32_t read_count, mcl_tensor *out, const attention_plan *plan,
                               const attention_push *push, uint32_t batch, uint32_t d,
                               mcl_tensor *const *scratch)
{
    const mcl_kernel *split_kernel, *combine_kernel;
    mcl_status status;
    if ((status = tile_kernel(ctx, id, read_count + 2, plan, d, &split_kernel)) !=
            MCL_SUCCESS ||
        (status = mcl_kernel_simple(ctx, MCL_KERNEL_ATTENTION_COMBINE_F32, 3,
                                    sizeof(combine_push), &combine_kernel)) != MCL_SUCCESS)
        return status;

    int64_t slots = (int64_t)batch * plan->splits * push->heads_kv;
    int64_t part_o_shape[3] = {slots, push->rows, d};
    int64_t part_ml_shape[3] = {slots, push->rows, 2};
    if (slots * push->rows * (int64_t)d > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                        "mcl_attention: split partials exceed 2^32-1 elements");
    mcl_tensor *parts[2] = {NULL, NULL};
    mcl_tensor *made[2] = {NULL, NULL};
    if (scratch) {
        parts[0] = scratch[0];
        parts[1] = scratch[1];
    } else if ((status = mcl_tensor_create(ctx, MCL_DTYPE_F32, 3, part_o_shape, &made[0])) !=
                   MCL_SUCCESS ||
               (status = mcl_tensor_create(ctx, MCL_DTYPE_F32, 3, part_ml_shape, &made[1])) !=
                   MCL_SUCCESS) {
        goto done;
    } else {
        parts[0] = made[0];
        parts[1] = made[1];
    }

    status = mcl_dispatch(ctx, split_kernel, reads, read_count, parts, 2, push, plan->row_tiles,
                                 push->heads_kv, batch * plan->splits);
    if (status != MCL_SUCCESS)
        goto done;

    int64_t n = mcl_tensor_numel(out);
    combine_push cpush = {
        .n = (uint32_t)n,
        .dim = d,
        .seq_q = push->seq_q,
        .heads_q = push->heads_q,
        .heads_kv = push->heads_kv,
        .group = push->group,
        .splits = plan->splits,
    };
    uint64_t groups = div_up((uint64_t)n, mcl_kernel_local_size(combine_kernel));
    if (groups > MCL_MAX_GROUPS)
        groups = MCL_MAX_GROUPS;
    status = mcl_dispatch(ctx, combine_kernel, parts, 2, &out, 1, &cpush,
                                 (uint32_t)groups, 1, 1);
done:
    /* Safe with the dispatches still recorded: the memory is held until they have run. */
    mcl_tensor_destroy(made[0]);
    mcl_tensor_destroy(made[1]);
    return status;
}

/* attention_mma.comp: 64 query rows a workgroup of 128, key tiles of 32; its shared memory
 * (f16 rows of D + 8 halves for Q, K and V, the scores, P, the row sums). docs/tuning.md,
 * "Prompt attention on matrices". */
#define ATT_MMA_THREADS 128u
#define ATT_MMA_ROWS 64u
static uint32_t mma_shared_bytes(uint32_t d)
{
    return (ATT_MMA_ROWS + 2u * 32u) * (d + 8u) * 2u + ATT_MMA_ROWS * 32u * 4u +
           ATT_MMA_ROWS * 40u * 2u + ATT_MMA_ROWS * 4u;
}

/* Whether attention_mma.comp takes a product of head dimension d and rows query rows. */
static int mma_takes(const mcl_context *ctx, uint32_t d, uint32_t rows, int f16, int stats)
{
    const mcl_traits *t = mcl_traits_of(ctx);
    return t->cooperative_matrix && !t->attention_f32 && !f16 && !stats && d % 16 == 0 &&
           d <= 128 && rows >= ATT_MMA_ROWS && mma_shared_bytes(d) <= t->max_shared_bytes &&
           (t->subgroup_size == 32 || t->subgroup_size_control);
}

/* mcl_attention_ex, and with stats not NULL mcl_attention_stats (never split); with matrix
 * set, mcl_attention_prompt (attention_mma.comp where it applies). */
static mcl_status attention_full(mcl_context *ctx, const mcl_tensor *q, const mcl_tensor *k,
                                 const mcl_tensor *v, const mcl_attention_desc *desc,
                                 uint32_t force_splits, uint32_t *splits_used, mcl_tensor *out,
                                 mcl_tensor *stats, int matrix)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!q || !k || !v || !out)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_attention: NULL tensor");
    if (q->ctx != ctx || k->ctx != ctx || v->ctx != ctx || out->ctx != ctx)
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_attention: tensor of another context");
    mcl_status status = kv_check(ctx, "mcl_attention", q, k, v, out);
    if (status != MCL_SUCCESS)
        return status;
    int f16 = k->dtype == MCL_DTYPE_F16;
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4 || out->ndim != 4)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_attention: q, out are [B, T, Hq, D], k, v [B, S, Hkv, D]");
    for (uint32_t i = 0; i < 4; i++) {
        if (k->shape[i] != v->shape[i] || out->shape[i] != q->shape[i])
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "mcl_attention: k and v, q and out must have equal shapes");
    }
    int64_t batch = q->shape[0], seq_q = q->shape[1], heads_q = q->shape[2], d = q->shape[3];
    int64_t seq_kv = k->shape[1], heads_kv = k->shape[2];
    if (k->shape[0] != batch || k->shape[3] != d || heads_q % heads_kv != 0)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_attention: batch and head dim must agree and Hq (%lld) be a "
                        "multiple of Hkv (%lld)", (long long)heads_q, (long long)heads_kv);
    if (desc && desc->size < offsetof(mcl_attention_desc, reserved))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_attention: desc->size is not set (sizeof(mcl_attention_desc))");
    float scale = desc ? desc->scale : 0.0f;
    int64_t kv_len = desc && desc->kv_length ? desc->kv_length : seq_kv;
    if (!isfinite(scale))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_attention: scale is not finite");
    if (kv_len < 0 || kv_len > seq_kv)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_attention: kv_length %lld outside [0, S = %lld]",
                        (long long)kv_len, (long long)seq_kv);
    if (d > (int64_t)MCL_ATTN_MAX_HEAD_DIM)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_attention: head dim %lld above %u",
                        (long long)d, MCL_ATTN_MAX_HEAD_DIM);
    if (out == q || out == k || out == v)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_attention: out aliases an input");
    if (mcl_tensor_numel(q) > (int64_t)UINT32_MAX || mcl_tensor_numel(k) > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "mcl_attention: more than 2^32-1 elements");
    if (scale == 0.0f)
        scale = (float)(1.0 / sqrt((double)d));
    if (stats) {
        if (stats->ctx != ctx)
            return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT,
                            "mcl_attention: tensor of another context");
        if (f16 || stats->dtype != MCL_DTYPE_F32 ||
            mcl_tensor_numel(stats) < batch * heads_q * seq_q * 4)
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_attention: the statistics "
                            "need f32 k and v and an f32 tensor of B x Hq x T x 4 floats");
        if (stats == q || stats == k || stats == v || stats == out)
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "mcl_attention: the statistics alias an argument");
        force_splits = 1;
    }

    int64_t group = heads_q / heads_kv;
    attention_push push = {
        .seq_q = (uint32_t)seq_q,
        .seq_kv = (uint32_t)seq_kv,
        .kv_len = (uint32_t)kv_len,
        .heads_q = (uint32_t)heads_q,
        .heads_kv = (uint32_t)heads_kv,
        .group = (uint32_t)group,
        .rows = (uint32_t)(seq_q * group),
        .causal = desc && desc->causal,
        .scale_log2 = (float)((double)scale * MCL_LOG2E),
    };
    attention_plan plan;
    status = make_plan(ctx, push.rows, (uint32_t)d, push.kv_len, push.heads_kv,
                       (uint32_t)batch, force_splits, 0, &plan);
    if (status != MCL_SUCCESS)
        return status;
    push.keys_per_split = plan.keys_per_split;
    push.splits = plan.splits;
    if (splits_used)
        *splits_used = plan.splits;

    mcl_tensor *qkv[3] = {(mcl_tensor *)q, (mcl_tensor *)k, (mcl_tensor *)v};
    double flops = 4.0 * (double)d *
                   mcl_attention_pairs(batch, seq_q, kv_len, heads_q, push.causal);
    double bytes = (double)(q->nbytes + k->nbytes + v->nbytes + out->nbytes);
    if (matrix && mma_takes(ctx, (uint32_t)d, push.rows, f16, stats != NULL)) {
        const mcl_traits *t = mcl_traits_of(ctx);
        mcl_kernel_desc md = {
            .id = MCL_KERNEL_ATTENTION_MMA,
            .binding_count = 4,
            .push_size = sizeof(attention_push),
            .local_size_x = ATT_MMA_THREADS,
            .spec_count = 1,
            .spec = {(uint32_t)d},
            .required_subgroup_size = t->subgroup_size_control ? 32u : 0u,
        };
        const mcl_kernel *kernel;
        if ((status = mcl_kernel_exact(ctx, &md, &kernel)) != MCL_SUCCESS)
            return status;
        /* The scores are computed twice (the passes). */
        mcl_profile_op(ctx, "attention, matrix", bytes, 1.5 * flops);
        return mcl_dispatch(ctx, kernel, qkv, 3, &out, 1, &push,
                            (push.rows + ATT_MMA_ROWS - 1) / ATT_MMA_ROWS, push.heads_kv,
                            (uint32_t)batch);
    }
    if (plan.splits > 1)
        return attend_split(ctx, f16 ? MCL_KERNEL_ATTENTION_SPLIT_F16KV
                                     : MCL_KERNEL_ATTENTION_SPLIT_F32, qkv, 3, out, &plan, &push,
                            (uint32_t)batch, (uint32_t)d, NULL);
    const mcl_kernel *kernel;
    mcl_kernel_id id = stats ? MCL_KERNEL_ATTENTION_STATS_F32
                       : f16 ? MCL_KERNEL_ATTENTION_F16KV
                             : MCL_KERNEL_ATTENTION_F32;
    if ((status = tile_kernel(ctx, id, stats ? 5 : 4, &plan, (uint32_t)d, &kernel)) !=
        MCL_SUCCESS)
        return status;
    mcl_tensor *writes[2] = {out, stats};
    /* Two products of D multiply-adds per visible (row, key) pair. */
    mcl_profile_op(ctx, "attention",
                   bytes + (stats ? 16.0 * (double)(batch * heads_q * seq_q) : 0.0), flops);
    return mcl_dispatch(ctx, kernel, qkv, 3, writes, stats ? 2 : 1, &push, plan.row_tiles,
                        push.heads_kv, (uint32_t)batch);
}

double mcl_attention_pairs(int64_t batch, int64_t seq_q, int64_t kv_len, int64_t heads_q,
                           int causal)
{
    double keys = 0.0;
    for (int64_t t = 0; t < seq_q; t++) {
        int64_t seen = causal ? t + kv_len - seq_q + 1 : kv_len;
        keys += (double)(seen < 0 ? 0 : seen > kv_len ? kv_len : seen);
    }
    return keys * (double)batch * (double)heads_q;
}

mcl_status mcl_attention_ex(mcl_context *ctx, const mcl_tensor *q, const mcl_tensor *k,
                            const mcl_tensor *v, const mcl_attention_desc *desc,
                            uint32_t force_splits, uint32_t *splits_used, mcl_tensor *out)
{
    return attention_full(ctx, q, k, v, desc, force_splits, splits_used, out, NULL, 0);
}

mcl_status mcl_attention_prompt(mcl_context *ctx, const mcl_tensor *q, const mcl_tensor *k,
                                const mcl_tensor *v, const mcl_attention_desc *desc,
                                mcl_tensor *out)
{
    return attention_full(ctx, q, k, v, desc, 0, NULL, out, NULL, 1);
}

mcl_status mcl_attention_stats(mcl_context *ctx, const mcl_tensor *q, const mcl_tensor *k,
                               const mcl_tensor *v, const mcl_attention_desc *desc,
                               mcl_tensor *out, mcl_tensor *stats)
{
    if (ctx && !stats)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_attention: NULL tensor");
    return attention_full(ctx, q, k, v, desc, 1, NULL, out, stats, 0);
}

mcl_status mcl_attention(mcl_context *ctx, const mcl_tensor *q, const mcl_tensor *k,
                         const mcl_tensor *v, const mcl_attention_desc *desc, mcl_tensor *out)
{
    return mcl_attention_ex(ctx, q, k, v, desc, 0, NULL, out);
}

/* mcl_attention_decode, and with rope not NULL mcl_attention_decode_rope. */
static mcl_status attention_decode(mcl_context *ctx, mcl_tensor *q, mcl_tensor *k,
                                   mcl_tensor *v, mcl_tensor *lens, uint32_t len_slot,
                                   uint32_t seq_slot, const mcl_decode_rope *rope,
                                   mcl_tensor *part_o, mcl_tensor *part_ml,
                                   mcl_tensor *counters, mcl_tensor *act, uint32_t act_first,
                                   uint32_t act_blocks, mcl_tensor *out)
{
    if (!q || !k || !v || !lens || !out || !part_o || !part_ml || !counters)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_attention_decode: NULL tensor");
    if (rope) {
        const mcl_tensor *kn = rope->k_new, *vn = rope->v_new, *table = rope->table;
        if (!kn || !vn || !table)
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "mcl_attention_decode_rope: NULL tensor");
        if (kn->dtype != MCL_DTYPE_F32 || vn->dtype != MCL_DTYPE_F32 ||
            table->dtype != MCL_DTYPE_F32)
            return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                            "mcl_attention_decode_rope: k_new, v_new and the table are f32");
        if (q->ndim != 4 || k->ndim != 4 || kn->ndim != 3 || !mcl_tensor_same_shape(kn, vn) ||
            kn->shape[0] != q->shape[0] || kn->shape[1] != k->shape[2] ||
            kn->shape[2] != k->shape[3] || k->shape[3] % 8 != 0 || table->ndim != 2 ||
            table->shape[0] != k->shape[3] / 2 || table->shape[1] != 2 ||
            (int64_t)rope->pos_slot + q->shape[0] > mcl_tensor_numel(lens))
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "mcl_attention_decode_rope: k_new, v_new [B, Hkv, D], D a multiple "
                            "of 8, the table [D / 2, 2], the positions inside lens");
    }
    if (q->ndim != 4 || k->ndim != 4 || v->ndim != 4 || out->ndim != 4 || q->shape[1] != 1 ||
        !mcl_tensor_same_shape(k, v) || !mcl_tensor_same_shape(q, out) ||
        k->shape[3] != q->shape[3] || q->shape[2] % k->shape[2] != 0 ||
        q->shape[3] > (int64_t)MCL_ATTN_MAX_HEAD_DIM || q->shape[3] % 4 != 0 ||
        (seq_slot == MCL_SLOT_NONE && q->shape[0] > k->shape[0]))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_attention_decode: q, out [B, 1, Hq, D], k, v [sequences, S, Hkv, D], "
                        "D a multiple of 4");
    mcl_status checked = kv_check(ctx, "mcl_attention_decode", q, k, v, out);
    if (checked != MCL_SUCCESS)
        return checked;
    if (lens->dtype != MCL_DTYPE_I32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_attention_decode: lens is i32");
    int64_t batch = q->shape[0], slots = mcl_tensor_numel(lens);
    if ((int64_t)len_slot + batch > slots ||
        (seq_slot != MCL_SLOT_NONE && (int64_t)seq_slot + batch > slots) ||
        mcl_tensor_numel(k) > (int64_t)UINT32_MAX || batch > 65535)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_attention_decode: slots outside lens, or k or the batch too large");
    uint32_t d = (uint32_t)q->shape[3], seq_kv = (uint32_t)k->shape[1];
    uint32_t heads_q = (uint32_t)q->shape[2], heads_kv = (uint32_t)k->shape[2];
    attention_push push = {
        .seq_q = 1,
        .seq_kv = seq_kv,
        .kv_len = seq_kv,
        .heads_q = heads_q,
        .heads_kv = heads_kv,
        .group = heads_q / heads_kv,
        .rows = heads_q / heads_kv,
        .causal = 0,
        .scale_log2 = (float)(MCL_LOG2E / sqrt((double)d)),
        .len_slot = len_slot,
        .seq_slot = seq_slot,
    };
    /* Slices to fill the device at the longest length; each replay spreads its length over
     * them a key tile at least each (attention_decode_f32.comp). */
    uint64_t splits = div_up(MCL_ATTN_TARGET_GROUPS, heads_kv * (uint64_t)batch);
    if (splits > div_up(seq_kv, MCL_ATTN_KEYS))
        splits = div_up(seq_kv, MCL_ATTN_KEYS);
    if (splits > MCL_ATTN_MAX_SPLITS)
        splits = MCL_ATTN_MAX_SPLITS;
    if (mcl_traits_of(ctx)->attention_splits) /* MOTIFCL_ATTENTION_SPLITS (tuning) */
        splits = mcl_traits_of(ctx)->attention_splits;
    attention_plan plan;
    mcl_status status = make_plan(ctx, push.rows, d, seq_kv, heads_kv, (uint32_t)batch,
                                  (uint32_t)splits, 1, &plan);
    if (status != MCL_SUCCESS)
        return status;
    push.keys_per_split = plan.keys_per_split;
    push.splits = plan.splits;
    if (part_o->dtype != MCL_DTYPE_F32 || part_ml->dtype != MCL_DTYPE_F32 ||
        mcl_tensor_numel(part_o) < batch * plan.splits * heads_q * d ||
        mcl_tensor_numel(part_ml) < batch * plan.splits * heads_q * 2)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_attention_decode: the scratch holds fewer than B x %u x Hq x (D, 2) "
                        "floats", plan.splits);
    if (counters->dtype != MCL_DTYPE_I32 ||
        mcl_tensor_numel(counters) < batch * heads_kv * (int64_t)plan.row_tiles)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_attention_decode: counters holds fewer than B x Hkv x %u i32",
                        plan.row_tiles);
    /* One dispatch: the slice that finishes last merges them (attention_split.glsl). */
    const mcl_kernel *kernel;
    int f16 = k->dtype == MCL_DTYPE_F16;
    mcl_kernel_id id = rope ? (f16 ? MCL_KERNEL_ATTENTION_DECODE_ROPE_F16KV
                                   : MCL_KERNEL_ATTENTION_DECODE_ROPE_F32)
                            : (f16 ? MCL_KERNEL_ATTENTION_DECODE_F16KV
                                   : MCL_KERNEL_ATTENTION_DECODE_F32);
    mcl_status status_k = tile_kernel(ctx, id, rope ? 12 : 9, &plan, d, &kernel);
    if (status_k != MCL_SUCCESS)
        return status_k;
    if (act) {
        uint64_t blocks = (uint64_t)mcl_tensor_numel(out) / 32;
        if (act->dtype != MCL_DTYPE_I32 || d % 32 != 0 || act_blocks == 0 ||
            (uint64_t)act_first + blocks > act_blocks ||
            (uint64_t)mcl_tensor_numel(act) < 10ull * act_blocks)
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "mcl_attention_decode: act is i32 of 10 x act_blocks words, out's "
                            "blocks from act_first among them, D a multiple of 32");
        push.act_blocks = act_blocks;
        push.act_first = act_first;
    }
    uint32_t groups_z = (uint32_t)batch * plan.splits;
    /* Without act, a binding the kernel never touches: out's. */
    if (rope) {
        push.pos_slot = rope->pos_slot;
        push.split_half = rope->layout == MCL_ROPE_SPLIT_HALF;
        mcl_tensor *reads[5] = {q, lens, rope->table, rope->k_new, rope->v_new};
        mcl_tensor *writes[7] = {k, v, part_o, part_ml, out, counters, act ? act : out};
        return mcl_dispatch(ctx, kernel, reads, 5, writes, 7, &push, plan.row_tiles, heads_kv,
                            groups_z);
    }
    mcl_tensor *reads[4] = {q, k, v, lens};
    mcl_tensor *writes[5] = {part_o, part_ml, out, counters, act ? act : out};
    return mcl_dispatch(ctx, kernel, reads, 4, writes, 5, &push, plan.row_tiles, heads_kv,
                        groups_z);
}

mcl_status mcl_attention_decode(mcl_context *ctx, mcl_tensor *q, mcl_tensor *k, mcl_tensor *v,
                                mcl_tensor *lens, uint32_t len_slot, uint32_t seq_slot,
                                mcl_tensor *part_o, mcl_tensor *part_ml, mcl_tensor *counters,
                                mcl_tensor *act, uint32_t act_first, uint32_t act_blocks,
                                mcl_tensor *out)
{
    return attention_decode(ctx, q, k, v, lens, len_slot, seq_slot, NULL, part_o, part_ml,
                            counters, act, act_first, act_blocks, out);
}

mcl_status mcl_attention_decode_rope(mcl_context *ctx, mcl_tensor *q, mcl_tensor *k,
                                     mcl_tensor *v, mcl_tensor *lens, uint32_t len_slot,
                                     uint32_t seq_slot, const mcl_decode_rope *rope,
                                     mcl_tensor *part_o, mcl_tensor *part_ml,
                                     mcl_tensor *counters, mcl_tensor *act, uint32_t act_first,
                                     uint32_t act_blocks, mcl_tensor *out)
{
    if (!rope)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_attention_decode_rope: NULL rope");
    return attention_decode(ctx, q, k, v, lens, len_slot, seq_slot, rope, part_o, part_ml,
                            counters, act, act_first, act_blocks, out);
}
