/* The CPU reference of the llama-family forward (tests/ref/ref_llama.c) checked on its own,
 * with no device, before an inference engine is compared against it. Random models come from
 * the model fixtures (tests/model_fixtures.h) in f32.
 *
 *  - Hand-computed models (dim 4): attention with RoPE over the pair (1, 3) of a head of 4 at
 *    angle 100^(-1/2) (and that angle halved by a frequency factor of 2) against closed forms
 *    of the softmax of two keys; a SwiGLU feed-forward, a weighted RMSNorm, a value bias and
 *    a tied head against formulas. Tolerance 1e-13 (max |difference|): the closed forms
 *    round differently in the last bits only. The interleaved pairing and a missing
 *    frequency factor are caught (differences above 1e-3).
 *  - Causality: changing token t + 1 leaves the logits of positions 0..t bit for bit and
 *    changes those after.
 *  - Grouped-query attention equals multi-head attention with each kv head's projections
 *    repeated for its query heads (bit for bit); repeating them in the wrong order (h % kv)
 *    is caught.
 *  - Agreement with the GPT reference (ref_gpt.c, a separate implementation of RMSNorm,
 *    GQA, RoPE and SwiGLU, exact_rope_angle 1) on the same weights, both RoPE layouts, tied
 *    and untied: max |difference| / max |logit| <= TOL_GPT = 1e-12 (both compute in double
 *    from the same float weights; only summation details differ, ~1e-16). The other RoPE
 *    layout is caught.
 *  - Incremental decode through the cache equals the full forward bit for bit.
 *  - llama.cpp's file order: interleaved RoPE on the permuted q and k (and biases) equals the
 *    split-half RoPE on Hugging Face's order up to the order of the q.k sums (1e-13 of the
 *    largest logit); interleaved on Hugging Face's order does not.
 *  - Refusals: bad shapes, tokens, lengths and caches give -1 and leave the cache as it was. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model_fixtures.h"
#include "ref/ref_gpt.h"
#include "ref/ref_llama.h"

#define TOL_HAND 1e-13
#define TOL_GPT 1e-12
#define CAUGHT 1e-3
/* Mixtures compared with a dense model whose down projection is scaled: the scaled weights
 * are rounded to f32 where the mixture's sum of scaled experts is not: f32's rounding,
 * relative, carried through the rest of the model (4e-8 seen). */
#define TOL_SCALED 1e-6

static const float I4[16] = {1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1, 0, 0, 0, 0, 1};
static const float Z16[16] = {0};
static const float ONES4[4] = {1, 1, 1, 1};

static double *doubles(size_t n)
{
    double *p = calloc(n ? n : 1, sizeof *p);
    assert_non_null(p);
    return p;
}

static double max_abs_diff(const double *a, const double *b, size_t n)
{
    double worst = 0.0;
    for (size_t i = 0; i < n; i++)
        worst = fmax(worst, fabs(a[i] - b[i]));
    return worst;
}

/* max |a - b| / max |b| */
static double rel_diff(const double *a, const double *b, size_t n)
{
    double scale = 0.0;
    for (size_t i = 0; i < n; i++)
        scale = fmax(scale, fabs(b[i]));
    return max_abs_diff(a, b, n) / scale;
}

static void forward(const ref_llama *m, const int32_t *tokens, int T, double *logits)
{
    assert_int_equal(ref_llama_forward(m, tokens, T, logits), 0);
}

/* A random model from the fixture (f32 weights), created or failing the test. */
static void fixture(model_fixture *f, const char *arch, int dim, int layers, int heads,
                    int kv_heads, int qkv_bias, int tied, uint32_t seed)
{
    model_fixture_desc d = {.arch = arch, .dim = dim, .layers = layers, .heads = heads,
                            .kv_heads = kv_heads, .hidden = dim + dim / 2, .vocab = 23,
                            .qkv_bias = qkv_bias, .tied = tied, .seed = seed};
    assert_mcl_ok(model_fixture_create(&d, f));
}

/* --- Hand-computed models -------------------------------------------------------------- */

/* One layer, one head of 4: token r embeds as 2 e_slot[r]; q = 3 h, k = v = h, attention
 * output and head the identity, the feed-forward zero. */
