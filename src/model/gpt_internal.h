/* The GPT's private structure, shared by gpt.c (shapes, parameters, activations, life),
 * gpt_train.c (forward, backward, step) and gpt_checkpoint.c (files). Internal to src/model. */
#ifndef MCL_MODEL_GPT_INTERNAL_H
#define MCL_MODEL_GPT_INTERNAL_H

#include <stdint.h>

#include "motifcl.h"
#include "../vk/runtime.h"
#include "gpt_layout.h"

#define GPT_NAME_MAX 32
/* The most split-K slices a reversible block's products take (their partials live in one
 * scratch tensor shared by every block, sized for this many). */
#define GPT_SPLIT_SLICES 4
/* The same for the counter-state layers' products of a model that is not reversible (at the
 * stories15M shape they split K = 768 in two). */
#define GPT_COUNTER_SPLIT_SLICES 2

enum { P_ATTN_NORM, P_WQ, P_WK, P_WV, P_WO, P_MLP_NORM, P_W_GATE, P_W_UP, P_W_DOWN };

typedef struct gpt_param {
    char name[GPT_NAME_MAX];
    int64_t offset, count;
    uint32_t ndim;
    int64_t shape[2];
    mcl_tensor *p, *g; /* views into the flat parameters and gradients */
} gpt_param;

/* Activations of one layer, kept for the backward pass. 4-D views ([B, T, heads, Dh]) of
 * the 2-D [B*T, heads*Dh] tensors feed RoPE and attention. */
typedef struct gpt_layer_acts {
    mcl_tensor *h, *q, *k, *v, *att, *x_mid, *h2, *gate, *up, *act;
    mcl_tensor *q4, *k4, *v4, *att4;
    mcl_tensor *att_stats; /* the attention's row statistics from the forward, for its
                              backward (B x heads x T x 4 floats; NULL in a reversible model) */
} gpt_layer_acts;

typedef struct gpt_acts {
    int64_t batch, seq;
    mcl_tensor **x;        /* layers + 1 residual streams [B*T, D]; x[0] the embedding (a
                              reversible model has x[0] only) */
    mcl_tensor *x0_3d;     /* x[0] viewed [B, T, D] */
    gpt_layer_acts *layer; /* per layer; a reversible model's layer[0] is the scratch set
                              that every block's F and G write */
    mcl_tensor *hf, *logits, *lse;
    /* Backward buffers, reused by every layer. */
    mcl_tensor *dx, *dx_3d, *dh, *tmp, *datt, *datt4, *dq, *dq4, *dk, *dk4, *dv, *dv4;
    mcl_tensor *dff, *dgate, *dup, *dhead;
    /* Counter-state layers, not reversible: the residual's gradient between a block's MLP and
     * attention halves, so that the MLP's grad_out (dx) lasts until the block's one group of
     * updates (gpt_train.c), and the residual's gradient of every other block's input
     * (blocks alternate between dx and dx_alt, so that a block's updates still read its
     * input's gradient while the next block's first product runs). NULL otherwise. */
    mcl_tensor *dx_mid, *dx_alt;
    /* Reversible blocks (gpt_reversible.c): the two running streams, the final norm's input
     * (s1 + s2) / 2, the second gradient stream, the kept inputs of anchored blocks
     * (keep1[l], keep2[l]; NULL where not kept, and for block 0, whose inputs are x[0]),
     * and the drift measured at each kept block (4 one-float tensors per kept block:
     * ||x2 error||, ||x2||, ||x1 error||, ||x1||). */
    mcl_tensor *s1, *s2, *avg, *dx2;
    /* The backward ops' scratch, shared by blocks. */
    mcl_tensor *norm_scratch, *norm_partial, *attn_scratch;
    /* Split-K partials of the blocks' products: GPT_SPLIT_SLICES of the largest product, or
     * with counter-state layers GPT_COUNTER_SPLIT_SLICES of the largest activation. */
    mcl_tensor *mm_scratch;
    mcl_tensor **keep1, **keep2;
    mcl_tensor **drift;
    uint32_t drift_count;  /* tensors in drift */
    int drift_valid;       /* a backward pass has written them */
} gpt_acts;

