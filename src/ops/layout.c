/* Layout operations: RoPE, embedding gather, copy, permute, concat. (The gather from a
 * block-quantised table dequantizes, and is in embedding_quant.c.)
 *
 * None of them combines elements, so each is one grid-stride kernel over its output: an
 * invocation owns output elements (writes never race) and reads the one input element that
 * lands there. Copy, permute and concat move 32-bit words whatever they mean, so one kernel
 * serves every 4-byte dtype. */
#include <math.h>
#include <stddef.h>

#include "../vk/runtime.h"
#include "ops_internal.h"

/* A grid-stride loop covers any size; more workgroups than this add nothing, and it is the
 * smallest maxComputeWorkGroupCount[0] that Vulkan allows. */
#define MCL_MAX_LAYOUT_GROUPS 65535u

/* rope_f32.comp builds a pair's frequency from this many bits of the pair index. */
#define MCL_ROPE_FREQ_BITS 8
#define MCL_ROPE_MAX_HEAD_DIM (2u << MCL_ROPE_FREQ_BITS)
/* Positions are converted to float in the shader: exact below 2^24. */
#define MCL_ROPE_MAX_POSITION (1ll << 24)
/* M_PI is not in strict C11. */
#define MCL_TWO_PI 6.283185307179586476925

typedef struct copy_push {
    uint32_t n;
} copy_push;

typedef struct permute_push {
    uint32_t n;
    uint32_t shape[3];   /* destination dims 1..3 */
    uint32_t stride[4];  /* per destination axis: the source stride of the axis it came from */
} permute_push;

typedef struct concat_push {
    uint32_t n, inner, na, nb;
} concat_push;

typedef struct embedding_push {
    uint32_t n, dim, vocab;
} embedding_push;

/* rope_table_f32.comp's Push. */
typedef struct rope_table_push {
    uint32_t npairs, half_dim, heads, seq, pos0, split_half;
} rope_table_push;

/* rope_kv_f32.comp's Push. */
typedef struct rope_kv_push {
    uint32_t row0, pos_slot, seq_slot, heads_q, heads_kv, half_dim, split_half, seq_kv;
    uint32_t sequences;
} rope_kv_push;

/* rope_f32.comp's Push. The double-float constants are float pairs hi + lo (see
 * split_double). */
typedef struct rope_push {
    uint32_t npairs, half_dim, heads, seq, pos0, split_half;
    float c0_hi, c0_lo;                /* 1 / (2 pi) */
    float r_hi[MCL_ROPE_FREQ_BITS];    /* theta^(-2 * 2^b / Dh) */
    float r_lo[MCL_ROPE_FREQ_BITS];
} rope_push;
/* What every Vulkan device allows: the required minimum of maxPushConstantsSize. */
#define MCL_MIN_PUSH_CONSTANT_BYTES 128
_Static_assert(sizeof(rope_push) <= MCL_MIN_PUSH_CONSTANT_BYTES,
               "rope_push must fit every device's push constants");
/* 6 + 2 + 8 + 8 four-byte words, laid out as std430 lays out Push. */
_Static_assert(sizeof(rope_push) == 96 && offsetof(rope_push, c0_hi) == 24 &&
                   offsetof(rope_push, r_hi) == 32 && offsetof(rope_push, r_lo) == 64,
               "rope_push must match rope_f32.comp's Push");

static int owned(const mcl_context *ctx, const mcl_tensor *t)
{
    return t->ctx == ctx;
}

/* v as an unevaluated float pair hi + lo: hi = (float)v, and lo the rest rounded to float,
 * which together carry about 48 bits of v. */
static void split_double(double v, float *hi, float *lo)
{
    *hi = (float)v;
    *lo = (float)(v - (double)*hi);
}

/* Record the kernel `desc` asks for over n output elements, one invocation each, the grid
 * capped. */