static void hand_attention(ref_llama *m, ref_llama_layer *b, float *embd, float *wq,
                           const float *freqs, int interleaved)
{
    static const int slot[4] = {1, 3, 0, 2};
    memset(embd, 0, 16 * sizeof *embd);
    for (int r = 0; r < 4; r++)
        embd[r * 4 + slot[r]] = 2.0f;
    for (int i = 0; i < 16; i++)
        wq[i] = 3.0f * I4[i];
    *b = (ref_llama_layer){.attn_norm = ONES4, .attn_q = wq, .attn_k = I4, .attn_v = I4,
                           .attn_output = I4, .ffn_norm = ONES4, .ffn_gate = Z16,
                           .ffn_up = Z16, .ffn_down = Z16};
    *m = (ref_llama){.dim = 4, .layers = 1, .heads = 1, .hidden = 4, .vocab = 4,
                     .norm_eps = 1e-6, .rope_theta = 100.0, .rope_freqs = freqs,
                     .rope_interleaved = interleaved, .token_embd = embd, .blk = b,
                     .output_norm = ONES4, .output = I4};
}

/* Logits of tokens (1, 0) in hand_attention's model with pair 1 at angle phi at position 1:
 * position 0 sees itself (x = (2 + c) e3); position 1 (x = 2 e1, q = 3c (cos, sin) over
 * elements (1, 3)) weighs key 0 (c e3) and key 1 (c (cos, sin)) by their scores / sqrt(4). */
static void hand_attention_want(double phi, double eps, double want[8])
{
    double c = 2.0 / sqrt(1.0 + eps), x0 = 2.0 + c;
    memset(want, 0, 8 * sizeof *want);
    want[3] = x0 / sqrt(x0 * x0 / 4.0 + eps);
    double s0 = 3.0 * c * c * sin(phi) / 2.0, s1 = 3.0 * c * c / 2.0;
    double p0 = 1.0 / (1.0 + exp(s1 - s0)), p1 = 1.0 - p0;
    double a = 2.0 + p1 * c, b = p0 * c, r = sqrt((a * a + b * b) / 4.0 + eps);
    want[5] = a / r;
    want[7] = b / r;
}

static void hand_computed_attention(void **state)
{
    (void)state;
    static const float factors[2] = {1.0f, 2.0f};
    const int32_t tokens[2] = {1, 0};
    float embd[16], wq[16];
    ref_llama m;
    ref_llama_layer b;
    double got[8], want[8], other[8];
    int all = 1;
    /* 100^(-2 * 1 / 4) = 0.1 radians per position for pair 1; factor 2 halves it */
    for (int f = 0; f < 2; f++) {
        hand_attention(&m, &b, embd, wq, f ? factors : NULL, 0);
        forward(&m, tokens, 2, got);
        hand_attention_want(f ? 0.05 : 0.1, 1e-6, want);
        all &= mcl_test_record(f ? "hand: attention and RoPE, frequency factor 2"
                                 : "hand: attention and RoPE at 0.1 rad",
                               "max |difference|", max_abs_diff(got, want, 8), TOL_HAND);
    }
    hand_attention_want(0.1, 1e-6, other);
    double missing = max_abs_diff(got, other, 8);
    hand_attention(&m, &b, embd, wq, NULL, 1);
    forward(&m, tokens, 2, got);
    hand_attention_want(0.1, 1e-6, want);
    double interleaved = max_abs_diff(got, want, 8);
    all &= mcl_test_record_bool("negative control: the factor left out is caught",
                                missing > CAUGHT);
    all &= mcl_test_record_bool("negative control: interleaved pairs are caught",
                                interleaved > CAUGHT);
    assert_true(all);
}

/* One layer, heads 2 over one kv head of 2, biases, tied head: v = bias only, so every
 * position's attention output is the bias for both query heads whatever q and k are. */
