/* A GPT-style decoder built from the library's operations: its shapes, parameters and
 * activations, creation and queries (gpt_train.c records forward, backward and the AdamW
 * step on the context's stream, and so capturable as one graph; gpt_checkpoint.c saves and
 * loads).
 *
 * Memory. Parameters, gradients and the two AdamW moments are four flat f32 tensors of one
 * size; each parameter is a view at an offset padded to 64 floats (256 bytes, the largest
 * minStorageBufferOffsetAlignment Vulkan allows). The 2-D parameters come first, so weight
 * decay covers a prefix and the optimizer step is one dispatch (plus two for the gradient
 * norm). Activations for one [B, T] are allocated on the first forward pass with that shape:
 * per layer everything the backward pass reads (block input, both normed inputs, q, k, v
 * after RoPE, attention output, the MLP's gate, up and product), plus a few buffers that the
 * backward pass reuses from layer to layer. A reversible model (MCL_GPT_REVERSIBLE,
 * gpt_reversible.c) allocates one layer's set as scratch, two running streams and the inputs
 * of its anchored blocks instead.
 *
 * Hyper-parameters of the step live in a small device tensor that mcl_gpt_set_optimizer()
 * uploads: a captured step reads whatever was set before each replay. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt_internal.h"
#include "../ops/ops_internal.h"
#include "core/alloc.h"

static const char *const layer_param_names[GPT_LAYER_PARAMS] = {
    "attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w_gate", "w_up", "w_down"};

/* --- Shapes and parameters ------------------------------------------------------------ */

mcl_status mcl_gpt_plan(mcl_context *ctx, mcl_gpt_desc *c, gpt_plan *plan)
{
    char why[160];
    mcl_status status = mcl_gpt_plan_check(c, plan, why, sizeof why);
    if (status != MCL_SUCCESS)
        return mcl_fail(ctx, status, "mcl_gpt: %s", why);
    return MCL_SUCCESS;
}

static void add_param(mcl_gpt *gpt, const char *name, int64_t rows, int64_t cols)
{
    gpt_param *p = &gpt->params[gpt->param_count++];
    snprintf(p->name, sizeof p->name, "%s", name);
    p->ndim = cols ? 2 : 1;
    p->shape[0] = rows;
    p->shape[1] = cols;
    p->count = cols ? rows * cols : rows;
}

/* Lay the parameters out: the index order of mcl_gpt_param(), placed 2-D first. The plan has
 * bounded every size: nothing here overflows. */