struct mcl_gpt {
    mcl_context *ctx;
    mcl_child child;      /* on the context's list: released with it */
    mcl_gpt_desc cfg;
    int32_t head_dim;
    uint32_t param_count;
    gpt_param *params;
    int64_t flat_floats;  /* the flat tensors' length */
    int64_t decay_end;    /* floats [0, decay_end) hold the 2-D parameters */
    int64_t total_params; /* floats that belong to a parameter */
    mcl_tensor *flat_p, *flat_g, *flat_m, *flat_v;
    mcl_tensor *hyper, *norm;
    /* MCL_GPT_COUNTER: the blocks' layers [layers x GPT_COUNTER_LINEARS] (NULL otherwise),
     * their update's parameters on the device (MCL_COUNTER_HYPER_COUNT words, uploaded by
     * mcl_gpt_set_counter_update and mcl_gpt_set_optimizer), the update as last set, and the
     * update's scratch (the partial sums, the row factors): one pair for each of a block's
     * linears, shared by the blocks, so that the updates of one block's linears need no
     * barrier between them for the scratch and can run side by side. */
    mcl_counter_linear **counter;
    mcl_tensor *counter_hyper;
    mcl_tensor *counter_partial[GPT_COUNTER_LINEARS], *counter_factors[GPT_COUNTER_LINEARS];
    mcl_counter_update_desc counter_update;
    int64_t step;
    int hyper_set;
    gpt_acts acts;
    /* The last forward pass, for the backward pass. */
    const mcl_tensor *tokens, *targets;
    int have_targets;
};

/* Parameter `which` (P_*) of layer l, the final norm's, the output head's (the embedding's
 * when the head is tied). A counter-state model has only P_ATTN_NORM and P_MLP_NORM. */
gpt_param *mcl_gpt_layer_param(mcl_gpt *gpt, int32_t l, int which);
gpt_param *mcl_gpt_final_norm_param(mcl_gpt *gpt);
gpt_param *mcl_gpt_head_param(mcl_gpt *gpt);

/* Whether the model's block linears are counter-state layers (MCL_GPT_COUNTER). */
int mcl_gpt_counter(const mcl_gpt *gpt);

/* Upload the counter layers' update (gpt->counter_update, the seed of gpt->step) to
 * gpt->counter_hyper; nothing for a model without them. */
mcl_status mcl_gpt_counter_upload(mcl_gpt *gpt);

/* gpt_counter.c: the counter layers of a MCL_GPT_COUNTER model, their update scratch and
 * hyper tensor, with the spec's default update (alloc); their initial values from `seed`
 * (init); mcl_gpt_block_linear's and mcl_gpt_block_linear_backward's passes for them (the
 * backward's update now, or, with update 0, later for several linears at once: update);
 * their tensors released with the context (release) and the layers destroyed (destroy). */
mcl_status mcl_gpt_counter_alloc(mcl_gpt *gpt);
mcl_status mcl_gpt_counter_init(mcl_gpt *gpt, uint64_t seed);
mcl_status mcl_gpt_counter_forward(mcl_gpt *gpt, int32_t l, int which, mcl_tensor *x,
                                   mcl_tensor *y, mcl_tensor *scratch);
mcl_status mcl_gpt_counter_backward(mcl_gpt *gpt, int32_t l, int which, mcl_tensor *x,
                                    mcl_tensor *dy, mcl_tensor *dx, mcl_tensor *scratch,
                                    int update);
/* The updates of n linears (which[j], input x[j], gradient dy[j]) of block l whose backward
 * passes were recorded with update 0: the linears' update passes side by side
 * (mcl_counter_linear_update_group_dev), the states as the backward's own update leaves them.
 * x and dy must hold what the backward passes read until this is recorded. pass -1: all three
 * passes; 0, 1, 2: that pass alone (mcl_counter_linear_update_group_pass), the three called
 * in order with the same linears, x and dy unchanged in between. */
