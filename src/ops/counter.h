/* The counter-state linear layer's internal entry points: what the tests reach past the
 * public header (src/ops/counter.c). */
#ifndef MCL_OPS_COUNTER_H
#define MCL_OPS_COUNTER_H

#include "motifcl.h" /* built with MOTIFCL_EXPERIMENTAL defined */

/* mcl_counter_linear_backward(), with the per-row factors of the update (ratio = s / s' and
 * k = (-lr / D) (C / s'), two floats per row) written into row_factors, an f32 tensor of
 * 2 x out elements, instead of a scratch tensor. NULL: row_factors may be. */
mcl_status mcl_counter_linear_backward_ex(mcl_counter_linear *layer, const mcl_tensor *x,
                                          const mcl_tensor *grad_out, mcl_tensor *grad_x,
                                          const mcl_counter_update_desc *update,
                                          mcl_tensor *row_factors);

/* The f32 words of the device hyper tensor of mcl_counter_linear_backward_dev: lr,
 * lr_scale, beta, eps (floats 0-3, defaults not applied: the values as used), the step's seed
 * (word 4, a u32's bits), and three unused. */
#define MCL_COUNTER_HYPER_COUNT 8

/* mcl_counter_linear_forward() with the product's split-K partials in `split` (f32; the
 * product splits K only as far as split holds its partials), or NULL for a scratch tensor made
 * per call, held until the recorded work runs: a recorded pass of many layers would hold one
 * for each. */
mcl_status mcl_counter_linear_forward_dev(mcl_counter_linear *layer, const mcl_tensor *x,
                                          mcl_tensor *y, mcl_tensor *split);

/* The backward pass with the update's parameters read on the device from `hyper` (as above),
 * so that a recorded pass replays with whatever the host wrote there since: the seed of the
 * stochastic rounding is hyper word 4 plus `salt` (wrapping), which tells layers apart. The
 * scratch tensors (f32): partial of mcl_counter_linear_partial_floats(out, in) floats,
 * row_factors of 2 x out, and split for grad_x's product as in
 * mcl_counter_linear_forward_dev, or NULL for ones made per call (held until the recorded
 * work runs). NULL: grad_x, partial, row_factors, split may be; hyper NULL records grad_x
 * alone, the update left to mcl_counter_linear_update_group_dev. */
mcl_status mcl_counter_linear_backward_dev(mcl_counter_linear *layer, const mcl_tensor *x,
                                           const mcl_tensor *grad_out, mcl_tensor *grad_x,
                                           mcl_tensor *hyper, uint32_t salt,
                                           mcl_tensor *partial, mcl_tensor *row_factors,
                                           mcl_tensor *split);

/* The most layers of one mcl_counter_linear_update_group_dev. */
#define MCL_COUNTER_GROUP_MAX 8

/* A layer's update for mcl_counter_linear_update_group_dev: its input x, grad_out, the salt
 * of its seed and its scratch, as mcl_counter_linear_backward_dev takes them. */
typedef struct mcl_counter_update_item {
    mcl_counter_linear *layer;
    const mcl_tensor *x, *grad_out;
    uint32_t salt;
    mcl_tensor *partial, *row_factors;
} mcl_counter_update_item;

/* The updates of n layers (1 to MCL_COUNTER_GROUP_MAX, distinct layers and scratch) whose
 * backward passes were recorded without one (mcl_counter_linear_backward_dev with hyper
 * NULL): each layer's state steps exactly as mcl_counter_linear_backward_dev with `hyper`
 * would step it, but each of the update's three passes is recorded for all n layers before
 * the next, so that the layers' dispatches run side by side. */
mcl_status mcl_counter_linear_update_group_dev(const mcl_counter_update_item *items, int n,
                                               mcl_tensor *hyper);

/* One of those three passes alone (0: the statistics, 1: the row factors, 2: the weights'
 * step), so that a caller can record other work between them; the items' partial and
 * row_factors given (they carry the passes' results from one call to the next). Recorded in
 * order 0, 1, 2 with the same items and unchanged x and grad_out, the states step exactly as
 * mcl_counter_linear_update_group_dev steps them. */
mcl_status mcl_counter_linear_update_group_pass(const mcl_counter_update_item *items, int n,
                                                mcl_tensor *hyper, int pass);

/* An update descriptor checked (MCL_ERROR_INVALID_ARGUMENT, through ctx, named by op) and
 * its lr, lr_scale, beta and eps with the defaults applied. */
mcl_status mcl_counter_update_hyper(mcl_context *ctx, const char *op,
                                    const mcl_counter_update_desc *desc, float hyper[4]);

/* The invocations of the update passes' workgroups for this layer: 64, 128 or 256 (within
 * the device's limit), or 0 for the library's choice (256); the tests run each. */
mcl_status mcl_counter_linear_update_wg(mcl_counter_linear *layer, uint32_t wg);

/* Floats of the update's partial sums for a layer of out x in. */
int64_t mcl_counter_linear_partial_floats(int64_t out, int64_t in);

#endif
