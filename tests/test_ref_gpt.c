/* The CPU reference of the GPT training step (tests/ref/ref_gpt.c) checked on its own, with
 * no device, before any GPU result is compared against it.
 *
 *  - Layout: parameter names, shapes, counts and packed offsets as mcl_gpt documents them;
 *    defaults; invalid shapes refused.
 *  - Forward: the loss and logits equal a forward composed from the single-op float
 *    references (ref_embedding_f32, ref_rmsnorm_f32, ref_matmul_f32, ref_rope_f32,
 *    ref_attention_f32, ref_swiglu_f32, ref_cross_entropy_f32), which is the model as the
 *    ops define it. Those round every intermediate to float (relative 6e-8 a step, a few
 *    dozen steps through two layers), so they agree to ~1e-6 of the largest logit:
 *    tolerance TOL_FORWARD = 1e-5 (max |logit difference| / max |logit|, and |loss
 *    difference|). A wrong grouped-query head mapping and the other RoPE layout, composed
 *    the same way, are caught (differences of 1e-2 and more).
 *  - Gradients: central finite differences of the double loss with step FD_STEP = 1e-5 on
 *    sampled elements of every parameter tensor (8 per tensor, plus 2 in the embedding row
 *    of a token in the batch). Truncation error is O(h^2 f''') ~ 1e-10 and cancellation
 *    ~1e-16 * |loss| / h ~ 3e-11, against gradients of ~1e-3 to 1e-1: the per-tensor error
 *    max |g - fd| / max |fd| comes out at ~1e-8 or below, and TOL_FD = 1e-6 leaves two
 *    orders of margin while a gradient wrong by 1e-4 of the tensor's scale in one element
 *    fails (negative controls).
 *    Configs: V 11, D 8, L 2, H 2, Hkv 1, F 12, B 2, T 5 tied and untied, both RoPE layouts;
 *    H 4, Hkv 2 (two key heads, so hq / (H / Hkv) differs from hq % Hkv) with D 16; Hkv
 *    left 0 (= H). One target is -1 (excluded) and one token is out of range (a zero row).
 *  - Parameters read at arbitrary offsets: gaps filled with NaN are never read, gradient
 *    gaps never written; the float and double entry points agree bit for bit.
 *  - Optimizer step: zero gradients leave parameters unchanged without decay; decay
 *    touches 2-D parameters only; clipping brings the norm to exactly max_grad_norm (seen
 *    through m = (1 - beta1) g after a first step), no clipping below the limit or with it
 *    0, inf or NaN; two steps equal ref_adamw_step per tensor.
 *  - Training: 300 plain gradient steps (and 300 AdamW steps) on one fixed batch bring the
 *    loss from ~ln V to below 0.25 ln V (they reach ~0.04 ln V).
 *  - No valid target: loss 0 and every gradient 0. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ref/ref.h"
#include "ref/ref_gpt.h"

#define TOL_FORWARD 1e-5
#define TOL_FD 1e-6
#define FD_STEP 1e-5
#define FD_PER_TENSOR 8
#define FD_MAX_SAMPLES (FD_PER_TENSOR + 2)
#define MAX_TENSORS 64

static double *doubles(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof *p);
    assert_non_null(p);
    return p;
}

/* A small model with its data: float parameters (what a GPU would hold), the same widened
 * to double, packed offsets, tokens and targets. */
typedef struct model {
    ref_gpt_config cfg;
    int n_tensors, B, T;
    int64_t offsets[MAX_TENSORS], total;
    float *pf;
    double *pd;
    int32_t tokens[64], targets[64];
} model;

static ref_gpt_config tiny_config(int tied, int layout)
{
    ref_gpt_config c;
    memset(&c, 0, sizeof c);
    c.vocab = 11;
    c.dim = 8;
    c.layers = 2;
    c.heads = 2;
    c.kv_heads = 1;
    c.hidden = 12;
    c.tied_head = tied;
    c.rope_layout = layout;
    return c;
}

/* Parameters: weight matrices uniform in +-1.2 / sqrt(in) (so every layer contributes at a
 * scale of 1), the embedding in +-1, norm weights in 1 +- 0.3. */