mcl_status mcl_gpt_counter_update(mcl_gpt *gpt, int32_t l, const int *which,
                                  mcl_tensor *const *x, mcl_tensor *const *dy, int n, int pass);
void mcl_gpt_counter_release(mcl_gpt *gpt);
void mcl_gpt_counter_destroy(mcl_gpt *gpt);

/* gpt.c's helpers that gpt_counter.c shares: splitmix64, count normal values of standard
 * deviation sd (Box-Muller: the same values on every machine for one state), and a 1-D f32
 * tensor of n elements. */
uint64_t mcl_gpt_splitmix64(uint64_t *state);
void mcl_gpt_fill_normal(float *dst, int64_t count, double sd, uint64_t *state);
mcl_status mcl_gpt_make_f32(mcl_context *ctx, int64_t n, mcl_tensor **out);

/* y = x W^T for the linear P_WQ .. P_W_DOWN of block l: an f32 product (split-K partials in
 * `scratch`, or made per call where it is NULL) or the counter-state layer's forward pass. */
mcl_status mcl_gpt_block_linear(mcl_gpt *gpt, int32_t l, int which, mcl_tensor *x,
                                mcl_tensor *y, mcl_tensor *scratch);

/* Its backward pass for dy: dx = dy W where dx is not NULL (the weights of the forward pass),
 * then the f32 weight's gradient dW = dy^T x; a counter-state layer's update is left to
 * mcl_gpt_block_updates. */
mcl_status mcl_gpt_block_linear_backward(mcl_gpt *gpt, int32_t l, int which, mcl_tensor *x,
                                         mcl_tensor *dy, mcl_tensor *dx, mcl_tensor *scratch);

/* The counter-state updates of block l's linears which[0..n) after their backward passes, from
 * the same x and dy (unchanged since), recorded together (mcl_gpt_counter_update, pass -1 for
 * all three passes or one of them); nothing for an f32 model. */
mcl_status mcl_gpt_block_updates(mcl_gpt *gpt, int32_t l, const int *which,
                                 mcl_tensor *const *x, mcl_tensor *const *dy, int n, int pass);

/* mcl_gpt_plan_check with its message through ctx: used by mcl_gpt_create and the
 * checkpoint loader before either allocates. Errors:
 * MCL_ERROR_INVALID_ARGUMENT (a field, named in the message), MCL_ERROR_TOO_LARGE (more than
 * GPT_MAX_FLAT_FLOATS). The device's own limit is checked when the model is allocated. */
mcl_status mcl_gpt_plan(mcl_context *ctx, mcl_gpt_desc *config, gpt_plan *plan);

/* A GPT of `config` with everything but the parameter values: shapes, flat tensors (moments
 * and gradients zeroed), views. */
mcl_status mcl_gpt_alloc(mcl_context *ctx, const mcl_gpt_desc *config, mcl_gpt **out);

/* Whether the model has reversible blocks; whether block l's inputs are kept in its
 * backward pass (block 0's always are: they are the embedding). */
int mcl_gpt_reversible(const mcl_gpt *gpt);
int mcl_gpt_block_kept(const mcl_gpt *gpt, int32_t l);

/* The reversible model's forward pass after mcl_gpt_forward's checks and activations (the
 * embedding, the blocks, the final norm's input in acts.avg; hf and the logits follow in
 * mcl_gpt_forward), and its backward pass from the final norm's input gradient in acts.dx
 * (gpt_reversible.c). */
mcl_status mcl_gpt_reversible_forward(mcl_gpt *gpt, const mcl_tensor *tokens);
mcl_status mcl_gpt_reversible_backward(mcl_gpt *gpt);

/* The activations for a [batch, seq] forward pass: kept while the shape stays, made anew when
 * it changes (none left after a failure). */
mcl_status mcl_gpt_acts_shape(mcl_gpt *gpt, int64_t batch, int64_t seq);

#endif
