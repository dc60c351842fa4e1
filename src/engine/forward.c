/* The forward pass of a llama-family decoder over a session (engine_internal.h): pre-norm
 * blocks of RMSNorm, attention with grouped-query heads and RoPE (split-half pairs: the
 * loader gives q and k in Hugging Face's row order) over each sequence's cache, and a SwiGLU
 * feed-forward; then the final RMSNorm and the head, for the rows whose logits are wanted.
 * Each pass is recorded op by op (q, k and v as one multi-weight product, gate and up as
 * another); the tensors of a pass are views of the session's activations with as many rows
 * as the pass has tokens. */
#include <stdlib.h>
#include <string.h>

#include "pass.h"
#include "core/alloc.h"

/* Layer L's key (value: its value) cache of sequence seq, all its positions, as a view
 * [1, context, kv_heads, head_dim] kept in v. */
static mcl_tensor *cache_view(mcl_session *s, views *v, const engine_layer *L, int value,
                              uint32_t seq)
{
    const mcl_model_info *m = &s->info;
    if (!L->k_all) {
        mcl_tensor *own = value ? L->v_cache[seq] : L->k_cache[seq];
        return view(v, own, 0, s->kv_type, 4, 1, s->context_length, m->kv_heads, m->head_dim);
    }
    uint64_t slab = (uint64_t)s->context_length * s->kv_dim * mcl_dtype_size(s->kv_type);
    return view(v, value ? L->v_all : L->k_all, seq * slab, s->kv_type, 4, 1,
                s->context_length, m->kv_heads, m->head_dim);
}

/* Rows [r0, r0 + n) of the pass, tokens of sequence seq at consecutive positions from pos0
 * (s->pos holds each row's position and sequence): RoPE on q in place and on k into the
 * cache, v into the cache, then attention of those queries over the cache's first pos0 + n
 * positions into att. */
static mcl_status attend(mcl_session *s, views *v, const engine_layer *layer, uint32_t seq,
                         uint32_t pos0, uint32_t r0, uint32_t n)
{
    mcl_context *ctx = s->ctx;
    const mcl_model_info *m = &s->info;
    uint32_t mark = v->count;
    uint64_t q_row = (uint64_t)s->q_dim * 4;
    mcl_tensor *q3 = view(v, s->q, 0, MCL_DTYPE_F32, 3, s->rows, m->heads, m->head_dim, 0);
    mcl_tensor *k3 = view(v, s->k, 0, MCL_DTYPE_F32, 3, s->rows, m->kv_heads, m->head_dim, 0);
    mcl_tensor *v3 = view(v, s->v, 0, MCL_DTYPE_F32, 3, s->rows, m->kv_heads, m->head_dim, 0);
    mcl_tensor *q = view(v, s->q, r0 * q_row, MCL_DTYPE_F32, 4, 1, n, m->heads, m->head_dim);
    mcl_tensor *att = view(v, s->att, r0 * q_row, MCL_DTYPE_F32, 4, 1, n, m->heads, m->head_dim);
    mcl_tensor *k_seq = cache_view(s, v, layer, 0, seq);
    mcl_tensor *v_seq = cache_view(s, v, layer, 1, seq);
    if (v->status != MCL_SUCCESS)
        return v->status;
    mcl_tensor *kc = layer->k_all ? layer->k_all : layer->k_cache[seq];
    mcl_tensor *vc = layer->k_all ? layer->v_all : layer->v_cache[seq];
    TRY(mcl_rope_kv(ctx, q3, k3, v3, MCL_ROPE_SPLIT_HALF, s->rope_table, s->pos, r0,
                    layer->k_all ? s->rows + r0 : MCL_SLOT_NONE, r0, n, kc, vc));
    mcl_attention_desc desc = {.size = sizeof desc, .causal = 1, .kv_length = pos0 + n};
    TRY(mcl_attention_prompt(ctx, q, k_seq, v_seq, &desc, att));
    views_release(v, mark);
    return MCL_SUCCESS;
}