static mcl_status dispatch_grid(mcl_context *ctx, const mcl_kernel_desc *desc, uint64_t n,
                                mcl_tensor *const *reads, uint32_t read_count,
                                mcl_tensor *const *writes, uint32_t write_count,
                                const void *push)
{
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_get(ctx, desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    uint64_t groups = (n + mcl_kernel_local_size(kernel) - 1) / mcl_kernel_local_size(kernel);
    if (groups > MCL_MAX_LAYOUT_GROUPS)
        groups = MCL_MAX_LAYOUT_GROUPS;
    return mcl_dispatch(ctx, kernel, reads, read_count, writes, write_count, push,
                               (uint32_t)groups, 1, 1);
}

/* dispatch_grid() for a kernel with no specialization. */
static mcl_status dispatch_simple(mcl_context *ctx, mcl_kernel_id id, uint64_t n,
                                  mcl_tensor *const *reads, uint32_t read_count,
                                  mcl_tensor *const *writes, uint32_t write_count,
                                  const void *push, uint32_t push_size)
{
    mcl_kernel_desc desc = {
        .id = id,
        .binding_count = read_count + write_count,
        .push_size = push_size,
    };
    return dispatch_grid(ctx, &desc, n, reads, read_count, writes, write_count, push);
}

/* RoPE forward, or with `backward` the rotation by the opposite angle (its gradient): the
 * same kernel and the same angle bits, with the sine negated. */
/* The checks every RoPE op makes of x, out, the layout and the positions. */
static mcl_status rope_check(mcl_context *ctx, const char *op, const mcl_tensor *x,
                             mcl_rope_layout layout, int64_t position_offset,
                             const mcl_tensor *out)
{
    if (!owned(ctx, x) || !owned(ctx, out))
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "%s: tensor of another context", op);
    if (x->dtype != MCL_DTYPE_F32 || out->dtype != MCL_DTYPE_F32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "%s takes f32 tensors", op);
    if (x->ndim != 4 || !mcl_tensor_same_shape(x, out))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "%s: x must be [B, T, H, Dh] and out the same shape", op);
    int64_t head_dim = x->shape[3];
    if (head_dim % 2 != 0)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: head dim %lld is odd", op,
                        (long long)head_dim);
    if (head_dim > (int64_t)MCL_ROPE_MAX_HEAD_DIM)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "%s: head dim %lld above %u", op,
                        (long long)head_dim, MCL_ROPE_MAX_HEAD_DIM);
    if (layout != MCL_ROPE_INTERLEAVED && layout != MCL_ROPE_SPLIT_HALF)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: unknown layout %d", op,
                        (int)layout);
    if (position_offset < 0 || position_offset > MCL_ROPE_MAX_POSITION - x->shape[1])
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: positions must lie in [0, 2^24) (offset %lld, T %lld)", op,
                        (long long)position_offset, (long long)x->shape[1]);
    if (mcl_tensor_numel(x) / 2 > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "%s: more than 2^32-1 pairs", op);
    return MCL_SUCCESS;
}

