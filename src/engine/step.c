/* The decode step recorded for replay (pass.h): one token of each of a batch of sequences,
 * recorded once per batch size and kept, replayed for every token with its positions, lengths
 * and sequences read from a small device buffer (docs/inference.md, "The decode step"). */
#include <string.h>

#include "pass.h"
#include "core/alloc.h"

/* The attention of a decode step's rows, each one token of sequence seqs[i], whose
 * positions, lengths and sequences the step reads from s->ids (mcl_engine_decode_step):
 * RoPE, the cache write and the split attention over the caches in one dispatch
 * (mcl_attention_decode_rope), or where the head dimension is not a multiple of 8 RoPE with
 * the cache write as a dispatch before the attention's. With all sequences' caches in one tensor, one dispatch serves every
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
            act = mcl_engine_moe_quantizes(s, L) ? s->act : NULL;
            TRY(mcl_norm_q8(ctx, h, L->ffn_norm, m->norm_eps, x, n, act));
            MARK(s, "residual, feed-forward norm");
            TRY(mcl_engine_moe_ffn(s, v, L, n, count, h, 0, act));
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

mcl_status mcl_engine_decode_step(mcl_session *s, const uint32_t *seqs, const uint32_t *pos,
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