int mcl_engine_moe_quantizes(mcl_session *s, const engine_layer *L)
{
    mcl_context *ctx = s->ctx;
    int any = mcl_matmul_experts_quantizes(ctx, L->w_gate_exps) ||
              mcl_matmul_experts_quantizes(ctx, L->w_up_exps) ||
              mcl_matmul_experts_quantizes(ctx, L->w_down_exps);
    /* A decode step's few rows take the GEMV, whose path follows the type alone. */
    if (s->info.shared_hidden)
        any |= mcl_matmul_experts_quantizes(ctx, L->w_gate_sh) ||
               mcl_matmul_experts_quantizes(ctx, L->w_up_sh) ||
               mcl_matmul_experts_quantizes(ctx, L->w_down_sh);
    return any;
}

/* A mixture's feed-forward of the normed rows h [count, dim] into out [count, dim] (out = it,
 * or out += it where accumulate): the router's logits, the experts chosen on the device
 * (mcl_moe_route), the chosen experts' gate and up products (mcl_matmul_experts: only their
 * rows are read), SwiGLU, their down products, the weighted sum (mcl_moe_combine); then the
 * shared expert, weighted by the sigmoid of its gate row. Views in v, released at the end.
 * Where act is not NULL (a decode step: s->act, mcl_engine_moe_quantizes), it holds h's
 * quantization, which every product on the integer-dot path reads, and the SwiGLUs quantize
 * into it for the down products (mcl_swiglu_q8), as the dense step's do: no product quantizes
 * its own input. Otherwise each product on that path quantizes its own. */