static void model_init(model *m, const ref_gpt_config *cfg, int B, int T, uint32_t seed)
{
    memset(m, 0, sizeof *m);
    m->cfg = *cfg;
    m->B = B;
    m->T = T;
    m->n_tensors = ref_gpt_param_tensors(cfg);
    assert_true(m->n_tensors > 0 && m->n_tensors <= MAX_TENSORS);
    assert_true(B * T <= 64);
    m->total = ref_gpt_packed_offsets(cfg, m->offsets);
    m->pf = mcl_test_floats((size_t)m->total);
    m->pd = doubles((size_t)m->total);
    for (int i = 0; i < m->n_tensors; i++) {
        int64_t shape[2];
        int ndim = ref_gpt_param_shape(cfg, i, shape);
        int64_t n = ref_gpt_param_numel(cfg, i);
        float *p = m->pf + m->offsets[i];
        if (ndim == 1) {
            mcl_fill_random(p, (size_t)n, seed + 7u * (uint32_t)i, 0.7f, 1.3f);
        } else {
            float a = i == 0 ? 1.0f : 1.2f / sqrtf((float)shape[1]);
            mcl_fill_random(p, (size_t)n, seed + 7u * (uint32_t)i, -a, a);
        }
    }
    for (int64_t j = 0; j < m->total; j++)
        m->pd[j] = m->pf[j];
    uint32_t x = seed * 2654435761u + 12345u;
    for (int r = 0; r < B * T; r++) {
        x = x * 1664525u + 1013904223u;
        m->tokens[r] = (int32_t)((x >> 8) % (uint32_t)cfg->vocab);
        x = x * 1664525u + 1013904223u;
        m->targets[r] = (int32_t)((x >> 8) % (uint32_t)cfg->vocab);
    }
}

static void model_free(model *m)
{
    free(m->pf);
    free(m->pd);
}

static double loss_d(const model *m, const double *params, double *grads)
{
    return ref_gpt_forward_backward_d(&m->cfg, params, m->offsets, m->tokens, m->targets, m->B,
                                      m->T, grads, NULL);
}

/* --- Layout ---------------------------------------------------------------------------- */

static void parameter_layout(void **state)
{
    (void)state;
    ref_gpt_config c = tiny_config(0, REF_ROPE_INTERLEAVED);
    c.heads = 4;
    c.kv_heads = 2;
    c.dim = 16;
    assert_true(ref_gpt_config_valid(&c));
    assert_int_equal(ref_gpt_param_tensors(&c), 2 + 9 * 2 + 1);
    static const char *const names[] = {
        "tok_embedding",   "layers.0.attn_norm", "layers.0.wq",     "layers.0.wk",
        "layers.0.wv",     "layers.0.wo",        "layers.0.mlp_norm", "layers.0.w_gate",
        "layers.0.w_up",   "layers.0.w_down",    "layers.1.attn_norm", "layers.1.wq",
        "layers.1.wk",     "layers.1.wv",        "layers.1.wo",     "layers.1.mlp_norm",
        "layers.1.w_gate", "layers.1.w_up",      "layers.1.w_down", "final_norm",
        "head"};
    /* [V, D]; attn_norm [D], wq [H*Dh, D] = [16, 16], wk, wv [Hkv*Dh, D] = [8, 16], wo
     * [16, 16], mlp_norm [16], w_gate, w_up [12, 16], w_down [16, 12]; ... */
    static const int64_t shapes[][2] = {{11, 16}, {16, 0},  {16, 16}, {8, 16}, {8, 16},
                                        {16, 16}, {16, 0},  {12, 16}, {12, 16}, {16, 12},
                                        {16, 0},  {16, 16}, {8, 16},  {8, 16},  {16, 16},
                                        {16, 0},  {12, 16}, {12, 16}, {16, 12}, {16, 0},
                                        {11, 16}};
    int64_t offsets[MAX_TENSORS], expect = 0;
    int64_t total = ref_gpt_packed_offsets(&c, offsets);
    int ok = 1;
    for (int i = 0; i < 21; i++) {
        char name[64];
        int64_t shape[2];
        ref_gpt_param_name(&c, i, name, sizeof name);
        int ndim = ref_gpt_param_shape(&c, i, shape);
        int want_ndim = shapes[i][1] ? 2 : 1;
        ok &= strcmp(name, names[i]) == 0;
        ok &= ndim == want_ndim && shape[0] == shapes[i][0] &&
              (ndim == 1 || shape[1] == shapes[i][1]);
        ok &= ref_gpt_param_decays(&c, i) == (want_ndim == 2);
        ok &= offsets[i] == expect;
        expect += shapes[i][0] * (shapes[i][1] ? shapes[i][1] : 1);
    }
    ok &= total == expect;
    /* Out of range, tied, defaults, refusals. */
    char name[16] = "x";
    ref_gpt_param_name(&c, 21, name, sizeof name);
    ok &= name[0] == '\0' && ref_gpt_param_numel(&c, 21) == 0 && ref_gpt_param_numel(&c, -1) == 0;
    c.tied_head = 1;
    ok &= ref_gpt_param_tensors(&c) == 20;
    ok &= ref_gpt_packed_offsets(&c, offsets) == expect - 11 * 16;
    ref_gpt_param_name(&c, 19, name, sizeof name);
    ok &= strcmp(name, "final_norm") == 0;
    c.kv_heads = 0;
    ok &= ref_gpt_param_numel(&c, 3) == 16 * 16; /* wk with Hkv = H */
    ref_gpt_config bad = c;
    bad.heads = 3; /* 16 not divisible by 3 */
    ok &= !ref_gpt_config_valid(&bad) && ref_gpt_param_tensors(&bad) == 0;
    bad = c;
    bad.heads = 16; /* Dh = 1: odd */
    ok &= !ref_gpt_config_valid(&bad);
    bad = c;
    bad.heads = 4;
    bad.kv_heads = 3;
    ok &= !ref_gpt_config_valid(&bad);
    bad = c;
    bad.rope_layout = 2;
    ok &= !ref_gpt_config_valid(&bad);
    int32_t tok[2] = {0, 1};
    float p[1] = {0};
    ok &= isnan(ref_gpt_forward_backward(&bad, p, offsets, tok, tok, 1, 2, NULL, NULL));

    /* From an mcl_gpt_desc. */
    mcl_gpt_desc g;
    memset(&g, 0, sizeof g);
    g.size = sizeof g;
    g.vocab = 32000;
    g.dim = 288;
    g.layers = 6;
    g.heads = 6;
    g.hidden = 768;
    g.max_seq = 256;
    g.rope_layout = MCL_ROPE_SPLIT_HALF;
    ref_gpt_config r = ref_gpt_config_from_mcl(&g);
    ok &= r.vocab == 32000 && r.dim == 288 && r.layers == 6 && r.heads == 6 &&
          r.kv_heads == 0 && r.hidden == 768 && r.tied_head == 0 &&
          r.rope_layout == REF_ROPE_SPLIT_HALF && r.exact_rope_angle == 0;
    ok &= ref_gpt_config_valid(&r) && ref_gpt_param_tensors(&r) == 2 + 9 * 6 + 1;
    /* stories15M untied: 2 * 32000 * 288 + 6 * (2 * 288 + 4 * 288^2 + 3 * 288 * 768) + 288 */
    ok &= ref_gpt_packed_offsets(&r, offsets) ==
          INT64_C(2) * 32000 * 288 + 6 * (2 * 288 + 4 * 288 * 288 + 3 * 288 * 768) + 288;
    assert_true(mcl_test_record_bool("parameter names, shapes, offsets, defaults and refusals "
                                     "as mcl_gpt documents them",
                                     ok));
}