static mcl_status rope_record(mcl_context *ctx, const char *op, const mcl_tensor *x,
                              mcl_rope_layout layout, float theta_base, int64_t position_offset,
                              mcl_tensor *out, int backward)
{
    if (!ctx || !x || !out)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = rope_check(ctx, op, x, layout, position_offset, out);
    if (status != MCL_SUCCESS)
        return status;
    if (!(theta_base > 0.0f) || !isfinite(theta_base))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: theta_base must be positive and finite", op);
    int64_t head_dim = x->shape[3], npairs = mcl_tensor_numel(x) / 2;

    /* Frequencies in turns per position, f_i = c0 * prod r[b] over the set bits b of i, the
     * factors computed in double here and passed as float pairs: the shader multiplies them
     * out, and by the position, in double-float (about 48 bits) with float add, subtract and
     * multiply alone, which every driver rounds the same way. A float product pos * f_i would
     * lose up to half its ulp, 2^-11 of a turn at 2^16; the reduced angle is instead within a
     * few ulp of the exact one at any position below 2^24. */
    rope_push push = {
        .npairs = (uint32_t)npairs,
        .half_dim = (uint32_t)(head_dim / 2),
        .heads = (uint32_t)x->shape[2],
        .seq = (uint32_t)x->shape[1],
        .pos0 = (uint32_t)position_offset,
        .split_half = layout == MCL_ROPE_SPLIT_HALF,
    };
    split_double(1.0 / MCL_TWO_PI, &push.c0_hi, &push.c0_lo);
    for (int b = 0; b < MCL_ROPE_FREQ_BITS; b++)
        split_double(pow((double)theta_base, -2.0 * (double)(1u << b) / (double)head_dim),
                     &push.r_hi[b], &push.r_lo[b]);
    /* In place, the kernel's variant reads through the output binding: reading one buffer
     * through a readonly binding while writing it through another is undefined. */
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_ROPE_F32,
        .binding_count = 2,
        .push_size = sizeof push,
        .spec_count = 2,
        .spec = {x == out, (uint32_t)backward},  /* IN_PLACE, BACKWARD */
    };
    mcl_tensor *reads[1] = {(mcl_tensor *)x};
    return dispatch_grid(ctx, &desc, (uint64_t)npairs, reads, 1, &out, 1, &push);
}

mcl_status mcl_rope(mcl_context *ctx, const mcl_tensor *x, mcl_rope_layout layout,
                    float theta_base, int64_t position_offset, mcl_tensor *out)
{
    return rope_record(ctx, "mcl_rope", x, layout, theta_base, position_offset, out, 0);
}

mcl_status mcl_rope_backward(mcl_context *ctx, const mcl_tensor *dy, mcl_rope_layout layout,
                             float theta_base, int64_t position_offset, mcl_tensor *dx)
{
    return rope_record(ctx, "mcl_rope_backward", dy, layout, theta_base, position_offset, dx, 1);
}

void mcl_rope_table_values(double theta_base, uint32_t head_dim, const float *factors,
                           float *table)
{
    for (uint32_t i = 0; i < head_dim / 2; i++) {
        double f = pow(theta_base, -2.0 * (double)i / (double)head_dim) / MCL_TWO_PI;
        if (factors)
            f /= (double)factors[i];
        split_double(f, &table[2 * i], &table[2 * i + 1]);
    }
}

mcl_status mcl_rope_table(mcl_context *ctx, const mcl_tensor *x, mcl_rope_layout layout,
                          const mcl_tensor *table, int64_t position_offset, mcl_tensor *out)
{
    const char *op = "mcl_rope_table";
    if (!ctx || !x || !table || !out)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = rope_check(ctx, op, x, layout, position_offset, out);
    if (status != MCL_SUCCESS)
        return status;
    if (!owned(ctx, table))
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "%s: tensor of another context", op);
    if (table->dtype != MCL_DTYPE_F32 || table->ndim != 2 || table->shape[0] != x->shape[3] / 2 ||
        table->shape[1] != 2)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "%s: the table is f32 [Dh / 2, 2]", op);
    rope_table_push push = {
        .npairs = (uint32_t)(mcl_tensor_numel(x) / 2),
        .half_dim = (uint32_t)(x->shape[3] / 2),
        .heads = (uint32_t)x->shape[2],
        .seq = (uint32_t)x->shape[1],
        .pos0 = (uint32_t)position_offset,
        .split_half = layout == MCL_ROPE_SPLIT_HALF,
    };
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_ROPE_TABLE_F32,
        .binding_count = 3,
        .push_size = sizeof push,
        .spec_count = 2,
        .spec = {x == out, 0},  /* IN_PLACE, BACKWARD */
    };
    mcl_tensor *reads[2] = {(mcl_tensor *)x, (mcl_tensor *)table};
    return dispatch_grid(ctx, &desc, push.npairs, reads, 2, &out, 1, &push);
}