mcl_status mcl_engine_moe_ffn(mcl_session *s, views *v, const engine_layer *L, mcl_tensor *h,
                              uint32_t count, mcl_tensor *out, int accumulate, mcl_tensor *act)
{
    mcl_context *ctx = s->ctx;
    const mcl_model_info *m = &s->info;
    const uint32_t k = m->experts_used, pairs = count * k;
    uint32_t mark = v->count;
    mcl_tensor *logits = view(v, s->moe_logits, 0, MCL_DTYPE_F32, 2, count, m->experts, 0, 0);
    mcl_tensor *ids = view(v, s->moe_ids, 0, MCL_DTYPE_I32, 1, pairs, 0, 0, 0);
    mcl_tensor *weights = view(v, s->moe_weights, 0, MCL_DTYPE_F32, 2, count, k, 0, 0);
    mcl_tensor *gate = view(v, s->moe_gate, 0, MCL_DTYPE_F32, 2, pairs, m->expert_hidden, 0, 0);
    mcl_tensor *up = view(v, s->moe_up, 0, MCL_DTYPE_F32, 2, pairs, m->expert_hidden, 0, 0);
    mcl_tensor *down = view(v, s->moe_down, 0, MCL_DTYPE_F32, 2, pairs, m->dim, 0, 0);
    if (v->status != MCL_SUCCESS)
        return v->status;
    /* The router and the routing in one dispatch for a pass of few rows. */
    int routed = 0;
    if (!(s->split_moe & 1) && count <= ENGINE_ROUTER_ROWS) {
        mcl_moe_router_args ra = {.x = h, .w = L->w_router, .part = s->moe_part,
                                  .counts = s->moe_counts, .logits = logits, .ids = ids,
                                  .weights = weights, .k = k, .norm = (int)m->experts_norm};
        TRY(mcl_moe_router(ctx, &ra, &routed));
    }
    if (routed) {
        MARK(s, "router, routing");
    } else {
        TRY(linear(ctx, h, L->w_router, NULL, logits));
        MARK(s, "router");
        TRY(mcl_moe_route(ctx, logits, k, (int)m->experts_norm, ids, weights));
        MARK(s, "routing");
    }
    mcl_experts_desc shared_x = {.experts = m->experts, .slots = k, .per_slot = 0,
                                 .path = MCL_QUANT_PATH_AUTO, .act = act};
    mcl_experts_desc per_slot = shared_x;
    per_slot.per_slot = 1;
    /* The shared expert's views; its gate and up products read h's quantization too, so they
     * run before the routed experts' SwiGLU reuses act. */
    mcl_tensor *z = NULL, *sg = NULL, *su = NULL, *sd = NULL, *row = NULL;
    if (m->shared_hidden) {
        z = view(v, s->sh_z, 0, MCL_DTYPE_F32, 2, count, 1, 0, 0);
        sg = view(v, s->sh_gate, 0, MCL_DTYPE_F32, 2, count, m->shared_hidden, 0, 0);
        su = view(v, s->sh_up, 0, MCL_DTYPE_F32, 2, count, m->shared_hidden, 0, 0);
        sd = view(v, s->moe_down, 0, MCL_DTYPE_F32, 2, count, m->dim, 0, 0);
        row = view(v, L->w_shared_gate_inp, 0, MCL_DTYPE_F32, 2, 1, m->dim, 0, 0);
        if (v->status != MCL_SUCCESS)
            return v->status;
    }
    mcl_tensor *vids = ids;
    /* Gate, up and SwiGLU in one dispatch (over the cache and the pool: two) where all three
     * stacks take the integer-dot path (quantized into act2 for the down product: it reads
     * act). */
    const int glu = act && !s->split_glu && mcl_matmul_experts_quantizes(ctx, L->w_down_exps);
    int fused = 0;
    if (s->expert_slots) {
        /* The cache: the plan rewrites the ids as slots (or the pool's, past the slots) and
         * copies the misses into their slots before the products read them. */
        vids = view(v, s->moe_vids, 0, MCL_DTYPE_I32, 1, pairs, 0, 0, 0);
        if (v->status != MCL_SUCCESS)
            return v->status;
        TRY(mcl_engine_experts_plan(s, L, ids, pairs, vids));
        MARK(s, "experts: residency");
        if (glu)
            TRY(mcl_engine_experts_glu(s, L, h, vids, &shared_x, gate, s->act2, &fused));
        if (!fused)
            TRY(mcl_engine_experts_gate_up(s, L, h, vids, &shared_x, gate, up));
    } else {
        if (glu)
            TRY(mcl_matmul_experts_glu_q8(ctx, h, L->w_gate_exps, L->w_up_exps, ids, &shared_x,
                                          gate, s->act2, &fused));
        if (!fused) {
            TRY(mcl_matmul_experts(ctx, h, L->w_gate_exps, ids, &shared_x, gate, NULL));
            TRY(mcl_matmul_experts(ctx, h, L->w_up_exps, ids, &shared_x, up, NULL));
        }
    }
    MARK(s, fused ? "experts: gate, up, swiglu" : "experts: gate, up");
    if (m->shared_hidden) {
        const mcl_tensor *w[2] = {L->w_gate_sh, L->w_up_sh};
        mcl_tensor *c[2] = {sg, su};
        if (act)
            TRY(mcl_matmul_multi_given(ctx, h, act, 2, w, NULL, c));
        else
            TRY(linears(ctx, h, 2, w, NULL, c));
        MARK(s, "shared expert: gate, up");
    }
    /* SwiGLU, quantized for the down products where they take the integer-dot path. */
    if (fused) {
        per_slot.act = s->act2;
    } else {
        if (act && mcl_matmul_experts_quantizes(ctx, L->w_down_exps))
            TRY(mcl_swiglu_q8(ctx, gate, up, act));
        else
            TRY(mcl_swiglu(ctx, gate, up, gate));
        MARK(s, "experts: swiglu");
    }
    /* Resident, the down products and their weighted sum in one dispatch (integer dot). */
    int summed = 0;
    if (!s->expert_slots && per_slot.act && !(s->split_moe & 2) &&
        count <= ENGINE_ROUTER_ROWS) {
        mcl_experts_sum_args sa = {.weights = weights, .counts = s->moe_counts, .out = out,
                                   .accumulate = accumulate};
        TRY(mcl_matmul_experts_sum(ctx, gate, L->w_down_exps, ids, &per_slot, down, &sa,
                                   &summed));
    }
    if (summed) {
        MARK(s, "experts: down, weighted sum");
    } else {
        if (s->expert_slots)
            TRY(mcl_engine_experts_down(s, L, gate, vids, &per_slot, down));
        else
            TRY(mcl_matmul_experts(ctx, gate, L->w_down_exps, ids, &per_slot, down, NULL));
        MARK(s, "experts: down");
        TRY(mcl_moe_combine(ctx, down, weights, k, accumulate, out));
        MARK(s, "experts: weighted sum");
    }
    if (m->shared_hidden) {
        const mcl_tensor *wd[1] = {L->w_down_sh};
        if (act && mcl_matmul_quantizes(ctx, sg, L->w_down_sh, sd)) {
            TRY(mcl_swiglu_q8(ctx, sg, su, act));
            TRY(mcl_matmul_multi_given(ctx, sg, act, 1, wd, NULL, &sd));
        } else {
            TRY(mcl_swiglu(ctx, sg, su, sg));
            TRY(linear(ctx, sg, L->w_down_sh, NULL, sd));
        }
        TRY(linear(ctx, h, row, NULL, z));
        TRY(mcl_sigmoid(ctx, z, z));
        TRY(mcl_moe_combine(ctx, sd, z, 1, 1, out));
        MARK(s, "shared expert");
    }
    views_release(v, mark);
    return MCL_SUCCESS;
}

