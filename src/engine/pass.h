/* The pieces a pass of the engine is recorded from, shared by the pass recorded op by op
 * (forward.c) and the decode step recorded for replay (step.c). Internal to src/engine. */
#ifndef MCL_ENGINE_PASS_H
#define MCL_ENGINE_PASS_H

#include "engine_internal.h"

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
static inline mcl_tensor *view(views *v, mcl_tensor *owner, uint64_t offset, mcl_dtype dtype,
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
static inline void views_release(views *v, uint32_t mark)
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
static inline mcl_status linear(mcl_context *ctx, const mcl_tensor *x, const mcl_tensor *w,
                                const mcl_tensor *b, mcl_tensor *y)
{
    return mcl_matmul(ctx, x, MCL_NO_TRANSPOSE, w, MCL_TRANSPOSE, b, y);
}

/* c[i] = x w[i]^T (+ b[i]) for count weights: one multi-weight product (the input quantized
 * once on the integer-dot path) where the weights share a type, else one product each. */
static inline mcl_status linears(mcl_context *ctx, const mcl_tensor *x, uint32_t count,
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

/* A pass's activations over its count rows: views of the session's tensors. */
typedef struct pass_rows {
    mcl_tensor *ids, *x, *h, *q, *k, *v, *att, *gate, *up;
} pass_rows;

/* The views of p, kept in v; v->status says whether they were made. */
static inline void pass_rows_view(mcl_session *s, views *v, uint32_t count, pass_rows *p)
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

/* Whether a decode step's mixture layer L reads quantized activations anywhere (an expert
 * stack or a shared expert's product on the integer-dot path): the step then quantizes the
 * normed rows in the norm's dispatch (mcl_engine_moe_ffn's act). */
int mcl_engine_moe_quantizes(mcl_session *s, const engine_layer *L);

/* A mixture's feed-forward of the normed rows h [count, dim] into out (forward.c says how). */
mcl_status mcl_engine_moe_ffn(mcl_session *s, views *v, const engine_layer *L, mcl_tensor *h,
                              uint32_t count, mcl_tensor *out, int accumulate, mcl_tensor *act);

/* A decode step of count rows, token i of sequence seqs[i] at position pos[i], all their
 * logits wanted: tokens, positions and lengths into s->ids, the step's recording (made on
 * first use and kept, step.c) replayed. */
mcl_status mcl_engine_decode_step(mcl_session *s, const uint32_t *seqs, const uint32_t *pos,
                                  const int32_t *tokens, uint32_t count);

#endif