/* --- Forward against the single-op references --------------------------------------- */

/* The loss and logits by the float op references; kv_head_mode and layout as given. */
static double composed_forward(const model *m, int layout, int kv_head_mode, float *logits)
{
    const ref_gpt_config *c = &m->cfg;
    int64_t B = m->B, T = m->T, N = B * T, V = c->vocab, D = c->dim, H = c->heads,
            Hkv = c->kv_heads ? c->kv_heads : c->heads, F = c->hidden, Dh = D / H;
    float eps = c->norm_eps != 0.0f ? c->norm_eps : 1e-5f;
    float theta = c->rope_theta != 0.0f ? c->rope_theta : 10000.0f;
    const float *P = m->pf;
    const int64_t *o = m->offsets;
    float *x = mcl_test_floats((size_t)(N * D)), *h = mcl_test_floats((size_t)(N * D));
    float *q = mcl_test_floats((size_t)(N * D)), *q2 = mcl_test_floats((size_t)(N * D));
    float *k = mcl_test_floats((size_t)(N * Hkv * Dh)), *k2 = mcl_test_floats((size_t)(N * Hkv * Dh));
    float *v = mcl_test_floats((size_t)(N * Hkv * Dh)), *att = mcl_test_floats((size_t)(N * D));
    float *y = mcl_test_floats((size_t)(N * D));
    float *g = mcl_test_floats((size_t)(N * F)), *u = mcl_test_floats((size_t)(N * F)),
          *s = mcl_test_floats((size_t)(N * F));

    ref_embedding_f32(P + o[0], V, D, m->tokens, N, x);
    for (int64_t l = 0; l < c->layers; l++) {
        const int64_t *lo = o + 1 + 9 * l;
        ref_rmsnorm_f32(x, P + lo[0], (size_t)N, (size_t)D, eps, h);
        ref_matmul_f32(h, 0, P + lo[1], 1, NULL, q, 1, N, H * Dh, D, 1);
        ref_matmul_f32(h, 0, P + lo[2], 1, NULL, k, 1, N, Hkv * Dh, D, 1);
        ref_matmul_f32(h, 0, P + lo[3], 1, NULL, v, 1, N, Hkv * Dh, D, 1);
        ref_rope_f32(q, q2, B, T, H, Dh, layout == REF_ROPE_SPLIT_HALF, theta, 0, 0);
        ref_rope_f32(k, k2, B, T, Hkv, Dh, layout == REF_ROPE_SPLIT_HALF, theta, 0, 0);
        ref_attention_f32(q2, k2, v, att, B, T, T, H, Hkv, Dh, T, 1, 0, 1.0 / sqrt((double)Dh),
                          kv_head_mode);
        ref_matmul_f32(att, 0, P + lo[4], 1, NULL, y, 1, N, D, H * Dh, 1);
        ref_add_f32(x, y, x, (size_t)(N * D));
        ref_rmsnorm_f32(x, P + lo[5], (size_t)N, (size_t)D, eps, h);
        ref_matmul_f32(h, 0, P + lo[6], 1, NULL, g, 1, N, F, D, 1);
        ref_matmul_f32(h, 0, P + lo[7], 1, NULL, u, 1, N, F, D, 1);
        ref_swiglu_f32(g, u, s, (size_t)(N * F));
        ref_matmul_f32(s, 0, P + lo[8], 1, NULL, y, 1, N, D, F, 1);
        ref_add_f32(x, y, x, (size_t)(N * D));
    }
    int64_t fn = 1 + 9 * (int64_t)c->layers;
    ref_rmsnorm_f32(x, P + o[fn], (size_t)N, (size_t)D, eps, h);
    ref_matmul_f32(h, 0, P + (c->tied_head ? o[0] : o[fn + 1]), 1, NULL, logits, 1, N, V, D, 1);
    double loss = ref_cross_entropy_f32(logits, m->targets, N, V, NULL, 0);
    free(x);
    free(h);
    free(q);
    free(q2);
    free(k);
    free(k2);
    free(v);
    free(att);
    free(y);
    free(g);
    free(u);
    free(s);
    return loss;
}

