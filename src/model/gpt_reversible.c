/* Reversible blocks (MCL_GPT_REVERSIBLE; docs/reversible.md): the forward pass keeps only the
 * two running streams, the backward pass reconstructs each block's inputs from its outputs
 * and recomputes its sub-blocks' activations into one scratch set (acts.layer[0]) before
 * their gradients, so activation memory does not grow with depth. Everything is recorded on
 * the context's stream, with no read-back: a training step stays one graph.
 *
 *   before block 0   x1 = x2 = E (the embedding, acts.x[0])
 *   block l          y1 = x1 + F_l(x2)      F: RMSNorm, q/k/v, RoPE, attention, wo
 *                    y2 = x2 + G_l(y1)      G: RMSNorm, gate/up, SwiGLU, down
 *   after the last   the final norm reads (y1 + y2) / 2 (acts.avg)
 *
 * Backward of block l, from its outputs (y1, y2) and their gradients (g1, g2):
 *   G(y1) recomputed;  x2 = y2 - G(y1)          (or the kept x2)
 *   g1 += dG(y1)^T g2
 *   F(x2) recomputed;  x1 = y1 - F(x2)          (or the kept x1)
 *   g2 += dF(x2)^T g1
 * and (g1, g2) are then the gradients of (x1, x2). At a kept block (0, A, 2A, ...; block 0's
 * inputs being E) the kept inputs serve instead of the reconstruction, which is still made
 * and compared with them (the drift), unless A = 1, where nothing is ever reconstructed. */
#include "gpt_internal.h"
#include "../ops/ops_internal.h"

#define TRY(expr)                                                                          \
    do {                                                                                   \
        mcl_status try_status_ = (expr);                                                   \
        if (try_status_ != MCL_SUCCESS)                                                    \
            return try_status_;                                                            \
    } while (0)

/* The products take their split-K partials from the shared scratch (acts.mm_scratch): one
 * made per call would be held until the whole recorded pass has run, growing with depth. */
static gpt_param *param(mcl_gpt *gpt, int32_t l, int which)
{
    return mcl_gpt_layer_param(gpt, l, which);
}

/* out = F_l(x): the attention sub-block, its activations in the scratch set. */
static mcl_status attention_forward(mcl_gpt *gpt, int32_t l, mcl_tensor *x, mcl_tensor *out)
{
    mcl_context *ctx = gpt->ctx;
    const mcl_gpt_desc *c = &gpt->cfg;
    gpt_layer_acts *s = &gpt->acts.layer[0];
    mcl_attention_desc att = {.size = sizeof att, .causal = 1};
    TRY(mcl_rmsnorm(ctx, x, param(gpt, l, P_ATTN_NORM)->p, c->norm_eps, s->h));
    TRY(mcl_gpt_block_linear(gpt, l, P_WQ, s->h, s->q, gpt->acts.mm_scratch));
    TRY(mcl_gpt_block_linear(gpt, l, P_WK, s->h, s->k, gpt->acts.mm_scratch));
    TRY(mcl_gpt_block_linear(gpt, l, P_WV, s->h, s->v, gpt->acts.mm_scratch));
    TRY(mcl_rope(ctx, s->q4, c->rope_layout, c->rope_theta, 0, s->q4));
    TRY(mcl_rope(ctx, s->k4, c->rope_layout, c->rope_theta, 0, s->k4));
    /* The softmax statistics go to the backward's scratch for attention_backward(). */
    TRY(mcl_attention_stats(ctx, s->q4, s->k4, s->v4, &att, s->att4, gpt->acts.attn_scratch));
    return mcl_gpt_block_linear(gpt, l, P_WO, s->att, out, gpt->acts.mm_scratch);
}

/* out = G_l(x): the MLP sub-block, its activations in the scratch set. */
static mcl_status mlp_forward(mcl_gpt *gpt, int32_t l, mcl_tensor *x, mcl_tensor *out)
{
    mcl_context *ctx = gpt->ctx;
    gpt_layer_acts *s = &gpt->acts.layer[0];
    TRY(mcl_rmsnorm(ctx, x, param(gpt, l, P_MLP_NORM)->p, gpt->cfg.norm_eps, s->h2));
    TRY(mcl_gpt_block_linear(gpt, l, P_W_GATE, s->h2, s->gate, gpt->acts.mm_scratch));
    TRY(mcl_gpt_block_linear(gpt, l, P_W_UP, s->h2, s->up, gpt->acts.mm_scratch));
    TRY(mcl_swiglu(ctx, s->gate, s->up, s->act));
    return mcl_gpt_block_linear(gpt, l, P_W_DOWN, s->act, out, gpt->acts.mm_scratch);
}

/* acc += dF_l(x)^T dy, and F_l's parameter gradients, from the scratch set that
 * attention_forward(x) filled. dy and acc are neither dh nor tmp. */
