/* A GPT's counter-state layers (MCL_GPT_COUNTER, docs/counter-state.md): the seven linears
 * of each block as mcl_counter_linear layers, their update's parameters on the device and
 * its scratch, their forward and backward passes inside the model's, and their initial
 * values. */
#include <math.h>
#include <string.h>

#include "gpt_internal.h"
#include "core/alloc.h"
#include "../ops/counter.h"

/* The index among a block's counter layers (mcl_gpt_linear) of linear P_WQ .. P_W_DOWN. */
static int counter_index(int which)
{
    static const int8_t index[GPT_LAYER_PARAMS] = {-1, MCL_GPT_WQ, MCL_GPT_WK, MCL_GPT_WV,
                                                   MCL_GPT_WO, -1, MCL_GPT_W_GATE,
                                                   MCL_GPT_W_UP, MCL_GPT_W_DOWN};
    return index[which];
}

/* The counter layer of linear P_WQ .. P_W_DOWN of block l. */
static mcl_counter_linear *counter_of(mcl_gpt *gpt, int32_t l, int which)
{
    return gpt->counter[(size_t)l * GPT_COUNTER_LINEARS + (size_t)counter_index(which)];
}

mcl_status mcl_gpt_counter_forward(mcl_gpt *gpt, int32_t l, int which, mcl_tensor *x,
                                   mcl_tensor *y, mcl_tensor *scratch)
{
    return mcl_counter_linear_forward_dev(counter_of(gpt, l, which), x, y, scratch);
}

/* The seed salt of linear `which` of block l. */
static uint32_t counter_salt(int32_t l, int which)
{
    return ((uint32_t)l * GPT_COUNTER_LINEARS + (uint32_t)which) * 0x9E3779B9u;
}

mcl_status mcl_gpt_counter_backward(mcl_gpt *gpt, int32_t l, int which, mcl_tensor *x,
                                    mcl_tensor *dy, mcl_tensor *dx, mcl_tensor *scratch,
                                    int update)
{
    const int k = counter_index(which);
    return mcl_counter_linear_backward_dev(counter_of(gpt, l, which), x, dy, dx,
                                           update ? gpt->counter_hyper : NULL,
                                           counter_salt(l, which), gpt->counter_partial[k],
                                           gpt->counter_factors[k], scratch);
}

mcl_status mcl_gpt_counter_update(mcl_gpt *gpt, int32_t l, const int *which,
                                  mcl_tensor *const *x, mcl_tensor *const *dy, int n, int pass)
{
    mcl_counter_update_item items[GPT_COUNTER_LINEARS];
    if (n < 1 || n > GPT_COUNTER_LINEARS)
        return MCL_ERROR_INVALID_ARGUMENT;
    for (int j = 0; j < n; j++) {
        const int k = counter_index(which[j]);
        items[j] = (mcl_counter_update_item){counter_of(gpt, l, which[j]), x[j], dy[j],
                                             counter_salt(l, which[j]), gpt->counter_partial[k],
                                             gpt->counter_factors[k]};
    }
    if (pass < 0)
        return mcl_counter_linear_update_group_dev(items, n, gpt->counter_hyper);
    return mcl_counter_linear_update_group_pass(items, n, gpt->counter_hyper, pass);
}

mcl_counter_linear *mcl_gpt_counter_layer(mcl_gpt *gpt, int32_t layer, mcl_gpt_linear which)
{
    if (!gpt || !gpt->counter || layer < 0 || layer >= gpt->cfg.layers || (int)which < 0 ||
        (int)which >= GPT_COUNTER_LINEARS)
        return NULL;
    return gpt->counter[(size_t)layer * GPT_COUNTER_LINEARS + (size_t)which];
}

/* The seed of the counter layers' rounding at `step`: a mix of the base seed and the step. */
static uint32_t step_seed(uint32_t base, int64_t step)
{
    uint64_t state = ((uint64_t)base << 32) ^ (uint64_t)step;
    return (uint32_t)(mcl_gpt_splitmix64(&state) >> 32);
}

mcl_status mcl_gpt_counter_upload(mcl_gpt *gpt)
{
    if (!gpt->counter)
        return MCL_SUCCESS;
    float words[MCL_COUNTER_HYPER_COUNT] = {0};
    mcl_status status = mcl_counter_update_hyper(gpt->ctx, "mcl_gpt_set_counter_update",
                                                 &gpt->counter_update, words);
    if (status != MCL_SUCCESS)
        return status;
    uint32_t seed = step_seed(gpt->counter_update.seed, gpt->step);
    memcpy(&words[4], &seed, sizeof seed);
    return mcl_tensor_upload(gpt->counter_hyper, 0, words, sizeof words);
}