static void hand_computed_feed_forward(void **state)
{
    (void)state;
    static const float v_bias[2] = {0.5f, -0.25f}, ffn_norm[4] = {1.0f, 2.0f, 0.5f, 1.0f};
    float embd[16], up[16], wq[16], wk[8], q_bias[4], k_bias[2];
    for (int i = 0; i < 16; i++) {
        embd[i] = 2.0f * I4[i];
        up[i] = 1.5f * I4[i];
    }
    mcl_fill_random(wq, 16, 11, -1.0f, 1.0f);
    mcl_fill_random(wk, 8, 12, -1.0f, 1.0f);
    mcl_fill_random(q_bias, 4, 13, -1.0f, 1.0f);
    mcl_fill_random(k_bias, 2, 14, -1.0f, 1.0f);
    ref_llama_layer b = {.attn_norm = ONES4, .attn_q = wq, .attn_k = wk, .attn_v = Z16,
                         .attn_q_bias = q_bias, .attn_k_bias = k_bias, .attn_v_bias = v_bias,
                         .attn_output = I4, .ffn_norm = ffn_norm, .ffn_gate = I4,
                         .ffn_up = up, .ffn_down = I4};
    ref_llama m = {.dim = 4, .layers = 1, .heads = 2, .kv_heads = 1, .hidden = 4,
                   .vocab = 4, .norm_eps = 1e-5, .rope_theta = 10000.0, .qkv_bias = 1,
                   .tied_output = 1, .token_embd = embd, .blk = &b, .output_norm = ONES4};
    const int32_t tokens[3] = {2, 0, 3};
    double got[12], want[12];
    forward(&m, tokens, 3, got);
    const double eps = 1e-5, bias[4] = {0.5, -0.25, 0.5, -0.25};
    for (int t = 0; t < 3; t++) {
        double x[4], x2[4], ss = 0.0, ss2 = 0.0;
        for (int j = 0; j < 4; j++) {
            x[j] = (j == tokens[t] ? 2.0 : 0.0) + bias[j];
            ss += x[j] * x[j];
        }
        for (int j = 0; j < 4; j++) {
            double h = x[j] / sqrt(ss / 4.0 + eps) * ffn_norm[j];
            x2[j] = x[j] + h / (1.0 + exp(-h)) * 1.5 * h;
            ss2 += x2[j] * x2[j];
        }
        for (int j = 0; j < 4; j++)
            want[t * 4 + j] = 2.0 * x2[j] / sqrt(ss2 / 4.0 + eps);
    }
    int ok = mcl_test_record("hand: SwiGLU, weighted RMSNorm, value bias, tied head",
                             "max |difference|", max_abs_diff(got, want, 12), TOL_HAND);
    m.qkv_bias = 0; /* negative control: the biases left out */
    forward(&m, tokens, 3, got);
    ok &= mcl_test_record_bool("negative control: biases left out are caught",
                               max_abs_diff(got, want, 12) > CAUGHT);
    assert_true(ok);
}

/* --- Properties of random models -------------------------------------------------------- */

static void causality(void **state)
{
    (void)state;
    model_fixture f;
    fixture(&f, "qwen2", 32, 2, 4, 2, 1, 0, 3);
    enum { T = 8, CUT = 3 };
    int32_t a[T] = {5, 1, 9, 22, 0, 7, 7, 3}, b[T];
    memcpy(b, a, sizeof a);
    b[CUT + 1] = 11;
    const size_t V = 23;
    double *la = doubles(T * V), *lb = doubles(T * V);
    forward(&f.gguf_ref, a, T, la);
    forward(&f.gguf_ref, b, T, lb);
    int same = memcmp(la, lb, (CUT + 1) * V * sizeof *la) == 0;
    double after = max_abs_diff(la + (CUT + 1) * V, lb + (CUT + 1) * V, (T - CUT - 1) * V);
    int ok = mcl_test_record_bool("causal: positions <= t unchanged by token t + 1", same);
    ok &= mcl_test_record_bool("control: positions > t changed", after > CAUGHT);
    free(la);
    free(lb);
    model_fixture_free(&f);
    assert_true(ok);
}

/* Rows of kv head `from(h)` for each of `heads` heads: [heads * hd, k] from [kv * hd, k]. */
static float *repeat_heads(const float *w, int heads, int kv, int hd, int k, int mod)
{
    float *out = malloc((size_t)heads * (size_t)hd * (size_t)k * sizeof *out);
    assert_non_null(out);
    for (int h = 0; h < heads; h++) {
        int src = mod ? h % kv : h / (heads / kv);
        memcpy(out + (size_t)h * hd * k, w + (size_t)src * hd * k,
               (size_t)hd * (size_t)k * sizeof *out);
    }
    return out;
}

