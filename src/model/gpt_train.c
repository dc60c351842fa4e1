/* The GPT's forward and backward passes and its AdamW step, recorded on the context's stream
 * (and so capturable as one graph). */
#include <math.h>
#include <string.h>

#include "gpt_internal.h"
#include "../ops/ops_internal.h"

static mcl_status check_ids(mcl_gpt *gpt, const char *what, const mcl_tensor *t)
{
    if (t->ctx != gpt->ctx)
        return mcl_fail(gpt->ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_gpt_forward: %s is of another "
                        "context", what);
    if (t->dtype != MCL_DTYPE_I32)
        return mcl_fail(gpt->ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_gpt_forward: %s must be i32",
                        what);
    if (t->ndim != 2 || t->shape[1] > gpt->cfg.max_seq)
        return mcl_fail(gpt->ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_gpt_forward: %s must be [B, T] with T <= max_seq (%d)", what,
                        (int)gpt->cfg.max_seq);
    return MCL_SUCCESS;
}

#define TRY(expr)                                                                          \
    do {                                                                                   \
        mcl_status try_status_ = (expr);                                                   \
        if (try_status_ != MCL_SUCCESS)                                                    \
            return try_status_;                                                            \
    } while (0)

static mcl_status linear(mcl_context *ctx, mcl_tensor *x, gpt_param *w, mcl_tensor *y)
{
    return mcl_matmul(ctx, x, MCL_NO_TRANSPOSE, w->p, MCL_TRANSPOSE, NULL, y);
}

static mcl_status finish_forward(mcl_gpt *gpt, const mcl_tensor *tokens,
                                 const mcl_tensor *targets, mcl_tensor *loss, mcl_tensor *last);

mcl_status mcl_gpt_forward(mcl_gpt *gpt, const mcl_tensor *tokens, const mcl_tensor *targets,
                           mcl_tensor *loss)
{
    if (!gpt)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_context_check(gpt->ctx) != MCL_SUCCESS)
        return MCL_ERROR_CONTEXT_DESTROYED;
    mcl_context *ctx = gpt->ctx;
    const mcl_gpt_desc *c = &gpt->cfg;
    if (!tokens)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_gpt_forward: tokens is NULL");
    if ((targets == NULL) != (loss == NULL))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt_forward: targets and loss go together (both or neither)");
    TRY(check_ids(gpt, "tokens", tokens));
    if (targets) {
        TRY(check_ids(gpt, "targets", targets));
        if (!mcl_tensor_same_shape(tokens, targets))
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "mcl_gpt_forward: targets must have the shape of tokens");
        if (loss->ctx != ctx)
            return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_gpt_forward: loss is of "
                            "another context");
        if (loss->dtype != MCL_DTYPE_F32 || mcl_tensor_numel(loss) < 1)
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "mcl_gpt_forward: loss must be an f32 tensor of one element");
    }
    int64_t batch = tokens->shape[0], seq = tokens->shape[1];
    gpt_acts *a = &gpt->acts;
    /* A pass that fails part way leaves nothing for mcl_gpt_backward() to use. */
    gpt->have_targets = 0;
    mcl_status shaped = mcl_gpt_acts_shape(gpt, batch, seq);
    if (shaped != MCL_SUCCESS)
        return shaped;
    float eps = c->norm_eps;
    mcl_attention_desc att = {.size = sizeof att, .causal = 1};

    if (mcl_gpt_reversible(gpt)) {
        TRY(mcl_gpt_reversible_forward(gpt, tokens));
        return finish_forward(gpt, tokens, targets, loss, a->avg);
    }
    /* Split-K partials: the blocks' products' shared scratch. */
    mcl_tensor *mm = a->mm_scratch;
    TRY(mcl_embedding(ctx, gpt->params[0].p, tokens, a->x0_3d));
    for (int32_t l = 0; l < c->layers; l++) {
        gpt_layer_acts *la = &a->layer[l];
        TRY(mcl_rmsnorm(ctx, a->x[l], mcl_gpt_layer_param(gpt, l, P_ATTN_NORM)->p, eps, la->h));
        TRY(mcl_gpt_block_linear(gpt, l, P_WQ, la->h, la->q, mm));
        TRY(mcl_gpt_block_linear(gpt, l, P_WK, la->h, la->k, mm));
        TRY(mcl_gpt_block_linear(gpt, l, P_WV, la->h, la->v, mm));
        TRY(mcl_rope(ctx, la->q4, c->rope_layout, c->rope_theta, 0, la->q4));
        TRY(mcl_rope(ctx, la->k4, c->rope_layout, c->rope_theta, 0, la->k4));
        TRY(mcl_attention_stats(ctx, la->q4, la->k4, la->v4, &att, la->att4, la->att_stats));
        TRY(mcl_gpt_block_linear(gpt, l, P_WO, la->att, a->tmp, mm));
        TRY(mcl_add(ctx, a->x[l], a->tmp, la->x_mid));
        TRY(mcl_rmsnorm(ctx, la->x_mid, mcl_gpt_layer_param(gpt, l, P_MLP_NORM)->p, eps, la->h2));
        TRY(mcl_gpt_block_linear(gpt, l, P_W_GATE, la->h2, la->gate, mm));
        TRY(mcl_gpt_block_linear(gpt, l, P_W_UP, la->h2, la->up, mm));
        TRY(mcl_swiglu(ctx, la->gate, la->up, la->act));
        TRY(mcl_gpt_block_linear(gpt, l, P_W_DOWN, la->act, a->tmp, mm));
        TRY(mcl_add(ctx, la->x_mid, a->tmp, a->x[l + 1]));
    }
    return finish_forward(gpt, tokens, targets, loss, a->x[c->layers]);
}

