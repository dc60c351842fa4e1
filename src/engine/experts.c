/* A session's expert cache (motifcl.h, mcl_session_desc.expert_budget): per mixture layer,
 * `slots` experts' rows of each stack in device memory, the state the device plans with, the
 * step of the forward pass that plans and copies, and the counts read back for the caller. */
#include <string.h>

#include "engine_internal.h"
#include "core/alloc.h"

/* Bytes of one expert of layer L: its rows of the gate, up and down stacks (what a copy
 * moves). */
static uint64_t expert_bytes(const mcl_session *s, const engine_layer *L)
{
    const mcl_tensor *stacks[3] = {L->w_gate_exps, L->w_up_exps, L->w_down_exps};
    uint64_t bytes = 0;
    for (int i = 0; i < 3; i++) {
        mcl_expert_segment seg[2];
        uint32_t count = 0;
        if (mcl_expert_segments(stacks[i], s->info.experts, 1, seg, &count) != MCL_SUCCESS)
            count = 0;
        for (uint32_t j = 0; j < count; j++)
            bytes += seg[j].bytes;
    }
    return bytes;
}

/* A cache of `slots` experts' rows of the stack w [E N, K]: [slots N, K], its dtype. */
static mcl_status cache_of(mcl_session *s, const mcl_tensor *w, mcl_tensor **out)
{
    mcl_tensor_desc d = {.size = sizeof d, .dtype = mcl_tensor_dtype(w), .ndim = 2,
                         .memory_class = MCL_MEMORY_WEIGHTS};
    d.shape[0] = w->shape[0] / s->info.experts * s->expert_slots;
    d.shape[1] = w->shape[1];
    return mcl_tensor_create_ex(s->ctx, &d, out);
}

uint64_t mcl_engine_expert_slot_bytes(const mcl_session *s)
{
    uint64_t bytes = 0;
    for (uint32_t l = 0; s->info.experts && l < s->info.layers; l++)
        bytes += expert_bytes(s, &s->layers[l]);
    return bytes;
}

mcl_status mcl_engine_experts_create(mcl_session *s, uint64_t budget)
{
    const mcl_model_info *m = &s->info;
    if (m->experts == 0 || budget == 0)
        return MCL_SUCCESS;
    uint64_t per_slot = mcl_engine_expert_slot_bytes(s);
    uint64_t slots = per_slot ? budget / per_slot : 0;
    /* Every expert fits: used where the model holds them, unless that is host memory (every
     * expert then gets a slot). */
    if (slots >= m->experts && !mcl_tensor_in_host_pool(s->layers[0].w_gate_exps))
        return MCL_SUCCESS;
    if (slots > m->experts)
        slots = m->experts;
    if (slots < m->experts_used)
        return mcl_fail(s->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "session: an expert budget of %llu bytes holds %llu expert(s) a layer; "
                        "a token uses %u (at least %llu bytes)", (unsigned long long)budget,
                        (unsigned long long)slots, m->experts_used,
                        (unsigned long long)(per_slot * m->experts_used));
    /* The copies bind a layer's stack whole (expert_copy.comp). */
    uint64_t binding = mcl_traits_of(s->ctx)->max_binding_bytes;
    for (uint32_t l = 0; l < m->layers; l++) {
        const mcl_tensor *stacks[3] = {s->layers[l].w_gate_exps, s->layers[l].w_up_exps,
                                       s->layers[l].w_down_exps};
        for (int i = 0; i < 3; i++)
            if ((stacks[i]->nbytes + 3) / 4 * 4 > binding)
                return mcl_fail(s->ctx, MCL_ERROR_UNSUPPORTED,
                                "session: the expert cache copies from a layer's stack bound "
                                "whole; layer %u's stack of %llu bytes is larger than one "
                                "binding (%llu)", l, (unsigned long long)stacks[i]->nbytes,
                                (unsigned long long)binding);
    }
    s->expert_slots = (uint32_t)slots;
    uint64_t words = mcl_expert_state_words(m->experts, s->expert_slots);
    int32_t *init = mcl_mem_malloc((size_t)words * sizeof *init);
    if (!init)
        return mcl_fail(s->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "session: out of host memory");
    mcl_expert_state_init(m->experts, s->expert_slots, init);
    mcl_status st = MCL_SUCCESS;
    for (uint32_t l = 0; l < m->layers && st == MCL_SUCCESS; l++) {
        engine_layer *L = &s->layers[l];
        int64_t shape = (int64_t)words;
        st = cache_of(s, L->w_gate_exps, &L->gate_cache);
        if (st == MCL_SUCCESS)
            st = cache_of(s, L->w_up_exps, &L->up_cache);
        if (st == MCL_SUCCESS)
            st = cache_of(s, L->w_down_exps, &L->down_cache);
        if (st == MCL_SUCCESS)
            st = mcl_tensor_create(s->ctx, MCL_DTYPE_I32, 1, &shape, &L->expert_state);
        if (st == MCL_SUCCESS)
            st = mcl_tensor_upload(L->expert_state, 0, init, words * sizeof *init);
        if (st == MCL_SUCCESS)
            s->expert_cache_bytes += mcl_tensor_nbytes(L->gate_cache) +
                                     mcl_tensor_nbytes(L->up_cache) +
                                     mcl_tensor_nbytes(L->down_cache);
    }
    mcl_mem_free(init);
    return st;
}