static void gqa_equals_repeated_mha(void **state)
{
    (void)state;
    model_fixture f;
    fixture(&f, "qwen2", 32, 2, 4, 2, 1, 0, 4);
    enum { T = 6, V = 23, HD = 8 };
    const int32_t tokens[T] = {3, 14, 15, 9, 2, 6};
    double *gqa = doubles(T * V), *mha = doubles(T * V);
    forward(&f.gguf_ref, tokens, T, gqa);
    double diff[2];
    for (int mod = 0; mod < 2; mod++) {
        ref_llama m = f.gguf_ref;
        ref_llama_layer blk[2];
        float *owned[2][4];
        for (int l = 0; l < 2; l++) {
            blk[l] = f.gguf_ref.blk[l];
            owned[l][0] = repeat_heads(blk[l].attn_k, 4, 2, HD, 32, mod);
            owned[l][1] = repeat_heads(blk[l].attn_v, 4, 2, HD, 32, mod);
            owned[l][2] = repeat_heads(blk[l].attn_k_bias, 4, 2, HD, 1, mod);
            owned[l][3] = repeat_heads(blk[l].attn_v_bias, 4, 2, HD, 1, mod);
            blk[l].attn_k = owned[l][0];
            blk[l].attn_v = owned[l][1];
            blk[l].attn_k_bias = owned[l][2];
            blk[l].attn_v_bias = owned[l][3];
        }
        m.kv_heads = 4;
        m.blk = blk;
        forward(&m, tokens, T, mha);
        diff[mod] = max_abs_diff(mha, gqa, T * V);
        for (int l = 0; l < 2; l++)
            for (int i = 0; i < 4; i++)
                free(owned[l][i]);
    }
    int ok = mcl_test_record("GQA (4 heads on 2) = MHA with kv heads repeated",
                             "max |difference|", diff[0], 0.0);
    ok &= mcl_test_record_bool("negative control: kv heads repeated as h % kv are caught",
                               diff[1] > CAUGHT);
    free(gqa);
    free(mha);
    model_fixture_free(&f);
    assert_true(ok);
}

/* The same weights through ref_gpt and ref_llama. Returns max |diff| / max |logit|, with
 * ref_llama's layout `llama_layout` (the GPT's, or the other one for a negative control). */
static double against_gpt(int layout, int llama_layout, int tied, int heads, int kv_heads)
{
    ref_gpt_config c = {.vocab = 13, .dim = 16, .layers = 2, .heads = heads,
                        .kv_heads = kv_heads, .hidden = 24, .tied_head = tied,
                        .rope_layout = layout, .rope_theta = 10000.0f, .norm_eps = 1e-5f,
                        .exact_rope_angle = 1};
    int64_t off[32];
    int64_t total = ref_gpt_packed_offsets(&c, off);
    float *p = mcl_test_floats((size_t)total);
    for (int i = 0; i < ref_gpt_param_tensors(&c); i++) {
        int64_t shape[2];
        int nd = ref_gpt_param_shape(&c, i, shape);
        float a = i == 0 ? 1.0f : nd == 2 ? 1.5f / sqrtf((float)shape[1]) : 0.3f;
        mcl_fill_random(p + off[i], (size_t)ref_gpt_param_numel(&c, i), 40u + (uint32_t)i,
                        nd == 2 ? -a : 1.0f - a, nd == 2 ? a : 1.0f + a);
    }
    ref_llama_layer blk[2];
    for (int l = 0; l < 2; l++) {
        const float *q = p + off[1 + 9 * l];
        blk[l] = (ref_llama_layer){.attn_norm = q, .attn_q = p + off[2 + 9 * l],
                                   .attn_k = p + off[3 + 9 * l], .attn_v = p + off[4 + 9 * l],
                                   .attn_output = p + off[5 + 9 * l],
                                   .ffn_norm = p + off[6 + 9 * l],
                                   .ffn_gate = p + off[7 + 9 * l],
                                   .ffn_up = p + off[8 + 9 * l], .ffn_down = p + off[9 + 9 * l]};
    }
    ref_llama m = {.dim = 16, .layers = 2, .heads = heads, .kv_heads = kv_heads, .hidden = 24,
                   .vocab = 13, .norm_eps = (double)1e-5f, .rope_theta = (double)10000.0f,
                   .tied_output = tied, .rope_interleaved = llama_layout == REF_ROPE_INTERLEAVED,
                   .token_embd = p, .blk = blk, .output_norm = p + off[19],
                   .output = tied ? NULL : p + off[20]};
    enum { T = 7 };
    const int32_t tokens[T] = {4, 0, 12, 7, 7, 1, 9}, targets[T] = {0, 12, 7, 7, 1, 9, 3};
    double *lg = doubles(T * 13), *ll = doubles(T * 13);
    double loss = ref_gpt_forward_backward(&c, p, off, tokens, targets, 1, T, NULL, lg);
    assert_false(isnan(loss));
    forward(&m, tokens, T, ll);
    double d = rel_diff(ll, lg, T * 13);
    free(lg);
    free(ll);
    free(p);
    return d;
}

