/* Tensors: shape bookkeeping over a range of a block, views, and their release. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "private.h"
#include "quant/quant.h"
#include "core/alloc.h"

mcl_status mcl_tensor_create(mcl_context *ctx, mcl_dtype dtype, uint32_t ndim,
                             const int64_t *shape, mcl_tensor **out)
{
    mcl_tensor_desc desc = {.size = sizeof desc, .dtype = dtype, .ndim = ndim};
    if (!out)
        return MCL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (ndim == 0 || ndim > MCL_MAX_DIMS || !shape)
        return ctx ? mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                              "a tensor has 1 to %d dimensions, not %u", MCL_MAX_DIMS, ndim)
                   : MCL_ERROR_INVALID_ARGUMENT;
    for (uint32_t i = 0; i < ndim; i++)
        desc.shape[i] = shape[i];
    return mcl_tensor_create_ex(ctx, &desc, out);
}

/* host_pool: in MCL_MEMORY_HOST_POOL, which no caller's desc names. */
static mcl_status create_entered(mcl_context *ctx, const mcl_tensor_desc *desc, int host_pool,
                                 mcl_tensor **out)
{
    if (!out)
        return MCL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (!ctx || !desc || desc->size < offsetof(mcl_tensor_desc, reserved))
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_dtype dtype = desc->dtype;
    uint32_t ndim = desc->ndim;
    if (!mcl_dtype_name(dtype))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "unknown dtype %d", (int)dtype);
    if (ndim == 0 || ndim > MCL_MAX_DIMS)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "a tensor has 1 to %d dimensions, not %u", MCL_MAX_DIMS, ndim);
    mcl_memory_class cls = host_pool ? MCL_MEMORY_HOST_POOL : desc->memory_class;
    if ((unsigned)desc->memory_class >= MCL_MEMORY_CLASS_COUNT)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "unknown memory class %d",
                        (int)desc->memory_class);

    /* Multiply with an overflow guard: the byte count must fit in 63 bits. A block type
     * counts in blocks along the last dimension. */
    int64_t per_block = mcl_dtype_block_weights(dtype);
    uint64_t bytes = mcl_dtype_block_bytes(dtype);
    for (uint32_t i = 0; i < ndim; i++) {
        int64_t extent = desc->shape[i];
        if (extent < 1)
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "dimension %u is %lld, not >= 1", i,
                            (long long)extent);
        if (i == ndim - 1 && per_block > 1) {
            if (extent % per_block != 0)
                return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                                "the last dimension of a %s tensor is a multiple of %lld, not %lld",
                                mcl_dtype_name(dtype), (long long)per_block, (long long)extent);
            extent /= per_block;
        }
        if ((uint64_t)extent > (UINT64_MAX >> 1) / bytes)
            return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "tensor size overflows 64 bits");
        bytes *= (uint64_t)extent;
    }
    /* A kernel binds a tensor as one storage buffer range. The quantized matmul binds a
     * block-quantised weight in row ranges that each fit one, so such a weight may be larger;
     * every other tensor is refused rather than truncated (and a kernel handed a block tensor
     * it would have to bind whole is refused at dispatch). */
    if (bytes > ctx->info.max_storage_buffer_range && per_block == 1)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                        "tensor of %llu bytes exceeds the device's maxStorageBufferRange (%llu)",
                        (unsigned long long)bytes,
                        (unsigned long long)ctx->info.max_storage_buffer_range);

    mcl_tensor_rt *t = mcl_mem_calloc(1, sizeof *t);
    if (!t)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    /* A split block type's d area ends in half a word when its block count is odd: the
     * allocation extends to a whole 16 bytes so that kernels bind the d area in words. */
    mcl_quant_layout layout;
    uint64_t storage = bytes;
    if (mcl_quant_layout_of(dtype, &layout) && layout.split)
        storage = (bytes + 15) / 16 * 16;
    mcl_status status = mcl_alloc(ctx, storage, cls, &t->alloc);
    if (status != MCL_SUCCESS) {
        mcl_mem_free(t);
        return status;
    }
    t->t.ctx = ctx;
    t->t.dtype = dtype;
    t->t.ndim = ndim;
    for (uint32_t i = 0; i < ndim; i++)
        t->t.shape[i] = desc->shape[i];
    t->t.nbytes = bytes;
    t->cls = cls;
    t->next = ctx->tensors;
    if (ctx->tensors)
        ctx->tensors->prev = t;
    ctx->tensors = t;
    *out = &t->t;
    return MCL_SUCCESS;
}

mcl_status mcl_tensor_create_ex(mcl_context *ctx, const mcl_tensor_desc *desc, mcl_tensor **out)
{
    if (!ctx)
        return out ? (*out = NULL, MCL_ERROR_INVALID_ARGUMENT) : MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = mcl_context_enter(ctx);
    if (status != MCL_SUCCESS) {
        if (out)
            *out = NULL;
        return status;
    }
    status = create_entered(ctx, desc, 0, out);
    mcl_context_leave(ctx);
    return status;
}

int mcl_tensor_in_host_pool(const mcl_tensor *t)
{
    return t && mcl_rt(t)->cls == MCL_MEMORY_HOST_POOL;
}

mcl_status mcl_tensor_create_host_pool(mcl_context *ctx, mcl_dtype dtype, uint32_t ndim,
                                       const int64_t *shape, mcl_tensor **out)
{
    *out = NULL;
    if (ndim == 0 || ndim > MCL_MAX_DIMS)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "a tensor has 1 to %d dimensions, not %u", MCL_MAX_DIMS, ndim);
    mcl_tensor_desc desc = {.size = sizeof desc, .dtype = dtype, .ndim = ndim};
    for (uint32_t i = 0; i < ndim; i++)
        desc.shape[i] = shape[i];
    mcl_status status = mcl_context_enter(ctx);
    if (status != MCL_SUCCESS)
        return status;
    status = create_entered(ctx, &desc, 1, out);
    mcl_context_leave(ctx);
    return status;
}