mcl_status mcl_rope_kv(mcl_context *ctx, mcl_tensor *q, mcl_tensor *k, mcl_tensor *v,
                       mcl_rope_layout layout, mcl_tensor *table, mcl_tensor *ids,
                       uint32_t pos_slot, uint32_t seq_slot, uint32_t row0, uint32_t count,
                       mcl_tensor *kc, mcl_tensor *vc)
{
    const char *op = "mcl_rope_kv";
    if (!q || !k || !v || !table || !ids || !kc || !vc)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: NULL tensor", op);
    mcl_tensor *all[7] = {q, k, v, table, ids, kc, vc};
    for (uint32_t i = 0; i < 7; i++)
        if (!owned(ctx, all[i]))
            return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "%s: tensor of another context", op);
    int64_t slots = mcl_tensor_numel(ids);
    if (q->ndim != 3 || k->ndim != 3 || !mcl_tensor_same_shape(k, v) || kc->ndim != 4 ||
        !mcl_tensor_same_shape(kc, vc) || q->shape[0] != k->shape[0] || count == 0 ||
        (int64_t)row0 + count > q->shape[0] || q->shape[2] != k->shape[2] ||
        q->shape[2] % 2 != 0 || kc->shape[2] != k->shape[1] || kc->shape[3] != k->shape[2] ||
        table->ndim != 2 || table->shape[0] != q->shape[2] / 2 || table->shape[1] != 2 ||
        (int64_t)pos_slot + count > slots ||
        (seq_slot != MCL_SLOT_NONE && (int64_t)seq_slot + count > slots))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "%s: q [rows, Hq, Dh], k, v [rows, Hkv, Dh], caches [sequences, S, Hkv, "
                        "Dh], the table [Dh / 2, 2], the rows and slots inside", op);
    if (q->dtype != MCL_DTYPE_F32 || k->dtype != MCL_DTYPE_F32 || v->dtype != MCL_DTYPE_F32 ||
        kc->dtype != vc->dtype || (kc->dtype != MCL_DTYPE_F32 && kc->dtype != MCL_DTYPE_F16) ||
        table->dtype != MCL_DTYPE_F32 || ids->dtype != MCL_DTYPE_I32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "%s: f32 tensors, caches f32 or f16, i32 ids", op);
    int f16 = kc->dtype == MCL_DTYPE_F16;
    if (f16 && !(mcl_traits_of(ctx)->features & MCL_FEATURE_STORAGE_16BIT))
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "%s: f16 caches need 16-bit storage, which this device lacks", op);
    rope_kv_push push = {
        .row0 = row0,
        .pos_slot = pos_slot,
        .seq_slot = seq_slot,
        .heads_q = (uint32_t)q->shape[1],
        .heads_kv = (uint32_t)k->shape[1],
        .half_dim = (uint32_t)(q->shape[2] / 2),
        .split_half = layout == MCL_ROPE_SPLIT_HALF,
        .seq_kv = (uint32_t)kc->shape[1],
        .sequences = (uint32_t)kc->shape[0],
    };
    uint64_t n = (uint64_t)(push.heads_q + 2 * push.heads_kv) * push.half_dim;
    mcl_tensor *reads[4] = {k, v, table, ids};
    mcl_tensor *writes[3] = {q, kc, vc};
    const mcl_kernel *kernel;
    mcl_kernel_id id = f16 ? MCL_KERNEL_ROPE_KV_F16 : MCL_KERNEL_ROPE_KV_F32;
    mcl_status status = mcl_kernel_simple(ctx, id, 7, sizeof push, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    uint64_t groups = (n + mcl_kernel_local_size(kernel) - 1) / mcl_kernel_local_size(kernel);
    return mcl_dispatch(ctx, kernel, reads, 4, writes, 3, &push, (uint32_t)groups, count, 1);
}

