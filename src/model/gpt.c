/* A GPT-style decoder built from the library's operations: forward, backward and an AdamW
 * step, all recorded on the context's stream (and so capturable as one graph).
 *
 * Memory. Parameters, gradients and the two AdamW moments are four flat f32 tensors of one
 * size; each parameter is a view at an offset padded to 64 floats (256 bytes, the largest
 * minStorageBufferOffsetAlignment Vulkan allows). The 2-D parameters come first, so weight
 * decay covers a prefix and the optimizer step is one dispatch (plus two for the gradient
 * norm). Activations for one [B, T] are allocated on the first forward pass with that shape:
 * per layer everything the backward pass reads (block input, both normed inputs, q, k, v
 * after RoPE, attention output, the MLP's gate, up and product), plus a few buffers that the
 * backward pass reuses from layer to layer.
 *
 * Hyper-parameters of the step live in a small device tensor that mcl_gpt_set_optimizer()
 * uploads: a captured step reads whatever was set before each replay. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../ops/ops_internal.h"
#include "../vk/runtime.h"

#define GPT_ALIGN_FLOATS 64
#define GPT_LAYER_PARAMS 9
#define GPT_NAME_MAX 32

enum { P_ATTN_NORM, P_WQ, P_WK, P_WV, P_WO, P_MLP_NORM, P_W_GATE, P_W_UP, P_W_DOWN };
static const char *const layer_param_names[GPT_LAYER_PARAMS] = {
    "attn_norm", "wq", "wk", "wv", "wo", "mlp_norm", "w_gate", "w_up", "w_down"};

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
} gpt_layer_acts;

typedef struct gpt_acts {
    int64_t batch, seq;
    mcl_tensor **x;        /* layers + 1 residual streams [B*T, D]; x[0] the embedding */
    mcl_tensor *x0_3d;     /* x[0] viewed [B, T, D] */
    gpt_layer_acts *layer;
    mcl_tensor *hf, *logits, *lse;
    /* Backward buffers, reused by every layer. */
    mcl_tensor *dx, *dx_3d, *dh, *tmp, *datt, *datt4, *dq, *dq4, *dk, *dk4, *dv, *dv4;
    mcl_tensor *dff, *dgate, *dup, *dhead;
} gpt_acts;

struct mcl_gpt {
    mcl_context *ctx;
    mcl_gpt_desc cfg;
    int32_t head_dim;
    uint32_t param_count;
    gpt_param *params;
    int64_t flat_floats;  /* the flat tensors' length */
    int64_t decay_end;    /* floats [0, decay_end) hold the 2-D parameters */
    int64_t total_params; /* floats that belong to a parameter */
    mcl_tensor *flat_p, *flat_g, *flat_m, *flat_v;
    mcl_tensor *hyper, *norm;
    int64_t step;
    int hyper_set;
    gpt_acts acts;
    /* The last forward pass, for the backward pass. */
    const mcl_tensor *tokens, *targets;
    int have_targets;
};

/* --- Shapes and parameters ------------------------------------------------------------ */