/* The pass recorded op by op, positions pos[] recorded into it; views in v. */
static mcl_status record(mcl_session *s, views *v, const uint32_t *seqs, const uint32_t *pos,
                         uint32_t count, const uint32_t *logit_rows, uint32_t count_logits)
{
    mcl_context *ctx = s->ctx;
    const mcl_model_info *m = &s->info;
    int prompt = count > 1 && seqs[0] == seqs[count - 1];
    uint32_t dim = m->dim;
    pass_rows p;
    pass_rows_view(s, v, count, &p);
    mcl_tensor *ids = p.ids, *x = p.x, *h = p.h, *q = p.q, *k = p.k, *vv = p.v, *att = p.att;
    mcl_tensor *gate = p.gate, *up = p.up;
    if (v->status != MCL_SUCCESS)
        return v->status;
    TRY(mcl_embedding(ctx, s->embedding, ids, x));
    MARK(s, "embedding");
    for (uint32_t l = 0; l < m->layers; l++) {
        const engine_layer *L = &s->layers[l];
        TRY(mcl_rmsnorm(ctx, x, L->attn_norm, m->norm_eps, h));
        MARK(s, "attention norm");
        const mcl_tensor *qkv_w[3] = {L->wq, L->wk, L->wv};
        const mcl_tensor *qkv_b[3] = {L->bq, L->bk, L->bv};
        mcl_tensor *qkv[3] = {q, k, vv};
        TRY(linears(ctx, h, 3, qkv_w, qkv_b, qkv));
        MARK(s, "q, k, v");
        if (prompt) {
            TRY(attend(s, v, L, seqs[0], pos[0], 0, count));
        } else {
            for (uint32_t i = 0; i < count; i++)
                TRY(attend(s, v, L, seqs[i], pos[i], i, 1));
        }
        MARK(s, "attention");
        TRY(linear(ctx, att, L->wo, NULL, h));
        MARK(s, "output");
        TRY(mcl_add(ctx, x, h, x));
        MARK(s, "residual");
        TRY(mcl_rmsnorm(ctx, x, L->ffn_norm, m->norm_eps, h));
        MARK(s, "feed-forward norm");
        if (m->experts) {
            TRY(mcl_engine_moe_ffn(s, v, L, h, count, x, 1, NULL));
            continue;
        }
        const mcl_tensor *ffn_w[2] = {L->w_gate, L->w_up};
        mcl_tensor *ffn[2] = {gate, up};
        TRY(linears(ctx, h, 2, ffn_w, NULL, ffn));
        MARK(s, "gate, up");
        TRY(mcl_swiglu(ctx, gate, up, gate));
        MARK(s, "swiglu");
        TRY(linear(ctx, gate, L->w_down, NULL, h));
        MARK(s, "down");
        TRY(mcl_add(ctx, x, h, x));
        MARK(s, "residual");
    }
    if (count_logits == 0)
        return MCL_SUCCESS;
    /* The rows whose logits are wanted, gathered, normed and through the head. */
    uint64_t row = (uint64_t)dim * 4;
    for (uint32_t j = 0; j < count_logits; j++) {
        uint32_t mark = v->count;
        mcl_tensor *from = view(v, s->x, logit_rows[j] * row, MCL_DTYPE_F32, 2, 1, dim, 0, 0);
        mcl_tensor *to = view(v, s->last, j * row, MCL_DTYPE_F32, 2, 1, dim, 0, 0);
        if (v->status != MCL_SUCCESS)
            return v->status;
        TRY(mcl_copy(ctx, from, to));
        views_release(v, mark);
    }
    mcl_tensor *last = view(v, s->last, 0, MCL_DTYPE_F32, 2, count_logits, dim, 0, 0);
    mcl_tensor *logits = view(v, s->logits, 0, MCL_DTYPE_F32, 2, count_logits, m->vocab, 0, 0);
    if (v->status != MCL_SUCCESS)
        return v->status;
    TRY(mcl_rmsnorm(ctx, last, s->output_norm, m->norm_eps, last));
    MARK(s, "output norm");
    TRY(linear(ctx, last, s->output, NULL, logits));
    MARK(s, "head");
    TRY(mcl_scatter_rows(ctx, logits, s->ids, s->rows + 3 * s->sequences, s->seq_logits));
    MARK(s, "logits to their sequences");
    return MCL_SUCCESS;
}

