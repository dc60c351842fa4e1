/* The expert cache of a mixture layer on the device: the plan of a batch (which experts are
 * resident, which to copy into which slot, which to read from the pool in place:
 * expert_residency.comp) and the copies it lists (expert_copy.comp, once per segment of a
 * stack). Both read what they act on from the device, so a recorded decode step replays for
 * any routing. */
#include "ops_internal.h"
#include "../vk/runtime.h"

#include "quant/quant.h"

/* expert_copy's workgroup, and the most workgroups one copy spreads over (a grid-stride loop
 * covers the rest): fixed, so that the dispatch does not depend on the plan. */
#define COPY_WG 256u
#define COPY_MAX_GROUPS 1024u

static int ours(const mcl_context *ctx, const mcl_tensor *t)
{
    return t && t->ctx == ctx;
}

uint64_t mcl_expert_state_words(uint32_t experts, uint32_t slots)
{
    return MCL_EXPERT_STATE_HEADER + 3ull * slots + experts;
}

void mcl_expert_state_init(uint32_t experts, uint32_t slots, int32_t *words)
{
    uint64_t n = mcl_expert_state_words(experts, slots);
    uint64_t first_slot_of = MCL_EXPERT_STATE_HEADER + (uint64_t)slots;
    for (uint64_t i = 0; i < n; i++)
        words[i] = i >= first_slot_of && i < first_slot_of + experts + slots ? -1 : 0;
}

mcl_status mcl_expert_residency(mcl_context *ctx, mcl_tensor *ids, uint32_t pairs,
                                uint32_t experts, uint32_t slots, mcl_tensor *state,
                                mcl_tensor *vids)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!ours(ctx, ids) || !ours(ctx, state) || !ours(ctx, vids))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_expert_residency: a tensor is NULL or of another context");
    if (ids->dtype != MCL_DTYPE_I32 || state->dtype != MCL_DTYPE_I32 ||
        vids->dtype != MCL_DTYPE_I32)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_expert_residency: i32 tensors");
    if (vids == ids || vids == state || ids == state)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_expert_residency: aliased tensors");
    if (experts == 0 || experts > MCL_MOE_MAX_EXPERTS || slots == 0 || slots > experts ||
        pairs == 0 || (uint64_t)mcl_tensor_numel(ids) < pairs ||
        (uint64_t)mcl_tensor_numel(vids) < pairs ||
        (uint64_t)mcl_tensor_numel(state) < mcl_expert_state_words(experts, slots))
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_expert_residency: %u experts (1..%u), %u slots (1..experts), ids "
                        "and virtual ids of %u pairs, a state of %llu words", experts,
                        MCL_MOE_MAX_EXPERTS, slots, pairs,
                        (unsigned long long)mcl_expert_state_words(experts, slots));
    mcl_kernel_desc desc = {.id = MCL_KERNEL_EXPERT_RESIDENCY, .binding_count = 3,
                            .push_size = 3 * sizeof(uint32_t), .local_size_x = 1};
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_get(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    struct {
        uint32_t pairs, experts, slots;
    } push = {pairs, experts, slots};
    mcl_tensor *writes[2] = {state, vids};
    return mcl_dispatch(ctx, kernel, &ids, 1, writes, 2, &push, 1, 1, 1);
}

mcl_status mcl_expert_segments(const mcl_tensor *stack, uint32_t experts, uint32_t slots,
                               mcl_expert_segment seg[2], uint32_t *count)
{
    if (!stack || stack->ndim != 2 || experts == 0 || stack->shape[0] % experts != 0)
        return MCL_ERROR_SHAPE_MISMATCH;
    uint64_t n = (uint64_t)stack->shape[0] / experts, k = (uint64_t)stack->shape[1];
    if (stack->dtype == MCL_DTYPE_F32) {
        seg[0] = (mcl_expert_segment){.pool_at = 0, .cache_at = 0, .bytes = n * k * 4};
        *count = 1;
        return MCL_SUCCESS;
    }
    mcl_quant_layout l;
    if (mcl_quant_format(stack->dtype) < 0 || !mcl_quant_layout_of(stack->dtype, &l))
        return MCL_ERROR_DTYPE_MISMATCH;
    uint64_t blocks = n * (k / (uint64_t)mcl_dtype_block_weights(stack->dtype));
    seg[0] = (mcl_expert_segment){.pool_at = 0, .cache_at = 0,
                                  .bytes = blocks * l.body_bytes};
    *count = 1;
    if (l.split) {
        /* The d values (one f16 a block) after every block body of the stack. */
        seg[1] = (mcl_expert_segment){.pool_at = (uint64_t)experts * seg[0].bytes,
                                      .cache_at = (uint64_t)slots * seg[0].bytes,
                                      .bytes = blocks * 2};
        *count = 2;
    }
    return MCL_SUCCESS;
}