static void agrees_with_gpt_reference(void **state)
{
    (void)state;
    static const struct {
        int layout, tied, heads, kv_heads;
        const char *name;
    } cases[] = {
        {REF_ROPE_SPLIT_HALF, 0, 4, 2, "ref_gpt: split-half, GQA 4/2, untied"},
        {REF_ROPE_SPLIT_HALF, 1, 4, 2, "ref_gpt: split-half, GQA 4/2, tied"},
        {REF_ROPE_SPLIT_HALF, 0, 2, 2, "ref_gpt: split-half, MHA"},
        {REF_ROPE_INTERLEAVED, 0, 2, 1, "ref_gpt: interleaved, MQA 2/1, untied"},
    };
    int ok = 1;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        ok &= mcl_test_record(cases[i].name, "max |diff| / max |logit|",
                              against_gpt(cases[i].layout, cases[i].layout, cases[i].tied,
                                          cases[i].heads, cases[i].kv_heads),
                              TOL_GPT);
    double wrong = against_gpt(REF_ROPE_SPLIT_HALF, REF_ROPE_INTERLEAVED, 0, 4, 2);
    ok &= mcl_test_record_bool("negative control: the other RoPE layout is caught",
                               wrong > CAUGHT);
    assert_true(ok);
}

/* --- Mixtures of experts ------------------------------------------------------------------ */

/* A mixture built from a dense fixture: every expert is the block's dense feed-forward with
 * its down projection scaled by scale[e]; the router's rows are router[e] * (1, 1, ...). The
 * model m copies the dense one (d) with its blocks replaced; `store` holds the copies. */
typedef struct moe_build {
    ref_llama m;
    ref_llama_layer blk[4];
    float *store;
} moe_build;

static void moe_from_dense(moe_build *o, const ref_llama *d, int experts, int used, int norm,
                           const double *scale, const double *router, int shared)
{
    const int D = d->dim, F = d->hidden, E = experts;
    assert_true(d->layers <= 4);
    size_t per = (size_t)E * D + 3u * (size_t)E * F * D + (size_t)D + 3u * (size_t)F * D;
    o->store = malloc(per * (size_t)d->layers * sizeof(float));
    assert_non_null(o->store);
    o->m = *d;
    o->m.experts = E;
    o->m.experts_used = used;
    o->m.experts_norm = norm;
    o->m.expert_hidden = F;
    o->m.shared_hidden = shared ? F : 0;
    o->m.blk = o->blk;
    float *at = o->store;
    for (int l = 0; l < d->layers; l++) {
        const ref_llama_layer *b = &d->blk[l];
        ref_llama_layer *n = &o->blk[l];
        *n = *b;
        n->ffn_gate = n->ffn_up = n->ffn_down = NULL;
        float *inp = at, *gate = inp + (size_t)E * D, *up = gate + (size_t)E * F * D;
        float *down = up + (size_t)E * F * D, *shin = down + (size_t)E * D * F;
        float *shg = shin + D, *shu = shg + (size_t)F * D, *shd = shu + (size_t)F * D;
        at = shd + (size_t)D * F;
        for (int e = 0; e < E; e++) {
            for (int i = 0; i < D; i++)
                inp[(size_t)e * D + i] = (float)router[e];
            memcpy(gate + (size_t)e * F * D, b->ffn_gate, (size_t)F * D * sizeof(float));
            memcpy(up + (size_t)e * F * D, b->ffn_up, (size_t)F * D * sizeof(float));
            for (int i = 0; i < D * F; i++)
                down[(size_t)e * D * F + i] = (float)(scale[e] * b->ffn_down[i]);
        }
        n->ffn_gate_inp = inp;
        n->ffn_gate_exps = gate;
        n->ffn_up_exps = up;
        n->ffn_down_exps = down;
        /* The shared expert: the dense one, its gate's row zero (sigmoid 0.5). */
        memset(shin, 0, (size_t)D * sizeof(float));
        memcpy(shg, b->ffn_gate, (size_t)F * D * sizeof(float));
        memcpy(shu, b->ffn_up, (size_t)F * D * sizeof(float));
        memcpy(shd, b->ffn_down, (size_t)F * D * sizeof(float));
        n->ffn_gate_inp_shexp = shin;
        n->ffn_gate_shexp = shg;
        n->ffn_up_shexp = shu;
        n->ffn_down_shexp = shd;
    }
}

