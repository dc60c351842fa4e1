/* Runs a fixed set of operations on fixed inputs and prints an FNV-1a hash of every output,
 * so that two builds can be compared bit for bit on one device. */
#define MOTIFCL_EXPERIMENTAL 1
#include <motifcl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef enum { P_AUTO = 0, P_FLOAT = 1, P_DOT = 2, P_MATRIX = 3 } qpath;
mcl_status mcl_matmul_quant_ex(mcl_context *ctx, mcl_tensor *a, mcl_transpose ta, mcl_tensor *b,
                               mcl_transpose tb, mcl_tensor *bias, mcl_tensor *c, qpath path,
                               qpath *ran);

static uint32_t rng = 12345;
static float frand(void) { rng = rng * 1664525u + 1013904223u; return (float)(rng >> 8) / 16777216.0f * 2.0f - 1.0f; }
static uint64_t fnv(const void *p, size_t n) {
    const unsigned char *b = p; uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) { h ^= b[i]; h *= 1099511628211ull; }
    return h;
}
static mcl_context *ctx;
static mcl_tensor *tens(mcl_dtype dt, uint32_t nd, const int64_t *shape) {
    mcl_tensor *t; if (mcl_tensor_create(ctx, dt, nd, shape, &t)) { fprintf(stderr, "create: %s\n", mcl_context_last_error(ctx)); exit(1); } return t;
}
static mcl_tensor *rand_f32(uint32_t nd, const int64_t *shape) {
    mcl_tensor *t = tens(MCL_DTYPE_F32, nd, shape);
    size_t n = (size_t)mcl_tensor_numel(t); float *h = malloc(n * 4);
    for (size_t i = 0; i < n; i++) h[i] = frand();
    mcl_tensor_upload(t, 0, h, n * 4); free(h); return t;
}
static void report(const char *what, mcl_status s, mcl_tensor *t) {
    if (s != MCL_SUCCESS) { printf("%-48s status %s\n", what, mcl_status_string(s)); return; }
    size_t n = mcl_tensor_nbytes(t); void *h = malloc(n);
    mcl_status d = mcl_tensor_download(t, 0, h, n);
    printf("%-48s %016llx%s\n", what, (unsigned long long)fnv(h, n), d ? " (download failed)" : "");
    free(h);
}

