/* The forward pass of a llama-family decoder over a session (engine_internal.h): pre-norm
 * blocks of RMSNorm, attention with grouped-query heads and RoPE (split-half pairs: the
 * loader gives q and k in Hugging Face's row order) over each sequence's cache, and a SwiGLU
 * feed-forward; then the final RMSNorm and the head, for the rows whose logits are wanted.
 * Each pass is recorded op by op (q, k and v as one multi-weight product, gate and up as
 * another); the tensors of a pass are views of the session's activations with as many rows
 * as the pass has tokens. */
#include <stdlib.h>
#include <string.h>

#include "engine_internal.h"
#include "core/alloc.h"
#include "../ops/matmul_quant.h"

/* The most rows a recorded decode step takes; a larger batch is recorded op by op. */
#define ENGINE_MAX_STEP_ROWS 64u

/* The views one pass uses, destroyed together. */
typedef struct views {
    mcl_tensor *list[64];
    uint32_t count;
    mcl_status status;
} views;

/* A view of `owner` at byte `offset` with the given shape, kept in v; NULL once a view has
 * failed (every later call then does nothing, and the ops refuse NULL tensors). */
static mcl_tensor *view(views *v, mcl_tensor *owner, uint64_t offset, mcl_dtype dtype,
                        uint32_t ndim, int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    if (v->status != MCL_SUCCESS)
        return NULL;
    if (v->count == sizeof v->list / sizeof v->list[0]) {
        v->status = mcl_fail(owner->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "engine: too many views");
        return NULL;
    }
    int64_t shape[4] = {d0, d1, d2, d3};
    mcl_tensor *t = NULL;
    v->status = mcl_tensor_view(owner, offset, dtype, ndim, shape, &t);
    if (v->status != MCL_SUCCESS)
        return NULL;
    v->list[v->count++] = t;
    return t;
}

/* Destroy the views from `mark` on. */
static void views_release(views *v, uint32_t mark)
{
    while (v->count > mark)
        mcl_tensor_destroy(v->list[--v->count]);
}

#define TRY(expr)                                                                              \
    do {                                                                                       \
        mcl_status status_ = (expr);                                                           \
        if (status_ != MCL_SUCCESS)                                                            \
            return status_;                                                                    \
    } while (0)

/* After an op of session s: its mark, where one is set. */
#define MARK(s, op) TRY((s)->mark ? (s)->mark((s)->mark_user, op) : MCL_SUCCESS)

/* y = x W^T (+ b) over the pass's rows. */
static mcl_status linear(mcl_context *ctx, const mcl_tensor *x, const mcl_tensor *w,
                         const mcl_tensor *b, mcl_tensor *y)
{
    return mcl_matmul(ctx, x, MCL_NO_TRANSPOSE, w, MCL_TRANSPOSE, b, y);
}

/* c[i] = x w[i]^T (+ b[i]) for count weights: one multi-weight product (the input quantized
 * once on the integer-dot path) where the weights share a type, else one product each. */
static mcl_status linears(mcl_context *ctx, const mcl_tensor *x, uint32_t count,
                          const mcl_tensor *const *w, const mcl_tensor *const *b,
                          mcl_tensor *const *c)
{
    int same = 1;
    for (uint32_t i = 1; i < count; i++)
        same &= w[i]->dtype == w[0]->dtype;
    if (same)
        return mcl_matmul_multi(ctx, x, count, w, b, c);
    for (uint32_t i = 0; i < count; i++)
        TRY(linear(ctx, x, w[i], b ? b[i] : NULL, c[i]));
    return MCL_SUCCESS;
}

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

/* The attention of a decode step's rows, each one token of sequence seqs[i], whose
 * positions, lengths and sequences the step reads from s->ids (decode_step): RoPE, the cache
 * write and the split attention over the caches in one dispatch (mcl_attention_decode_rope),
 * or where the head dimension is not a multiple of 8 RoPE with the cache write as a dispatch
 * before the attention's. With all sequences' caches in one tensor, one dispatch serves every
 * row; otherwise each row has its own. */