/* max |logit difference| / max |logit|, and the loss difference. */
static void forward_difference(const model *m, int layout, int kv_head_mode, double *e_logits,
                               double *e_loss)
{
    int64_t n = (int64_t)m->B * m->T * m->cfg.vocab;
    double *ref = doubles((size_t)n);
    float *comp = mcl_test_floats((size_t)n);
    double loss = ref_gpt_forward_backward(&m->cfg, m->pf, m->offsets, m->tokens, m->targets,
                                           m->B, m->T, NULL, ref);
    double loss_c = composed_forward(m, layout, kv_head_mode, comp);
    double diff = 0.0, scale = 0.0;
    for (int64_t i = 0; i < n; i++) {
        diff = fmax(diff, fabs(ref[i] - comp[i]));
        scale = fmax(scale, fabs(ref[i]));
    }
    *e_logits = diff / scale;
    *e_loss = fabs(loss - loss_c);
    free(ref);
    free(comp);
}

static void forward_matches_op_references(void **state)
{
    (void)state;
    int all = 1;
    for (int cfg_i = 0; cfg_i < 4; cfg_i++) {
        ref_gpt_config c = tiny_config(cfg_i & 1, (cfg_i >> 1) & 1);
        if (cfg_i == 3) {
            c.dim = 16;
            c.heads = 4;
            c.kv_heads = 2;
        }
        model m;
        model_init(&m, &c, 2, 5, 100u + (uint32_t)cfg_i);
        m.targets[3] = -1;
        m.tokens[7] = 11; /* out of range: a zero row */
        double el, eloss;
        forward_difference(&m, c.rope_layout, 0, &el, &eloss);
        char name[200];
        snprintf(name, sizeof name, "forward V11 D%d H%d Hkv%d %s %s vs op references", c.dim,
                 c.heads, c.kv_heads, c.tied_head ? "tied" : "untied",
                 c.rope_layout ? "split-half" : "interleaved");
        printf("%s: logits %.3g, loss %.3g\n", name, el, eloss);
        all &= mcl_test_record(name, "max_rel_err logits", el, TOL_FORWARD);
        all &= mcl_test_record(name, "abs_err loss", eloss, TOL_FORWARD);

        /* Negative controls: the other RoPE layout; for two key heads, hq % Hkv. */
        double nl, nloss;
        forward_difference(&m, !c.rope_layout, 0, &nl, &nloss);
        printf("negative control: the other rope layout: logits %.3g\n", nl);
        all &= mcl_test_record_bool("negative control: a forward with the other RoPE layout "
                                    "differs from the reference",
                                    nl > 100 * TOL_FORWARD);
        if (cfg_i == 3) {
            forward_difference(&m, c.rope_layout, 1, &nl, &nloss);
            printf("negative control: key head hq %% Hkv: logits %.3g\n", nl);
            all &= mcl_test_record_bool("negative control: a forward mapping query head hq to "
                                        "key head hq % Hkv differs from the reference",
                                        nl > 100 * TOL_FORWARD);
        }
        model_free(&m);
    }
    assert_true(all);
}

/* --- Gradients against finite differences ------------------------------------------- */

typedef struct fd_table {
    int count[MAX_TENSORS];
    int64_t idx[MAX_TENSORS][FD_MAX_SAMPLES]; /* absolute positions in the flat array */
    double fd[MAX_TENSORS][FD_MAX_SAMPLES];
} fd_table;