int main(void) {
    if (mcl_context_create(NULL, &ctx)) { fprintf(stderr, "no context\n"); return 1; }
    char what[128];
    const mcl_dtype fmts[] = {MCL_DTYPE_Q8_0, MCL_DTYPE_Q4_0, MCL_DTYPE_Q4_K, MCL_DTYPE_Q5_K, MCL_DTYPE_Q6_K};
    const uint32_t shapes[][2] = {{96, 512}, {300, 1024}, {1024, 4096}};
    const uint32_t rowss[] = {1, 2, 3, 5, 8, 9, 64, 200};
    for (int f = 0; f < 5; f++) for (int s = 0; s < 3; s++) {
        uint32_t n = shapes[s][0], k = shapes[s][1];
        int64_t wshape[2] = {n, k};
        float *wf = malloc((size_t)n * k * 4); for (size_t i = 0; i < (size_t)n * k; i++) wf[i] = frand();
        size_t qb = (size_t)n * k / mcl_dtype_block_weights(fmts[f]) * mcl_dtype_block_bytes(fmts[f]);
        void *qh = malloc(qb); mcl_quantize(fmts[f], wf, qh, (int64_t)n * k);
        mcl_tensor *w = tens(fmts[f], 2, wshape); mcl_tensor_upload(w, 0, qh, qb);
        int64_t bshape[1] = {n}; mcl_tensor *bias = rand_f32(1, bshape);
        for (int r = 0; r < 8; r++) {
            uint32_t m = rowss[r];
            if (s == 2 && m > 9 && m != 200) continue;
            int64_t as[2] = {m, k}, cs[2] = {m, n};
            mcl_tensor *a = rand_f32(2, as);
            for (int p = 0; p < 4; p++) {
                mcl_tensor *c = tens(MCL_DTYPE_F32, 2, cs);
                qpath ran = 0;
                mcl_status st = mcl_matmul_quant_ex(ctx, a, MCL_NO_TRANSPOSE, w, MCL_TRANSPOSE, (r & 1) ? bias : NULL, c, (qpath)p, &ran);
                snprintf(what, sizeof what, "q %s %ux%u m=%u path=%d ran=%d", mcl_dtype_name(fmts[f]), n, k, m, p, (int)ran);
                report(what, st, c);
                mcl_tensor_destroy(c);
            }
            mcl_tensor_destroy(a);
        }
        int64_t dshape[2] = {n, k}; mcl_tensor *dq = tens(MCL_DTYPE_F32, 2, dshape);
        snprintf(what, sizeof what, "dequant %s %ux%u", mcl_dtype_name(fmts[f]), n, k);
        report(what, mcl_dequantize_tensor(ctx, w, dq), dq);
        mcl_tensor_destroy(dq); mcl_tensor_destroy(w); mcl_tensor_destroy(bias); free(wf); free(qh);
    }
    /* f32 matmuls: gemv rows 1..8, gemm shapes, transposes, batches */
    const uint32_t mm[][3] = {{1, 300, 1024}, {3, 300, 1024}, {8, 4096, 512}, {5, 1000, 333}, {64, 256, 512}, {300, 513, 129}, {512, 512, 4096}, {17, 64, 1000}};
    for (int i = 0; i < 8; i++) for (int t = 0; t < 3; t++) {
        uint32_t m = mm[i][0], n = mm[i][1], k = mm[i][2];
        int ta = t == 2, tb = t == 1;
        int64_t as[2] = {ta ? k : m, ta ? m : k}, bs[2] = {tb ? n : k, tb ? k : n}, cs[2] = {m, n};
        mcl_tensor *a = rand_f32(2, as), *b = rand_f32(2, bs), *c = tens(MCL_DTYPE_F32, 2, cs);
        snprintf(what, sizeof what, "f32 %ux%ux%u ta=%d tb=%d", m, n, k, ta, tb);
        report(what, mcl_matmul(ctx, a, ta, b, tb, NULL, c), c);
        mcl_tensor_destroy(a); mcl_tensor_destroy(b); mcl_tensor_destroy(c);
    }
    { int64_t as[3] = {4, 33, 70}, bs[3] = {4, 70, 50}, cs[3] = {4, 33, 50};
      mcl_tensor *a = rand_f32(3, as), *b = rand_f32(3, bs), *c = tens(MCL_DTYPE_F32, 3, cs);
      report("f32 batched 4x33x50x70", mcl_matmul(ctx, a, 0, b, 0, NULL, c), c);
      mcl_tensor_destroy(a); mcl_tensor_destroy(b); mcl_tensor_destroy(c); }
    /* rows */
    { int64_t s[2] = {37, 1000}; mcl_tensor *x = rand_f32(2, s), *y = tens(MCL_DTYPE_F32, 2, s);
      int64_t ws[1] = {1000}; mcl_tensor *wt = rand_f32(1, ws);
      report("softmax", mcl_softmax(ctx, x, 0.7f, 0, y), y);
      report("rmsnorm", mcl_rmsnorm(ctx, x, wt, 1e-5f, y), y);
      mcl_tensor_destroy(x); mcl_tensor_destroy(y); mcl_tensor_destroy(wt); }
    /* attention, GQA, causal */
    { int64_t qs[4] = {2, 8, 77, 32}, ks[4] = {2, 2, 77, 32};
      mcl_tensor *q = rand_f32(4, qs), *k = rand_f32(4, ks), *v = rand_f32(4, ks), *o = tens(MCL_DTYPE_F32, 4, qs);
      mcl_attention_desc d = {.size = sizeof d, .causal = 1};
      report("attention gqa causal", mcl_attention(ctx, q, k, v, &d, o), o);
      mcl_tensor_destroy(q); mcl_tensor_destroy(k); mcl_tensor_destroy(v); mcl_tensor_destroy(o); }
    /* GPT: a few training steps */
    {
#if MOTIFCL_VERSION_MAJOR >= 1
      mcl_gpt_desc cfg = {
#else
      mcl_gpt_config cfg = {
#endif
        .size = sizeof cfg, .vocab = 65, .dim = 64, .layers = 2, .heads = 4, .hidden = 160, .max_seq = 32, .tied_head = 1};
      mcl_gpt *g; mcl_status st = mcl_gpt_create(ctx, &cfg, 7, &g);
      if (st) { printf("gpt create %s\n", mcl_status_string(st)); }
      else {
        int64_t ts[2] = {4, 32}, ls[1] = {1};
        mcl_tensor *tok = tens(MCL_DTYPE_I32, 2, ts), *tgt = tens(MCL_DTYPE_I32, 2, ts), *loss = tens(MCL_DTYPE_F32, 1, ls);
        int32_t h[128], h2[128]; for (int i = 0; i < 128; i++) { h[i] = (i * 7 + 3) % 65; h2[i] = (i * 11 + 5) % 65; }
        mcl_tensor_upload(tok, 0, h, sizeof h); mcl_tensor_upload(tgt, 0, h2, sizeof h2);
        for (int s2 = 1; s2 <= 3; s2++) {
            mcl_adamw_desc ad = {.size = sizeof ad, .lr = 1e-3f, .weight_decay = 0.1f, .step = s2};
            mcl_gpt_set_optimizer(g, &ad, 1.0f);
            mcl_gpt_forward(g, tok, tgt, loss); mcl_gpt_backward(g); mcl_gpt_step(g);
            snprintf(what, sizeof what, "gpt loss step %d", s2); report(what, MCL_SUCCESS, loss);
        }
        report("gpt params", MCL_SUCCESS, mcl_gpt_parameters(g));
        mcl_tensor_destroy(tok); mcl_tensor_destroy(tgt); mcl_tensor_destroy(loss); mcl_gpt_destroy(g);
      } }
    printf("validation errors %llu\n", (unsigned long long)mcl_context_validation_errors(ctx));
    mcl_context_destroy(ctx);
    return 0;
}