void mcl_engine_experts_release(mcl_session *s)
{
    for (uint32_t l = 0; s->layers && l < s->info.layers; l++) {
        engine_layer *L = &s->layers[l];
        mcl_tensor **own[] = {&L->gate_cache, &L->up_cache, &L->down_cache, &L->expert_state};
        for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
            mcl_tensor_destroy(*own[i]);
            *own[i] = NULL;
        }
    }
}

/* One stack's products of a batch whose experts' virtual ids are vids: the resident experts'
 * from the cache, the rest from the pool in place (ids past the slots). */
static mcl_status products(mcl_session *s, mcl_tensor *x, mcl_tensor *pool, mcl_tensor *cache,
                           mcl_tensor *vids, const mcl_experts_desc *d, mcl_tensor *y)
{
    mcl_experts_desc c = *d;
    c.experts = s->expert_slots;
    c.id_base = 0;
    mcl_status st = mcl_matmul_experts(s->ctx, x, cache, vids, &c, y, NULL);
    if (st != MCL_SUCCESS)
        return st;
    c.experts = s->info.experts;
    c.id_base = s->expert_slots;
    return mcl_matmul_experts(s->ctx, x, pool, vids, &c, y, NULL);
}

mcl_status mcl_engine_experts_plan(mcl_session *s, const engine_layer *L, mcl_tensor *ids,
                                   uint32_t pairs, mcl_tensor *vids)
{
    mcl_context *ctx = s->ctx;
    uint32_t E = s->info.experts, S = s->expert_slots;
    mcl_status st = mcl_expert_residency(ctx, ids, pairs, E, S, L->expert_state, vids);
    if (st == MCL_SUCCESS)
        st = mcl_expert_copy(ctx, L->expert_state, E, S, L->w_gate_exps, L->gate_cache);
    if (st == MCL_SUCCESS)
        st = mcl_expert_copy(ctx, L->expert_state, E, S, L->w_up_exps, L->up_cache);
    if (st == MCL_SUCCESS)
        st = mcl_expert_copy(ctx, L->expert_state, E, S, L->w_down_exps, L->down_cache);
    return st;
}

mcl_status mcl_engine_experts_gate_up(mcl_session *s, const engine_layer *L, mcl_tensor *h,
                                      mcl_tensor *vids, const mcl_experts_desc *d,
                                      mcl_tensor *gate, mcl_tensor *up)
{
    mcl_status st = products(s, h, L->w_gate_exps, L->gate_cache, vids, d, gate);
    return st == MCL_SUCCESS ? products(s, h, L->w_up_exps, L->up_cache, vids, d, up) : st;
}