/* The final norm of the blocks' output `last`, the head and the loss. */
static mcl_status finish_forward(mcl_gpt *gpt, const mcl_tensor *tokens,
                                 const mcl_tensor *targets, mcl_tensor *loss, mcl_tensor *last)
{
    mcl_context *ctx = gpt->ctx;
    gpt_acts *a = &gpt->acts;
    int64_t batch = tokens->shape[0], seq = tokens->shape[1];
    TRY(mcl_rmsnorm(ctx, last, mcl_gpt_final_norm_param(gpt)->p, gpt->cfg.norm_eps, a->hf));
    TRY(linear(ctx, a->hf, mcl_gpt_head_param(gpt), a->logits));
    gpt->tokens = tokens;
    gpt->targets = targets;
    if (targets) {
        mcl_tensor *flat_targets;
        int64_t n = batch * seq;
        TRY(mcl_tensor_view((mcl_tensor *)targets, 0, MCL_DTYPE_I32, 1, &n, &flat_targets));
        mcl_status s = mcl_cross_entropy(ctx, a->logits, flat_targets, loss, a->lse);
        mcl_tensor_destroy(flat_targets);
        TRY(s);
        gpt->have_targets = 1;
    }
    return MCL_SUCCESS;
}

/* dw = dy^T x ([out, in]) and dx = dy w ([rows, in]) of y = x w^T. */
static mcl_status linear_backward(mcl_context *ctx, mcl_tensor *x, gpt_param *w, mcl_tensor *dy,
                                  mcl_tensor *dx)
{
    TRY(mcl_matmul(ctx, dy, MCL_TRANSPOSE, x, MCL_NO_TRANSPOSE, NULL, w->g));
    return dx ? mcl_matmul(ctx, dy, MCL_NO_TRANSPOSE, w->p, MCL_NO_TRANSPOSE, NULL, dx)
              : MCL_SUCCESS;
}

/* The residual stream's gradient at block l's input (l = layers: the final norm's): with
 * counter-state layers dx for even l and dx_alt for odd, else dx. */
static mcl_tensor *residual_grad(gpt_acts *a, int32_t l)
{
    return a->dx_alt && l % 2 ? a->dx_alt : a->dx;
}