/* Sample elements of every tensor and difference the loss there. */
static void finite_differences(const model *m, fd_table *s)
{
    double *p = doubles((size_t)m->total);
    memcpy(p, m->pd, (size_t)m->total * sizeof *p);
    uint32_t x = 2463534242u;
    for (int i = 0; i < m->n_tensors; i++) {
        int64_t n = ref_gpt_param_numel(&m->cfg, i);
        int c = 0;
        for (int j = 0; j < FD_PER_TENSOR; j++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            s->idx[i][c++] = m->offsets[i] + (int64_t)(x % (uint32_t)n);
        }
        if (i == 0) { /* two in the row of a token in the batch (an untied row may be 0) */
            s->idx[i][c++] = m->offsets[0] + (int64_t)m->tokens[0] * m->cfg.dim;
            s->idx[i][c++] = m->offsets[0] + (int64_t)m->tokens[1] * m->cfg.dim + 1;
        }
        s->count[i] = c;
        for (int j = 0; j < c; j++) {
            int64_t at = s->idx[i][j];
            double keep = p[at];
            p[at] = keep + FD_STEP;
            double lp = loss_d(m, p, NULL);
            p[at] = keep - FD_STEP;
            double lm = loss_d(m, p, NULL);
            p[at] = keep;
            s->fd[i][j] = (lp - lm) / (2.0 * FD_STEP);
        }
    }
    free(p);
}

/* max |g - fd| / max |fd| over tensor i's samples. */
static double tensor_error(const fd_table *s, int i, const double *grads)
{
    double diff = 0.0, scale = 0.0;
    for (int j = 0; j < s->count[i]; j++) {
        diff = fmax(diff, fabs(grads[s->idx[i][j]] - s->fd[i][j]));
        scale = fmax(scale, fabs(s->fd[i][j]));
    }
    return scale > 0.0 ? diff / scale : diff;
}

/* Worst tensor error; its index in *worst. */
static double worst_error(const model *m, const fd_table *s, const double *grads, int *worst)
{
    double e = 0.0;
    *worst = 0;
    for (int i = 0; i < m->n_tensors; i++) {
        double t = tensor_error(s, i, grads);
        if (!(t <= e)) {
            e = t;
            *worst = i;
        }
    }
    return e;
}

static const struct {
    int tied, layout, dim, heads, kv_heads;
} fd_configs[] = {
    {0, REF_ROPE_INTERLEAVED, 8, 2, 1}, {1, REF_ROPE_INTERLEAVED, 8, 2, 1},
    {0, REF_ROPE_SPLIT_HALF, 8, 2, 1},  {1, REF_ROPE_SPLIT_HALF, 8, 2, 1},
    {0, REF_ROPE_SPLIT_HALF, 16, 4, 2}, {1, REF_ROPE_INTERLEAVED, 8, 2, 0},
};

static void fd_model(model *m, int k)
{
    ref_gpt_config c = tiny_config(fd_configs[k].tied, fd_configs[k].layout);
    c.dim = fd_configs[k].dim;
    c.heads = fd_configs[k].heads;
    c.kv_heads = fd_configs[k].kv_heads;
    model_init(m, &c, 2, 5, 200u + (uint32_t)k);
    m->targets[3] = -1;  /* excluded from the loss */
    m->tokens[7] = -5;   /* out of range: a zero row */
}

static void gradients_match_finite_differences(void **state)
{
    (void)state;
    int all = 1;
    int n_configs = (int)(sizeof fd_configs / sizeof fd_configs[0]);
    for (int k = 0; k < n_configs; k++) {
        model m;
        fd_model(&m, k);
        double *grads = doubles((size_t)m.total);
        double loss = loss_d(&m, m.pd, grads);
        fd_table *s = calloc(1, sizeof *s);
        assert_non_null(s);
        finite_differences(&m, s);
        char cname[160];
        snprintf(cname, sizeof cname, "D%d H%d Hkv%d %s %s", m.cfg.dim, m.cfg.heads,
                 m.cfg.kv_heads, m.cfg.tied_head ? "tied" : "untied",
                 m.cfg.rope_layout ? "split-half" : "interleaved");
        printf("%s: loss %.6f (ln V %.6f)\n", cname, loss, log((double)m.cfg.vocab));
        for (int i = 0; i < m.n_tensors; i++) {
            char pname[64];
            ref_gpt_param_name(&m.cfg, i, pname, sizeof pname);
            double gmax = 0.0;
            for (int j = 0; j < s->count[i]; j++)
                gmax = fmax(gmax, fabs(s->fd[i][j]));
            printf("  %-20s max|fd| %.3g  err %.3g\n", pname, gmax, tensor_error(s, i, grads));
        }
        int worst;
        double e = worst_error(&m, s, grads, &worst);
        char wname[64], name[320];
        ref_gpt_param_name(&m.cfg, worst, wname, sizeof wname);
        snprintf(name, sizeof name, "gradients %s vs finite differences (worst: %s)", cname,
                 wname);
        all &= mcl_test_record(name, "max_rel_err", e, TOL_FD);
        all &= mcl_test_record_bool("loss finite and positive", isfinite(loss) && loss > 0.0);
        free(s);
        free(grads);
        model_free(&m);
    }
    assert_true(all);
}

/* The comparison can fail: one element of wq off by 1e-4 of the tensor's largest gradient,
 * and the gradients of the other RoPE layout, are both caught. */