/* The dense model with every block's down projection scaled by `k` (copies in store). */
static ref_llama scaled_dense(const ref_llama *d, ref_llama_layer *blk, float **store, double k)
{
    const size_t n = (size_t)d->dim * d->hidden;
    *store = malloc(n * (size_t)d->layers * sizeof(float));
    assert_non_null(*store);
    ref_llama m = *d;
    m.blk = blk;
    for (int l = 0; l < d->layers; l++) {
        blk[l] = d->blk[l];
        for (size_t i = 0; i < n; i++)
            (*store)[(size_t)l * n + i] = (float)(k * d->blk[l].ffn_down[i]);
        blk[l].ffn_down = *store + (size_t)l * n;
    }
    return m;
}

/* Routing against models whose answer is known: identical experts renormalised give the dense
 * model; a router that favours one expert (top-1) gives that expert; equal router logits take
 * the lowest indices; a shared expert adds half the dense feed-forward. */
static void mixture_of_experts(void **state)
{
    (void)state;
    model_fixture f;
    fixture(&f, "llama", 16, 2, 2, 1, 0, 0, 71);
    const ref_llama *d = &f.gguf_ref;
    const int32_t tokens[4] = {3, 7, 1, 20};
    const size_t n = 4 * 23;
    double dense[4 * 23], got[4 * 23], want[4 * 23];
    forward(d, tokens, 4, dense);
    const double ones[4] = {1, 1, 1, 1}, flat[4] = {0, 0, 0, 0};
    const double scales[4] = {1, 2, 3, 4};
    int ok = 1;

    moe_build o;
    moe_from_dense(&o, d, 4, 2, 1, ones, scales, 0);
    forward(&o.m, tokens, 4, got);
    ok &= mcl_test_record("moe: identical experts, top-2 renormalised = dense",
                          "max |diff| / max |logit|", rel_diff(got, dense, n), TOL_GPT);
    o.m.experts_norm = 0; /* negative control: the two weights sum below 1 */
    forward(&o.m, tokens, 4, got);
    ok &= mcl_test_record_bool("negative control: weights not renormalised are caught",
                               rel_diff(got, dense, n) > CAUGHT);
    free(o.store);

    /* Top-1 among three: expert 0's router row is zero, 1's is 5 (1, 1, ...) and 2's the
     * negative of that, so for every row h with sum(h) != 0 one of experts 1 and 2 has the
     * largest logit. Both scale by 3, expert 0 by 1: choosing the largest gives 3 x. */
    ref_llama_layer sb[4];
    float *sstore;
    const double top1[3] = {1, 3, 3}, signs[3] = {0, 5, -5};
    moe_from_dense(&o, d, 3, 1, 1, top1, signs, 0);
    ref_llama three = scaled_dense(d, sb, &sstore, 3.0);
    forward(&o.m, tokens, 4, got);
    forward(&three, tokens, 4, want);
    ok &= mcl_test_record("moe: top-1 takes a favoured expert", "max |diff| / max |logit|",
                          rel_diff(got, want, n), TOL_GPT);
    free(o.store);
    free(sstore);

    /* Equal logits: experts 0 and 1 (scales 1 and 2), weights 1/2 each: 1.5 x. */
    moe_from_dense(&o, d, 4, 2, 1, scales, flat, 0);
    ref_llama half = scaled_dense(d, sb, &sstore, 1.5);
    forward(&o.m, tokens, 4, got);
    forward(&half, tokens, 4, want);
    ok &= mcl_test_record("moe: ties take the lowest indices", "max |diff| / max |logit|",
                          rel_diff(got, want, n), TOL_SCALED);
    const double reversed[4] = {4, 3, 2, 1}; /* negative control: the highest would be 3.5 x */
    free(o.store);
    moe_from_dense(&o, d, 4, 2, 1, reversed, flat, 0);
    forward(&o.m, tokens, 4, got);
    ok &= mcl_test_record_bool("negative control: other experts on a tie are caught",
                               rel_diff(got, want, n) > CAUGHT);
    free(o.store);
    free(sstore);

    /* qwen2moe's shape: unnormalised top-1 of 1 expert (weight 1) plus the shared expert at
     * sigmoid(0) = 1/2: 1.5 x the dense feed-forward. */
    moe_from_dense(&o, d, 1, 1, 0, ones, flat, 1);
    half = scaled_dense(d, sb, &sstore, 1.5);
    forward(&o.m, tokens, 4, got);
    forward(&half, tokens, 4, want);
    ok &= mcl_test_record("moe: a shared expert behind its sigmoid gate",
                          "max |diff| / max |logit|", rel_diff(got, want, n), TOL_SCALED);
    free(o.store);
    free(sstore);
    model_fixture_free(&f);
    assert_true(ok);
}