static mcl_status attend_step(mcl_session *s, views *v, const engine_layer *layer,
                              const uint32_t *seqs, uint32_t count, mcl_tensor *act)
{
    mcl_context *ctx = s->ctx;
    const mcl_model_info *m = &s->info;
    uint32_t mark = v->count;
    mcl_tensor *q = view(v, s->q, 0, MCL_DTYPE_F32, 3, count, m->heads, m->head_dim, 0);
    mcl_tensor *k = view(v, s->k, 0, MCL_DTYPE_F32, 3, count, m->kv_heads, m->head_dim, 0);
    mcl_tensor *vv = view(v, s->v, 0, MCL_DTYPE_F32, 3, count, m->kv_heads, m->head_dim, 0);
    if (v->status != MCL_SUCCESS)
        return v->status;
    uint32_t pos_slot = count, len_slot = 2 * count, seq_slot = 3 * count;
    uint32_t act_blocks = count * (s->q_dim / 32); /* where act: the output's quantization */
    /* The RoPE and the cache write in the attention's dispatch, where the head dimension
     * allows (a multiple of 8); else a dispatch of their own before it. */
    int fused = m->head_dim % 8 == 0;
    if (layer->k_all) {
        mcl_tensor *q4 = view(v, s->q, 0, MCL_DTYPE_F32, 4, count, 1, m->heads, m->head_dim);
        mcl_tensor *att = view(v, s->att, 0, MCL_DTYPE_F32, 4, count, 1, m->heads,
                               m->head_dim);
        if (v->status != MCL_SUCCESS)
            return v->status;
        if (fused) {
            mcl_decode_rope rope = {k, vv, s->rope_table, pos_slot, MCL_ROPE_SPLIT_HALF};
            TRY(mcl_attention_decode_rope(ctx, q4, layer->k_all, layer->v_all, s->ids,
                                          len_slot, seq_slot, &rope, s->part_o, s->part_ml,
                                          s->att_counters, act, 0, act_blocks, att));
            views_release(v, mark);
            return MCL_SUCCESS;
        }
        TRY(mcl_rope_kv(ctx, q, k, vv, MCL_ROPE_SPLIT_HALF, s->rope_table, s->ids, pos_slot,
                        seq_slot, 0, count, layer->k_all, layer->v_all));
        MARK(s, "rope, cache write");
        TRY(mcl_attention_decode(ctx, q4, layer->k_all, layer->v_all, s->ids, len_slot,
                                 seq_slot, s->part_o, s->part_ml, s->att_counters, act, 0,
                                 act_blocks, att));
        views_release(v, mark);
        return MCL_SUCCESS;
    }
    uint64_t q_row = (uint64_t)s->q_dim * 4;
    uint64_t part_o_row = (uint64_t)MCL_ATTENTION_DECODE_MAX_SPLITS * s->q_dim * 4;
    uint64_t part_ml_row = (uint64_t)MCL_ATTENTION_DECODE_MAX_SPLITS * m->heads * 2 * 4;
    uint64_t kv_row = (uint64_t)m->kv_heads * m->head_dim * 4;
    if (!fused) {
        for (uint32_t i = 0; i < count; i++)
            TRY(mcl_rope_kv(ctx, q, k, vv, MCL_ROPE_SPLIT_HALF, s->rope_table, s->ids,
                            pos_slot + i, MCL_SLOT_NONE, i, 1, layer->k_cache[seqs[i]],
                            layer->v_cache[seqs[i]]));
        MARK(s, "rope, cache write");
    }
    for (uint32_t i = 0; i < count; i++) {
        uint32_t inner = v->count;
        mcl_tensor *qi = view(v, s->q, i * q_row, MCL_DTYPE_F32, 4, 1, 1, m->heads, m->head_dim);
        mcl_tensor *att = view(v, s->att, i * q_row, MCL_DTYPE_F32, 4, 1, 1, m->heads,
                               m->head_dim);
        mcl_tensor *po = view(v, s->part_o, i * part_o_row, MCL_DTYPE_F32, 1,
                              (int64_t)(part_o_row / 4), 0, 0, 0);
        mcl_tensor *pml = view(v, s->part_ml, i * part_ml_row, MCL_DTYPE_F32, 1,
                               (int64_t)(part_ml_row / 4), 0, 0, 0);
        /* Each row its own counters, so that the rows' dispatches need no barrier between
         * them. */
        mcl_tensor *cnt = view(v, s->att_counters, i * 4ull * ENGINE_COUNTER_STRIDE(s),
                               MCL_DTYPE_I32, 1, ENGINE_COUNTER_STRIDE(s), 0, 0, 0);
        if (v->status != MCL_SUCCESS)
            return v->status;
        if (fused) {
            mcl_tensor *ki = view(v, s->k, i * kv_row, MCL_DTYPE_F32, 3, 1, m->kv_heads,
                                  m->head_dim, 0);
            mcl_tensor *vi = view(v, s->v, i * kv_row, MCL_DTYPE_F32, 3, 1, m->kv_heads,
                                  m->head_dim, 0);
            if (v->status != MCL_SUCCESS)
                return v->status;
            mcl_decode_rope rope = {ki, vi, s->rope_table, pos_slot + i, MCL_ROPE_SPLIT_HALF};
            TRY(mcl_attention_decode_rope(ctx, qi, layer->k_cache[seqs[i]],
                                          layer->v_cache[seqs[i]], s->ids, len_slot + i,
                                          MCL_SLOT_NONE, &rope, po, pml, cnt, act,
                                          i * (s->q_dim / 32), act_blocks, att));
        } else {
            TRY(mcl_attention_decode(ctx, qi, layer->k_cache[seqs[i]],
                                     layer->v_cache[seqs[i]], s->ids, len_slot + i,
                                     MCL_SLOT_NONE, po, pml, cnt, act, i * (s->q_dim / 32),
                                     act_blocks, att));
        }
        views_release(v, inner);
    }
    views_release(v, mark);
    return MCL_SUCCESS;
}