static void wrong_gradients_are_detected(void **state)
{
    (void)state;
    int all = 1;
    model m;
    fd_model(&m, 0);
    double *grads = doubles((size_t)m.total);
    loss_d(&m, m.pd, grads);
    fd_table *s = calloc(1, sizeof *s);
    assert_non_null(s);
    finite_differences(&m, s);
    int worst;
    double e0 = worst_error(&m, s, grads, &worst);
    all &= mcl_test_record("negative control baseline: correct gradients pass", "max_rel_err",
                           e0, TOL_FD);

    int wq = 2;
    double scale = 0.0;
    for (int j = 0; j < s->count[wq]; j++)
        scale = fmax(scale, fabs(s->fd[wq][j]));
    grads[s->idx[wq][3]] += 1e-4 * scale;
    double e1 = worst_error(&m, s, grads, &worst);
    printf("negative control: wq off by 1e-4 in one element: %.3g\n", e1);
    all &= mcl_test_record_bool("negative control: a gradient wrong in one element by 1e-4 of "
                                "its tensor's scale fails the finite difference check",
                                e1 > TOL_FD && worst == wq);

    model other = m;
    other.cfg.rope_layout = !m.cfg.rope_layout;
    double *g2 = doubles((size_t)m.total);
    loss_d(&other, m.pd, g2);
    double e2 = worst_error(&m, s, g2, &worst);
    printf("negative control: gradients of the other rope layout: %.3g\n", e2);
    all &= mcl_test_record_bool("negative control: gradients of the other RoPE layout fail the "
                                "finite difference check",
                                e2 > TOL_FD);
    free(g2);
    free(s);
    free(grads);
    model_free(&m);
    assert_true(all);
}

/* --- Offsets with gaps, float entry point --------------------------------------------- */

static void parameters_at_offsets_with_gaps(void **state)
{
    (void)state;
    model m;
    fd_model(&m, 4);
    int n = m.n_tensors;
    /* Each parameter at a multiple of 64 floats, 13 floats after the previous one ends,
     * and in reverse order: gaps everywhere. */
    int64_t off[MAX_TENSORS], end = 0;
    for (int i = n - 1; i >= 0; i--) {
        off[i] = (end + 13 + 63) / 64 * 64;
        end = off[i] + ref_gpt_param_numel(&m.cfg, i);
    }
    float *pf = mcl_test_floats((size_t)end);
    double *g = doubles((size_t)end);
    for (int64_t j = 0; j < end; j++) {
        pf[j] = NAN;
        g[j] = -12345.0;
    }
    for (int i = 0; i < n; i++)
        memcpy(pf + off[i], m.pf + m.offsets[i],
               (size_t)ref_gpt_param_numel(&m.cfg, i) * sizeof *pf);
    int64_t nl = (int64_t)m.B * m.T * m.cfg.vocab;
    double *lg_packed = doubles((size_t)nl), *lg_gaps = doubles((size_t)nl);
    double *g_packed = doubles((size_t)m.total);
    double l_packed = ref_gpt_forward_backward(&m.cfg, m.pf, m.offsets, m.tokens, m.targets,
                                               m.B, m.T, g_packed, lg_packed);
    double l_d = ref_gpt_forward_backward_d(&m.cfg, m.pd, m.offsets, m.tokens, m.targets, m.B,
                                            m.T, NULL, NULL);
    double l_gaps = ref_gpt_forward_backward(&m.cfg, pf, off, m.tokens, m.targets, m.B, m.T, g,
                                             lg_gaps);
    int same = l_packed == l_gaps && l_packed == l_d &&
               memcmp(lg_packed, lg_gaps, (size_t)nl * sizeof *lg_gaps) == 0;
    for (int i = 0; i < n; i++) {
        int64_t c = ref_gpt_param_numel(&m.cfg, i);
        same &= memcmp(g + off[i], g_packed + m.offsets[i], (size_t)c * sizeof *g) == 0;
    }
    char *inside = calloc((size_t)end, 1);
    assert_non_null(inside);
    for (int i = 0; i < n; i++)
        memset(inside + off[i], 1, (size_t)ref_gpt_param_numel(&m.cfg, i));
    int gaps_untouched = 1;
    for (int64_t j = 0; j < end; j++)
        gaps_untouched &= inside[j] || g[j] == -12345.0;
    free(inside);
    printf("offsets with NaN gaps: loss %.9f vs packed %.9f\n", l_gaps, l_packed);
    assert_true(mcl_test_record_bool("parameters at offsets with NaN gaps: the same loss, "
                                     "logits and gradients bit for bit as packed, and as the "
                                     "double entry point",
                                     same && isfinite(l_gaps)));
    assert_true(mcl_test_record_bool("gradient gaps left as they were", gaps_untouched));
    free(pf);
    free(g);
    free(lg_packed);
    free(lg_gaps);
    free(g_packed);
    model_free(&m);
}

static void no_valid_target(void **state)
{
    (void)state;
    model m;
    fd_model(&m, 1);
    for (int r = 0; r < m.B * m.T; r++)
        m.targets[r] = r % 2 ? -1 : m.cfg.vocab; /* both sides of [0, V) */
    double *g = doubles((size_t)m.total);
    for (int64_t j = 0; j < m.total; j++)
        g[j] = 1.0;
    double loss = loss_d(&m, m.pd, g);
    int zero = loss == 0.0;
    for (int64_t j = 0; j < m.total; j++)
        zero &= g[j] == 0.0;
    assert_true(mcl_test_record_bool("no valid target: loss 0 and every gradient 0", zero));
    free(g);
    model_free(&m);
}