static void incremental_decode(void **state)
{
    (void)state;
    model_fixture f;
    fixture(&f, "llama", 32, 2, 4, 1, 0, 1, 5);
    enum { T = 9, V = 23 };
    const int32_t tokens[T] = {1, 2, 3, 5, 8, 13, 21, 11, 0};
    const int chunks[4] = {4, 1, 1, 3};
    double *full = doubles(T * V), *step = doubles(T * V);
    forward(&f.gguf_ref, tokens, T, full);
    ref_llama_kv kv;
    assert_int_equal(ref_llama_kv_init(&kv, &f.gguf_ref, T), 0);
    int at = 0;
    for (int c = 0; c < 4; c++) {
        assert_int_equal(ref_llama_forward_kv(&f.gguf_ref, &kv, tokens + at, chunks[c],
                                              step + at * V),
                         0);
        at += chunks[c];
        assert_int_equal(kv.length, at);
    }
    int ok = mcl_test_record_bool("decode through the cache (4, 1, 1, 3) = full forward",
                                  memcmp(step, full, sizeof(double) * T * V) == 0);
    ok &= mcl_test_record_bool("refused: a step past the cache's capacity",
                               ref_llama_forward_kv(&f.gguf_ref, &kv, tokens, 1, step) == -1 &&
                                   kv.length == T);
    ref_llama_kv_free(&kv);
    ref_llama_kv_free(&kv);
    free(full);
    free(step);
    model_fixture_free(&f);
    assert_true(ok);
}

/* llama.cpp's converter permutes q and k (weights and biases) for its interleaved RoPE:
 * interleaved on the file's order is split-half on Hugging Face's. */