static mcl_status attention_backward(mcl_gpt *gpt, int32_t l, mcl_tensor *x, mcl_tensor *dy,
                                     mcl_tensor *acc)
{
    mcl_context *ctx = gpt->ctx;
    const mcl_gpt_desc *c = &gpt->cfg;
    gpt_acts *a = &gpt->acts;
    gpt_layer_acts *s = &a->layer[0];
    mcl_attention_desc att = {.size = sizeof att, .causal = 1};
    TRY(mcl_gpt_block_linear_backward(gpt, l, P_WO, s->att, dy, a->datt, a->mm_scratch));
    TRY(mcl_attention_backward_stats(ctx, s->q4, s->k4, s->v4, s->att4, a->datt4, &att,
                                     a->dq4, a->dk4, a->dv4, a->attn_scratch, 1));
    TRY(mcl_rope_backward(ctx, a->dq4, c->rope_layout, c->rope_theta, 0, a->dq4));
    TRY(mcl_rope_backward(ctx, a->dk4, c->rope_layout, c->rope_theta, 0, a->dk4));
    TRY(mcl_gpt_block_linear_backward(gpt, l, P_WQ, s->h, a->dq, a->dh, a->mm_scratch));
    TRY(mcl_gpt_block_linear_backward(gpt, l, P_WK, s->h, a->dk, a->tmp, a->mm_scratch));
    TRY(mcl_add(ctx, a->dh, a->tmp, a->dh));
    TRY(mcl_gpt_block_linear_backward(gpt, l, P_WV, s->h, a->dv, a->tmp, a->mm_scratch));
    TRY(mcl_add(ctx, a->dh, a->tmp, a->dh));
    TRY(mcl_gpt_block_updates(gpt, l, (const int[]){P_WO, P_WQ, P_WK, P_WV},
                              (mcl_tensor *const[]){s->att, s->h, s->h, s->h},
                              (mcl_tensor *const[]){dy, a->dq, a->dk, a->dv}, 4, -1));
    TRY(mcl_rmsnorm_backward_scratch(ctx, x, param(gpt, l, P_ATTN_NORM)->p, a->dh, c->norm_eps,
                                     a->tmp, param(gpt, l, P_ATTN_NORM)->g, a->norm_scratch, a->norm_partial));
    return mcl_add(ctx, acc, a->tmp, acc);
}

/* acc += dG_l(x)^T dy, and G_l's parameter gradients, from the scratch set that
 * mlp_forward(x) filled. */
static mcl_status mlp_backward(mcl_gpt *gpt, int32_t l, mcl_tensor *x, mcl_tensor *dy,
                               mcl_tensor *acc)
{
    mcl_context *ctx = gpt->ctx;
    gpt_acts *a = &gpt->acts;
    gpt_layer_acts *s = &a->layer[0];
    TRY(mcl_gpt_block_linear_backward(gpt, l, P_W_DOWN, s->act, dy, a->dff, a->mm_scratch));
    TRY(mcl_swiglu_backward(ctx, s->gate, s->up, a->dff, a->dgate, a->dup));
    TRY(mcl_gpt_block_linear_backward(gpt, l, P_W_GATE, s->h2, a->dgate, a->dh, a->mm_scratch));
    TRY(mcl_gpt_block_linear_backward(gpt, l, P_W_UP, s->h2, a->dup, a->tmp, a->mm_scratch));
    TRY(mcl_add(ctx, a->dh, a->tmp, a->dh));
    TRY(mcl_gpt_block_updates(gpt, l, (const int[]){P_W_DOWN, P_W_GATE, P_W_UP},
                              (mcl_tensor *const[]){s->act, s->h2, s->h2},
                              (mcl_tensor *const[]){dy, a->dgate, a->dup}, 3, -1));
    TRY(mcl_rmsnorm_backward_scratch(ctx, x, param(gpt, l, P_MLP_NORM)->p, a->dh,
                                     gpt->cfg.norm_eps, a->tmp, param(gpt, l, P_MLP_NORM)->g,
                                     a->norm_scratch, a->norm_partial));
    return mcl_add(ctx, acc, a->tmp, acc);
}

mcl_status mcl_gpt_reversible_forward(mcl_gpt *gpt, const mcl_tensor *tokens)
{
    mcl_context *ctx = gpt->ctx;
    gpt_acts *a = &gpt->acts;
    mcl_tensor *e = a->x[0];
    TRY(mcl_embedding(ctx, gpt->params[0].p, tokens, a->x0_3d));
    for (int32_t l = 0; l < gpt->cfg.layers; l++) {
        mcl_tensor *x1 = l == 0 ? e : a->s1, *x2 = l == 0 ? e : a->s2;
        if (a->keep1[l]) {
            TRY(mcl_copy(ctx, x1, a->keep1[l]));
            TRY(mcl_copy(ctx, x2, a->keep2[l]));
        }
        TRY(attention_forward(gpt, l, x2, a->tmp));
        TRY(mcl_add(ctx, x1, a->tmp, a->s1));
        TRY(mlp_forward(gpt, l, a->s1, a->tmp));
        TRY(mcl_add(ctx, x2, a->tmp, a->s2));
    }
    TRY(mcl_add(ctx, a->s1, a->s2, a->avg));
    return mcl_scale(ctx, a->avg, 0.5f, 0.0f, a->avg);
}