/* --- Optimizer step ------------------------------------------------------------------ */

static void step_zero_gradients_and_decay(void **state)
{
    (void)state;
    model m;
    fd_model(&m, 0);
    size_t n = (size_t)m.total;
    double *p = doubles(n), *mm = doubles(n), *vv = doubles(n), *g = doubles(n);
    memcpy(p, m.pd, n * sizeof *p);
    ref_gpt_adamw opt = {.lr = 1e-2, .weight_decay = 0.0, .step = 1};
    double norm = ref_gpt_step(&m.cfg, m.offsets, p, NULL, g, mm, vv, &opt);
    int unchanged = norm == 0.0 && memcmp(p, m.pd, n * sizeof *p) == 0;
    for (size_t j = 0; j < n; j++)
        unchanged &= mm[j] == 0.0 && vv[j] == 0.0;
    assert_true(mcl_test_record_bool("zero gradients, no weight decay: parameters and moments "
                                     "unchanged",
                                     unchanged));

    /* Decay: 2-D parameters become p - lr wd p, norm weights stay. */
    opt.weight_decay = 0.1;
    opt.step = 2;
    memcpy(p, m.pd, n * sizeof *p);
    ref_gpt_step(&m.cfg, m.offsets, p, NULL, g, mm, vv, &opt);
    int decay_ok = 1;
    for (int i = 0; i < m.n_tensors; i++) {
        int decays = ref_gpt_param_decays(&m.cfg, i);
        for (int64_t j = m.offsets[i]; j < m.offsets[i] + ref_gpt_param_numel(&m.cfg, i); j++) {
            double want = decays ? m.pd[j] - opt.lr * opt.weight_decay * m.pd[j] : m.pd[j];
            decay_ok &= p[j] == want;
        }
    }
    assert_true(mcl_test_record_bool("weight decay on the embedding and weight matrices only, "
                                     "not on norm weights",
                                     decay_ok));
    free(p);
    free(mm);
    free(vv);
    free(g);
    model_free(&m);
}

static void step_clipping(void **state)
{
    (void)state;
    model m;
    fd_model(&m, 1);
    size_t n = (size_t)m.total;
    float *g = mcl_test_random_floats(n, 77u, -1.0f, 1.0f);
    double ss = 0.0;
    for (size_t j = 0; j < n; j++)
        ss += (double)g[j] * g[j];
    double want_norm = sqrt(ss);
    double *p = doubles(n), *mm = doubles(n), *vv = doubles(n);
    int all = 1;

    /* Limits: below the norm (clips), above it, 0, inf, NaN (do not clip). */
    const double limits[] = {1.5, want_norm * 2.0, 0.0, INFINITY, NAN};
    for (int li = 0; li < 5; li++) {
        memcpy(p, m.pd, n * sizeof *p);
        memset(mm, 0, n * sizeof *mm);
        memset(vv, 0, n * sizeof *vv);
        ref_gpt_adamw opt = {.lr = 1e-3, .step = 1, .max_grad_norm = limits[li]};
        double norm = ref_gpt_step(&m.cfg, m.offsets, p, g, NULL, mm, vv, &opt);
        double beta1 = (double)0.9f;
        /* After a first step from zero, m = (1 - beta1) * clipped g. */
        double msq = 0.0, worst = 0.0;
        for (size_t j = 0; j < n; j++) {
            msq += mm[j] * mm[j];
            if (li > 0)
                worst = fmax(worst, fabs(mm[j] - (1.0 - beta1) * (double)g[j]));
        }
        double eff = sqrt(msq) / (1.0 - beta1);
        char name[160];
        if (li == 0) {
            double e = fabs(eff - 1.5) / 1.5;
            printf("clip to 1.5 from %.6f: effective norm %.15f\n", norm, eff);
            all &= mcl_test_record("clipping to max_grad_norm 1.5: the gradients' norm after",
                                   "rel_err", e, 1e-12);
        } else {
            snprintf(name, sizeof name, "no clipping with max_grad_norm %g: m = (1 - beta1) g",
                     limits[li]);
            all &= mcl_test_record(name, "max_abs_err", worst, 0.0);
        }
        snprintf(name, sizeof name, "max_grad_norm %g: the returned norm is the norm before "
                 "clipping", limits[li]);
        all &= mcl_test_record(name, "rel_err", fabs(norm - want_norm) / want_norm, 1e-14);
    }
    free(g);
    free(p);
    free(mm);
    free(vv);
    model_free(&m);
    assert_true(all);
}

/* Two steps with weight decay and explicit betas equal ref_adamw_step tensor by tensor
 * (decay 0 for norm weights). */