static void file_order_equivalence(void **state)
{
    (void)state;
    model_fixture f;
    fixture(&f, "llama", 32, 2, 4, 2, 1, 0, 6);
    enum { T = 6, V = 23, Q = 32, KV = 16 };
    const int32_t tokens[T] = {9, 8, 7, 6, 5, 4};
    double *hf = doubles(T * V), *file = doubles(T * V);
    forward(&f.gguf_ref, tokens, T, hf);
    ref_llama m = f.gguf_ref;
    ref_llama_layer blk[2];
    float *owned[2][4];
    for (int l = 0; l < 2; l++) {
        blk[l] = f.gguf_ref.blk[l];
        for (int i = 0; i < 4; i++) {
            owned[l][i] = malloc(Q * 32 * sizeof(float));
            assert_non_null(owned[l][i]);
        }
        model_fixture_permute(blk[l].attn_q, owned[l][0], Q, 32, 4);
        model_fixture_permute(blk[l].attn_k, owned[l][1], KV, 32, 2);
        model_fixture_permute(blk[l].attn_q_bias, owned[l][2], Q, 1, 4);
        model_fixture_permute(blk[l].attn_k_bias, owned[l][3], KV, 1, 2);
        blk[l].attn_q = owned[l][0];
        blk[l].attn_k = owned[l][1];
        blk[l].attn_q_bias = owned[l][2];
        blk[l].attn_k_bias = owned[l][3];
    }
    m.blk = blk;
    m.rope_interleaved = 1;
    forward(&m, tokens, T, file);
    int ok = mcl_test_record("interleaved on the file's q, k = split-half on Hugging Face's",
                             "max |diff| / max |logit|", rel_diff(file, hf, T * V), TOL_HAND);
    m.blk = f.gguf_ref.blk;
    forward(&m, tokens, T, file);
    ok &= mcl_test_record_bool("negative control: interleaved on Hugging Face's order differs",
                               max_abs_diff(file, hf, T * V) > CAUGHT);
    /* The permutation as docs/models.md states it: file row 2i + a of a head is Hugging Face's
     * row a * head_dim / 2 + i. */
    float rows[16], permuted[16], back[16];
    for (int r = 0; r < 16; r++)
        rows[r] = (float)r;
    model_fixture_permute(rows, permuted, 16, 1, 2);
    model_fixture_unpermute(permuted, back, 16, 1, 2);
    int stated = 1;
    for (int h = 0; h < 2; h++)
        for (int i = 0; i < 4; i++)
            for (int a = 0; a < 2; a++)
                stated &= permuted[h * 8 + 2 * i + a] == (float)(h * 8 + a * 4 + i);
    ok &= mcl_test_record_bool("permutation as documented; unpermute inverts it",
                               stated && memcmp(back, rows, sizeof rows) == 0);
    for (int l = 0; l < 2; l++)
        for (int i = 0; i < 4; i++)
            free(owned[l][i]);
    free(hf);
    free(file);
    model_fixture_free(&f);
    assert_true(ok);
}

static void refusals(void **state)
{
    (void)state;
    model_fixture f;
    fixture(&f, "llama", 16, 1, 2, 1, 0, 0, 7);
    ref_llama m = f.gguf_ref;
    double out[4 * 23];
    const int32_t good[2] = {0, 22}, bad[2] = {0, 23}, negative[1] = {-1};
    int ok = ref_llama_valid(&m) && ref_llama_forward(&m, good, 2, out) == 0;
    ok &= ref_llama_forward(&m, good, 0, out) == -1;
    ok &= ref_llama_forward(&m, bad, 2, out) == -1;
    ok &= ref_llama_forward(&m, negative, 1, out) == -1;
    ref_llama_kv kv;
    assert_int_equal(ref_llama_kv_init(&kv, &m, 3), 0);
    ok &= ref_llama_forward_kv(&m, &kv, good, 2, out) == 0 && kv.length == 2;
    ok &= ref_llama_forward_kv(&m, &kv, good, 2, out) == -1 && kv.length == 2;
    ok &= ref_llama_forward_kv(&m, &kv, bad + 1, 1, out) == -1 && kv.length == 2;
    ref_llama other = m;
    other.kv_heads = 2; /* another cache width */
    ok &= ref_llama_forward_kv(&other, &kv, good, 1, out) == -1 && kv.length == 2;
    ref_llama_kv_free(&kv);
    other = m;
    other.heads = 3; /* not a multiple of kv_heads */
    other.kv_heads = 2;
    ok &= !ref_llama_valid(&other);
    other = m;
    other.head_dim = 7;
    ok &= !ref_llama_valid(&other);
    other = m;
    other.rope_theta = 0.0;
    ok &= !ref_llama_valid(&other);
    other = m;
    other.output = NULL;
    ok &= !ref_llama_valid(&other) && ref_llama_kv_init(&kv, &other, 4) == -1;
    other.tied_output = 1;
    ok &= ref_llama_valid(&other);
    other.qkv_bias = 1; /* biases asked for, none given */
    ok &= !ref_llama_valid(&other);
    model_fixture_free(&f);
    assert_true(mcl_test_record_bool("refusals: shapes, tokens, lengths, caches", ok));
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(hand_computed_attention),
        cmocka_unit_test(hand_computed_feed_forward),
        cmocka_unit_test(causality),
        cmocka_unit_test(gqa_equals_repeated_mha),
        cmocka_unit_test(agrees_with_gpt_reference),
        cmocka_unit_test(mixture_of_experts),
        cmocka_unit_test(incremental_decode),
        cmocka_unit_test(file_order_equivalence),
        cmocka_unit_test(refusals),
    };
    mcl_test_begin(argc, argv);
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