/* The drift of a reconstruction `got` of the kept `want`: ||got - want|| and ||want|| into
 * two measurements (tmp holds the difference). */
static mcl_status measure(mcl_gpt *gpt, mcl_tensor *got, mcl_tensor *want, uint32_t *next)
{
    mcl_context *ctx = gpt->ctx;
    gpt_acts *a = &gpt->acts;
    TRY(mcl_binary(ctx, MCL_BINARY_SUB, got, want, a->tmp));
    TRY(mcl_grad_norm(ctx, &a->tmp, 1, a->drift[(*next)++]));
    return mcl_grad_norm(ctx, &want, 1, a->drift[(*next)++]);
}

mcl_status mcl_gpt_reversible_backward(mcl_gpt *gpt)
{
    mcl_context *ctx = gpt->ctx;
    gpt_acts *a = &gpt->acts;
    const int invert_kept = gpt->cfg.reversible_anchor != 1;
    /* The final norm's input gradient (in dx) reaches both streams halved. */
    TRY(mcl_scale(ctx, a->dx, 0.5f, 0.0f, a->dx));
    TRY(mcl_copy(ctx, a->dx, a->dx2));
    mcl_tensor *g1 = a->dx, *g2 = a->dx2;
    mcl_tensor *y1 = a->s1, *y2 = a->s2;
    /* Measurements are numbered from the deepest kept block down. */
    uint32_t next = 0;
    for (int32_t l = gpt->cfg.layers - 1; l >= 0; l--) {
        const int kept = mcl_gpt_block_kept(gpt, l);
        mcl_tensor *keep1 = l == 0 ? a->x[0] : a->keep1[l];
        mcl_tensor *keep2 = l == 0 ? a->x[0] : a->keep2[l];
        mcl_tensor *x1 = kept ? keep1 : a->s1, *x2 = kept ? keep2 : a->s2;
        /* y1 and y2 are s1 and s2 or the kept inputs of block l + 1, never written here:
         * a reconstruction goes to s1 and s2 (in place when y is s). */
        TRY(mlp_forward(gpt, l, y1, a->tmp));
        if (!kept || invert_kept)
            TRY(mcl_binary(ctx, MCL_BINARY_SUB, y2, a->tmp, a->s2));
        if (kept && invert_kept)
            TRY(measure(gpt, a->s2, keep2, &next));
        TRY(mlp_backward(gpt, l, y1, g2, g1));
        TRY(attention_forward(gpt, l, x2, a->tmp));
        if (!kept || invert_kept)
            TRY(mcl_binary(ctx, MCL_BINARY_SUB, y1, a->tmp, a->s1));
        if (kept && invert_kept)
            TRY(measure(gpt, a->s1, keep1, &next));
        TRY(attention_backward(gpt, l, x2, g1, g2));
        y1 = x1;
        y2 = x2;
    }
    a->drift_valid = 1;
    /* x1 = x2 = E: the embedding's gradient is g1 + g2. */
    TRY(mcl_add(ctx, g1, g2, g1));
    TRY(mcl_embedding_backward(ctx, gpt->tokens, a->dx_3d, gpt->params[0].g));
    if (gpt->cfg.tied_head)
        TRY(mcl_add(ctx, gpt->params[0].g, a->dhead, gpt->params[0].g));
    return MCL_SUCCESS;
}

mcl_status mcl_gpt_reversible_drift(mcl_gpt *gpt, float *max_relative)
{
    if (!gpt)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_context_check(gpt->ctx) != MCL_SUCCESS)
        return MCL_ERROR_CONTEXT_DESTROYED;
    static const char op[] = "mcl_gpt_reversible_drift";
    if (!max_relative)
        return mcl_fail(gpt->ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: max_relative is NULL", op);
    if (!mcl_gpt_reversible(gpt))
        return mcl_fail(gpt->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: the model has no reversible blocks", op);
    gpt_acts *a = &gpt->acts;
    if (!a->drift_valid)
        return mcl_fail(gpt->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: no backward pass with the current batch shape yet", op);
    float worst = 0.0f;
    for (uint32_t i = 0; i + 1 < a->drift_count; i += 2) {
        float err, norm;
        TRY(mcl_tensor_download(a->drift[i], 0, &err, sizeof err));
        TRY(mcl_tensor_download(a->drift[i + 1], 0, &norm, sizeof norm));
        float rel = norm > 0.0f ? err / norm : err;
        if (!(rel <= worst)) /* NaN wins */
            worst = rel;
    }
    *max_relative = worst;
    return MCL_SUCCESS;
}