mcl_status mcl_embedding(mcl_context *ctx, const mcl_tensor *table, const mcl_tensor *ids,
                         mcl_tensor *out)
{
    if (!ctx || !table || !ids || !out)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!owned(ctx, table) || !owned(ctx, ids) || !owned(ctx, out))
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_embedding: tensor of another context");
    int quant = mcl_quant_format(table->dtype) >= 0;
    if ((table->dtype != MCL_DTYPE_F32 && !quant) || out->dtype != MCL_DTYPE_F32 ||
        ids->dtype != MCL_DTYPE_I32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_embedding: table is f32 or a block type, out f32, ids i32");
    if (table->ndim != 2 || out->ndim != ids->ndim + 1)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_embedding: table is [V, D] and out is ids' shape plus [D]");
    for (uint32_t i = 0; i < ids->ndim; i++) {
        if (out->shape[i] != ids->shape[i])
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "mcl_embedding: out is ids' shape plus [D]");
    }
    if (out->shape[ids->ndim] != table->shape[1])
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_embedding: out's last dimension is the table's D");
    if (out == table)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_embedding: out aliases the table");
    int64_t n = mcl_tensor_numel(out);
    /* A block table is indexed a binding's row range at a time (embedding_quant.c). */
    if (n > (int64_t)UINT32_MAX || (!quant && mcl_tensor_numel(table) > (int64_t)UINT32_MAX))
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "mcl_embedding: more than 2^32-1 elements");
    if (quant)
        return mcl_embedding_quant(ctx, (mcl_tensor *)table, (mcl_tensor *)ids, out);

    embedding_push push = {
        .n = (uint32_t)n,
        .dim = (uint32_t)table->shape[1],
        .vocab = (uint32_t)table->shape[0],
    };
    mcl_tensor *reads[2] = {(mcl_tensor *)table, (mcl_tensor *)ids};
    return dispatch_simple(ctx, MCL_KERNEL_EMBEDDING_F32, (uint64_t)n, reads, 2, &out, 1, &push,
                           sizeof push);
}

mcl_status mcl_copy(mcl_context *ctx, const mcl_tensor *src, mcl_tensor *dst)
{
    if (!ctx || !src || !dst)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!owned(ctx, src) || !owned(ctx, dst))
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_copy: tensor of another context");
    if (mcl_dtype_size(src->dtype) != mcl_dtype_size(dst->dtype))
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_copy: element sizes differ");
    /* Block types have no element size (both read 0): only one of the same type has the same
     * bytes (and the same device layout). */
    if ((mcl_dtype_block_weights(src->dtype) > 1 || mcl_dtype_block_weights(dst->dtype) > 1) &&
        src->dtype != dst->dtype)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_copy: a %s tensor copies only to a tensor of its type, not %s",
                        mcl_dtype_name(src->dtype), mcl_dtype_name(dst->dtype));
    if (mcl_tensor_numel(src) != mcl_tensor_numel(dst))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_copy: element counts differ");
    /* The kernel moves whole words; a trailing partial word would need byte stores, which
     * Vulkan does not guarantee (8/16-bit storage is optional). */
    if (src->nbytes % 4 != 0)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "mcl_copy: %llu bytes is not a whole number of 32-bit words",
                        (unsigned long long)src->nbytes);
    if (src->nbytes / 4 > UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "mcl_copy: more than 2^32-1 words");
    if (src == dst)
        return MCL_SUCCESS;
    copy_push push = {.n = (uint32_t)(src->nbytes / 4)};
    mcl_tensor *reads[1] = {(mcl_tensor *)src};
    return dispatch_simple(ctx, MCL_KERNEL_COPY_U32, push.n, reads, 1, &dst, 1, &push,
                           sizeof push);
}