static mcl_status check_config(mcl_context *ctx, mcl_gpt_desc *c)
{
    if (c->kv_heads == 0)
        c->kv_heads = c->heads;
    if (c->rope_theta == 0.0f)
        c->rope_theta = 10000.0f;
    if (c->norm_eps == 0.0f)
        c->norm_eps = 1e-5f;
    const char *bad = NULL;
    if (c->vocab < 1)
        bad = "vocab must be >= 1";
    else if (c->dim < 2)
        bad = "dim must be >= 2";
    else if (c->layers < 1)
        bad = "layers must be >= 1";
    else if (c->heads < 1 || c->dim % c->heads != 0)
        bad = "heads must divide dim";
    else if ((c->dim / c->heads) % 2 != 0 || c->dim / c->heads > 256)
        bad = "dim / heads must be even and at most 256";
    else if (c->kv_heads < 1 || c->heads % c->kv_heads != 0)
        bad = "kv_heads must divide heads";
    else if (c->hidden < 1)
        bad = "hidden must be >= 1";
    else if (c->max_seq < 1)
        bad = "max_seq must be >= 1";
    else if (c->tied_head != 0 && c->tied_head != 1)
        bad = "tied_head must be 0 or 1";
    else if (c->rope_layout != MCL_ROPE_INTERLEAVED && c->rope_layout != MCL_ROPE_SPLIT_HALF)
        bad = "rope_layout is unknown";
    else if (!(c->rope_theta > 0.0f) || !isfinite(c->rope_theta))
        bad = "rope_theta must be positive and finite";
    else if (!(c->norm_eps > 0.0f) || !isfinite(c->norm_eps))
        bad = "norm_eps must be positive and finite";
    if (bad)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_gpt: %s", bad);
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

/* Lay the parameters out: the index order of mcl_gpt_param(), placed 2-D first. */
static mcl_status build_params(mcl_gpt *gpt)
{
    const mcl_gpt_desc *c = &gpt->cfg;
    int64_t d = c->dim, hd = gpt->head_dim;
    uint32_t n = 1 + (uint32_t)c->layers * GPT_LAYER_PARAMS + 1 + (c->tied_head ? 0 : 1);
    gpt->params = calloc(n, sizeof *gpt->params);
    if (!gpt->params)
        return mcl_fail(gpt->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    add_param(gpt, "tok_embedding", c->vocab, d);
    char name[GPT_NAME_MAX];
    for (int32_t l = 0; l < c->layers; l++) {
        const int64_t shapes[GPT_LAYER_PARAMS][2] = {
            {d, 0}, {c->heads * hd, d}, {c->kv_heads * hd, d}, {c->kv_heads * hd, d},
            {d, c->heads * hd}, {d, 0}, {c->hidden, d}, {c->hidden, d}, {d, c->hidden}};
        for (int i = 0; i < GPT_LAYER_PARAMS; i++) {
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
    if ((uint64_t)offset > UINT32_MAX ||
        (uint64_t)offset * 4 > mcl_traits_of(gpt->ctx)->max_binding_bytes)
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

static gpt_param *layer_param(mcl_gpt *gpt, int32_t l, int which)
{
    return &gpt->params[1 + l * GPT_LAYER_PARAMS + which];
}

static gpt_param *final_norm_param(mcl_gpt *gpt)
{
    return &gpt->params[1 + gpt->cfg.layers * GPT_LAYER_PARAMS];
}

static gpt_param *head_param(mcl_gpt *gpt)
{
    return gpt->cfg.tied_head ? &gpt->params[0]
                              : &gpt->params[2 + gpt->cfg.layers * GPT_LAYER_PARAMS];
}

/* splitmix64 and Box-Muller: the same initial parameters on every machine for one seed. */
static uint64_t splitmix64(uint64_t *state)
{
    uint64_t z = (*state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double uniform01(uint64_t *state)
{
    return ((double)(splitmix64(state) >> 11) + 0.5) * (1.0 / 9007199254740992.0);
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
        double s = proj ? proj_std : std;
        for (int64_t j = 0; j < p->count; j += 2) {
            double u1 = uniform01(&state), u2 = uniform01(&state);
            double r = sqrt(-2.0 * log(u1));
            dst[j] = (float)(s * r * cos(6.283185307179586 * u2));
            if (j + 1 < p->count)
                dst[j + 1] = (float)(s * r * sin(6.283185307179586 * u2));
        }
    }
}

static mcl_status make_f32(mcl_context *ctx, int64_t n, mcl_tensor **out)
{
    return mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &n, out);
}

static mcl_status zero_fill(mcl_tensor *t)
{
    void *zeros = calloc(1, t->nbytes);
    if (!zeros)
        return mcl_fail(t->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    mcl_status status = mcl_tensor_upload(t, 0, zeros, t->nbytes);
    free(zeros);
    return status;
}

/* Everything but the parameter values: shapes, flat tensors (moments and gradients zeroed),
 * views. */
static mcl_status gpt_alloc(mcl_context *ctx, const mcl_gpt_desc *config, mcl_gpt **out)
{
    *out = NULL;
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!config || config->size < offsetof(mcl_gpt_desc, reserved))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt: config is NULL or config->size is not set");
    mcl_gpt *gpt = calloc(1, sizeof *gpt);
    if (!gpt)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    gpt->ctx = ctx;
    memcpy(&gpt->cfg, config, offsetof(mcl_gpt_desc, reserved));
    gpt->cfg.size = sizeof gpt->cfg;
    mcl_status status = check_config(ctx, &gpt->cfg);
    if (status == MCL_SUCCESS) {
        gpt->head_dim = gpt->cfg.dim / gpt->cfg.heads;
        status = build_params(gpt);
    }
    if (status == MCL_SUCCESS)
        status = make_f32(ctx, gpt->flat_floats, &gpt->flat_p);
    if (status == MCL_SUCCESS)
        status = make_f32(ctx, gpt->flat_floats, &gpt->flat_g);
    if (status == MCL_SUCCESS)
        status = make_f32(ctx, gpt->flat_floats, &gpt->flat_m);
    if (status == MCL_SUCCESS)
        status = make_f32(ctx, gpt->flat_floats, &gpt->flat_v);
    if (status == MCL_SUCCESS)
        status = make_f32(ctx, MCL_ADAMW_HYPER_COUNT, &gpt->hyper);
    if (status == MCL_SUCCESS)
        status = make_f32(ctx, 1, &gpt->norm);
    if (status == MCL_SUCCESS)
        status = param_views(gpt);
    if (status == MCL_SUCCESS && (status = zero_fill(gpt->flat_g)) == MCL_SUCCESS &&
        (status = zero_fill(gpt->flat_m)) == MCL_SUCCESS &&
        (status = zero_fill(gpt->flat_v)) == MCL_SUCCESS)
        status = zero_fill(gpt->norm);
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
    mcl_status status = gpt_alloc(ctx, config, &gpt);
    if (status != MCL_SUCCESS)
        return status;
    float *host = calloc((size_t)gpt->flat_floats, sizeof *host);
    if (!host) {
        mcl_gpt_destroy(gpt);
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    init_params(gpt, host, seed);
    status = mcl_tensor_upload(gpt->flat_p, 0, host, gpt->flat_p->nbytes);
    free(host);
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
            mcl_tensor *t[] = {la->q4, la->k4, la->v4, la->att4, la->h, la->q, la->k,
                               la->v, la->att, la->x_mid, la->h2, la->gate, la->up, la->act};
            for (size_t i = 0; i < sizeof t / sizeof *t; i++)
                mcl_tensor_destroy(t[i]);
        }
        free(a->layer);
    }
    if (a->x) {
        for (int32_t l = 0; l <= layers; l++)
            mcl_tensor_destroy(a->x[l]);
        free(a->x);
    }
    mcl_tensor *t[] = {a->hf, a->logits, a->lse, a->dx, a->dh, a->tmp, a->datt, a->dq,
                       a->dk, a->dv, a->dff, a->dgate, a->dup, a->dhead};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        mcl_tensor_destroy(t[i]);
    memset(a, 0, sizeof *a);
}

void mcl_gpt_destroy(mcl_gpt *gpt)
{
    if (!gpt)
        return;
    acts_free(&gpt->acts, gpt->cfg.layers);
    if (gpt->params) {
        for (uint32_t i = 0; i < gpt->param_count; i++) {
            mcl_tensor_destroy(gpt->params[i].p);
            mcl_tensor_destroy(gpt->params[i].g);
        }
        free(gpt->params);
    }
    mcl_tensor *t[] = {gpt->flat_p, gpt->flat_g, gpt->flat_m, gpt->flat_v, gpt->hyper,
                       gpt->norm};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++)
        mcl_tensor_destroy(t[i]);
    free(gpt);
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

static mcl_status acts_alloc(mcl_gpt *gpt, int64_t batch, int64_t seq)
{
    mcl_context *ctx = gpt->ctx;
    const mcl_gpt_desc *c = &gpt->cfg;
    gpt_acts *a = &gpt->acts;
    int64_t bt = batch * seq, d = c->dim, hd = gpt->head_dim, f = c->hidden;
    int64_t qd = c->heads * hd, kvd = c->kv_heads * hd;
    a->batch = batch;
    a->seq = seq;
    a->x = calloc((size_t)c->layers + 1, sizeof *a->x);
    a->layer = calloc((size_t)c->layers, sizeof *a->layer);
    if (!a->x || !a->layer)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    mcl_status s = MCL_SUCCESS;
    for (int32_t l = 0; l <= c->layers && s == MCL_SUCCESS; l++)
        s = t2(ctx, bt, d, &a->x[l]);
    for (int32_t l = 0; l < c->layers && s == MCL_SUCCESS; l++) {
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
        s = view4(la->att, batch, seq, c->heads, hd, &la->att4);
    }
    int64_t shape3[3] = {batch, seq, d};
    if (s == MCL_SUCCESS)
        s = mcl_tensor_view(a->x[0], 0, MCL_DTYPE_F32, 3, shape3, &a->x0_3d);
    if (s == MCL_SUCCESS)
        s = t2(ctx, bt, d, &a->hf);
    if (s == MCL_SUCCESS)
        s = t2(ctx, bt, c->vocab, &a->logits);
    if (s == MCL_SUCCESS)
        s = make_f32(ctx, bt, &a->lse);
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
    return s;
}

/* --- Forward, backward, step ---------------------------------------------------------- */

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

mcl_status mcl_gpt_forward(mcl_gpt *gpt, const mcl_tensor *tokens, const mcl_tensor *targets,
                           mcl_tensor *loss)
{
    if (!gpt)
        return MCL_ERROR_INVALID_ARGUMENT;
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
    if (a->batch != batch || a->seq != seq) {
        /* Creating tensors needs no recording, so this works during a capture too; the old
         * set lives on while recorded work or a graph still uses it. */
        acts_free(a, c->layers);
        mcl_status s = acts_alloc(gpt, batch, seq);
        if (s != MCL_SUCCESS) {
            acts_free(a, c->layers);
            return s;
        }
    }
    float eps = c->norm_eps;
    mcl_attention_desc att = {.size = sizeof att, .causal = 1};

    TRY(mcl_embedding(ctx, gpt->params[0].p, tokens, a->x0_3d));
    for (int32_t l = 0; l < c->layers; l++) {
        gpt_layer_acts *la = &a->layer[l];
        TRY(mcl_rmsnorm(ctx, a->x[l], layer_param(gpt, l, P_ATTN_NORM)->p, eps, la->h));
        TRY(linear(ctx, la->h, layer_param(gpt, l, P_WQ), la->q));
        TRY(linear(ctx, la->h, layer_param(gpt, l, P_WK), la->k));
        TRY(linear(ctx, la->h, layer_param(gpt, l, P_WV), la->v));
        TRY(mcl_rope(ctx, la->q4, c->rope_layout, c->rope_theta, 0, la->q4));
        TRY(mcl_rope(ctx, la->k4, c->rope_layout, c->rope_theta, 0, la->k4));
        TRY(mcl_attention(ctx, la->q4, la->k4, la->v4, &att, la->att4));
        TRY(linear(ctx, la->att, layer_param(gpt, l, P_WO), a->tmp));
        TRY(mcl_add(ctx, a->x[l], a->tmp, la->x_mid));
        TRY(mcl_rmsnorm(ctx, la->x_mid, layer_param(gpt, l, P_MLP_NORM)->p, eps, la->h2));
        TRY(linear(ctx, la->h2, layer_param(gpt, l, P_W_GATE), la->gate));
        TRY(linear(ctx, la->h2, layer_param(gpt, l, P_W_UP), la->up));
        TRY(mcl_swiglu(ctx, la->gate, la->up, la->act));
        TRY(linear(ctx, la->act, layer_param(gpt, l, P_W_DOWN), a->tmp));
        TRY(mcl_add(ctx, la->x_mid, a->tmp, a->x[l + 1]));
    }
    TRY(mcl_rmsnorm(ctx, a->x[c->layers], final_norm_param(gpt)->p, eps, a->hf));
    TRY(linear(ctx, a->hf, head_param(gpt), a->logits));
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

mcl_status mcl_gpt_backward(mcl_gpt *gpt)
{
    if (!gpt)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_context *ctx = gpt->ctx;
    const mcl_gpt_desc *c = &gpt->cfg;
    gpt_acts *a = &gpt->acts;
    if (!gpt->have_targets)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt_backward: the last forward pass had no targets");
    float eps = c->norm_eps;
    mcl_attention_desc att = {.size = sizeof att, .causal = 1};
    int64_t n = a->batch * a->seq;

    /* The logits' gradient overwrites the logits. */
    mcl_tensor *flat_targets;
    TRY(mcl_tensor_view((mcl_tensor *)gpt->targets, 0, MCL_DTYPE_I32, 1, &n, &flat_targets));
    mcl_status s = mcl_cross_entropy_backward(ctx, a->logits, flat_targets, a->lse, 1.0f,
                                              a->logits);
    mcl_tensor_destroy(flat_targets);
    TRY(s);
    gpt_param *head = head_param(gpt);
    if (c->tied_head) {
        TRY(mcl_matmul(ctx, a->logits, MCL_TRANSPOSE, a->hf, MCL_NO_TRANSPOSE, NULL, a->dhead));
        TRY(mcl_matmul(ctx, a->logits, MCL_NO_TRANSPOSE, head->p, MCL_NO_TRANSPOSE, NULL, a->dh));
    } else {
        TRY(linear_backward(ctx, a->hf, head, a->logits, a->dh));
    }
    TRY(mcl_rmsnorm_backward(ctx, a->x[c->layers], final_norm_param(gpt)->p, a->dh, eps, a->dx,
                             final_norm_param(gpt)->g));

    for (int32_t l = c->layers - 1; l >= 0; l--) {
        gpt_layer_acts *la = &a->layer[l];
        /* x[l+1] = x_mid + act w_down^T; act = silu(gate) * up. */
        TRY(linear_backward(ctx, la->act, layer_param(gpt, l, P_W_DOWN), a->dx, a->dff));
        TRY(mcl_swiglu_backward(ctx, la->gate, la->up, a->dff, a->dgate, a->dup));
        TRY(linear_backward(ctx, la->h2, layer_param(gpt, l, P_W_GATE), a->dgate, a->dh));
        TRY(linear_backward(ctx, la->h2, layer_param(gpt, l, P_W_UP), a->dup, a->tmp));
        TRY(mcl_add(ctx, a->dh, a->tmp, a->dh));
        TRY(mcl_rmsnorm_backward(ctx, la->x_mid, layer_param(gpt, l, P_MLP_NORM)->p, a->dh,
                                 eps, a->tmp, layer_param(gpt, l, P_MLP_NORM)->g));
        TRY(mcl_add(ctx, a->dx, a->tmp, a->dx));
        /* x_mid = x[l] + att wo^T; att = attention(rope(q), rope(k), v). */
        TRY(linear_backward(ctx, la->att, layer_param(gpt, l, P_WO), a->dx, a->datt));
        TRY(mcl_attention_backward(ctx, la->q4, la->k4, la->v4, la->att4, a->datt4, &att,
                                   a->dq4, a->dk4, a->dv4));
        TRY(mcl_rope_backward(ctx, a->dq4, c->rope_layout, c->rope_theta, 0, a->dq4));
        TRY(mcl_rope_backward(ctx, a->dk4, c->rope_layout, c->rope_theta, 0, a->dk4));
        TRY(linear_backward(ctx, la->h, layer_param(gpt, l, P_WQ), a->dq, a->dh));
        TRY(linear_backward(ctx, la->h, layer_param(gpt, l, P_WK), a->dk, a->tmp));
        TRY(mcl_add(ctx, a->dh, a->tmp, a->dh));
        TRY(linear_backward(ctx, la->h, layer_param(gpt, l, P_WV), a->dv, a->tmp));
        TRY(mcl_add(ctx, a->dh, a->tmp, a->dh));
        TRY(mcl_rmsnorm_backward(ctx, a->x[l], layer_param(gpt, l, P_ATTN_NORM)->p, a->dh, eps,
                                 a->tmp, layer_param(gpt, l, P_ATTN_NORM)->g));
        TRY(mcl_add(ctx, a->dx, a->tmp, a->dx));
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
    return MCL_SUCCESS;
}

mcl_status mcl_gpt_step(mcl_gpt *gpt)
{
    if (!gpt)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!gpt->hyper_set)
        return mcl_fail(gpt->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt_step: call mcl_gpt_set_optimizer() first");
    TRY(mcl_grad_norm(gpt->ctx, &gpt->flat_g, 1, gpt->norm));
    return mcl_adamw_fused(gpt->ctx, gpt->flat_p, gpt->flat_g, gpt->flat_m, gpt->flat_v,
                           gpt->hyper, gpt->norm, (uint64_t)gpt->decay_end);
}

/* --- Checkpoints (docs/gpt-checkpoint.md) ----------------------------------------------- */

#define GPT_MAGIC "MCLGPT\r\n"
#define GPT_VERSION 1u
#define GPT_HEADER_BYTES 96u

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static uint32_t get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

static uint64_t get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* FNV-1a over the payload: catches truncation and corruption. */
static uint64_t fnv1a(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001B3ull;
    }
    return h;
}

static void encode_header(const mcl_gpt *gpt, unsigned char *h)
{
    const mcl_gpt_desc *c = &gpt->cfg;
    memset(h, 0, GPT_HEADER_BYTES);
    memcpy(h, GPT_MAGIC, 8);
    put_u32(h + 8, GPT_VERSION);
    put_u32(h + 12, GPT_HEADER_BYTES);
    const int32_t fields[9] = {c->vocab, c->dim, c->layers, c->heads, c->kv_heads,
                               c->hidden, c->max_seq, c->tied_head, (int32_t)c->rope_layout};
    for (int i = 0; i < 9; i++)
        put_u32(h + 16 + 4 * i, (uint32_t)fields[i]);
    put_u32(h + 52, f32_bits(c->rope_theta));
    put_u32(h + 56, f32_bits(c->norm_eps));
    put_u32(h + 60, 1); /* AdamW moments follow the parameters */
    put_u64(h + 64, (uint64_t)gpt->step);
    put_u64(h + 72, (uint64_t)gpt->flat_floats);
    put_u64(h + 80, (uint64_t)gpt->total_params);
}

/* Host buffers are little-endian on every platform the library builds for; a big-endian
 * host would swap here. */
mcl_status mcl_gpt_save(mcl_gpt *gpt, const char *path)
{
    if (!gpt)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_context *ctx = gpt->ctx;
    if (!path)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_gpt_save: path is NULL");
    size_t floats = (size_t)gpt->flat_floats;
    float *buf = malloc(floats * 3 * sizeof *buf);
    char *tmp = malloc(strlen(path) + 5);
    if (!buf || !tmp) {
        free(buf);
        free(tmp);
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    mcl_status s = mcl_tensor_download(gpt->flat_p, 0, buf, floats * 4);
    if (s == MCL_SUCCESS)
        s = mcl_tensor_download(gpt->flat_m, 0, buf + floats, floats * 4);
    if (s == MCL_SUCCESS)
        s = mcl_tensor_download(gpt->flat_v, 0, buf + 2 * floats, floats * 4);
    if (s != MCL_SUCCESS) {
        free(buf);
        free(tmp);
        return s;
    }
    unsigned char header[GPT_HEADER_BYTES], trailer[8];
    encode_header(gpt, header);
    uint64_t sum = fnv1a(0xCBF29CE484222325ull, header, sizeof header);
    sum = fnv1a(sum, buf, floats * 3 * sizeof *buf);
    put_u64(trailer, sum);
    sprintf(tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(header, sizeof header, 1, f) == 1 &&
             fwrite(buf, sizeof *buf, floats * 3, f) == floats * 3 &&
             fwrite(trailer, sizeof trailer, 1, f) == 1;
    if (f && fclose(f) != 0)
        ok = 0;
    free(buf);
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        free(tmp);
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_gpt_save: cannot write %s", path);
    }
    free(tmp);
    return MCL_SUCCESS;
}

mcl_status mcl_gpt_load(mcl_context *ctx, const char *path, mcl_gpt **out)
{
    if (!ctx || !out)
        return MCL_ERROR_INVALID_ARGUMENT;
    *out = NULL;
    if (!path)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_gpt_load: path is NULL");
    FILE *f = fopen(path, "rb");
    if (!f)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_gpt_load: cannot open %s", path);
    unsigned char h[GPT_HEADER_BYTES];
    if (fread(h, sizeof h, 1, f) != 1 || memcmp(h, GPT_MAGIC, 8) != 0) {
        fclose(f);
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt_load: %s is not a MotifCL GPT checkpoint", path);
    }
    if (get_u32(h + 8) != GPT_VERSION || get_u32(h + 12) != GPT_HEADER_BYTES) {
        fclose(f);
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt_load: %s has checkpoint version %u; this library reads %u",
                        path, get_u32(h + 8), GPT_VERSION);
    }
    mcl_gpt_desc cfg = {.size = sizeof cfg};
    int32_t *fields[8] = {&cfg.vocab, &cfg.dim, &cfg.layers, &cfg.heads, &cfg.kv_heads,
                          &cfg.hidden, &cfg.max_seq, &cfg.tied_head};
    for (int i = 0; i < 8; i++)
        *fields[i] = (int32_t)get_u32(h + 16 + 4 * i);
    cfg.rope_layout = (mcl_rope_layout)get_u32(h + 48);
    cfg.rope_theta = bits_f32(get_u32(h + 52));
    cfg.norm_eps = bits_f32(get_u32(h + 56));
    mcl_gpt *gpt;
    mcl_status s = gpt_alloc(ctx, &cfg, &gpt);
    if (s != MCL_SUCCESS) {
        fclose(f);
        return s;
    }
    size_t floats = (size_t)gpt->flat_floats;
    if (get_u32(h + 60) != 1 || get_u64(h + 72) != (uint64_t)floats ||
        get_u64(h + 80) != (uint64_t)gpt->total_params) {
        fclose(f);
        mcl_gpt_destroy(gpt);
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt_load: %s: the parameter layout does not match its "
                        "configuration", path);
    }
    float *buf = malloc(floats * 3 * sizeof *buf);
    unsigned char trailer[8];
    int ok = buf && fread(buf, sizeof *buf, floats * 3, f) == floats * 3 &&
             fread(trailer, sizeof trailer, 1, f) == 1 && fgetc(f) == EOF;
    fclose(f);
    if (ok) {
        uint64_t sum = fnv1a(0xCBF29CE484222325ull, h, sizeof h);
        sum = fnv1a(sum, buf, floats * 3 * sizeof *buf);
        ok = sum == get_u64(trailer);
    }
    if (!ok) {
        mcl_status why = buf ? MCL_ERROR_INVALID_ARGUMENT : MCL_ERROR_OUT_OF_HOST_MEMORY;
        free(buf);
        mcl_gpt_destroy(gpt);
        return mcl_fail(ctx, why, "mcl_gpt_load: %s is truncated or corrupt (checksum)", path);
    }
    s = mcl_tensor_upload(gpt->flat_p, 0, buf, floats * 4);
    if (s == MCL_SUCCESS)
        s = mcl_tensor_upload(gpt->flat_m, 0, buf + floats, floats * 4);
    if (s == MCL_SUCCESS)
        s = mcl_tensor_upload(gpt->flat_v, 0, buf + 2 * floats, floats * 4);
    free(buf);
    if (s != MCL_SUCCESS) {
        mcl_gpt_destroy(gpt);
        return s;
    }
    gpt->step = (int64_t)get_u64(h + 64);
    *out = gpt;
    return MCL_SUCCESS;
}