mcl_status mcl_gpt_backward(mcl_gpt *gpt)
{
    if (!gpt)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_context_check(gpt->ctx) != MCL_SUCCESS)
        return MCL_ERROR_CONTEXT_DESTROYED;
    mcl_context *ctx = gpt->ctx;
    const mcl_gpt_desc *c = &gpt->cfg;
    gpt_acts *a = &gpt->acts;
    if (!gpt->have_targets)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt_backward: the last forward pass had no targets");
    float eps = c->norm_eps;
    mcl_attention_desc att = {.size = sizeof att, .causal = 1};
    int64_t n = a->batch * a->seq;
    mcl_tensor *mm = a->mm_scratch; /* as in the forward pass */

    /* The logits' gradient overwrites the logits. */
    mcl_tensor *flat_targets;
    TRY(mcl_tensor_view((mcl_tensor *)gpt->targets, 0, MCL_DTYPE_I32, 1, &n, &flat_targets));
    mcl_status s = mcl_cross_entropy_backward(ctx, a->logits, flat_targets, a->lse, 1.0f,
                                              a->logits);
    mcl_tensor_destroy(flat_targets);
    TRY(s);
    gpt_param *head = mcl_gpt_head_param(gpt);
    if (c->tied_head) {
        TRY(mcl_matmul(ctx, a->logits, MCL_TRANSPOSE, a->hf, MCL_NO_TRANSPOSE, NULL, a->dhead));
        TRY(mcl_matmul(ctx, a->logits, MCL_NO_TRANSPOSE, head->p, MCL_NO_TRANSPOSE, NULL, a->dh));
    } else {
        TRY(linear_backward(ctx, a->hf, head, a->logits, a->dh));
    }
    const int reversible = mcl_gpt_reversible(gpt);
    TRY(mcl_rmsnorm_backward(ctx, reversible ? a->avg : a->x[c->layers],
                             mcl_gpt_final_norm_param(gpt)->p, a->dh, eps,
                             reversible ? a->dx : residual_grad(a, c->layers),
                             mcl_gpt_final_norm_param(gpt)->g));
    if (reversible)
        return mcl_gpt_reversible_backward(gpt);

    /* The residual's gradient between a block's halves: its own tensor where counter-state
     * updates read the MLP half's (a->dx) after the attention half. */
    mcl_tensor *dxm = a->dx_mid ? a->dx_mid : a->dx;
    /* Counter-state layers: w_up's product splits K in dff (free once SwiGLU's backward has
     * read it) and wv's writes datt (free once the attention's backward has read it), so
     * that w_gate's and w_up's, and wq's, wk's and wv's, run side by side. */
    mcl_tensor *mm_up = a->dx_mid ? a->dff : mm;
    mcl_tensor *dv_x = a->dx_mid && a->datt->shape[1] == c->dim ? a->datt : NULL;
    for (int32_t l = c->layers - 1; l >= 0; l--) {
        gpt_layer_acts *la = &a->layer[l];
        /* The residual's gradient at the block's output (din) and input (dout): dx and dx_alt
         * in turn with counter-state layers (dx at block 0's input), else dx in place. */
        mcl_tensor *din = residual_grad(a, l + 1), *dout = residual_grad(a, l);
        /* x[l+1] = x_mid + act w_down^T; act = silu(gate) * up. */
        TRY(mcl_gpt_block_linear_backward(gpt, l, P_W_DOWN, la->act, din, a->dff, mm));
        TRY(mcl_swiglu_backward(ctx, la->gate, la->up, a->dff, a->dgate, a->dup));
        TRY(mcl_gpt_block_linear_backward(gpt, l, P_W_GATE, la->h2, a->dgate, a->dh, mm));
        TRY(mcl_gpt_block_linear_backward(gpt, l, P_W_UP, la->h2, a->dup, a->tmp, mm_up));
        TRY(mcl_add(ctx, a->dh, a->tmp, a->dh));
        TRY(mcl_rmsnorm_backward(ctx, la->x_mid, mcl_gpt_layer_param(gpt, l, P_MLP_NORM)->p, a->dh,
                                 eps, a->tmp, mcl_gpt_layer_param(gpt, l, P_MLP_NORM)->g));
        TRY(mcl_add(ctx, din, a->tmp, dxm));
        /* x_mid = x[l] + att wo^T; att = attention(rope(q), rope(k), v). */
        TRY(mcl_gpt_block_linear_backward(gpt, l, P_WO, la->att, dxm, a->datt, mm));
        /* The softmax statistics are the forward's (mcl_attention_stats). */
        TRY(mcl_attention_backward_stats(ctx, la->q4, la->k4, la->v4, la->att4, a->datt4, &att,
                                         a->dq4, a->dk4, a->dv4, la->att_stats, 1));
        TRY(mcl_rope_backward(ctx, a->dq4, c->rope_layout, c->rope_theta, 0, a->dq4));
        TRY(mcl_rope_backward(ctx, a->dk4, c->rope_layout, c->rope_theta, 0, a->dk4));
        TRY(mcl_gpt_block_linear_backward(gpt, l, P_WQ, la->h, a->dq, a->dh, mm));
        TRY(mcl_gpt_block_linear_backward(gpt, l, P_WK, la->h, a->dk, a->tmp, mm));
        if (dv_x) {
            TRY(mcl_gpt_block_linear_backward(gpt, l, P_WV, la->h, a->dv, dv_x, mm));
            TRY(mcl_add(ctx, a->dh, a->tmp, a->dh));
        } else {
            TRY(mcl_add(ctx, a->dh, a->tmp, a->dh));
            TRY(mcl_gpt_block_linear_backward(gpt, l, P_WV, la->h, a->dv, a->tmp, mm));
        }
        TRY(mcl_add(ctx, a->dh, dv_x ? dv_x : a->tmp, a->dh));
        /* The block's seven counter-state updates as one group (their products above read the
         * weights before it): 1,056 workgroups for the stories15M shape, four full waves of
         * two a multiprocessor on 132 where the halves' 360 and 696 were two and three. Its
         * three passes each recorded beside the next op of the backward (the norm's, the
         * residual's sum, the next block's first product), which reads nothing they write. */
        const int which[7] = {P_WO, P_WQ, P_WK, P_WV, P_W_DOWN, P_W_GATE, P_W_UP};
        mcl_tensor *const xs[7] = {la->att, la->h, la->h, la->h, la->act, la->h2, la->h2};
        mcl_tensor *const dys[7] = {dxm, a->dq, a->dk, a->dv, din, a->dgate, a->dup};
        TRY(mcl_gpt_block_updates(gpt, l, which, xs, dys, 7, 0));
        TRY(mcl_rmsnorm_backward(ctx, a->x[l], mcl_gpt_layer_param(gpt, l, P_ATTN_NORM)->p, a->dh, eps,
                                 a->tmp, mcl_gpt_layer_param(gpt, l, P_ATTN_NORM)->g));
        TRY(mcl_gpt_block_updates(gpt, l, which, xs, dys, 7, 1));
        /* dout is not din where there are updates (an f32 model records none). */
        TRY(mcl_add(ctx, dxm, a->tmp, dout));
        TRY(mcl_gpt_block_updates(gpt, l, which, xs, dys, 7, 2));
    }
    TRY(mcl_embedding_backward(ctx, gpt->tokens, a->dx_3d, gpt->params[0].g));
    if (c->tied_head)
        TRY(mcl_add(ctx, gpt->params[0].g, a->dhead, gpt->params[0].g));
    return MCL_SUCCESS;
}

