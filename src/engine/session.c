/* Sessions (motifcl.h, "Inference sessions"): the model's tensors found by name, the cache
 * and activations sized against the memory budget, sequences and their bookkeeping, the
 * public calls. The passes themselves are forward.c's and step.c's. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "core/alloc.h"

#define ENGINE_DEFAULT_CONTEXT 4096u
#define ENGINE_DEFAULT_BATCH 512u

static mcl_status fail(mcl_context *ctx, mcl_status status, const char *message)
{
    return mcl_fail(ctx, status, "session: %s", message);
}

/* A tensor of the model by name; NULL when absent. */
static mcl_tensor *find(mcl_model *model, const char *fmt, uint32_t layer)
{
    char name[96];
    snprintf(name, sizeof name, fmt, layer);
    return mcl_model_find_tensor(model, name);
}

/* The model's weights into s; MCL_ERROR_INVALID_ARGUMENT for one missing. */
static mcl_status find_weights(mcl_session *s)
{
    mcl_model *model = s->model;
    s->embedding = find(model, "token_embd.weight", 0);
    s->output_norm = find(model, "output_norm.weight", 0);
    s->output = s->info.tied_output ? s->embedding : find(model, "output.weight", 0);
    int missing = !s->embedding || !s->output_norm || !s->output;
    for (uint32_t l = 0; l < s->info.layers && !missing; l++) {
        engine_layer *L = &s->layers[l];
        L->attn_norm = find(model, "blk.%u.attn_norm.weight", l);
        L->wq = find(model, "blk.%u.attn_q.weight", l);
        L->wk = find(model, "blk.%u.attn_k.weight", l);
        L->wv = find(model, "blk.%u.attn_v.weight", l);
        L->wo = find(model, "blk.%u.attn_output.weight", l);
        L->ffn_norm = find(model, "blk.%u.ffn_norm.weight", l);
        missing = !L->attn_norm || !L->wq || !L->wk || !L->wv || !L->wo || !L->ffn_norm;
        if (s->info.experts == 0) {
            L->w_gate = find(model, "blk.%u.ffn_gate.weight", l);
            L->w_up = find(model, "blk.%u.ffn_up.weight", l);
            L->w_down = find(model, "blk.%u.ffn_down.weight", l);
            missing |= !L->w_gate || !L->w_up || !L->w_down;
        } else {
            L->w_router = find(model, "blk.%u.ffn_gate_inp.weight", l);
            L->w_gate_exps = find(model, "blk.%u.ffn_gate_exps.weight", l);
            L->w_up_exps = find(model, "blk.%u.ffn_up_exps.weight", l);
            L->w_down_exps = find(model, "blk.%u.ffn_down_exps.weight", l);
            missing |= !L->w_router || !L->w_gate_exps || !L->w_up_exps || !L->w_down_exps;
        }
        if (s->info.shared_hidden > 0) {
            L->w_shared_gate_inp = find(model, "blk.%u.ffn_gate_inp_shexp.weight", l);
            L->w_gate_sh = find(model, "blk.%u.ffn_gate_shexp.weight", l);
            L->w_up_sh = find(model, "blk.%u.ffn_up_shexp.weight", l);
            L->w_down_sh = find(model, "blk.%u.ffn_down_shexp.weight", l);
            missing |= !L->w_shared_gate_inp || !L->w_gate_sh || !L->w_up_sh || !L->w_down_sh;
        }
        if (s->info.qkv_bias) {
            L->bq = find(model, "blk.%u.attn_q.bias", l);
            L->bk = find(model, "blk.%u.attn_k.bias", l);
            L->bv = find(model, "blk.%u.attn_v.bias", l);
            missing |= !L->bq || !L->bk || !L->bv;
        }
    }
    if (missing)
        return fail(s->ctx, MCL_ERROR_INVALID_ARGUMENT,
                    "the model has no weights on the device (opened with MCL_MODEL_NO_WEIGHTS?)");
    return MCL_SUCCESS;
}

/* What the engine does not run yet, or NULL. */
static const char *unsupported(const mcl_session *s, const mcl_device_info *dev)
{
    const mcl_model_info *m = &s->info;
    if (m->rope_scaling != MCL_ROPE_SCALING_NONE && m->rope_scaling != MCL_ROPE_SCALING_LLAMA3)
        return "a RoPE scaling other than llama 3.1's";
    if (m->head_dim % 4 != 0 || m->head_dim > 256)
        return "a head dimension that is not a multiple of 4, or above 256";
    uint64_t align = dev->min_storage_buffer_offset_alignment ? dev->min_storage_buffer_offset_alignment : 1;
    if (((uint64_t)s->kv_dim * 4) % align != 0 || ((uint64_t)s->q_dim * 4) % align != 0 ||
        ((uint64_t)m->dim * 4) % align != 0)
        return "rows of the model's width, q or k/v that are not a multiple of the device's "
               "storage buffer offset alignment";
    return NULL;
}