mcl_status mcl_engine_experts_glu(mcl_session *s, const engine_layer *L, mcl_tensor *h,
                                  mcl_tensor *vids, const mcl_experts_desc *d, mcl_tensor *gate,
                                  mcl_tensor *act_out, int *fused)
{
    mcl_experts_desc c = *d, p = *d;
    c.experts = s->expert_slots;
    c.id_base = 0;
    p.experts = s->info.experts;
    p.id_base = s->expert_slots;
    int cache_fuses = 0, pool_fuses = 0;
    *fused = 0;
    mcl_status st = mcl_matmul_experts_glu_q8(s->ctx, h, L->gate_cache, L->up_cache, vids, &c,
                                              gate, NULL, &cache_fuses);
    if (st == MCL_SUCCESS)
        st = mcl_matmul_experts_glu_q8(s->ctx, h, L->w_gate_exps, L->w_up_exps, vids, &p, gate,
                                       NULL, &pool_fuses);
    if (st != MCL_SUCCESS || !cache_fuses || !pool_fuses)
        return st;
    st = mcl_matmul_experts_glu_q8(s->ctx, h, L->gate_cache, L->up_cache, vids, &c, gate,
                                   act_out, &cache_fuses);
    if (st == MCL_SUCCESS)
        st = mcl_matmul_experts_glu_q8(s->ctx, h, L->w_gate_exps, L->w_up_exps, vids, &p, gate,
                                       act_out, &pool_fuses);
    *fused = st == MCL_SUCCESS && cache_fuses && pool_fuses;
    return st;
}

mcl_status mcl_engine_experts_down(mcl_session *s, const engine_layer *L, mcl_tensor *x,
                                   mcl_tensor *vids, const mcl_experts_desc *d, mcl_tensor *y)
{
    return products(s, x, L->w_down_exps, L->down_cache, vids, d, y);
}

mcl_status mcl_session_expert_stats(mcl_session *s, mcl_expert_stats *stats)
{
    if (!s || !stats || stats->size < offsetof(mcl_expert_stats, reserved))
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_expert_stats out = {.size = stats->size < sizeof out ? stats->size : sizeof out};
    const mcl_model_info *m = &s->info;
    out.experts = m->experts * m->layers;
    out.slots = s->expert_slots;
    out.resident = out.experts;
    mcl_status st = MCL_SUCCESS;
    int32_t *words = NULL;
    if (s->expert_slots) {
        uint64_t n = mcl_expert_state_words(m->experts, s->expert_slots);
        words = mcl_mem_malloc((size_t)n * sizeof *words);
        if (!words)
            return mcl_fail(s->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "session: out of host memory");
        out.resident = 0;
        out.cache_bytes = s->expert_cache_bytes;
        uint64_t owners = MCL_EXPERT_STATE_HEADER + (uint64_t)s->expert_slots + m->experts;
        for (uint32_t l = 0; l < m->layers && st == MCL_SUCCESS; l++) {
            const engine_layer *L = &s->layers[l];
            st = mcl_tensor_download(L->expert_state, 0, words, n * sizeof *words);
            if (st != MCL_SUCCESS)
                break;
            uint64_t bytes = expert_bytes(s, L);
            out.hits += (uint32_t)words[MCL_EXPERT_STATE_HITS];
            out.misses += (uint32_t)words[MCL_EXPERT_STATE_MISSES];
            out.pool_reads += (uint32_t)words[MCL_EXPERT_STATE_POOL_READS];
            out.bytes_moved += (uint64_t)(uint32_t)words[MCL_EXPERT_STATE_MISSES] * bytes;
            out.bytes_read_in_place +=
                (uint64_t)(uint32_t)words[MCL_EXPERT_STATE_POOL_READS] * bytes;
            for (uint32_t i = 0; i < s->expert_slots; i++)
                out.resident += words[owners + i] >= 0;
        }
    }
    mcl_mem_free(words);
    if (st == MCL_SUCCESS)
        memcpy(stats, &out, out.size);
    return st;
}