static void step_matches_adamw_reference(void **state)
{
    (void)state;
    model m;
    fd_model(&m, 4);
    size_t n = (size_t)m.total;
    double *p = doubles(n), *mm = doubles(n), *vv = doubles(n);
    double *p2 = doubles(n), *m2 = doubles(n), *v2 = doubles(n);
    memcpy(p, m.pd, n * sizeof *p);
    memcpy(p2, m.pd, n * sizeof *p);
    double worst = 0.0;
    for (int step = 1; step <= 2; step++) {
        float *g = mcl_test_random_floats(n, 300u + (uint32_t)step, -0.01f, 0.01f);
        ref_gpt_adamw opt = {.lr = 3e-3, .beta1 = (double)0.8f, .beta2 = (double)0.95f,
                             .eps = (double)1e-6f, .weight_decay = 0.1, .step = step,
                             .max_grad_norm = 1e3};
        ref_gpt_step(&m.cfg, m.offsets, p, g, NULL, mm, vv, &opt);
        for (int i = 0; i < m.n_tensors; i++) {
            int64_t o = m.offsets[i];
            ref_adamw_step(p2 + o, g + o, m2 + o, v2 + o, (size_t)ref_gpt_param_numel(&m.cfg, i),
                           opt.lr, opt.beta1, opt.beta2, opt.eps,
                           ref_gpt_param_decays(&m.cfg, i) ? opt.weight_decay : 0.0, step);
        }
        free(g);
    }
    for (size_t j = 0; j < n; j++) {
        worst = fmax(worst, fabs(p[j] - p2[j]));
        worst = fmax(worst, fabs(mm[j] - m2[j]));
        worst = fmax(worst, fabs(vv[j] - v2[j]));
    }
    printf("two AdamW steps vs ref_adamw_step: max abs diff %.3g\n", worst);
    assert_true(mcl_test_record("two AdamW steps equal ref_adamw_step per tensor",
                                "max_abs_err", worst, 1e-15));
    free(p);
    free(mm);
    free(vv);
    free(p2);
    free(m2);
    free(v2);
    model_free(&m);
}

/* --- Training ---------------------------------------------------------------------- */

/* A fixed batch of two sequences of 8; parameters at about the GPU's initial scale. */
static void training_model(model *m)
{
    ref_gpt_config c = tiny_config(0, REF_ROPE_SPLIT_HALF);
    model_init(m, &c, 2, 8, 900u);
    for (int i = 0; i < m->n_tensors; i++) {
        if (ref_gpt_param_decays(&m->cfg, i)) {
            for (int64_t j = m->offsets[i]; j < m->offsets[i] + ref_gpt_param_numel(&c, i); j++)
                m->pd[j] *= 0.1;
        } else {
            for (int64_t j = m->offsets[i]; j < m->offsets[i] + ref_gpt_param_numel(&c, i); j++)
                m->pd[j] = 1.0;
        }
    }
}

static void training_lowers_the_loss(void **state)
{
    (void)state;
    int all = 1;
    for (int adamw = 0; adamw < 2; adamw++) {
        model m;
        training_model(&m);
        size_t n = (size_t)m.total;
        double *g = doubles(n), *mm = doubles(n), *vv = doubles(n);
        double first = loss_d(&m, m.pd, NULL), loss = first;
        for (int step = 1; step <= 300; step++) {
            loss = loss_d(&m, m.pd, g);
            if (adamw) {
                ref_gpt_adamw opt = {.lr = 1e-2, .step = step, .max_grad_norm = 1.0};
                ref_gpt_step(&m.cfg, m.offsets, m.pd, NULL, g, mm, vv, &opt);
            } else {
                for (size_t j = 0; j < n; j++)
                    m.pd[j] -= 0.5 * g[j];
            }
        }
        loss = loss_d(&m, m.pd, NULL);
        double ln_v = log((double)m.cfg.vocab);
        printf("%s, 300 steps: loss %.4f -> %.4f (ln V %.4f)\n",
               adamw ? "AdamW" : "gradient descent", first, loss, ln_v);
        all &= mcl_test_record_bool("initial loss within 0.1 of ln V", fabs(first - ln_v) < 0.1);
        all &= mcl_test_record(adamw ? "300 AdamW steps on a fixed batch: loss / ln V"
                                     : "300 gradient steps on a fixed batch: loss / ln V",
                               "ratio", loss / ln_v, 0.25);
        free(g);
        free(mm);
        free(vv);
        model_free(&m);
    }
    assert_true(all);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(parameter_layout),
        cmocka_unit_test(forward_matches_op_references),
        cmocka_unit_test(gradients_match_finite_differences),
        cmocka_unit_test(wrong_gradients_are_detected),
        cmocka_unit_test(parameters_at_offsets_with_gaps),
        cmocka_unit_test(no_valid_target),
        cmocka_unit_test(step_zero_gradients_and_decay),
        cmocka_unit_test(step_clipping),
        cmocka_unit_test(step_matches_adamw_reference),
        cmocka_unit_test(training_lowers_the_loss),
    };
    mcl_test_begin(argc, argv);
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