/* A view of `bytes` at `offset` of owner's memory with the given type and shape (checked by the
 * caller). */
static mcl_status view_make(mcl_tensor *owner, uint64_t offset, uint64_t bytes, mcl_dtype dtype,
                            uint32_t ndim, const int64_t *shape, mcl_tensor **out)
{
    mcl_tensor_rt *t = mcl_mem_calloc(1, sizeof *t);
    if (!t)
        return mcl_fail(owner->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    t->t.ctx = owner->ctx;
    t->owner = mcl_rt(owner);
    t->t.dtype = dtype;
    t->t.ndim = ndim;
    for (uint32_t i = 0; i < ndim; i++)
        t->t.shape[i] = shape[i];
    t->t.nbytes = bytes;
    t->cls = mcl_rt(owner)->cls;
    t->alloc = mcl_rt(owner)->alloc;
    t->alloc.offset += offset;
    t->alloc.size = bytes;
    *out = &t->t;
    return MCL_SUCCESS;
}

mcl_status mcl_tensor_view(mcl_tensor *owner, uint64_t offset, mcl_dtype dtype, uint32_t ndim,
                           const int64_t *shape, mcl_tensor **out)
{
    *out = NULL;
    mcl_context *ctx = owner->ctx;
    /* A block type counts in blocks along the last dimension, as a tensor does. */
    int64_t per_block = mcl_dtype_block_weights(dtype);
    uint64_t bytes = mcl_dtype_block_bytes(dtype);
    /* A split block type's rows are not byte ranges of its memory (quant.h's device layout):
     * its kernels bind the bodies and the d values apart (mcl_tensor_bytes_view). */
    mcl_quant_layout layout;
    if (mcl_rt(owner)->owner || ndim == 0 || ndim > MCL_MAX_DIMS || bytes == 0 || per_block < 1 ||
        shape[ndim - 1] % per_block != 0 || (mcl_quant_layout_of(dtype, &layout) && layout.split))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "bad tensor view");
    for (uint32_t i = 0; i < ndim; i++) {
        int64_t extent = i == ndim - 1 ? shape[i] / per_block : shape[i];
        /* bytes <= owner->nbytes throughout, so the product cannot overflow. */
        if (extent < 1 || (uint64_t)extent > owner->nbytes / bytes)
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "bad tensor view shape");
        bytes *= (uint64_t)extent;
    }
    uint64_t align = ctx->info.min_storage_buffer_offset_alignment;
    if (bytes > owner->nbytes || offset > owner->nbytes - bytes || (align && offset % align))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "a view of %llu bytes at %llu does not fit its owner, or is misaligned",
                        (unsigned long long)bytes, (unsigned long long)offset);
    return view_make(owner, offset, bytes, dtype, ndim, shape, out);
}

mcl_status mcl_tensor_bytes_view(mcl_tensor *owner, uint64_t offset, uint64_t bytes,
                                 mcl_tensor **out)
{
    *out = NULL;
    mcl_context *ctx = owner->ctx;
    uint64_t align = ctx->info.min_storage_buffer_offset_alignment;
    const mcl_tensor_rt *o = mcl_rt(owner);
    if (o->owner || bytes == 0 || bytes > o->alloc.size || offset > o->alloc.size - bytes ||
        (align && offset % align))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "a byte view of %llu bytes at %llu does not fit its owner's memory, or is "
                        "misaligned", (unsigned long long)bytes, (unsigned long long)offset);
    int64_t shape[1] = {(int64_t)bytes};
    return view_make(owner, offset, bytes, MCL_DTYPE_U8, 1, shape, out);
}

void mcl_tensor_release(mcl_tensor_rt *t)
{
    mcl_stream_release(t->t.ctx, &t->alloc, t->last_batch);
    mcl_mem_free(t);
}

void mcl_tensor_destroy(mcl_tensor *tensor)
{
    if (!tensor)
        return;
    mcl_tensor_rt *t = mcl_rt(tensor);
    if (t->owner) {
        mcl_mem_free(t);
        return;
    }
    mcl_context *ctx = tensor->ctx;
    if (t->prev)
        t->prev->next = t->next;
    else
        ctx->tensors = t->next;
    if (t->next)
        t->next->prev = t->prev;
    t->prev = t->next = NULL;
    /* A graph still records this tensor's memory: the graph releases it. */
    if (t->graph_refs > 0) {
        t->orphaned = 1;
        return;
    }
    mcl_tensor_release(t);
}

int mcl_tensor_same_shape(const mcl_tensor *a, const mcl_tensor *b)
{
    if (a->ndim != b->ndim)
        return 0;
    for (uint32_t i = 0; i < a->ndim; i++) {
        if (a->shape[i] != b->shape[i])
            return 0;
    }
    return 1;
}

mcl_dtype mcl_tensor_dtype(const mcl_tensor *t)
{
    return t ? t->dtype : MCL_DTYPE_F32;
}

uint32_t mcl_tensor_ndim(const mcl_tensor *t)
{
    return t ? t->ndim : 0;
}

int64_t mcl_tensor_dim(const mcl_tensor *t, uint32_t axis)
{
    return t && axis < t->ndim ? t->shape[axis] : 0;
}

int64_t mcl_tensor_numel(const mcl_tensor *t)
{
    int64_t n = t ? 1 : 0;
    for (uint32_t i = 0; t && i < t->ndim; i++)
        n *= t->shape[i];
    return n;
}

uint64_t mcl_tensor_nbytes(const mcl_tensor *t)
{
    return t ? t->nbytes : 0;
}