mcl_status mcl_gpt_set_optimizer(mcl_gpt *gpt, const mcl_adamw_desc *desc, float max_grad_norm)
{
    if (!gpt)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_context_check(gpt->ctx) != MCL_SUCCESS)
        return MCL_ERROR_CONTEXT_DESTROYED;
    mcl_context *ctx = gpt->ctx;
    static const char op[] = "mcl_gpt_set_optimizer";
    if (mcl_capturing(ctx))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: not during a capture (set, then replay)", op);
    float hyper[MCL_ADAMW_HYPER_COUNT];
    TRY(mcl_adamw_hyper(ctx, op, desc, max_grad_norm, hyper));
    if (isnan(max_grad_norm) || max_grad_norm < 0.0f)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: max_grad_norm must be >= 0", op);
    TRY(mcl_tensor_upload(gpt->hyper, 0, hyper, sizeof hyper));
    gpt->step = desc->step;
    gpt->hyper_set = 1;
    /* The counter layers' seed follows the step. */
    return mcl_gpt_counter_upload(gpt);
}

mcl_status mcl_gpt_step(mcl_gpt *gpt)
{
    if (!gpt)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_context_check(gpt->ctx) != MCL_SUCCESS)
        return MCL_ERROR_CONTEXT_DESTROYED;
    if (!gpt->hyper_set)
        return mcl_fail(gpt->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt_step: call mcl_gpt_set_optimizer() first");
    TRY(mcl_grad_norm(gpt->ctx, &gpt->flat_g, 1, gpt->norm));
    return mcl_adamw_fused(gpt->ctx, gpt->flat_p, gpt->flat_g, gpt->flat_m, gpt->flat_v,
                           gpt->hyper, gpt->norm, (uint64_t)gpt->decay_end);
}