mcl_status mcl_permute(mcl_context *ctx, const mcl_tensor *src, const uint32_t *perm,
                       mcl_tensor *dst)
{
    if (!ctx || !src || !perm || !dst)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!owned(ctx, src) || !owned(ctx, dst))
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_permute: tensor of another context");
    if (mcl_dtype_size(src->dtype) != 4 || dst->dtype != src->dtype)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_permute takes one 4-byte dtype for src and dst");
    uint32_t ndim = src->ndim;
    if (dst->ndim != ndim)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_permute: ranks differ");
    uint32_t seen = 0;
    for (uint32_t i = 0; i < ndim; i++) {
        if (perm[i] >= ndim || (seen & (1u << perm[i])))
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "mcl_permute: perm is not a permutation of 0..%u", ndim - 1);
        seen |= 1u << perm[i];
    }
    for (uint32_t i = 0; i < ndim; i++) {
        if (dst->shape[i] != src->shape[perm[i]])
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "mcl_permute: dst dimension %u must be src dimension %u", i, perm[i]);
    }
    if (src == dst)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_permute: dst aliases src");
    int64_t n = mcl_tensor_numel(src);
    if (n > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "mcl_permute: more than 2^32-1 elements");

    /* Pad to four dimensions with leading size-1 axes (stride 0: they never move). */
    uint64_t src_stride[MCL_MAX_DIMS];
    uint64_t step = 1;
    for (uint32_t i = ndim; i-- > 0;) {
        src_stride[i] = step;
        step *= (uint64_t)src->shape[i];
    }
    uint32_t pad = MCL_MAX_DIMS - ndim;
    permute_push push = {.n = (uint32_t)n, .shape = {1, 1, 1}};
    for (uint32_t i = 0; i < ndim; i++) {
        if (pad + i > 0)
            push.shape[pad + i - 1] = (uint32_t)dst->shape[i];
        push.stride[pad + i] = (uint32_t)src_stride[perm[i]];
    }
    mcl_tensor *reads[1] = {(mcl_tensor *)src};
    return dispatch_simple(ctx, MCL_KERNEL_PERMUTE_U32, (uint64_t)n, reads, 1, &dst, 1, &push,
                           sizeof push);
}

mcl_status mcl_concat(mcl_context *ctx, const mcl_tensor *a, const mcl_tensor *b, uint32_t axis,
                      mcl_tensor *out)
{
    if (!ctx || !a || !b || !out)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!owned(ctx, a) || !owned(ctx, b) || !owned(ctx, out))
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_concat: tensor of another context");
    if (mcl_dtype_size(a->dtype) != 4 || b->dtype != a->dtype || out->dtype != a->dtype)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_concat takes one 4-byte dtype for a, b and out");
    if (axis >= a->ndim)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_concat: axis %u of a %u-D tensor",
                        axis, a->ndim);
    if (b->ndim != a->ndim || out->ndim != a->ndim)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_concat: ranks differ");
    for (uint32_t i = 0; i < a->ndim; i++) {
        int64_t want = i == axis ? a->shape[i] + b->shape[i] : a->shape[i];
        if ((i != axis && b->shape[i] != a->shape[i]) || out->shape[i] != want)
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "mcl_concat: dimension %u does not fit a concat on axis %u", i, axis);
    }
    if (out == a || out == b)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_concat: out aliases an input");
    int64_t n = mcl_tensor_numel(out);
    if (n > (int64_t)UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "mcl_concat: more than 2^32-1 elements");

    int64_t inner = 1;
    for (uint32_t i = axis + 1; i < a->ndim; i++)
        inner *= a->shape[i];
    concat_push push = {
        .n = (uint32_t)n,
        .inner = (uint32_t)inner,
        .na = (uint32_t)a->shape[axis],
        .nb = (uint32_t)b->shape[axis],
    };
    mcl_tensor *reads[2] = {(mcl_tensor *)a, (mcl_tensor *)b};
    return dispatch_simple(ctx, MCL_KERNEL_CONCAT_U32, (uint64_t)n, reads, 2, &out, 1, &push,
                           sizeof push);
}