static mcl_status build_params(mcl_gpt *gpt, const gpt_plan *plan)
{
    const mcl_gpt_desc *c = &gpt->cfg;
    int64_t d = c->dim, hd = gpt->head_dim;
    gpt->params = mcl_mem_calloc(plan->param_count, sizeof *gpt->params);
    if (!gpt->params)
        return mcl_fail(gpt->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    add_param(gpt, "tok_embedding", c->vocab, d);
    char name[GPT_NAME_MAX];
    const int counter = mcl_gpt_counter(gpt);
    for (int32_t l = 0; l < c->layers; l++) {
        const int64_t shapes[GPT_LAYER_PARAMS][2] = {
            {d, 0}, {c->heads * hd, d}, {c->kv_heads * hd, d}, {c->kv_heads * hd, d},
            {d, c->heads * hd}, {d, 0}, {c->hidden, d}, {c->hidden, d}, {d, c->hidden}};
        for (int i = 0; i < GPT_LAYER_PARAMS; i++) {
            /* A counter-state model's linears are its counter layers, not parameters. */
            if (counter && shapes[i][1] != 0)
                continue;
            snprintf(name, sizeof name, "layers.%d.%s", (int)l, layer_param_names[i]);
            add_param(gpt, name, shapes[i][0], shapes[i][1]);
        }
    }
    add_param(gpt, "final_norm", d, 0);
    if (!c->tied_head)
        add_param(gpt, "head", c->vocab, d);

    int64_t offset = 0;
    gpt->total_params = 0;
    for (int pass = 2; pass >= 1; pass--) {
        for (uint32_t i = 0; i < gpt->param_count; i++) {
            gpt_param *p = &gpt->params[i];
            if (p->ndim != (uint32_t)pass)
                continue;
            p->offset = offset;
            offset += (p->count + GPT_ALIGN_FLOATS - 1) / GPT_ALIGN_FLOATS * GPT_ALIGN_FLOATS;
            gpt->total_params += p->count;
        }
        if (pass == 2)
            gpt->decay_end = offset;
    }
    gpt->flat_floats = offset;
    if (gpt->param_count != plan->param_count || offset != plan->flat_floats ||
        gpt->decay_end != plan->decay_end || gpt->total_params != plan->total_params)
        return mcl_fail(gpt->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt: internal error: the layout disagrees with its plan");
    if ((uint64_t)offset * 4 > mcl_traits_of(gpt->ctx)->max_binding_bytes)
        return mcl_fail(gpt->ctx, MCL_ERROR_TOO_LARGE,
                        "mcl_gpt: %lld parameters exceed one storage buffer",
                        (long long)gpt->total_params);
    return MCL_SUCCESS;
}

static mcl_status param_views(mcl_gpt *gpt)
{
    for (uint32_t i = 0; i < gpt->param_count; i++) {
        gpt_param *p = &gpt->params[i];
        int64_t shape[2] = {p->shape[0], p->shape[1]};
        mcl_status status;
        if ((status = mcl_tensor_view(gpt->flat_p, (uint64_t)p->offset * 4, MCL_DTYPE_F32,
                                      p->ndim, shape, &p->p)) != MCL_SUCCESS ||
            (status = mcl_tensor_view(gpt->flat_g, (uint64_t)p->offset * 4, MCL_DTYPE_F32,
                                      p->ndim, shape, &p->g)) != MCL_SUCCESS)
            return status;
    }
    return MCL_SUCCESS;
}

int mcl_gpt_counter(const mcl_gpt *gpt)
{
    return (gpt->cfg.flags & MCL_GPT_COUNTER) != 0;
}

/* Parameters a block has in the table. */
static int32_t block_params(const mcl_gpt *gpt)
{
    return mcl_gpt_counter(gpt) ? GPT_LAYER_PARAMS_COUNTER : GPT_LAYER_PARAMS;
}

gpt_param *mcl_gpt_layer_param(mcl_gpt *gpt, int32_t l, int which)
{
    if (!mcl_gpt_counter(gpt))
        return &gpt->params[1 + l * GPT_LAYER_PARAMS + which];
    if (which != P_ATTN_NORM && which != P_MLP_NORM)
        return NULL;
    return &gpt->params[1 + l * GPT_LAYER_PARAMS_COUNTER + (which == P_MLP_NORM)];
}

gpt_param *mcl_gpt_final_norm_param(mcl_gpt *gpt)
{
    return &gpt->params[1 + gpt->cfg.layers * block_params(gpt)];
}

gpt_param *mcl_gpt_head_param(mcl_gpt *gpt)
{
    return gpt->cfg.tied_head ? &gpt->params[0]
                              : &gpt->params[2 + gpt->cfg.layers * block_params(gpt)];
}

mcl_status mcl_gpt_block_linear(mcl_gpt *gpt, int32_t l, int which, mcl_tensor *x,
                                mcl_tensor *y, mcl_tensor *scratch)
{
    if (mcl_gpt_counter(gpt))
        return mcl_gpt_counter_forward(gpt, l, which, x, y, scratch);
    gpt_param *w = mcl_gpt_layer_param(gpt, l, which);
    if (scratch)
        return mcl_matmul_f32_scratch(gpt->ctx, x, MCL_NO_TRANSPOSE, w->p, MCL_TRANSPOSE, NULL,
                                      y, scratch);
    return mcl_matmul(gpt->ctx, x, MCL_NO_TRANSPOSE, w->p, MCL_TRANSPOSE, NULL, y);
}

/* c = op(a) op(b), through the scratch where there is one. */
static mcl_status product(mcl_gpt *gpt, const mcl_tensor *a, mcl_transpose ta,
                          const mcl_tensor *b, mcl_transpose tb, mcl_tensor *c,
                          mcl_tensor *scratch)
{
    if (scratch)
        return mcl_matmul_f32_scratch(gpt->ctx, a, ta, b, tb, NULL, c, scratch);
    return mcl_matmul(gpt->ctx, a, ta, b, tb, NULL, c);
}

mcl_status mcl_gpt_block_linear_backward(mcl_gpt *gpt, int32_t l, int which, mcl_tensor *x,
                                         mcl_tensor *dy, mcl_tensor *dx, mcl_tensor *scratch)
{
    if (mcl_gpt_counter(gpt))
        return mcl_gpt_counter_backward(gpt, l, which, x, dy, dx, scratch, 0);
    gpt_param *w = mcl_gpt_layer_param(gpt, l, which);
    mcl_status status = product(gpt, dy, MCL_TRANSPOSE, x, MCL_NO_TRANSPOSE, w->g, scratch);
    if (status != MCL_SUCCESS || !dx)
        return status;
    return product(gpt, dy, MCL_NO_TRANSPOSE, w->p, MCL_NO_TRANSPOSE, dx, scratch);
}

mcl_status mcl_gpt_block_updates(mcl_gpt *gpt, int32_t l, const int *which,
                                 mcl_tensor *const *x, mcl_tensor *const *dy, int n, int pass)
{
    return mcl_gpt_counter(gpt) ? mcl_gpt_counter_update(gpt, l, which, x, dy, n, pass)
                                : MCL_SUCCESS;
}

/* splitmix64 and Box-Muller: the same initial parameters on every machine for one seed. */
uint64_t mcl_gpt_splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *state)
{
    return ((double)(mcl_gpt_splitmix64(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
}

/* count normal values of standard deviation sd (Box-Muller, pairs from one draw each). */
void mcl_gpt_fill_normal(float *dst, int64_t count, double sd, uint64_t *state)
{
    for (int64_t j = 0; j < count; j += 2) {
        double u1 = uniform01(state), u2 = uniform01(state);
        double r = sqrt(-2.0 * log(u1));
        dst[j] = (float)(sd * r * cos(6.283185307179586 * u2));
        if (j + 1 < count)
            dst[j + 1] = (float)(sd * r * sin(6.283185307179586 * u2));
    }
}

static void init_params(mcl_gpt *gpt, float *host, uint64_t seed)
{
    uint64_t state = seed;
    const double std = 0.02, proj_std = 0.02 / sqrt(2.0 * gpt->cfg.layers);
    for (uint32_t i = 0; i < gpt->param_count; i++) {
        gpt_param *p = &gpt->params[i];
        float *dst = host + p->offset;
        if (p->ndim == 1) {
            for (int64_t j = 0; j < p->count; j++)
                dst[j] = 1.0f;
            continue;
        }
        size_t len = strlen(p->name);
        int proj = (len > 3 && strcmp(p->name + len - 3, ".wo") == 0) ||
                   (len > 7 && strcmp(p->name + len - 7, ".w_down") == 0);
        mcl_gpt_fill_normal(dst, p->count, proj ? proj_std : std, &state);
    }
}

mcl_status mcl_gpt_make_f32(mcl_context *ctx, int64_t n, mcl_tensor **out)
{
    return mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, out);
}

/* Everything but the parameter values: shapes, flat tensors (moments and gradients zeroed),
 * views. */
static void gpt_release_child(mcl_child *child);

mcl_status mcl_gpt_alloc(mcl_context *ctx, const mcl_gpt_desc *config, mcl_gpt **out)
{
    *out = NULL;
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!config || config->size < offsetof(mcl_gpt_desc, reversible_anchor))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt: config is NULL or config->size is not set");
    mcl_gpt *gpt = mcl_mem_calloc(1, sizeof *gpt);
    if (!gpt)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    gpt->ctx = ctx;
    mcl_context_adopt(ctx, &gpt->child, gpt_release_child);
    /* A caller's struct from before reversible_anchor ends at it (its flags were reserved
     * and zero). */
    memcpy(&gpt->cfg, config, offsetof(mcl_gpt_desc, reversible_anchor));
    if (config->size >= offsetof(mcl_gpt_desc, reversible_anchor) + sizeof(int32_t))
        gpt->cfg.reversible_anchor = config->reversible_anchor;
    if (config->size >= offsetof(mcl_gpt_desc, counter_c) + sizeof(uint32_t))
        gpt->cfg.counter_c = config->counter_c;
    gpt->cfg.size = sizeof gpt->cfg;
    gpt_plan plan;
    mcl_status status = mcl_gpt_plan(ctx, &gpt->cfg, &plan);
    if (status == MCL_SUCCESS) {
        gpt->head_dim = gpt->cfg.dim / gpt->cfg.heads;
        status = build_params(gpt, &plan);
    }
    if (status == MCL_SUCCESS)
        status = mcl_gpt_make_f32(ctx, gpt->flat_floats, &gpt->flat_p);
    if (status == MCL_SUCCESS)
        status = mcl_gpt_make_f32(ctx, gpt->flat_floats, &gpt->flat_g);
    if (status == MCL_SUCCESS)
        status = mcl_gpt_make_f32(ctx, gpt->flat_floats, &gpt->flat_m);
    if (status == MCL_SUCCESS)
        status = mcl_gpt_make_f32(ctx, gpt->flat_floats, &gpt->flat_v);
    if (status == MCL_SUCCESS)
        status = mcl_gpt_make_f32(ctx, MCL_ADAMW_HYPER_COUNT, &gpt->hyper);
    if (status == MCL_SUCCESS)
        status = mcl_gpt_make_f32(ctx, 1, &gpt->norm);
    if (status == MCL_SUCCESS)
        status = param_views(gpt);
    if (status == MCL_SUCCESS && mcl_gpt_counter(gpt))
        status = mcl_gpt_counter_alloc(gpt);
    if (status == MCL_SUCCESS && (status = mcl_tensor_zero(gpt->flat_g)) == MCL_SUCCESS &&
        (status = mcl_tensor_zero(gpt->flat_m)) == MCL_SUCCESS &&
        (status = mcl_tensor_zero(gpt->flat_v)) == MCL_SUCCESS)
        status = mcl_tensor_zero(gpt->norm);
    if (status != MCL_SUCCESS) {
        mcl_gpt_destroy(gpt);
        return status;
    }
    *out = gpt;
    return MCL_SUCCESS;
}

mcl_status mcl_gpt_create(mcl_context *ctx, const mcl_gpt_desc *config, uint64_t seed,
                          mcl_gpt **out)
{
    if (!out)
        return ctx ? mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_gpt_create: out is NULL")
                   : MCL_ERROR_INVALID_ARGUMENT;
    mcl_gpt *gpt;
    mcl_status status = mcl_gpt_alloc(ctx, config, &gpt);
    if (status != MCL_SUCCESS)
        return status;
    float *host = mcl_mem_calloc((size_t)gpt->flat_floats, sizeof *host);
    if (!host) {
        mcl_gpt_destroy(gpt);
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    init_params(gpt, host, seed);
    status = mcl_tensor_upload(gpt->flat_p, 0, host, gpt->flat_p->nbytes);
    mcl_mem_free(host);
    if (status == MCL_SUCCESS && gpt->counter)
        status = mcl_gpt_counter_init(gpt, seed);
    if (status != MCL_SUCCESS) {
        mcl_gpt_destroy(gpt);
        return status;
    }
    *out = gpt;
    return MCL_SUCCESS;
}

static void acts_free(gpt_acts *a, int32_t layers)
{
    /* Views first, then their owners. */
    mcl_tensor **views[] = {&a->x0_3d, &a->dx_3d, &a->datt4, &a->dq4, &a->dk4, &a->dv4};
    for (size_t i = 0; i < sizeof views / sizeof *views; i++) {
        mcl_tensor_destroy(*views[i]);
        *views[i] = NULL;
    }
    if (a->layer) {
        for (int32_t l = 0; l < layers; l++) {
            gpt_layer_acts *la = &a->layer[l];
            mcl_tensor *t[] = {la->q4, la->k4,   la->v4, la->att4, la->h,
                               la->q,  la->k,    la->v,  la->att,  la->x_mid,
                               la->h2, la->gate, la->up, la->act,  la->att_stats};
            for (size_t i = 0; i < sizeof t / sizeof *t; i++)
                mcl_tensor_destroy(t[i]);
        }
        mcl_mem_free(a->layer);
    }
    if (a->x) {
        for (int32_t l = 0; l <= layers; l++)
            mcl_tensor_destroy(a->x[l]);
        mcl_mem_free(a->x);
    }
    for (int32_t l = 0; l < layers; l++) {
        mcl_tensor_destroy(a->keep1 ? a->keep1[l] : NULL);
        mcl_tensor_destroy(a->keep2 ? a->keep2[l] : NULL);
    }
    mcl_mem_free(a->keep1);
    mcl_mem_free(a->keep2);
    for (uint32_t i = 0; a->drift && i < a->drift_count; i++)
        mcl_tensor_destroy(a->drift[i]);
    mcl_mem_free(a->drift);
    mcl_tensor *t[] = {a->hf, a->logits, a->lse, a->dx, a->dh, a->tmp, a->datt, a->dq,
                       a->dk, a->dv, a->dff, a->dgate, a->dup, a->dhead, a->s1, a->s2,
                       a->avg, a->dx2, a->norm_scratch, a->norm_partial, a->attn_scratch,
                       a->mm_scratch, a->dx_mid, a->dx_alt};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        mcl_tensor_destroy(t[i]);
    memset(a, 0, sizeof *a);
}

/* The GPT's device part: its activations, parameters and flat buffers (with its context, or
 * first in mcl_gpt_destroy). */
static void gpt_release(mcl_gpt *gpt)
{
    acts_free(&gpt->acts, gpt->cfg.layers);
    for (uint32_t i = 0; gpt->params && i < gpt->param_count; i++) {
        mcl_tensor_destroy(gpt->params[i].p);
        mcl_tensor_destroy(gpt->params[i].g);
        gpt->params[i].p = gpt->params[i].g = NULL;
    }
    mcl_tensor **t[] = {&gpt->flat_p, &gpt->flat_g, &gpt->flat_m,
                        &gpt->flat_v, &gpt->hyper,  &gpt->norm};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        mcl_tensor_destroy(*t[i]);
        *t[i] = NULL;
    }
    mcl_gpt_counter_release(gpt);
}

static void gpt_release_child(mcl_child *child)
{
    gpt_release((mcl_gpt *)((char *)child - offsetof(mcl_gpt, child)));
}

void mcl_gpt_destroy(mcl_gpt *gpt)
{
    if (!gpt)
        return;
    gpt_release(gpt);
    mcl_gpt_counter_destroy(gpt);
    mcl_mem_free(gpt->params);
    mcl_context_disown(gpt->ctx, &gpt->child);
    mcl_mem_free(gpt);
}

mcl_status mcl_gpt_config(const mcl_gpt *gpt, mcl_gpt_desc *config)
{
    if (!gpt || !config)
        return MCL_ERROR_INVALID_ARGUMENT;
    *config = gpt->cfg;
    return MCL_SUCCESS;
}

int64_t mcl_gpt_param_numel(const mcl_gpt *gpt)
{
    return gpt ? gpt->total_params : 0;
}

uint32_t mcl_gpt_param_count(const mcl_gpt *gpt)
{
    return gpt ? gpt->param_count : 0;
}

mcl_status mcl_gpt_param(const mcl_gpt *gpt, uint32_t index, mcl_gpt_param_info *info)
{
    if (!gpt || !info)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (index >= gpt->param_count)
        return mcl_fail(gpt->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt_param: index %u of %u", index, gpt->param_count);
    const gpt_param *p = &gpt->params[index];
    info->name = p->name;
    info->offset = p->offset;
    info->count = p->count;
    info->ndim = p->ndim;
    info->shape[0] = p->shape[0];
    info->shape[1] = p->ndim == 2 ? p->shape[1] : 0;
    return MCL_SUCCESS;
}

mcl_tensor *mcl_gpt_parameters(mcl_gpt *gpt)
{
    return gpt ? gpt->flat_p : NULL;
}

mcl_tensor *mcl_gpt_gradients(mcl_gpt *gpt)
{
    return gpt ? gpt->flat_g : NULL;
}

mcl_tensor *mcl_gpt_logits(mcl_gpt *gpt)
{
    return gpt ? gpt->acts.logits : NULL;
}

mcl_tensor *mcl_gpt_grad_norm(mcl_gpt *gpt)
{
    return gpt ? gpt->norm : NULL;
}

int64_t mcl_gpt_optimizer_step(const mcl_gpt *gpt)
{
    return gpt ? gpt->step : 0;
}

/* --- Activations ---------------------------------------------------------------------- */

static mcl_status t2(mcl_context *ctx, int64_t rows, int64_t cols, mcl_tensor **out)
{
    int64_t shape[2] = {rows, cols};
    return mcl_tensor_create(ctx, MCL_DTYPE_F32, 2, shape, out);
}

static mcl_status view4(mcl_tensor *owner, int64_t b, int64_t t, int64_t h, int64_t d,
                        mcl_tensor **out)
{
    int64_t shape[4] = {b, t, h, d};
    return mcl_tensor_view(owner, 0, MCL_DTYPE_F32, 4, shape, out);
}

int mcl_gpt_reversible(const mcl_gpt *gpt)
{
    return (gpt->cfg.flags & MCL_GPT_REVERSIBLE) != 0;
}

int mcl_gpt_block_kept(const mcl_gpt *gpt, int32_t l)
{
    int32_t a = gpt->cfg.reversible_anchor;
    return l == 0 || (a > 0 && l % a == 0);
}

/* The reversible model's streams, kept block inputs and drift measurements. */
/* The blocks' products' split-K partials: `slices` slices of the largest, an activation
 * [B*T, width] or, with weights, a weight's gradient [out, in]. */
static mcl_status split_scratch(mcl_gpt *gpt, int64_t bt, int weights, int64_t slices,
                                mcl_tensor **out)
{
    int64_t d = gpt->cfg.dim, f = gpt->cfg.hidden, qd = (int64_t)gpt->cfg.heads * gpt->head_dim;
    int64_t widest = d > f ? d : f;
    widest = widest > qd ? widest : qd;
    int64_t largest = bt * widest;
    if (weights && widest * d > largest)
        largest = widest * d;
    return mcl_gpt_make_f32(gpt->ctx, largest * slices, out);
}

static mcl_status reversible_alloc(mcl_gpt *gpt, int64_t bt)
{
    mcl_context *ctx = gpt->ctx;
    gpt_acts *a = &gpt->acts;
    int32_t layers = gpt->cfg.layers;
    int64_t d = gpt->cfg.dim;
    a->keep1 = mcl_mem_calloc((size_t)layers, sizeof *a->keep1);
    a->keep2 = mcl_mem_calloc((size_t)layers, sizeof *a->keep2);
    /* Every kept block is measured unless nothing is reconstructed (anchor 1). */
    uint32_t measured = 0;
    for (int32_t l = 0; l < layers; l++)
        measured += gpt->cfg.reversible_anchor != 1 && mcl_gpt_block_kept(gpt, l);
    a->drift = mcl_mem_calloc((size_t)measured * 4 + 1, sizeof *a->drift);
    if (!a->keep1 || !a->keep2 || !a->drift)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    mcl_status s;
    if ((s = t2(ctx, bt, d, &a->s1)) != MCL_SUCCESS || (s = t2(ctx, bt, d, &a->s2)) != MCL_SUCCESS ||
        (s = t2(ctx, bt, d, &a->avg)) != MCL_SUCCESS || (s = t2(ctx, bt, d, &a->dx2)) != MCL_SUCCESS ||
        (s = t2(ctx, bt, d, &a->norm_scratch)) != MCL_SUCCESS ||
        (s = t2(ctx, (bt + 63) / 64, d, &a->norm_partial)) != MCL_SUCCESS ||
        (s = mcl_gpt_make_f32(ctx, bt * gpt->cfg.heads * 4, &a->attn_scratch)) != MCL_SUCCESS)
        return s;
    if ((s = split_scratch(gpt, bt, 1, GPT_SPLIT_SLICES, &a->mm_scratch)) != MCL_SUCCESS)
        return s;
    for (int32_t l = 1; l < layers; l++) {
        if (!mcl_gpt_block_kept(gpt, l))
            continue;
        if ((s = t2(ctx, bt, d, &a->keep1[l])) != MCL_SUCCESS ||
            (s = t2(ctx, bt, d, &a->keep2[l])) != MCL_SUCCESS)
            return s;
    }
    for (a->drift_count = 0; a->drift_count < measured * 4; a->drift_count++)
        if ((s = mcl_gpt_make_f32(ctx, 1, &a->drift[a->drift_count])) != MCL_SUCCESS)
            return s;
    return MCL_SUCCESS;
}

static mcl_status acts_alloc(mcl_gpt *gpt, int64_t batch, int64_t seq)
{
    mcl_context *ctx = gpt->ctx;
    const mcl_gpt_desc *c = &gpt->cfg;
    gpt_acts *a = &gpt->acts;
    int64_t bt = batch * seq, d = c->dim, hd = gpt->head_dim, f = c->hidden;
    int64_t qd = c->heads * hd, kvd = c->kv_heads * hd;
    a->batch = batch;
    a->seq = seq;
    /* A reversible model keeps one set of block activations (the scratch) and only the
     * embedding of the streams; the arrays keep their ordinary length for acts_free. */
    const int reversible = mcl_gpt_reversible(gpt);
    const int32_t kept_layers = reversible ? 1 : c->layers;
    a->x = mcl_mem_calloc((size_t)c->layers + 1, sizeof *a->x);
    a->layer = mcl_mem_calloc((size_t)c->layers, sizeof *a->layer);
    if (!a->x || !a->layer)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    mcl_status s = MCL_SUCCESS;
    for (int32_t l = 0; l <= (reversible ? 0 : c->layers) && s == MCL_SUCCESS; l++)
        s = t2(ctx, bt, d, &a->x[l]);
    for (int32_t l = 0; l < kept_layers && s == MCL_SUCCESS; l++) {
        gpt_layer_acts *la = &a->layer[l];
        if ((s = t2(ctx, bt, d, &la->h)) != MCL_SUCCESS ||
            (s = t2(ctx, bt, qd, &la->q)) != MCL_SUCCESS ||
            (s = t2(ctx, bt, kvd, &la->k)) != MCL_SUCCESS ||
            (s = t2(ctx, bt, kvd, &la->v)) != MCL_SUCCESS ||
            (s = t2(ctx, bt, qd, &la->att)) != MCL_SUCCESS ||
            (s = t2(ctx, bt, d, &la->x_mid)) != MCL_SUCCESS ||
            (s = t2(ctx, bt, d, &la->h2)) != MCL_SUCCESS ||
            (s = t2(ctx, bt, f, &la->gate)) != MCL_SUCCESS ||
            (s = t2(ctx, bt, f, &la->up)) != MCL_SUCCESS ||
            (s = t2(ctx, bt, f, &la->act)) != MCL_SUCCESS ||
            (s = view4(la->q, batch, seq, c->heads, hd, &la->q4)) != MCL_SUCCESS ||
            (s = view4(la->k, batch, seq, c->kv_heads, hd, &la->k4)) != MCL_SUCCESS ||
            (s = view4(la->v, batch, seq, c->kv_heads, hd, &la->v4)) != MCL_SUCCESS)
            break;
        if ((s = view4(la->att, batch, seq, c->heads, hd, &la->att4)) == MCL_SUCCESS &&
            !reversible)
            s = mcl_gpt_make_f32(ctx, bt * c->heads * 4, &la->att_stats);
    }
    int64_t shape3[3] = {batch, seq, d};
    if (s == MCL_SUCCESS)
        s = mcl_tensor_view(a->x[0], 0, MCL_DTYPE_F32, 3, shape3, &a->x0_3d);
    if (s == MCL_SUCCESS)
        s = t2(ctx, bt, d, &a->hf);
    if (s == MCL_SUCCESS)
        s = t2(ctx, bt, c->vocab, &a->logits);
    if (s == MCL_SUCCESS)
        s = mcl_gpt_make_f32(ctx, bt, &a->lse);
    /* Backward buffers. */
    if (s == MCL_SUCCESS && (s = t2(ctx, bt, d, &a->dx)) == MCL_SUCCESS &&
        (s = mcl_tensor_view(a->dx, 0, MCL_DTYPE_F32, 3, shape3, &a->dx_3d)) == MCL_SUCCESS &&
        (s = t2(ctx, bt, d, &a->dh)) == MCL_SUCCESS &&
        (s = t2(ctx, bt, d, &a->tmp)) == MCL_SUCCESS &&
        (s = t2(ctx, bt, qd, &a->datt)) == MCL_SUCCESS &&
        (s = view4(a->datt, batch, seq, c->heads, hd, &a->datt4)) == MCL_SUCCESS &&
        (s = t2(ctx, bt, qd, &a->dq)) == MCL_SUCCESS &&
        (s = view4(a->dq, batch, seq, c->heads, hd, &a->dq4)) == MCL_SUCCESS &&
        (s = t2(ctx, bt, kvd, &a->dk)) == MCL_SUCCESS &&
        (s = view4(a->dk, batch, seq, c->kv_heads, hd, &a->dk4)) == MCL_SUCCESS &&
        (s = t2(ctx, bt, kvd, &a->dv)) == MCL_SUCCESS &&
        (s = view4(a->dv, batch, seq, c->kv_heads, hd, &a->dv4)) == MCL_SUCCESS &&
        (s = t2(ctx, bt, f, &a->dff)) == MCL_SUCCESS &&
        (s = t2(ctx, bt, f, &a->dgate)) == MCL_SUCCESS &&
        (s = t2(ctx, bt, f, &a->dup)) == MCL_SUCCESS && c->tied_head)
        s = t2(ctx, c->vocab, d, &a->dhead);
    if (s == MCL_SUCCESS && mcl_gpt_counter(gpt) && !reversible &&
        (s = t2(ctx, bt, d, &a->dx_mid)) == MCL_SUCCESS)
        s = t2(ctx, bt, d, &a->dx_alt);
    if (s == MCL_SUCCESS && reversible)
        s = reversible_alloc(gpt, bt);
    /* The blocks' products share one scratch for their split-K partials, so that a recorded
     * step does not hold one per product: counter-state layers' (activations only: their
     * weights take no product), or the f32 layers' (their weights' gradients too). */
    else if (s == MCL_SUCCESS && mcl_gpt_counter(gpt))
        s = split_scratch(gpt, bt, 0, GPT_COUNTER_SPLIT_SLICES, &a->mm_scratch);
    else if (s == MCL_SUCCESS)
        s = split_scratch(gpt, bt, 1, GPT_SPLIT_SLICES, &a->mm_scratch);
    return s;
}

mcl_status mcl_gpt_acts_shape(mcl_gpt *gpt, int64_t batch, int64_t seq)
{
    gpt_acts *a = &gpt->acts;
    if (a->batch == batch && a->seq == seq)
        return MCL_SUCCESS;
    /* Creating tensors needs no recording, so this works during a capture too; the old set
     * lives on while recorded work or a graph still uses it. */
    acts_free(a, gpt->cfg.layers);
    mcl_status status = acts_alloc(gpt, batch, seq);
    if (status != MCL_SUCCESS)
        acts_free(a, gpt->cfg.layers);
    return status;
}