/* Bytes of one sequence's cache at `context` positions, all layers, k and v. */
static uint64_t cache_bytes(const mcl_session *s, uint64_t context)
{
    return 2ull * s->info.layers * context * s->kv_dim * mcl_dtype_size(s->kv_type);
}

static mcl_status make(mcl_context *ctx, mcl_dtype dtype, int64_t d0, int64_t d1,
                       mcl_tensor **out)
{
    int64_t shape[2] = {d0, d1};
    return mcl_tensor_create(ctx, dtype, d1 ? 2 : 1, shape, out);
}

/* Each pair's frequency into the table mcl_rope_table and mcl_rope_kv read: theta's, or
 * under llama 3.1's scaling divided by the model's per-pair divisors (rope_freqs.weight). */
static mcl_status make_rope_table(mcl_session *s)
{
    uint32_t half = s->info.head_dim / 2;
    mcl_tensor *factors = NULL;
    if (s->info.rope_scaling == MCL_ROPE_SCALING_LLAMA3) {
        factors = mcl_model_find_tensor(s->model, "rope_freqs.weight");
        if (!factors || mcl_tensor_dtype(factors) != MCL_DTYPE_F32 ||
            mcl_tensor_numel(factors) != (int64_t)half)
            return fail(s->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "llama 3.1's RoPE scaling without rope_freqs.weight of head_dim / 2 f32");
    }
    float *host = mcl_mem_malloc((size_t)half * 3 * sizeof *host);
    if (!host)
        return fail(s->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    float *table = host + half;
    mcl_status st = MCL_SUCCESS;
    if (factors)
        st = mcl_tensor_download(factors, 0, host, (uint64_t)half * sizeof *host);
    if (st == MCL_SUCCESS)
        mcl_rope_table_values(s->info.rope_theta, s->info.head_dim, factors ? host : NULL,
                              table);
    if (st == MCL_SUCCESS)
        st = make(s->ctx, MCL_DTYPE_F32, half, 2, &s->rope_table);
    if (st == MCL_SUCCESS)
        st = mcl_tensor_upload(s->rope_table, 0, table, (uint64_t)half * 2 * sizeof *table);
    mcl_mem_free(host);
    return st;
}

/* Words of a decode step's quantized rows: 10 a block of 32 values (qdot.glsl), the widest
 * row of any product's input (a mixture's down products: a row's experts_used rows). */
static int64_t act_words(const mcl_session *s)
{
    const mcl_model_info *m = &s->info;
    uint64_t widest = m->dim > m->hidden ? m->dim : m->hidden;
    if (s->q_dim > widest)
        widest = s->q_dim;
    uint64_t blocks = (widest + 31) / 32;
    uint64_t routed = (uint64_t)m->experts_used * ((m->expert_hidden + 31) / 32);
    uint64_t shared = (m->shared_hidden + 31) / 32;
    blocks = routed > blocks ? routed : blocks;
    blocks = shared > blocks ? shared : blocks;
    return (int64_t)(s->sequences * blocks * 10);
}

/* With `cached`, as a session with an expert cache needs them (its virtual ids). */
static uint64_t activation_bytes_for(const mcl_session *s, int cached)
{
    const mcl_model_info *m = &s->info;
    uint64_t per_row = 2ull * m->dim + 2ull * s->q_dim + 2ull * s->kv_dim + 2ull * m->hidden + 1;
    if (m->experts)
        per_row += m->experts + (cached ? 3ull : 2ull) * m->experts_used +
                   (uint64_t)m->experts_used * (2ull * m->expert_hidden + m->dim) + 1 +
                   2ull * m->shared_hidden;
    uint64_t per_seq = m->dim + 2ull * m->vocab + 3 + ENGINE_DRAW_STRIDE +
                       ENGINE_COUNTER_STRIDE(s) +
                       MCL_ATTENTION_DECODE_MAX_SPLITS * ((uint64_t)s->q_dim + 2ull * m->heads);
    return 4 * ((uint64_t)s->rows * per_row + (uint64_t)s->sequences * (per_seq + m->dim) +
                2ull * act_words(s));
}

static uint64_t activation_bytes(const mcl_session *s)
{
    return activation_bytes_for(s, s->expert_slots != 0);
}


static mcl_status allocate(mcl_session *s)
{
    const mcl_model_info *m = &s->info;
    mcl_context *ctx = s->ctx;
    mcl_status st = MCL_SUCCESS;
    int64_t r = s->rows;
    if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_I32, r + 4 * s->sequences, 0, &s->ids);
    if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_I32, 2 * r, 0, &s->pos);
    if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, r, m->dim, &s->x);
    if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, r, m->dim, &s->h);
    if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, r, s->q_dim, &s->q);
    if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, r, s->kv_dim, &s->k);
    if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, r, s->kv_dim, &s->v);
    if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, r, s->q_dim, &s->att);
    if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, r, m->hidden, &s->gate);
    if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, r, m->hidden, &s->up);
    if (m->experts) {
        int64_t pairs = r * m->experts_used;
        if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, r, m->experts, &s->moe_logits);
        if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_I32, pairs, 0, &s->moe_ids);
        int64_t rr = r < ENGINE_ROUTER_ROWS ? r : ENGINE_ROUTER_ROWS;
        if (st == MCL_SUCCESS)
            st = make(ctx, MCL_DTYPE_F32, rr * MCL_MOE_ROUTER_SLICES, m->experts, &s->moe_part);
        if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_I32, rr, m->dim, &s->moe_counts);
        if (st == MCL_SUCCESS) st = mcl_tensor_zero(s->moe_counts);
        if (st == MCL_SUCCESS && s->expert_slots)
            st = make(ctx, MCL_DTYPE_I32, pairs, 0, &s->moe_vids);
        if (st == MCL_SUCCESS)
            st = make(ctx, MCL_DTYPE_F32, r, m->experts_used, &s->moe_weights);
        if (st == MCL_SUCCESS)
            st = make(ctx, MCL_DTYPE_F32, pairs, m->expert_hidden, &s->moe_gate);
        if (st == MCL_SUCCESS)
            st = make(ctx, MCL_DTYPE_F32, pairs, m->expert_hidden, &s->moe_up);
        if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, pairs, m->dim, &s->moe_down);
    }
    if (m->shared_hidden) {
        if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, r, 1, &s->sh_z);
        if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, r, m->shared_hidden, &s->sh_gate);
        if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, r, m->shared_hidden, &s->sh_up);
    }
    if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, s->sequences, m->dim, &s->last);
    if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_F32, s->sequences, m->vocab, &s->logits);
    if (st == MCL_SUCCESS)
        st = make(ctx, MCL_DTYPE_F32, s->sequences, m->vocab, &s->seq_logits);
    if (st == MCL_SUCCESS)
        st = make(ctx, MCL_DTYPE_I32, (int64_t)s->sequences * ENGINE_DRAW_STRIDE, 0,
                  &s->draw_params);
    if (st == MCL_SUCCESS) st = make(ctx, MCL_DTYPE_I32, s->sequences, 0, &s->draw_tokens);
    int64_t splits = MCL_ATTENTION_DECODE_MAX_SPLITS;
    if (st == MCL_SUCCESS)
        st = make(ctx, MCL_DTYPE_F32, s->sequences, splits * s->q_dim, &s->part_o);
    if (st == MCL_SUCCESS)
        st = make(ctx, MCL_DTYPE_F32, s->sequences, splits * m->heads * 2, &s->part_ml);
    if (st == MCL_SUCCESS)
        st = make(ctx, MCL_DTYPE_I32, (int64_t)s->sequences * ENGINE_COUNTER_STRIDE(s), 0,
                  &s->att_counters);
    if (st == MCL_SUCCESS)
        st = mcl_tensor_zero(s->att_counters);
    if (st == MCL_SUCCESS)
        st = make(ctx, MCL_DTYPE_F32, s->sequences, m->dim, &s->normed);
    if (st == MCL_SUCCESS)
        st = make(ctx, MCL_DTYPE_I32, act_words(s), 0, &s->act);
    if (st == MCL_SUCCESS)
        st = make(ctx, MCL_DTYPE_I32, act_words(s), 0, &s->act2);
    for (int i = 0; i < 3 && st == MCL_SUCCESS; i++)
        st = make(ctx, MCL_DTYPE_I32, 4, 0, &s->warm_sink[i]);
    int64_t cache_shape[4] = {1, s->context_length, m->kv_heads, m->head_dim};
    /* All sequences' caches in one tensor a layer where one binding holds it (as the
     * quantized weights count a binding: MOTIFCL_MAX_BINDING lowers it): a decode step then
     * attends for every sequence in one dispatch. */
    int64_t all_shape[4] = {s->sequences, s->context_length, m->kv_heads, m->head_dim};
    uint64_t slab = cache_bytes(s, s->context_length) / 2 / m->layers;
    uint64_t align = mcl_traits_of(ctx)->binding_alignment;
    int one = slab * s->sequences <= mcl_traits_of(ctx)->weight_part_bytes &&
              (align == 0 || slab % align == 0);
    for (uint32_t l = 0; l < m->layers && st == MCL_SUCCESS && one; l++) {
        engine_layer *L = &s->layers[l];
        st = mcl_tensor_create(ctx, s->kv_type, 4, all_shape, &L->k_all);
        if (st == MCL_SUCCESS)
            st = mcl_tensor_create(ctx, s->kv_type, 4, all_shape, &L->v_all);
    }
    for (uint32_t l = 0; l < m->layers && st == MCL_SUCCESS && !one; l++) {
        engine_layer *L = &s->layers[l];
        L->k_cache = mcl_mem_calloc(s->sequences, sizeof *L->k_cache);
        L->v_cache = mcl_mem_calloc(s->sequences, sizeof *L->v_cache);
        if (!L->k_cache || !L->v_cache)
            return fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        for (uint32_t q = 0; q < s->sequences && st == MCL_SUCCESS; q++) {
            st = mcl_tensor_create(ctx, s->kv_type, 4, cache_shape, &L->k_cache[q]);
            if (st == MCL_SUCCESS)
                st = mcl_tensor_create(ctx, s->kv_type, 4, cache_shape, &L->v_cache[q]);
        }
    }
    return st;
}

