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

#endif