mcl_status mcl_expert_copy(mcl_context *ctx, mcl_tensor *state, uint32_t experts,
                           uint32_t slots, mcl_tensor *pool, mcl_tensor *cache)
{
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!ours(ctx, state) || !ours(ctx, pool) || !ours(ctx, cache))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_expert_copy: a tensor is NULL or of another context");
    if (state->dtype != MCL_DTYPE_I32 || pool->dtype != cache->dtype)
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH,
                        "mcl_expert_copy: an i32 state, a pool and a cache of one dtype");
    if (slots == 0 || slots > experts || experts > MCL_MOE_MAX_EXPERTS ||
        (uint64_t)mcl_tensor_numel(state) < mcl_expert_state_words(experts, slots) ||
        pool->ndim != 2 || cache->ndim != 2 || pool->shape[1] != cache->shape[1] ||
        pool->shape[0] % experts != 0 ||
        cache->shape[0] != pool->shape[0] / experts * slots)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_expert_copy: a pool of %u experts and a cache of %u slots of the "
                        "same experts' rows", experts, slots);
    mcl_expert_segment seg[2];
    uint32_t segs = 0;
    mcl_status status = mcl_expert_segments(pool, experts, slots, seg, &segs);
    if (status != MCL_SUCCESS)
        return mcl_fail(ctx, status, "mcl_expert_copy: an f32 or block-quantised stack");
    /* The kernel's offsets are 32-bit, relative to the bindings: each stack within one. */
    if (pool->nbytes > UINT32_MAX || cache->nbytes > UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                        "mcl_expert_copy: a layer's stack of %llu bytes is bound whole; at most "
                        "4 GiB", (unsigned long long)pool->nbytes);
    mcl_kernel_desc desc = {.id = MCL_KERNEL_EXPERT_COPY, .binding_count = 3,
                            .push_size = 4 * sizeof(uint32_t), .local_size_x = COPY_WG};
    const mcl_kernel *kernel;
    status = mcl_kernel_get(ctx, &desc, &kernel);
    uint32_t wg = status == MCL_SUCCESS ? mcl_kernel_local_size(kernel) : 1;
    /* Bound in whole words: a split type's last d values may end inside one, and a word
     * partly outside its binding would be neither read nor written. */
    mcl_tensor *pool_words = NULL, *cache_words = NULL;
    if (status == MCL_SUCCESS)
        status = mcl_tensor_bytes_view(pool, 0, (pool->nbytes + 3) / 4 * 4, &pool_words);
    if (status == MCL_SUCCESS)
        status = mcl_tensor_bytes_view(cache, 0, (cache->nbytes + 3) / 4 * 4, &cache_words);
    mcl_tensor *reads[2] = {state, pool_words};
    for (uint32_t i = 0; status == MCL_SUCCESS && i < segs; i++) {
        uint64_t words = (seg[i].bytes + 7) / 4; /* an unaligned slot spans one word more */
        uint64_t groups = (words + wg - 1) / wg;
        if (groups > COPY_MAX_GROUPS)
            groups = COPY_MAX_GROUPS;
        struct {
            uint32_t count_at, src0, dst0, seg_bytes;
        } push = {MCL_EXPERT_STATE_COPIES, (uint32_t)seg[i].pool_at, (uint32_t)seg[i].cache_at,
                  (uint32_t)seg[i].bytes};
        mcl_profile_op(ctx, "expert copy", 2.0 * (double)seg[i].bytes * slots, 0.0);
        status = mcl_dispatch(ctx, kernel, reads, 2, &cache_words, 1, &push, (uint32_t)groups,
                              slots, 1);
    }
    mcl_tensor_destroy(pool_words);
    mcl_tensor_destroy(cache_words);
    return status;
}