static mcl_status host_state(mcl_session *s)
{
    uint32_t vocab = s->info.vocab;
    s->seqs = mcl_mem_calloc(s->sequences, sizeof *s->seqs);
    size_t ids = vocab > s->context_length ? vocab : s->context_length;
    s->sample_work = mcl_mem_malloc(2 * (size_t)vocab * sizeof *s->sample_work);
    s->sample_ids = mcl_mem_malloc(ids * sizeof *s->sample_ids);
    s->draw_rows = mcl_mem_malloc((size_t)s->sequences * ENGINE_DRAW_STRIDE * sizeof *s->draw_rows);
    if (!s->seqs || !s->sample_work || !s->sample_ids || !s->draw_rows)
        return fail(s->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (uint32_t q = 0; q < s->sequences; q++) {
        s->seqs[q].tokens = mcl_mem_malloc((size_t)s->context_length * sizeof(int32_t));
        if (!s->seqs[q].tokens)
            return fail(s->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    return MCL_SUCCESS;
}

/* The positions a session holds when context_length is 0 and the budget allows them. */
static uint64_t default_context(const mcl_session *s)
{
    uint64_t want = s->info.context_length ? s->info.context_length : ENGINE_DEFAULT_CONTEXT;
    return want > ENGINE_DEFAULT_CONTEXT ? ENGINE_DEFAULT_CONTEXT : want;
}

/* MCL_EXPERT_BUDGET_AUTO (motifcl.h): the expert caches' bytes, what the session's device
 * memory leaves after the activations and a cache of the context, less a sixteenth; 0 where
 * the stacks are in device memory. */
static mcl_status auto_expert_budget(mcl_session *s, const mcl_session_desc *d, uint64_t *out)
{
    *out = 0;
    if (!s->info.experts || !mcl_tensor_in_host_pool(s->layers[0].w_gate_exps))
        return MCL_SUCCESS;
    uint64_t total = d->memory_budget ? d->memory_budget : mcl_device_memory_left(s->ctx);
    uint64_t positions = d->context_length ? d->context_length : default_context(s);
    uint64_t need = activation_bytes_for(s, 1) + cache_bytes(s, positions) * s->sequences;
    uint64_t room = total > need ? total - need : 0;
    uint64_t least = mcl_engine_expert_slot_bytes(s) * s->info.experts_used;
    *out = room - room / 16;
    if (*out < least) {
        uint64_t whole = need + least + least / 15 + 1;
        return mcl_fail(s->ctx, MCL_ERROR_OUT_OF_DEVICE_MEMORY,
                        "session: an automatic expert budget needs about %llu bytes (%.1f "
                        "MiB) of device memory: %u experts a layer (%llu bytes, and a "
                        "sixteenth more) beside the activations and a cache of %llu positions "
                        "(%llu bytes); the budget is %llu (%.1f MiB)",
                        (unsigned long long)whole, (double)whole / 1048576.0,
                        s->info.experts_used, (unsigned long long)least,
                        (unsigned long long)positions, (unsigned long long)need,
                        (unsigned long long)total, (double)total / 1048576.0);
    }
    return MCL_SUCCESS;
}

/* The context length under desc and the budget. */
static mcl_status decide_context(mcl_session *s, const mcl_session_desc *d)
{
    uint64_t budget = d->memory_budget ? d->memory_budget : mcl_device_memory_left(s->ctx);
    uint64_t act = activation_bytes(s);
    uint64_t room = budget > act ? budget - act : 0;
    uint64_t per_position = cache_bytes(s, 1) * s->sequences;
    if (d->context_length) {
        uint64_t need = act + per_position * d->context_length;
        if (need > budget)
            return mcl_fail(s->ctx, MCL_ERROR_OUT_OF_DEVICE_MEMORY,
                            "session: a context of %u positions for %u sequences needs %llu "
                            "bytes (%.1f MiB) of device memory, the budget is %llu (%.1f MiB)",
                            d->context_length, s->sequences, (unsigned long long)need,
                            (double)need / 1048576.0, (unsigned long long)budget,
                            (double)budget / 1048576.0);
        s->context_length = d->context_length;
        return MCL_SUCCESS;
    }
    uint64_t want = default_context(s);
    if (want > room / per_position)
        want = room / per_position;
    if (want == 0)
        return fail(s->ctx, MCL_ERROR_OUT_OF_DEVICE_MEMORY,
                    "the budget holds the activations but no position of the cache");
    s->context_length = (uint32_t)want;
    return MCL_SUCCESS;
}

static void session_release_child(mcl_child *child);

mcl_status mcl_session_create(mcl_model *model, const mcl_session_desc *desc,
                              mcl_session **out)
{
    if (!out)
        return MCL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (!model)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_model_context_check(model) != MCL_SUCCESS)
        return MCL_ERROR_CONTEXT_DESTROYED;
    mcl_session_desc d = {.size = sizeof d};
    if (desc) {
        if (desc->size < offsetof(mcl_session_desc, expert_budget))
            return MCL_ERROR_INVALID_ARGUMENT;
        memcpy(&d, desc, desc->size < sizeof d ? desc->size : sizeof d);
    }
    mcl_session *s = mcl_mem_calloc(1, sizeof *s);
    if (!s)
        return MCL_ERROR_OUT_OF_HOST_MEMORY;
    s->model = model;
    s->info.size = sizeof s->info;
    mcl_status st = mcl_model_file_info(model, &s->info);
    mcl_tensor *any = mcl_model_find_tensor(model, "token_embd.weight");
    if (st != MCL_SUCCESS || !any) {
        mcl_mem_free(s);
        return MCL_ERROR_INVALID_ARGUMENT;
    }
    s->ctx = any->ctx;
    mcl_context_adopt(s->ctx, &s->child, session_release_child);
    const mcl_model_info *m = &s->info;
    s->q_dim = m->heads * m->head_dim;
    s->kv_type = d.kv_type == MCL_DTYPE_F16 ? MCL_DTYPE_F16 : MCL_DTYPE_F32;
    s->kv_dim = m->kv_heads * m->head_dim;
    s->sequences = d.sequences ? d.sequences : 1;
    s->batch_tokens = d.batch_tokens ? d.batch_tokens : ENGINE_DEFAULT_BATCH;
    s->rows = s->batch_tokens > s->sequences ? s->batch_tokens : s->sequences;
    s->layers = mcl_mem_calloc(m->layers, sizeof *s->layers);
    mcl_device_info dev = {.size = sizeof dev};
    const char *why;
    if (!s->layers)
        st = fail(s->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    else if (d.kv_type != MCL_DTYPE_F32 && d.kv_type != MCL_DTYPE_F16)
        st = fail(s->ctx, MCL_ERROR_UNSUPPORTED, "the cache is f32 or f16 (kv_type)");
    else if (d.kv_type == MCL_DTYPE_F16 &&
             !(mcl_traits_of(s->ctx)->features & MCL_FEATURE_STORAGE_16BIT))
        st = fail(s->ctx, MCL_ERROR_UNSUPPORTED,
                  "an f16 cache (kv_type) needs 16-bit storage, which this device lacks");
    else if ((st = mcl_context_device_info(s->ctx, &dev)) != MCL_SUCCESS)
        ;
    else if ((why = unsupported(s, &dev)) != NULL)
        st = mcl_fail(s->ctx, MCL_ERROR_UNSUPPORTED, "session: %s", why);
    if (st == MCL_SUCCESS)
        st = find_weights(s);
    /* Before the context is sized: the slots take device memory first (and, under a
     * memory_budget given with MCL_EXPERT_BUDGET_AUTO, their bytes come out of it). */
    uint64_t expert_budget = d.expert_budget;
    if (st == MCL_SUCCESS && expert_budget == MCL_EXPERT_BUDGET_AUTO)
        st = auto_expert_budget(s, &d, &expert_budget);
    if (st == MCL_SUCCESS)
        st = mcl_engine_experts_create(s, expert_budget);
    if (st == MCL_SUCCESS && d.expert_budget == MCL_EXPERT_BUDGET_AUTO && d.memory_budget) {
        uint64_t taken = s->expert_slots * mcl_engine_expert_slot_bytes(s);
        d.memory_budget = d.memory_budget > taken ? d.memory_budget - taken : 1;
    }
    if (st == MCL_SUCCESS)
        st = decide_context(s, &d);
    if (st == MCL_SUCCESS)
        st = host_state(s);
    if (st == MCL_SUCCESS)
        st = allocate(s);
    if (st == MCL_SUCCESS)
        st = make_rope_table(s);
    s->eager = mcl_traits_of(s->ctx)->engine_eager;
    s->split_glu = mcl_traits_of(s->ctx)->engine_split_glu;
    s->split_moe = mcl_traits_of(s->ctx)->engine_split_moe;
    s->norm_fold = mcl_traits_of(s->ctx)->engine_norm_fold;
    s->warm = mcl_traits_of(s->ctx)->engine_warm;
    s->draw_cap = ENGINE_DRAW_PENALTIES;
    if (st != MCL_SUCCESS) {
        mcl_session_destroy(s);
        return st;
    }
    *out = s;
    return MCL_SUCCESS;
}

/* The session's device part: its recorded steps and tensors (with its context, or first in
 * its own destruction). Leaves the pointers null, so that it can run twice. */
static void session_release(mcl_session *s)
{
    mcl_engine_steps_destroy(s);
    mcl_tensor **own[] = {&s->ids, &s->pos, &s->x, &s->h, &s->q, &s->k, &s->v, &s->att,
                          &s->gate, &s->up, &s->last, &s->logits, &s->rope_table, &s->part_o,
                          &s->part_ml, &s->normed, &s->act, &s->act2, &s->seq_logits,
                          &s->draw_params, &s->draw_tokens, &s->att_counters, &s->moe_logits,
                          &s->moe_ids, &s->moe_weights, &s->moe_gate, &s->moe_up,
                          &s->moe_down, &s->sh_z, &s->sh_gate, &s->sh_up, &s->moe_vids,
                          &s->moe_part, &s->moe_counts,
                          &s->warm_sink[0], &s->warm_sink[1], &s->warm_sink[2]};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        mcl_tensor_destroy(*own[i]);
        *own[i] = NULL;
    }
    mcl_engine_experts_release(s);
    for (uint32_t l = 0; s->layers && l < s->info.layers; l++) {
        mcl_tensor_destroy(s->layers[l].k_all);
        mcl_tensor_destroy(s->layers[l].v_all);
        s->layers[l].k_all = s->layers[l].v_all = NULL;
        for (uint32_t q = 0; q < s->sequences; q++) {
            if (s->layers[l].k_cache) {
                mcl_tensor_destroy(s->layers[l].k_cache[q]);
                s->layers[l].k_cache[q] = NULL;
            }
            if (s->layers[l].v_cache) {
                mcl_tensor_destroy(s->layers[l].v_cache[q]);
                s->layers[l].v_cache[q] = NULL;
            }
        }
    }
}

static void session_release_child(mcl_child *child)
{
    session_release((mcl_session *)((char *)child - offsetof(mcl_session, child)));
}

void mcl_session_destroy(mcl_session *s)
{
    if (!s)
        return;
    session_release(s);
    for (uint32_t l = 0; s->layers && l < s->info.layers; l++) {
        mcl_mem_free(s->layers[l].k_cache);
        mcl_mem_free(s->layers[l].v_cache);
    }
    for (uint32_t q = 0; s->seqs && q < s->sequences; q++)
        mcl_mem_free(s->seqs[q].tokens);
    mcl_mem_free(s->seqs);
    mcl_mem_free(s->layers);
    mcl_mem_free(s->sample_work);
    mcl_mem_free(s->sample_ids);
    mcl_mem_free(s->draw_rows);
    mcl_context_disown(s->ctx, &s->child);
    mcl_mem_free(s);
}

uint32_t mcl_session_context_length(const mcl_session *s)
{
    return s ? s->context_length : 0;
}

uint32_t mcl_session_sequences(const mcl_session *s)
{
    return s ? s->sequences : 0;
}

uint32_t mcl_session_length(const mcl_session *s, uint32_t seq)
{
    return s && seq < s->sequences ? s->seqs[seq].length : 0;
}

mcl_status mcl_session_reset(mcl_session *s, uint32_t seq)
{
    if (!s)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_context_check(s->ctx) != MCL_SUCCESS)
        return MCL_ERROR_CONTEXT_DESTROYED;
    if (seq >= s->sequences)
        return fail(s->ctx, MCL_ERROR_INVALID_ARGUMENT, "no such sequence");
    s->seqs[seq].length = 0;
    s->seqs[seq].has_logits = 0;
    s->seqs[seq].draws = 0;
    return MCL_SUCCESS;
}

/* Whether every token is in the vocabulary. */
static mcl_status check_tokens(const mcl_session *s, const int32_t *tokens, uint32_t count)
{
    for (uint32_t i = 0; i < count; i++)
        if (tokens[i] < 0 || (uint32_t)tokens[i] >= s->info.vocab)
            return mcl_fail(s->ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "session: token %d is outside the vocabulary of %u", tokens[i],
                            s->info.vocab);
    return MCL_SUCCESS;
}

mcl_status mcl_session_feed(mcl_session *s, uint32_t seq, const int32_t *tokens, uint32_t count,
                            float *logits)
{
    if (!s || !tokens)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_context_check(s->ctx) != MCL_SUCCESS)
        return MCL_ERROR_CONTEXT_DESTROYED;
    if (seq >= s->sequences || count == 0)
        return fail(s->ctx, MCL_ERROR_INVALID_ARGUMENT, "no such sequence, or no tokens");
    engine_seq *q = &s->seqs[seq];
    if (count > s->context_length - q->length)
        return mcl_fail(s->ctx, MCL_ERROR_TOO_LARGE,
                        "session: %u more tokens would pass the context of %u (the sequence "
                        "holds %u)", count, s->context_length, q->length);
    mcl_status st = check_tokens(s, tokens, count);
    uint32_t *seqs = mcl_mem_malloc((size_t)s->batch_tokens * 2 * sizeof *seqs);
    if (!seqs)
        st = fail(s->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    for (uint32_t done = 0; st == MCL_SUCCESS && done < count;) {
        uint32_t n = count - done < s->batch_tokens ? count - done : s->batch_tokens;
        uint32_t *pos = seqs + s->batch_tokens;
        for (uint32_t i = 0; i < n; i++) {
            seqs[i] = seq;
            pos[i] = q->length + i;
        }
        int last = done + n == count;
        uint32_t row = n - 1;
        st = mcl_engine_forward(s, seqs, pos, tokens + done, n, &row, last ? 1 : 0, NULL);
        if (st == MCL_SUCCESS) {
            memcpy(q->tokens + q->length, tokens + done, (size_t)n * sizeof *tokens);
            q->length += n;
            q->has_logits = last;
        }
        done += n;
    }
    mcl_mem_free(seqs);
    uint64_t row_bytes = (uint64_t)s->info.vocab * sizeof *logits;
    if (st == MCL_SUCCESS && logits)
        st = mcl_tensor_download(s->seq_logits, seq * row_bytes, logits, row_bytes);
    return st;
}

mcl_status mcl_session_feed_batch(mcl_session *s, const uint32_t *seqs, const int32_t *tokens,
                                  uint32_t count, float *logits)
{
    if (!s || !seqs || !tokens)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_context_check(s->ctx) != MCL_SUCCESS)
        return MCL_ERROR_CONTEXT_DESTROYED;
    if (count == 0 || count > s->sequences)
        return fail(s->ctx, MCL_ERROR_INVALID_ARGUMENT, "a batch of 0 or of more sequences "
                                                        "than the session holds");
    for (uint32_t i = 0; i < count; i++) {
        if (seqs[i] >= s->sequences)
            return fail(s->ctx, MCL_ERROR_INVALID_ARGUMENT, "no such sequence");
        for (uint32_t j = 0; j < i; j++)
            if (seqs[j] == seqs[i])
                return fail(s->ctx, MCL_ERROR_INVALID_ARGUMENT, "a sequence twice in a batch");
        if (s->seqs[seqs[i]].length >= s->context_length)
            return mcl_fail(s->ctx, MCL_ERROR_TOO_LARGE,
                            "session: sequence %u is at the context length %u", seqs[i],
                            s->context_length);
    }
    mcl_status st = check_tokens(s, tokens, count);
    if (st != MCL_SUCCESS)
        return st;
    uint32_t *pos = mcl_mem_malloc((size_t)count * 2 * sizeof *pos);
    if (!pos)
        return fail(s->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    uint32_t *rows = pos + count;
    for (uint32_t i = 0; i < count; i++) {
        pos[i] = s->seqs[seqs[i]].length;
        rows[i] = i;
    }
    st = mcl_engine_forward(s, seqs, pos, tokens, count, rows, count, logits);
    for (uint32_t i = 0; st == MCL_SUCCESS && i < count; i++) {
        engine_seq *q = &s->seqs[seqs[i]];
        q->tokens[q->length++] = tokens[i];
        q->has_logits = 1;
    }
    mcl_mem_free(pos);
    return st;
}

/* Tokens for sequences seqs[0..count) under desc: their parameters into s->draw_params,
 * the device's sampler over their rows of s->seq_logits, the tokens read back. A sequence
 * whose penalty window holds more distinct tokens than the parameters do is sampled on the
 * host from its downloaded logits instead (the same choice). */
static mcl_status draw(mcl_session *s, const uint32_t *seqs, uint32_t count,
                       const mcl_sampler_desc *desc, int32_t *tokens)
{
    uint32_t vocab = s->info.vocab, on_device = 0;
    uint32_t *host = mcl_mem_malloc((size_t)count * 2 * sizeof *host), *dev = host + count;
    if (!host)
        return fail(s->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    uint32_t hosted = 0;
    for (uint32_t i = 0; i < count; i++) {
        engine_seq *q = &s->seqs[seqs[i]];
        uint32_t *row = s->draw_rows + (size_t)on_device * ENGINE_DRAW_STRIDE;
        if (mcl_sample_params(desc, q->tokens, q->length, q->draws, seqs[i],
                              s->draw_cap, s->sample_ids, row))
            dev[on_device++] = i;
        else
            host[hosted++] = i;
    }
    /* The pass that made the logits finished first, at the cost of one round trip: on an
     * H100 at b06f7df the wait and the sampler together took 0.07 ms of a 7B q4_0 token
     * (315.2 tokens/s with a token sampled after each step against 322.5 with each step
     * waited for, evidence/h100-b06f7df-bench), so submitting the sampler behind the running
     * step could gain at most that. */
    mcl_status st = mcl_finish(s->ctx);
    if (st == MCL_SUCCESS && on_device > 0) {
        st = mcl_tensor_upload(s->draw_params, 0, s->draw_rows,
                               4ull * ENGINE_DRAW_STRIDE * on_device);
        if (st == MCL_SUCCESS)
            st = mcl_sample_rows(s->ctx, s->seq_logits, s->draw_params, ENGINE_DRAW_STRIDE,
                                 on_device, s->draw_tokens);
        int32_t got[64];
        for (uint32_t j = 0; st == MCL_SUCCESS && j < on_device; j += 64) {
            uint32_t n = on_device - j < 64 ? on_device - j : 64;
            st = mcl_tensor_download(s->draw_tokens, 4ull * j, got, 4ull * n);
            for (uint32_t i = 0; st == MCL_SUCCESS && i < n; i++)
                tokens[dev[j + i]] = got[i];
        }
    }
    uint64_t row_bytes = (uint64_t)vocab * sizeof(float);
    for (uint32_t k = 0; st == MCL_SUCCESS && k < hosted; k++) {
        uint32_t i = host[k];
        engine_seq *q = &s->seqs[seqs[i]];
        float *l = s->sample_work + vocab;
        st = mcl_tensor_download(s->seq_logits, seqs[i] * row_bytes, l, row_bytes);
        if (st == MCL_SUCCESS) {
            /* mcl_sample_logits copies l to the front of its work first. */
            tokens[i] = mcl_sample_logits(l, vocab, q->tokens, q->length, desc, q->draws,
                                          s->sample_work, s->sample_ids);
        }
    }
    for (uint32_t i = 0; st == MCL_SUCCESS && i < count; i++)
        s->seqs[seqs[i]].draws++;
    mcl_mem_free(host);
    return st;
}

mcl_status mcl_session_sample(mcl_session *s, uint32_t seq, const mcl_sampler_desc *desc,
                              int32_t *token)
{
    if (!s || !token)
        return MCL_ERROR_INVALID_ARGUMENT;
    return mcl_session_sample_batch(s, &seq, 1, desc, token);
}

mcl_status mcl_session_sample_batch(mcl_session *s, const uint32_t *seqs, uint32_t count,
                                    const mcl_sampler_desc *desc, int32_t *tokens)
{
    if (!s || !seqs || !tokens)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_context_check(s->ctx) != MCL_SUCCESS)
        return MCL_ERROR_CONTEXT_DESTROYED;
    if (count == 0 || count > s->sequences)
        return fail(s->ctx, MCL_ERROR_INVALID_ARGUMENT,
                    "sampling 0 sequences, or more than the session holds");
    for (uint32_t i = 0; i < count; i++) {
        if (seqs[i] >= s->sequences || !s->seqs[seqs[i]].has_logits)
            return fail(s->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "no such sequence, or nothing fed to it since it was emptied");
        for (uint32_t j = 0; j < i; j++)
            if (seqs[j] == seqs[i])
                return fail(s->ctx, MCL_ERROR_INVALID_ARGUMENT, "a sequence twice");
    }
    if (desc && desc->size < offsetof(mcl_sampler_desc, reserved))
        return fail(s->ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_sampler_desc.size");
    return draw(s, seqs, count, desc, tokens);
}