/* Whether a decode step's mixture layer L reads quantized activations anywhere (an expert
 * stack or a shared expert's product on the integer-dot path): the step then quantizes the
 * normed rows in the norm's dispatch (moe_ffn's act). */
static int moe_quantizes(mcl_session *s, const engine_layer *L)
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
 * Where act is not NULL (a decode step: s->act, moe_quantizes), it holds h's quantization,
 * which every product on the integer-dot path reads, and the SwiGLUs quantize into it for the
 * down products (mcl_swiglu_q8), as the dense step's do: no product quantizes its own input.
 * Otherwise each product on that path quantizes its own. */
static mcl_status moe_ffn(mcl_session *s, views *v, const engine_layer *L, mcl_tensor *h,
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
    TRY(linear(ctx, h, L->w_router, NULL, logits));
    MARK(s, "router");
    TRY(mcl_moe_route(ctx, logits, k, (int)m->experts_norm, ids, weights));
    MARK(s, "routing");
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
    if (s->expert_slots) {
        /* The cache: the plan rewrites the ids as slots (or the pool's, past the slots) and
         * copies the misses into their slots before the products read them. */
        vids = view(v, s->moe_vids, 0, MCL_DTYPE_I32, 1, pairs, 0, 0, 0);
        if (v->status != MCL_SUCCESS)
            return v->status;
        TRY(mcl_engine_experts_plan(s, L, ids, pairs, vids));
        MARK(s, "experts: residency");
        TRY(mcl_engine_experts_gate_up(s, L, h, vids, &shared_x, gate, up));
    } else {
        TRY(mcl_matmul_experts(ctx, h, L->w_gate_exps, ids, &shared_x, gate, NULL));
        TRY(mcl_matmul_experts(ctx, h, L->w_up_exps, ids, &shared_x, up, NULL));
    }
    MARK(s, "experts: gate, up");
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
    if (act && mcl_matmul_experts_quantizes(ctx, L->w_down_exps))
        TRY(mcl_swiglu_q8(ctx, gate, up, act));
    else
        TRY(mcl_swiglu(ctx, gate, up, gate));
    MARK(s, "experts: swiglu");
    if (s->expert_slots)
        TRY(mcl_engine_experts_down(s, L, gate, vids, &per_slot, down));
    else
        TRY(mcl_matmul_experts(ctx, gate, L->w_down_exps, ids, &per_slot, down, NULL));
    MARK(s, "experts: down");
    TRY(mcl_moe_combine(ctx, down, weights, k, accumulate, out));
    MARK(s, "experts: weighted sum");
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

/* A pass's activations over its count rows: views of the session's tensors. */
typedef struct pass_rows {
    mcl_tensor *ids, *x, *h, *q, *k, *v, *att, *gate, *up;
} pass_rows;

/* The views of p, kept in v; v->status says whether they were made. */
static void pass_rows_view(mcl_session *s, views *v, uint32_t count, pass_rows *p)
{
    const mcl_model_info *m = &s->info;
    p->ids = view(v, s->ids, 0, MCL_DTYPE_I32, 1, count, 0, 0, 0);
    p->x = view(v, s->x, 0, MCL_DTYPE_F32, 2, count, m->dim, 0, 0);
    p->h = view(v, s->h, 0, MCL_DTYPE_F32, 2, count, m->dim, 0, 0);
    p->q = view(v, s->q, 0, MCL_DTYPE_F32, 2, count, s->q_dim, 0, 0);
    p->k = view(v, s->k, 0, MCL_DTYPE_F32, 2, count, s->kv_dim, 0, 0);
    p->v = view(v, s->v, 0, MCL_DTYPE_F32, 2, count, s->kv_dim, 0, 0);
    p->att = view(v, s->att, 0, MCL_DTYPE_F32, 2, count, s->q_dim, 0, 0);
    p->gate = view(v, s->gate, 0, MCL_DTYPE_F32, 2, count, m->hidden, 0, 0);
    p->up = view(v, s->up, 0, MCL_DTYPE_F32, 2, count, m->hidden, 0, 0);
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
            TRY(moe_ffn(s, v, L, h, count, x, 1, NULL));
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

/* The products of `count` weights on x in a decode step, with act the quantization of x
 * where the products want one (norm_act's), else NULL. */
static mcl_status step_linears(mcl_context *ctx, mcl_tensor *x, mcl_tensor *act, uint32_t count,
                               const mcl_tensor *const *w, const mcl_tensor *const *b,
                               mcl_tensor *const *c)
{
    if (act)
        return mcl_matmul_multi_given(ctx, x, act, count, w, b, c);
    return linears(ctx, x, count, w, b, c);
}

/* The quantization the products of the weights w[0..count) on rows x want: s->act where
 * they share a type and take the integer-dot path, else NULL. */
static mcl_tensor *norm_act(const mcl_session *s, mcl_tensor *x, uint32_t count,
                            const mcl_tensor *const *w, mcl_tensor *const *c)
{
    for (uint32_t i = 1; i < count; i++)
        if (w[i]->dtype != w[0]->dtype)
            return NULL;
    return mcl_matmul_quantizes(s->ctx, x, w[0], c[0]) ? s->act : NULL;
}

/* MOTIFCL_ENGINE_WARM's bits: which weights a decode step reads into the cache beside a
 * dispatch that leaves memory idle, recorded after it (no hazard between them, so no barrier):
 * W_o beside the attention, W_q, W_k and W_v beside the attention norm, the first
 * ENGINE_WARM_FFN bytes of W_gate and W_up beside the feed-forward norm. */
#define ENGINE_WARM_O 1u
#define ENGINE_WARM_QKV 2u
#define ENGINE_WARM_GATE_UP 4u
#define ENGINE_WARM_FFN (4ull << 20)

static mcl_status warm(mcl_session *s, uint32_t bit, uint32_t count, const mcl_tensor *const *w,
                       uint64_t bytes)
{
    if (!(s->warm & bit))
        return MCL_SUCCESS;
    mcl_status status = MCL_SUCCESS;
    for (uint32_t i = 0; i < count && status == MCL_SUCCESS; i++)
        if (w[i])
            status = mcl_cache_warm(s->ctx, (mcl_tensor *)w[i], 0, bytes, s->warm_sink[i]);
    return status;
}

/* The widest model whose decode step folds its norms by default. Each workgroup of a folded
 * product makes the norm before it streams its weights, a fixed cost per workgroup that a
 * norm dispatch of its own pays once: measured on an H100 (docs/inference.md), the 1B shape's
 * step (dim 2048) 9% shorter folded, the 7B's (dim 4096) 7% longer. */
#define ENGINE_FOLD_MAX_DIM 2048u

/* Whether a decode step of the rows p (a dense model) can fold its row steps into its
 * products (MOTIFCL_ENGINE_NORM_FOLD): every product that reads a norm (q, k, v, the fused
 * gate and up, the head) on the integer-dot GEMV with room for its rows' activations in its
 * workgroups' shared memory, and every product that feeds the residual stream (the output
 * projection, down) on the integer-dot GEMV, adding into it. */
static int fold_applies(mcl_session *s, const pass_rows *p, mcl_tensor *logits)
{
    mcl_context *ctx = s->ctx;
    const mcl_model_info *m = &s->info;
    if (!s->norm_fold || (s->norm_fold < 0 && m->dim > ENGINE_FOLD_MAX_DIM) || s->split_glu ||
        m->experts || m->head_dim % 32 != 0 ||
        !mcl_matmul_folds(ctx, p->x, s->output, logits, 1))
        return 0;
    for (uint32_t l = 0; l < m->layers; l++) {
        const engine_layer *L = &s->layers[l];
        const mcl_tensor *wo[1] = {L->wo}, *down[1] = {L->w_down};
        mcl_tensor *h = p->h;
        if (!mcl_matmul_folds(ctx, p->x, L->wq, p->q, 1) ||
            !mcl_matmul_folds(ctx, p->x, L->wk, p->k, 1) ||
            !mcl_matmul_folds(ctx, p->x, L->wv, p->v, 1) ||
            !norm_act(s, p->att, 1, wo, &h) || !mcl_matmul_folds(ctx, p->att, L->wo, p->x, 0) ||
            !mcl_matmul_glu_folds(ctx, p->x, L->w_gate, L->w_up, p->gate) ||
            !norm_act(s, p->gate, 1, down, &h) ||
            !mcl_matmul_folds(ctx, p->gate, L->w_down, p->x, 0))
            return 0;
    }
    return 1;
}

/* A decode step recorded for replay (views in v): count rows, one token of each of seqs[],
 * the logits of all. Positions and lengths are read from s->ids (attend_step), so that one
 * recording serves every position. Between the products, the residual add, the RMSNorm and
 * the next product's quantization are one op (mcl_norm_q8), and so are SwiGLU and the down
 * product's quantization (mcl_swiglu_q8). Where fold_applies, the products that feed the
 * residual stream add into it, and those that read a norm make it themselves: no op between
 * them. */
static mcl_status record_step(mcl_session *s, views *v, const uint32_t *seqs, uint32_t count)
{
    mcl_context *ctx = s->ctx;
    const mcl_model_info *m = &s->info;
    pass_rows p;
    pass_rows_view(s, v, count, &p);
    mcl_tensor *ids = p.ids, *x = p.x, *h = p.h, *q = p.q, *k = p.k, *vv = p.v, *att = p.att;
    mcl_tensor *gate = p.gate, *up = p.up;
    mcl_tensor *n = view(v, s->normed, 0, MCL_DTYPE_F32, 2, count, m->dim, 0, 0);
    mcl_tensor *logits = view(v, s->logits, 0, MCL_DTYPE_F32, 2, count, m->vocab, 0, 0);
    if (v->status != MCL_SUCCESS)
        return v->status;
    const int fold = fold_applies(s, &p, logits);
    const mcl_gemv_fold add = {.accumulate = 1};
    TRY(mcl_embedding(ctx, s->embedding, ids, x));
    MARK(s, "embedding");
    /* The first norm has no residual to add; every later one adds the block's output. */
    mcl_tensor *delta = NULL;
    const char *norm_name = "attention norm";
    for (uint32_t l = 0; l <= m->layers; l++) {
        const engine_layer *L = l < m->layers ? &s->layers[l] : NULL;
        const mcl_tensor *qkv_w[3] = {L ? L->wq : s->output, L ? L->wk : NULL,
                                      L ? L->wv : NULL};
        mcl_tensor *qkv[3] = {L ? q : logits, k, vv};
        uint32_t products = L ? 3 : 1;
        mcl_tensor *act = norm_act(s, n, products, qkv_w, qkv);
        const mcl_gemv_fold norm = {L ? L->attn_norm : s->output_norm, m->norm_eps, 0};
        if (!fold)
            TRY(mcl_norm_q8(ctx, delta, norm.norm, m->norm_eps, x, n, act));
        if (L)
            TRY(warm(s, ENGINE_WARM_QKV, 3, qkv_w, UINT64_MAX));
        if (!fold)
            MARK(s, L ? norm_name : "output norm");
        norm_name = "residual, attention norm";
        if (!L) {
            TRY(fold ? mcl_matmul_multi_fold(ctx, x, NULL, 1, qkv_w, NULL, qkv, &norm)
                     : step_linears(ctx, n, act, 1, qkv_w, NULL, qkv));
            MARK(s, fold ? "output norm, head" : "head");
            TRY(mcl_scatter_rows(ctx, logits, s->ids, 3 * count, s->seq_logits));
            MARK(s, "logits to their sequences");
            break;
        }
        const mcl_tensor *qkv_b[3] = {L->bq, L->bk, L->bv};
        TRY(fold ? mcl_matmul_multi_fold(ctx, x, NULL, 3, qkv_w, qkv_b, qkv, &norm)
                 : step_linears(ctx, n, act, 3, qkv_w, qkv_b, qkv));
        MARK(s, fold ? "attention norm, q, k, v" : "q, k, v");
        /* The attention quantizes its output for the output projection where that takes the
         * integer-dot path. */
        const mcl_tensor *wo[1] = {L->wo};
        act = m->head_dim % 32 == 0 ? norm_act(s, att, 1, wo, &h) : NULL;
        TRY(attend_step(s, v, L, seqs, count, act));
        TRY(warm(s, ENGINE_WARM_O, 1, wo, UINT64_MAX));
        MARK(s, "attention");
        TRY(fold ? mcl_matmul_multi_fold(ctx, att, act, 1, wo, NULL, &x, &add)
                 : step_linears(ctx, att, act, 1, wo, NULL, &h));
        MARK(s, fold ? "output, residual" : "output");
        if (m->experts) {
            /* The norm quantizes for the mixture's products where any takes the dot path. */
            act = moe_quantizes(s, L) ? s->act : NULL;
            TRY(mcl_norm_q8(ctx, h, L->ffn_norm, m->norm_eps, x, n, act));
            MARK(s, "residual, feed-forward norm");
            TRY(moe_ffn(s, v, L, n, count, h, 0, act));
            delta = h;
            continue;
        }
        const mcl_tensor *ffn_w[2] = {L->w_gate, L->w_up};
        mcl_tensor *ffn[2] = {gate, up};
        act = norm_act(s, n, 2, ffn_w, ffn);
        const mcl_gemv_fold ffn_norm = {L->ffn_norm, m->norm_eps, 0};
        if (!fold)
            TRY(mcl_norm_q8(ctx, h, L->ffn_norm, m->norm_eps, x, n, act));
        TRY(warm(s, ENGINE_WARM_GATE_UP, 2, ffn_w, ENGINE_WARM_FFN));
        if (!fold)
            MARK(s, "residual, feed-forward norm");
        /* Gate, up and SwiGLU in one dispatch where the products and the down product take
         * the integer-dot path (mcl_matmul_glu_q8, quantized into act2 for the down product:
         * it reads act); else the products, then SwiGLU quantized for the down product where
         * it takes that path. */
        const mcl_tensor *down_w[1] = {L->w_down};
        mcl_tensor *down_act = norm_act(s, gate, 1, down_w, &h);
        int fused = 0;
        if (fold)
            TRY(mcl_matmul_glu_q8(ctx, x, NULL, L->w_gate, L->w_up, gate, s->act2, &ffn_norm,
                                  &fused));
        else if (act && down_act && !s->split_glu)
            TRY(mcl_matmul_glu_q8(ctx, n, act, L->w_gate, L->w_up, gate, s->act2, NULL, &fused));
        if (fold && !fused)
            return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "decode step: the folded feed-forward "
                            "product was refused");
        if (fused) {
            down_act = s->act2;
            MARK(s, fold ? "feed-forward norm, gate, up, swiglu" : "gate, up, swiglu");
        } else {
            TRY(step_linears(ctx, n, act, 2, ffn_w, NULL, ffn));
            MARK(s, "gate, up");
            if (down_act)
                TRY(mcl_swiglu_q8(ctx, gate, up, down_act));
            else
                TRY(mcl_swiglu(ctx, gate, up, gate));
            MARK(s, "swiglu");
        }
        TRY(fold ? mcl_matmul_multi_fold(ctx, gate, down_act, 1, down_w, NULL, &x, &add)
                 : step_linears(ctx, gate, down_act, 1, down_w, NULL, &h));
        MARK(s, fold ? "down, residual" : "down");
        delta = h;
    }
    return MCL_SUCCESS;
}

void mcl_engine_steps_destroy(mcl_session *s)
{
    for (uint32_t i = 0; i < ENGINE_STEPS; i++) {
        mcl_graph_destroy(s->steps[i].graph);
        s->steps[i].graph = NULL;
        mcl_mem_free(s->steps[i].seqs);
        s->steps[i].seqs = NULL;
    }
}

mcl_graph *mcl_engine_step_graph(const mcl_session *s, uint32_t count)
{
    const engine_step *latest = NULL;
    for (uint32_t i = 0; s && i < ENGINE_STEPS; i++)
        if (s->steps[i].graph && s->steps[i].count == count &&
            (!latest || s->steps[i].used > latest->used))
            latest = &s->steps[i];
    return latest ? latest->graph : NULL;
}

uint32_t mcl_engine_step_dispatches(const mcl_session *s, uint32_t count)
{
    return mcl_graph_dispatch_count(mcl_engine_step_graph(s, count));
}

/* The recorded step of the sequences seqs[0..count), recorded now if it is not kept (in
 * place of the one used least recently). */
static mcl_status find_step(mcl_session *s, const uint32_t *seqs, uint32_t count,
                            mcl_graph **out)
{
    engine_step *slot = &s->steps[0];
    for (uint32_t i = 0; i < ENGINE_STEPS; i++) {
        engine_step *e = &s->steps[i];
        /* With all caches in one tensor a layer, the step reads its sequences from s->ids:
         * one recording serves every set of count sequences. */
        int same = e->count == count &&
                   (s->layers[0].k_all || !memcmp(e->seqs, seqs, count * sizeof *seqs));
        if (e->graph && same) {
            e->used = ++s->clock;
            *out = e->graph;
            return MCL_SUCCESS;
        }
        if (!e->graph || (slot->graph && e->used < slot->used))
            slot = e;
    }
    mcl_graph_destroy(slot->graph);
    slot->graph = NULL;
    if (!slot->seqs && !(slot->seqs = mcl_mem_malloc(s->sequences * sizeof *slot->seqs)))
        return mcl_fail(s->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "session: out of host memory");
    mcl_status status = mcl_graph_begin(s->ctx);
    if (status != MCL_SUCCESS)
        return status;
    views v = {.count = 0, .status = MCL_SUCCESS};
    status = record_step(s, &v, seqs, count);
    views_release(&v, 0);
    mcl_graph *graph = NULL;
    mcl_status ended = mcl_graph_end(s->ctx, &graph);
    if (status == MCL_SUCCESS)
        status = ended;
    if (status != MCL_SUCCESS) {
        mcl_graph_destroy(graph);
        return status;
    }
    memcpy(slot->seqs, seqs, count * sizeof *seqs);
    slot->count = count;
    slot->graph = graph;
    slot->used = ++s->clock;
    *out = graph;
    return MCL_SUCCESS;
}

/* A decode step: tokens, positions and lengths into s->ids, the recorded step replayed. */
static mcl_status decode_step(mcl_session *s, const uint32_t *seqs, const uint32_t *pos,
                              const int32_t *tokens, uint32_t count)
{
    int32_t in[4 * ENGINE_MAX_STEP_ROWS];
    for (uint32_t i = 0; i < count; i++) {
        in[i] = tokens[i];
        in[count + i] = (int32_t)pos[i];
        in[2 * count + i] = (int32_t)pos[i] + 1;
        in[3 * count + i] = (int32_t)seqs[i];
    }
    mcl_graph *graph = NULL;
    mcl_status status = find_step(s, seqs, count, &graph);
    if (status == MCL_SUCCESS)
        status = mcl_tensor_upload(s->ids, 0, in, 4ull * count * sizeof *in);
    if (status == MCL_SUCCESS)
        status = mcl_graph_replay(s->ctx, graph);
    return status;
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
        status = decode_step(s, seqs, pos, tokens, count);
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