mcl_status mcl_engine_forward(mcl_session *s, const uint32_t *seqs, const uint32_t *pos,
                              const int32_t *tokens, uint32_t count, const uint32_t *logit_rows,
                              uint32_t count_logits, float *out)
{
    /* A decode step of up to ENGINE_MAX_STEP_ROWS sequences, all of whose logits are wanted,
     * replays its recording. */
    int step = !s->eager && count <= ENGINE_MAX_STEP_ROWS && count_logits == count &&
               s->info.dim % 32 == 0;
    for (uint32_t i = 0; step && i < count; i++)
        step = logit_rows[i] == i;
    views v = {.count = 0, .status = MCL_SUCCESS};
    mcl_status status;
    if (step) {
        status = mcl_engine_decode_step(s, seqs, pos, tokens, count);
    } else {
        /* Each row's position, and from s->rows on its sequence, for mcl_rope_kv. */
        int32_t *where = mcl_mem_malloc((size_t)s->rows * 2 * sizeof *where);
        status = where ? MCL_SUCCESS
                       : mcl_fail(s->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        for (uint32_t i = 0; where && i < count; i++) {
            where[i] = (int32_t)pos[i];
            where[s->rows + i] = (int32_t)seqs[i];
        }
        if (status == MCL_SUCCESS)
            status = mcl_tensor_upload(s->pos, 0, where, (uint64_t)s->rows * 2 * sizeof *where);
        mcl_mem_free(where);
        if (status == MCL_SUCCESS)
            status = mcl_tensor_upload(s->ids, 0, tokens, (uint64_t)count * sizeof *tokens);
        /* The sequence of each row of logits, for their scatter into s->seq_logits. */
        int32_t owner[ENGINE_MAX_STEP_ROWS];
        for (uint32_t j = 0; status == MCL_SUCCESS && j < count_logits;
             j += ENGINE_MAX_STEP_ROWS) {
            uint32_t n = count_logits - j;
            n = n < ENGINE_MAX_STEP_ROWS ? n : ENGINE_MAX_STEP_ROWS;
            for (uint32_t i = 0; i < n; i++)
                owner[i] = (int32_t)seqs[logit_rows[j + i]];
            status = mcl_tensor_upload(s->ids, 4ull * (s->rows + 3 * s->sequences + j), owner,
                                       (uint64_t)n * sizeof *owner);
        }
        if (status == MCL_SUCCESS)
            status = record(s, &v, seqs, pos, count, logit_rows, count_logits);
    }
    /* Without `out`, the work runs on: the sampler or a download waits for it. */
    if (status == MCL_SUCCESS && count_logits > 0 && out)
        status = mcl_tensor_download(s->logits, 0, out,
                                     (uint64_t)count_logits * s->info.vocab * sizeof *out);
    else if (status == MCL_SUCCESS && count_logits == 0)
        status = mcl_finish(s->ctx);
    views_release(&v, 0);
    return status;
}