mcl_status mcl_gpt_set_counter_update(mcl_gpt *gpt, const mcl_counter_update_desc *desc)
{
    if (!gpt)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_context_check(gpt->ctx) != MCL_SUCCESS)
        return MCL_ERROR_CONTEXT_DESTROYED;
    static const char op[] = "mcl_gpt_set_counter_update";
    if (!desc)
        return mcl_fail(gpt->ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: desc is NULL", op);
    if (!gpt->counter)
        return mcl_fail(gpt->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: the model has no counter-state layers (MCL_GPT_COUNTER)", op);
    if (mcl_capturing(gpt->ctx))
        return mcl_fail(gpt->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: not during a capture (set, then replay)", op);
    float check[4];
    mcl_status status = mcl_counter_update_hyper(gpt->ctx, op, desc, check);
    if (status != MCL_SUCCESS)
        return status;
    mcl_counter_update_desc saved = gpt->counter_update;
    memset(&gpt->counter_update, 0, sizeof gpt->counter_update);
    memcpy(&gpt->counter_update, desc,
           desc->size < sizeof gpt->counter_update ? desc->size : sizeof gpt->counter_update);
    gpt->counter_update.size = sizeof gpt->counter_update;
    if ((status = mcl_gpt_counter_upload(gpt)) != MCL_SUCCESS)
        gpt->counter_update = saved;
    return status;
}

/* The counter layers of a MCL_GPT_COUNTER model, their update scratch (a pair per linear of
 * a block, shared by the blocks) and hyper tensor, with the spec's default update. */
mcl_status mcl_gpt_counter_alloc(mcl_gpt *gpt)
{
    mcl_context *ctx = gpt->ctx;
    const mcl_gpt_desc *c = &gpt->cfg;
    size_t n = (size_t)c->layers * GPT_COUNTER_LINEARS;
    gpt->counter = mcl_mem_calloc(n, sizeof *gpt->counter);
    if (!gpt->counter)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    mcl_status status = MCL_SUCCESS;
    for (size_t i = 0; i < n && status == MCL_SUCCESS; i++) {
        mcl_counter_linear_desc d = {.size = sizeof d, .C = c->counter_c};
        mcl_gpt_linear_shape(c, (int)(i % GPT_COUNTER_LINEARS), &d.out, &d.in);
        status = mcl_counter_linear_create(ctx, &d, &gpt->counter[i]);
        if (status == MCL_SUCCESS && i < GPT_COUNTER_LINEARS)
            status = mcl_gpt_make_f32(ctx, mcl_counter_linear_partial_floats(d.out, d.in),
                              &gpt->counter_partial[i]);
        if (status == MCL_SUCCESS && i < GPT_COUNTER_LINEARS)
            status = mcl_gpt_make_f32(ctx, 2 * d.out, &gpt->counter_factors[i]);
    }
    if (status == MCL_SUCCESS)
        status = mcl_gpt_make_f32(ctx, MCL_COUNTER_HYPER_COUNT, &gpt->counter_hyper);
    if (status != MCL_SUCCESS)
        return status;
    gpt->counter_update = (mcl_counter_update_desc){.size = sizeof gpt->counter_update,
                                                    .lr = 3e-3f, .seed = 12345u};
    return mcl_gpt_counter_upload(gpt);
}

/* Initial counter layers: each weight drawn as an f32 model's (init_params' rule), then made
 * ternary with the ternary-weight-network threshold (0.7 x the row's mean |w|). */
mcl_status mcl_gpt_counter_init(mcl_gpt *gpt, uint64_t seed)
{
    const mcl_gpt_desc *c = &gpt->cfg;
    uint64_t state = seed ^ 0x636F756E74657273ull; /* apart from the f32 parameters' draws */
    const double std = 0.02, proj_std = 0.02 / sqrt(2.0 * c->layers);
    mcl_status status = MCL_SUCCESS;
    for (size_t i = 0; i < (size_t)c->layers * GPT_COUNTER_LINEARS && status == MCL_SUCCESS;
         i++) {
        int which = (int)(i % GPT_COUNTER_LINEARS);
        int64_t out, in;
        mcl_gpt_linear_shape(c, which, &out, &in);
        size_t count = (size_t)(out * in);
        float *w = mcl_mem_malloc(count * sizeof *w);
        if (!w)
            return mcl_fail(gpt->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        mcl_gpt_fill_normal(w, (int64_t)count,
                    which == MCL_GPT_WO || which == MCL_GPT_W_DOWN ? proj_std : std, &state);
        status = mcl_counter_linear_from_f32(gpt->counter[i], w, 0.7f);
        mcl_mem_free(w);
    }
    return status;
}

void mcl_gpt_counter_release(mcl_gpt *gpt)
{
    mcl_tensor_destroy(gpt->counter_hyper);
    gpt->counter_hyper = NULL;
    for (size_t i = 0; i < GPT_COUNTER_LINEARS; i++) {
        mcl_tensor_destroy(gpt->counter_partial[i]);
        mcl_tensor_destroy(gpt->counter_factors[i]);
        gpt->counter_partial[i] = gpt->counter_factors[i] = NULL;
    }
}

void mcl_gpt_counter_destroy(mcl_gpt *gpt)
{
    /* The counter layers are the context's children too: released with it, destroyed here
     * (safe after it). */
    for (size_t i = 0; gpt->counter && i < (size_t)gpt->cfg.layers * GPT_COUNTER_LINEARS; i++)
        mcl_counter_linear_destroy(gpt->counter[i]);
    mcl_mem_free(gpt->counter);
    gpt->counter = NULL;
}
