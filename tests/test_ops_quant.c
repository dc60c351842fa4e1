/* Block-quantised weights on the GPU: mcl_dequantize_tensor and mcl_matmul with a Q8_0, Q4_0,
 * Q4_K, Q5_K or Q6_K weight, on both paths (float: dequantize in the shader; integer dot: a
 * quantized to 8 bits, packed int8 products), against CPU references; and the device layout
 * (Q8_0, Q4_0 and Q6_K keep their d apart on the device): GGUF bytes uploaded and downloaded
 * in arbitrary ranges come back as they went.
 *
 * Weights are random bytes with their fp16 scale fields set to random finite halves (a tenth
 * of them subnormal, some negative), so every code value and scale bit pattern occurs; a
 * special block adds zero, -0, the largest half, the smallest subnormal, inf and NaN scales.
 * Shapes cross every boundary the kernels have: one and several blocks per row (K = 32, 64, 96,
 * 4128 for Q8_0/Q4_0; 256, 512, 4352 for the K types), GEMV workgroups of rows (N = 1, 5, 37,
 * 67, 300, 1031: the last workgroup is partial), GEMM tiles of 64 and 128 with partial edges
 * and many K steps, rows 1..8 (GEMV) and 67, 300 (GEMM), batched a, bias on and off, and
 * odd numbers of blocks (the d area of Q8_0/Q4_0/Q6_K then ends in half a word).
 *
 * The GEMV (shaders/gemv_q.glsl) reads each row along K in pieces, T lanes of a row group
 * a piece each per round; gemv_layouts (and dot_path) pick K so that every case of it occurs,
 * with 1..8 rows of x: rows whose pieces fill whole rounds and rows that end in a partial
 * round (lanes past the row counted zero), a row shorter than one round (K = 96), odd block
 * counts per row (K = 96, 4128, 4160, 768, 9984), one and several rounds per lane (K = 256 ..
 * 10240). At one row of x (and on the dot path)
 * the row groups stream on their own; at several rows of x the float path's rounds go in step
 * with x staged in shared memory, the last round's stage zero-filled past K (so do Q4_K's and
 * Q5_K's at one row). mcl_matmul_multi (several weights, one input) is held to the same
 * references, product by product. Run under
 * MOTIFCL_DEVICE_PROFILE=polaris, the same cases take the wave64 plan (64 lanes a row group
 * at one row of x).
 *
 * Tolerances:
 *  - dequantize: bit for bit (NaN matches NaN). Every product in the formulas is exact in f32
 *    (at most 11 bits of fp16 scale x 8 of sub-scale x 6 of code) and the only rounding is the
 *    single subtraction of Q4_K/Q5_K's min, so any correct evaluation order gives the CPU
 *    reference's bits, provided fp16 subnormals are decoded exactly (the kernels use integer
 *    operations for that).
 *  - float path matmul: NMSE 1e-9 against W dequantized by the CPU reference and multiplied in
 *    double. The weights are exact, so only the f32 summation of K <= 4352 terms differs
 *    (relative error ~ eps * sqrt(K) ~ 1e-5, NMSE ~ 1e-10 at worst); an indexing mistake gives
 *    NMSE near 1, one wrong scale in a million weights ~ 1e-5.
 *  - integer-dot path: NMSE 1e-9 against the same double product with a replaced by its 8-bit
 *    quantization as the GPU made it (codes and scales downloaded): the integer sums are exact
 *    and only the f32 scaling and summation differ. The quantizer itself is checked against a
 *    CPU quantizer (scales bit for bit; codes may differ by 1 where x / d lies within a few ulp
 *    of a rounding boundary, at most 1 in 1000), and the whole path against the unquantized f32
 *    reference with NMSE 1e-4: rounding uniform inputs to 8 bits per 32 values leaves a relative
 *    RMS error of about (amax / 127) / sqrt(12) / rms(x) = 0.4%, i.e. NMSE ~ 1.6e-5.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/ops_internal.h"
#include "quant/quant.h"
#include "ref/ref.h"
#include "vk/inspect.h"

#define NMSE_FLOAT 1e-9
#define NMSE_DOT 1e-9
#define NMSE_DOT_VS_F32 1e-4
/* The matrix path rounds a and the dequantized W to f16 (2^-11 relative): about 2e-7 on
 * these products' random operands. */
#define NMSE_MATRIX 1e-5

static mcl_context *ctx;

/* The switches of the quantized matmul are set through mcl_test_switch_env: a context reads
 * the environment when it is created, and this one lives for the suite. */
static int has_dot;    /* integer dot product enabled on this context */
static int has_matrix; /* cooperative matrices enabled on this context */

static const mcl_dtype all_formats[] = {MCL_DTYPE_Q8_0, MCL_DTYPE_Q4_0, MCL_DTYPE_Q4_K,
                                        MCL_DTYPE_Q5_K, MCL_DTYPE_Q6_K};
#define FORMAT_COUNT (sizeof all_formats / sizeof all_formats[0])

/* ---------------------------------------------------------------------------------------
 * Weights
 * ------------------------------------------------------------------------------------- */

static uint32_t rng;

static uint32_t next_u32(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}

/* Byte offsets of the fp16 scale fields of a block (docs/quant-formats.md); -1 ends. */
static const int *scale_fields(mcl_dtype dtype)
{
    static const int d_first[] = {0, -1}, d_dmin[] = {0, 2, -1}, d_last[] = {208, -1};
    switch (dtype) {
    case MCL_DTYPE_Q4_K:
    case MCL_DTYPE_Q5_K:
        return d_dmin;
    case MCL_DTYPE_Q6_K:
        return d_last;
    default:
        return d_first;
    }
}

/* A random finite half: magnitude 2^-14 .. 2^-4 (normal), or a subnormal one time in ten;
 * negative one time in four. */
static uint16_t random_half(void)
{
    uint32_t r = next_u32();
    uint16_t mant = (uint16_t)((r >> 8) & 0x3FF);
    uint16_t bits = r % 10 == 0 ? (uint16_t)(mant | 1) : (uint16_t)(((1 + r % 11) << 10) | mant);
    return (uint16_t)(((r >> 20) % 4 == 0 ? 0x8000 : 0) | bits);
}

static void put16(uint8_t *p, uint16_t v)
{
    p[0] = (uint8_t)(v & 0xFF);
    p[1] = (uint8_t)(v >> 8);
}

/* n rows of k weights of `dtype` as random bytes with random finite scales. */
static uint8_t *random_blocks(mcl_dtype dtype, int64_t n, int64_t k, uint32_t seed)
{
    size_t bytes = mcl_quant_row_size(dtype, n * k);
    size_t block = mcl_dtype_block_bytes(dtype);
    uint8_t *q = malloc(bytes);
    assert_non_null(q);
    rng = seed * 2654435761u + 1;
    for (size_t i = 0; i < bytes; i++)
        q[i] = (uint8_t)(next_u32() >> 24);
    for (size_t b = 0; b < bytes / block; b++) {
        for (const int *f = scale_fields(dtype); *f >= 0; f++)
            put16(q + b * block + *f, random_half());
    }
    return q;
}

/* A block tensor holding `bytes`. */
static mcl_tensor *upload_blocks(mcl_dtype dtype, uint32_t ndim, const int64_t *shape,
                                 const uint8_t *bytes)
{
    return mcl_test_tensor(ctx, dtype, ndim, shape, bytes);
}

static mcl_tensor *make_f32(const float *data, uint32_t ndim, const int64_t *shape)
{
    return mcl_test_tensor(ctx, MCL_DTYPE_F32, ndim, shape, data);
}

static float *cpu_dequantize(mcl_dtype dtype, const uint8_t *q, int64_t count)
{
    float *w = malloc((size_t)count * sizeof *w);
    assert_non_null(w);
    assert_mcl_ok(mcl_dequantize(dtype, q, w, count));
    return w;
}

/* ---------------------------------------------------------------------------------------
 * Dequantize: bit for bit
 * ------------------------------------------------------------------------------------- */

/* Positions where got and want differ in bits (a NaN matches any NaN); prints a few. */
static int64_t bit_mismatches(const char *what, const float *got, const float *want, int64_t n)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t g, w;
        memcpy(&g, &got[i], 4);
        memcpy(&w, &want[i], 4);
        if (g != w && !(isnan(got[i]) && isnan(want[i]))) {
            if (bad < 3)
                printf("  %s: element %lld is %.9g (0x%08x), reference %.9g (0x%08x)\n", what,
                       (long long)i, (double)got[i], g, (double)want[i], w);
            bad++;
        }
    }
    return bad;
}

/* Dequantize q on the GPU with one decoder (pb: pieces of pb bytes of codes, 0: the GEMM's
 * 4-wide decoder); returns mismatches against `want`. */
static int64_t gpu_dequantize_mismatches(mcl_dtype dtype, uint32_t ndim, const int64_t *shape,
                                         const uint8_t *q, const float *want, uint32_t pb,
                                         const char *what)
{
    int64_t count = 1;
    for (uint32_t i = 0; i < ndim; i++)
        count *= shape[i];
    mcl_tensor *tq = upload_blocks(dtype, ndim, shape, q);
    mcl_tensor *out = make_f32(NULL, ndim, shape);
    float *got = malloc((size_t)count * sizeof *got);
    assert_non_null(got);
    assert_mcl_ok(mcl_dequantize_tensor_ex(ctx, tq, out, pb));
    assert_mcl_ok(mcl_tensor_download(out, 0, got, (uint64_t)count * 4));
    int64_t bad = bit_mismatches(what, got, want, count);
    free(got);
    mcl_tensor_destroy(tq);
    mcl_tensor_destroy(out);
    return bad;
}

/* Scales that decoders get wrong: zero, -0, the largest half, the smallest subnormal, the
 * largest subnormal, a negative subnormal, inf, NaN. */
static const uint16_t special_halves[] = {0x0000, 0x8000, 0x7BFF, 0x0001,
                                          0x03FF, 0x8201, 0x7C00, 0x7E00};
#define SPECIAL_COUNT (sizeof special_halves / sizeof special_halves[0])

static void dequantize_exact(void **state)
{
    (void)state;
    for (size_t f = 0; f < FORMAT_COUNT; f++) {
        mcl_dtype dtype = all_formats[f];
        int64_t qk = mcl_dtype_block_weights(dtype);
        /* [37, 3 blocks]: 111 blocks, an odd number (the d area ends in half a word);
         * [2, 3, 129 or 17 blocks]: a 3-D tensor with long rows. */
        int64_t s2[2] = {37, 3 * qk}, s3[3] = {2, 3, qk == 32 ? 129 * qk : 17 * qk};
        const int64_t *shapes[2] = {s2, s3};
        uint32_t ndims[2] = {2, 3};
        for (int s = 0; s < 2; s++) {
            int64_t count = 1;
            for (uint32_t i = 0; i < ndims[s]; i++)
                count *= shapes[s][i];
            uint8_t *q = random_blocks(dtype, 1, count, (uint32_t)(100 + 10 * f + s));
            if (s == 0) {
                /* The first blocks get the special scales, one per block, in every scale
                 * field (each code pattern then meets inf and NaN too). */
                size_t block = mcl_dtype_block_bytes(dtype);
                for (size_t b = 0; b < SPECIAL_COUNT; b++) {
                    for (const int *fld = scale_fields(dtype); *fld >= 0; fld++)
                        put16(q + b * block + *fld, special_halves[(b + (size_t)*fld) %
                                                                   SPECIAL_COUNT]);
                }
            }
            float *want = cpu_dequantize(dtype, q, count);
            /* The GEMM's decoder, and the GEMVs' pieces of every size the format has. */
            static const uint32_t pbs[] = {0, 8, 16, 32};
            for (size_t i = 0; i < sizeof pbs / sizeof pbs[0]; i++) {
                uint32_t pb = pbs[i];
                int kpair = dtype == MCL_DTYPE_Q4_K || dtype == MCL_DTYPE_Q5_K;
                if ((dtype == MCL_DTYPE_Q8_0 && pb == 8) || (dtype == MCL_DTYPE_Q4_0 && pb == 32) ||
                    (kpair && pb == 8) || (dtype == MCL_DTYPE_Q6_K && pb != 0 && pb != 16))
                    continue;
                char name[128];
                snprintf(name, sizeof name, "dequantize %s %s %lld weights, %s decoder %u",
                         mcl_dtype_name(dtype), s == 0 ? "[37, K]" : "[2, 3, K]",
                         (long long)count, pb ? "piece (GEMV)" : "4-wide (GEMM)", pb);
                int64_t bad = gpu_dequantize_mismatches(dtype, ndims[s], shapes[s], q, want,
                                                        pb, name);
                printf("%-70s %lld mismatches\n", name, (long long)bad);
                if (!mcl_test_record(name, "mismatched elements", (double)bad, 0.0))
                    fail_msg("%s: %lld elements differ from the CPU reference", name,
                             (long long)bad);
            }
            free(want);
            free(q);
        }
    }
}

/* ---------------------------------------------------------------------------------------
 * The device layout
 * ------------------------------------------------------------------------------------- */

/* GGUF bytes in, GGUF bytes out, whatever the ranges: a tensor of 37 x 3 blocks (odd) is
 * uploaded in pieces of 1 to 97 bytes (ends inside bodies and inside d values), downloaded
 * whole and in pieces; its device memory, read raw through a byte view, is the split layout
 * (bodies, then d values) for Q8_0, Q4_0 and Q6_K and the GGUF bytes for Q4_K and Q5_K.
 * Control: the raw device bytes of a split type are not the GGUF bytes. */
static void device_layout(void **state)
{
    (void)state;
    for (size_t f = 0; f < FORMAT_COUNT; f++) {
        mcl_dtype dtype = all_formats[f];
        int64_t shape[2] = {37, 3 * mcl_dtype_block_weights(dtype)};
        size_t n = mcl_quant_row_size(dtype, shape[0] * shape[1]);
        uint8_t *q = random_blocks(dtype, shape[0], shape[1], (uint32_t)(50 + f));
        uint8_t *back = malloc(n), *raw = malloc(n), *want = malloc(n);
        assert_true(back && raw && want);
        mcl_tensor *t = upload_blocks(dtype, 2, shape, NULL);
        for (size_t at = 0, step = 1; at < n; at += step, step = step % 97 + 13)
            assert_mcl_ok(mcl_tensor_upload(t, at, q + at, at + step <= n ? step : n - at));
        assert_mcl_ok(mcl_tensor_download(t, 0, back, n));
        int same = memcmp(back, q, n) == 0;
        memset(back, 0, n);
        for (size_t at = 0, step = 5; at < n; at += step, step = step % 89 + 11)
            assert_mcl_ok(mcl_tensor_download(t, at, back + at, at + step <= n ? step : n - at));
        same = same && memcmp(back, q, n) == 0;
        mcl_tensor *view = NULL;
        assert_mcl_ok(mcl_tensor_bytes_view(t, 0, n, &view));
        assert_mcl_ok(mcl_tensor_download(view, 0, raw, n));
        mcl_tensor_destroy(view);
        mcl_quant_layout l;
        assert_true(mcl_quant_layout_of(dtype, &l));
        if (l.split)
            mcl_quant_split(&l, 0, q, n, want);
        else
            memcpy(want, q, n);
        int laid_out = memcmp(raw, want, n) == 0;
        int control = !l.split || memcmp(raw, q, n) != 0;
        char name[96];
        snprintf(name, sizeof name, "device layout %s: GGUF bytes round trip in pieces",
                 mcl_dtype_name(dtype));
        mcl_test_record_bool(name, same);
        snprintf(name, sizeof name, "device layout %s: device bytes %s", mcl_dtype_name(dtype),
                 l.split ? "split (bodies, then d values)" : "as GGUF");
        mcl_test_record_bool(name, laid_out && control);
        if (!same || !laid_out || !control)
            fail_msg("%s: round trip %d, layout %d, control %d", mcl_dtype_name(dtype), same,
                     laid_out, control);
        /* mcl_copy moves the device bytes as they are: the copy downloads the same GGUF
         * bytes (a shape of 4 x 2 blocks: a whole number of words for every format). */
        int64_t s42[2] = {4, 2 * mcl_dtype_block_weights(dtype)};
        size_t n42 = mcl_quant_row_size(dtype, s42[0] * s42[1]);
        mcl_tensor *a = upload_blocks(dtype, 2, s42, q), *b = upload_blocks(dtype, 2, s42, NULL);
        assert_mcl_ok(mcl_copy(ctx, a, b));
        assert_mcl_ok(mcl_tensor_download(b, 0, back, n42));
        int copied = memcmp(back, q, n42) == 0;
        snprintf(name, sizeof name, "device layout %s: mcl_copy keeps the GGUF bytes",
                 mcl_dtype_name(dtype));
        mcl_test_record_bool(name, copied);
        if (!copied)
            fail_msg("%s", name);
        mcl_tensor_destroy(a);
        mcl_tensor_destroy(b);
        mcl_tensor_destroy(t);
        free(q);
        free(back);
        free(raw);
        free(want);
    }
}

/* ---------------------------------------------------------------------------------------
 * Matmul
 * ------------------------------------------------------------------------------------- */

typedef struct mm_case {
    int64_t batch, m, n, k; /* a is [batch, m, k] (2-D when batch is 1), W [n, k] */
    int bias;
} mm_case;

typedef struct mm_data {
    mm_case p;
    int64_t rows;
    uint8_t *q;   /* W's blocks */
    float *w;     /* W dequantized by the CPU reference, [n, k] */
    float *a, *bias;
    mcl_tensor *ta, *tw, *tbias, *tc;
} mm_data;

static void mm_setup(mm_data *d, mcl_dtype dtype, const mm_case *p, uint32_t seed)
{
    memset(d, 0, sizeof *d);
    d->p = *p;
    d->rows = p->batch * p->m;
    d->q = random_blocks(dtype, p->n, p->k, seed);
    d->w = cpu_dequantize(dtype, d->q, p->n * p->k);
    d->a = malloc((size_t)(d->rows * p->k) * sizeof(float));
    d->bias = malloc((size_t)p->n * sizeof(float));
    assert_true(d->a && d->bias);
    mcl_fill_random(d->a, (size_t)(d->rows * p->k), seed + 1, -1, 1);
    mcl_fill_random(d->bias, (size_t)p->n, seed + 2, -1, 1);
    int64_t sa[3] = {p->batch, p->m, p->k}, sc[3] = {p->batch, p->m, p->n}, sw[2] = {p->n, p->k};
    int batched = p->batch > 1;
    d->ta = make_f32(d->a, batched ? 3 : 2, batched ? sa : sa + 1);
    d->tc = make_f32(NULL, batched ? 3 : 2, batched ? sc : sc + 1);
    d->tw = upload_blocks(dtype, 2, sw, d->q);
    d->tbias = p->bias ? make_f32(d->bias, 1, &p->n) : NULL;
}

static void mm_free(mm_data *d)
{
    mcl_tensor_destroy(d->ta);
    mcl_tensor_destroy(d->tw);
    mcl_tensor_destroy(d->tbias);
    mcl_tensor_destroy(d->tc);
    free(d->q);
    free(d->w);
    free(d->a);
    free(d->bias);
}

/* Run the product along `path`, check which path ran, return the output (caller frees). */
static float *mm_run(mm_data *d, mcl_quant_path path)
{
    mcl_quant_path ran = MCL_QUANT_PATH_AUTO;
    assert_mcl_ok(mcl_matmul_quant_ex(ctx, d->ta, MCL_NO_TRANSPOSE, d->tw, MCL_TRANSPOSE,
                                      d->tbias, d->tc, path, &ran));
    assert_int_equal(ran, path);
    float *got = malloc((size_t)(d->rows * d->p.n) * sizeof *got);
    assert_non_null(got);
    assert_mcl_ok(mcl_tensor_download(d->tc, 0, got, (uint64_t)(d->rows * d->p.n) * 4));
    return got;
}

/* c = a W^T (+ bias) in double from float operands, rounded to float. */
static float *ref_product(const mm_data *d, const float *a)
{
    float *want = malloc((size_t)(d->rows * d->p.n) * sizeof *want);
    assert_non_null(want);
    ref_matmul_f32(a, 0, d->w, 1, d->p.bias ? d->bias : NULL, want, 1, d->rows, d->p.n,
                   d->p.k, 1);
    return want;
}

static void case_name(char *name, size_t size, const char *what, mcl_dtype dtype,
                      const mm_case *p)
{
    snprintf(name, size, "%s %s batch=%lld m=%lld n=%lld k=%lld%s", what, mcl_dtype_name(dtype),
             (long long)p->batch, (long long)p->m, (long long)p->n, (long long)p->k,
             p->bias ? " bias" : "");
}

static void expect_nmse(const char *name, double nmse, double tolerance)
{
    printf("%-70s nmse %.3g\n", name, nmse);
    if (!mcl_test_record(name, "nmse", nmse, tolerance))
        fail_msg("%s: nmse %g above %g", name, nmse, tolerance);
}

static void check_float_path(mcl_dtype dtype, const mm_case *p, uint32_t seed)
{
    mm_data d;
    mm_setup(&d, dtype, p, seed);
    float *got = mm_run(&d, MCL_QUANT_PATH_FLOAT);
    float *want = ref_product(&d, d.a);
    char name[160];
    case_name(name, sizeof name, d.rows <= 8 ? "float gemv" : "float gemm", dtype, p);
    expect_nmse(name, mcl_nmse(got, want, (size_t)(d.rows * p->n)), NMSE_FLOAT);
    free(got);
    free(want);
    mm_free(&d);
}

/* Block sizes in K, per family: Q8_0/Q4_0 (32) and the K types (256). */
static int64_t kq(mcl_dtype dtype, int64_t small, int64_t large)
{
    return mcl_dtype_block_weights(dtype) == 32 ? small : large;
}

static void gemv_float(void **state)
{
    (void)state;
    for (size_t f = 0; f < FORMAT_COUNT; f++) {
        mcl_dtype t = all_formats[f];
        const mm_case cases[] = {
            {1, 1, 1031, kq(t, 4128, 4352), 1}, /* long rows: many rounds per lane */
            {1, 3, 37, kq(t, 96, 512), 0},      /* 37 x 3 blocks: an odd number */
            {2, 4, 1031, kq(t, 32, 256), 1},    /* batched a folds into 8 rows; one block */
            {1, 1, 1, kq(t, 64, 256), 0},       /* one output */
            {1, 3, 5, kq(t, 4128, 4352), 1},    /* a partial workgroup of rows */
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            check_float_path(t, &cases[i], (uint32_t)(1000 + 10 * f + i));
    }
}

/* K per (format, case): each kind of GEMV row (see the header). */
static int64_t layout_k(mcl_dtype t, int i)
{
    static const int64_t k32[4] = {4352, 384, 4160, 96}, kk[4] = {768, 10240, 256, 4352};
    static const int64_t k6[4] = {768, 10240, 9984, 256};
    if (mcl_dtype_block_weights(t) == 32)
        return k32[i % 4];
    return t == MCL_DTYPE_Q6_K ? k6[i % 4] : kk[i % 4];
}

static void gemv_layouts(void **state)
{
    (void)state;
    static const int64_t ns[4] = {67, 300, 37, 5};
    for (size_t f = 0; f < FORMAT_COUNT; f++) {
        mcl_dtype t = all_formats[f];
        for (int rows = 1; rows <= 8; rows++) {
            /* 6 rows as a batch of 2 x 3: batched a folds into rows. */
            mm_case c = {rows == 6 ? 2 : 1, rows == 6 ? 3 : rows, ns[rows % 4],
                         layout_k(t, rows), rows % 2};
            check_float_path(t, &c, (uint32_t)(7000 + 10 * f + (uint32_t)rows));
        }
    }
}

static void check_dot_path(mcl_dtype dtype, const mm_case *p, uint32_t seed);

/* MOTIFCL_QUANT_GEMV_PLAN (a tuning override) reaches shapes the plan would not choose:
 * pieces of 8 and 32 bytes (Q4_K and Q5_K at 1 and 5 rows), one row group per workgroup,
 * narrow row groups, 1, 4 and 8 rows of W,
 * U = 1, 2 or 3 pieces in flight, x staged or not at several rows of x (plan i runs at
 * i % 8 + 1 rows). Plans that cannot fit (more lanes than a workgroup holds; fewer lanes than
 * pieces per block, for some formats; a piece size a format does not have; staging on the
 * integer-dot path) are ignored. Every one must still compute the product, on both paths. */
static void gemv_plan_override(void **state)
{
    (void)state;
    static const char *const plans[] = {
        "pb=8,u=3,nr=1",           "st=0,nr=8",
        "st=1,t=8,g=32,u=2",       "st=1,t=32,g=2,nr=1,u=3,pb=8",
        "pb=32,t=16,g=8,nr=4,u=1", "st=0,t=64,g=1,u=1,nr=1",
        "pb=8,t=8,g=4",            "t=100000",
        "pb=32,nr=2,u=2",
    };
    for (size_t i = 0; i < sizeof plans / sizeof plans[0]; i++) {
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMV_PLAN", plans[i]);
        for (size_t f = 0; f < FORMAT_COUNT; f++) {
            mcl_dtype t = all_formats[f];
            mm_case c = {1, 1 + (int64_t)(i % 8), 37, 4352, (int)(i % 2)};
            check_float_path(t, &c, (uint32_t)(9000 + 10 * i + f));
            if (has_dot)
                check_dot_path(t, &c, (uint32_t)(9500 + 10 * i + f));
        }
    }
    mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMV_PLAN", NULL);

    /* Both ways the float path at one row of x makes codes floats, whichever this device
     * takes by itself: conversion (cvt=1, AMD's and the polaris profile's) with the format's
     * offset taken off once per piece, and or-ing into a mantissa (cvt=0, the others'); with
     * x staged (st=1) and with 8 rows of W and 2 pieces in flight. The plan query shows the
     * override taken. */
    static const char *const decodings[] = {"cvt=0", "cvt=1", "cvt=1,nr=8,u=2",
                                            "cvt=1,st=1,t=32"};
    for (size_t i = 0; i < sizeof decodings / sizeof decodings[0]; i++) {
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMV_PLAN", decodings[i]);
        for (size_t f = 0; f < FORMAT_COUNT; f++) {
            mcl_gemv_plan p;
            assert_mcl_ok(mcl_quant_gemv_plan(ctx, 0, all_formats[f], 1, 37, 4352, &p));
            assert_int_equal(p.cvt, i > 0);
            mm_case c = {1, 1, 37, 4352, (int)(i % 2)};
            check_float_path(all_formats[f], &c, (uint32_t)(9800 + 10 * i + f));
        }
    }
    mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMV_PLAN", NULL);
}

/* The GEMV plan rule at the two shapes its constants were measured at on the H200 (W
 * 14336x4096 and 4096x14336, one row of x; src/ops/quant_plan.c, docs/tuning.md): lanes
 * along K per row group, on the integer-dot path and the float path, for devices that run
 * subgroups narrower than 64 (the H200, Lavapipe; Vulkan guarantees the 128 invocations a
 * workgroup the rule starts from) and for the polaris profile (waves of 64: the traits' AMD
 * wave64 class). At K = 4096 a lane keeps four rounds of pieces (32 lanes where the rounds
 * counted before doubling gave 64 and two: with SPAN_MIN_ROUNDS = 2, the rule as it was, this
 * test fails). Codes are made floats by conversion on the float path at one row of x on AMD,
 * under the polaris profile and for Q5_K, nowhere else. Then what the plan query refuses. */
static void gemv_plans(void **state)
{
    (void)state;
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(ctx, &info));
    const int wave64 = strcmp(info.profile, "polaris") == 0 ||
                       (info.vendor_id == 0x1002u && info.subgroup_size >= 64);
    const int amd = strcmp(info.profile, "polaris") == 0 || info.vendor_id == 0x1002u;
    /* Lanes at 14336x4096 / 4096x14336: [wave64][path: float, dot][format]. */
    static const uint32_t lanes[2][2][FORMAT_COUNT][2] = {
        {{{32, 128}, {32, 128}, {32, 128}, {64, 64}, {32, 32}},
         {{32, 64}, {32, 128}, {32, 128}, {32, 128}, {16, 16}}},
        {{{64, 128}, {64, 128}, {64, 128}, {64, 64}, {64, 64}},
         {{64, 64}, {64, 128}, {64, 128}, {64, 128}, {64, 64}}},
    };
    static const uint32_t shapes[2][2] = {{14336, 4096}, {4096, 14336}};
    for (int dot = 0; dot < 2; dot++) {
        for (size_t f = 0; f < FORMAT_COUNT; f++) {
            for (int s = 0; s < 2; s++) {
                mcl_gemv_plan p;
                assert_mcl_ok(mcl_quant_gemv_plan(ctx, dot, all_formats[f], 1, shapes[s][0],
                                                  shapes[s][1], &p));
                const uint32_t want = lanes[wave64][dot][f][s];
                if (p.t != want)
                    printf("ERROR: gemv plan %s %ux%u, 1 row, %s: %u lanes, want %u\n",
                           mcl_dtype_name(all_formats[f]), shapes[s][0], shapes[s][1],
                           dot ? "dot" : "float", p.t, want);
                assert_int_equal(p.t, want);
                assert_true((uint64_t)p.t * p.g <= info.max_compute_workgroup_invocations);
                /* Conversion of codes on AMD and under the polaris profile, and for Q5_K,
                 * on the float path. */
                assert_int_equal(p.cvt, !dot && (amd || all_formats[f] == MCL_DTYPE_Q5_K));
                /* Q4_0's integer-dot row of 128 blocks at 32 lanes: one round of four pieces
                 * a lane; three and a half rounds at 4096x14336 keep one piece a round. */
                if (dot && all_formats[f] == MCL_DTYPE_Q4_0)
                    assert_int_equal(p.u, shapes[s][1] == 4096 && p.t == 32 ? 4 : 1);
                assert_mcl_ok(mcl_quant_gemv_plan(ctx, dot, all_formats[f], 8, shapes[s][0],
                                                  shapes[s][1], &p));
                assert_int_equal(p.cvt, 0);
            }
        }
    }
    mcl_gemv_plan p;
    assert_int_equal(mcl_quant_gemv_plan(ctx, 1, MCL_DTYPE_F32, 1, 64, 4096, &p),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_quant_gemv_plan(ctx, 1, MCL_DTYPE_Q4_0, 0, 64, 4096, &p),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_quant_gemv_plan(ctx, 1, MCL_DTYPE_Q4_0, 9, 64, 4096, &p),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_quant_gemv_plan(ctx, 1, MCL_DTYPE_Q4_K, 1, 64, 4096 + 32, &p),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_quant_gemv_plan(ctx, 0, MCL_DTYPE_Q8_0, 1, 0, 4096, &p),
                     MCL_ERROR_INVALID_ARGUMENT);
}

/* The path mcl_matmul takes by itself for `rows` rows of a and a weight of `dtype`. */
static mcl_quant_path auto_path(mcl_dtype dtype, int64_t rows)
{
    return rows > 8 ? mcl_quant_gemm_path_select(ctx, dtype) : mcl_quant_path_select(ctx, dtype);
}

/* mcl_matmul_multi: four weights of different formats and widths on one input, at 3 rows (the
 * GEMV) and 10 (2 x 5, the GEMM), float path, integer-dot path (every format at 3 rows; Q8_0
 * and Q4_0, the formats of its GEMM, at 10) and each weight's own path, that one with a
 * fifth, f32 weight (the first one dequantized); every output against the double
 * reference. Then the arguments it refuses, and a
 * refused call must record nothing: an output it would have written keeps its sentinel. */
static void matmul_multi(void **state)
{
    (void)state;
    enum { W = 4 };
    static const mcl_dtype fmts[W] = {MCL_DTYPE_Q8_0, MCL_DTYPE_Q4_0, MCL_DTYPE_Q4_K,
                                      MCL_DTYPE_Q6_K};
    static const int64_t ns[W] = {67, 300, 37, 5};
    static const mm_case shapes[2] = {{1, 3, 0, 768, 0}, {2, 5, 0, 512, 0}};
    for (int s = 0; s < 2; s++) {
        mm_data d[W];
        const mcl_tensor *ws[W + 1], *bs[W + 1];
        mcl_tensor *cs[W + 1];
        for (int i = 0; i < W; i++) {
            mm_case p = shapes[s];
            p.n = ns[i];
            p.bias = i % 2;
            mm_setup(&d[i], fmts[i], &p, (uint32_t)(11000 + 100 * s + 10 * i));
            /* One input for all: d[0]'s, on the host and on the device. */
            memcpy(d[i].a, d[0].a, (size_t)(d[0].rows * p.k) * sizeof(float));
            ws[i] = d[i].tw;
            bs[i] = d[i].tbias;
            cs[i] = d[i].tc;
        }
        int64_t sw0[2] = {ns[0], shapes[s].k};
        mcl_tensor *w_f32 = make_f32(d[0].w, 2, sw0);
        ws[W] = w_f32;
        bs[W] = NULL;
        int64_t sc0[3] = {shapes[s].batch, shapes[s].m, ns[0]};
        cs[W] = shapes[s].batch > 1 ? make_f32(NULL, 3, sc0) : make_f32(NULL, 2, sc0 + 1);
        for (int run = 0; run < 3; run++) {
            mcl_quant_path path = run == 0 ? MCL_QUANT_PATH_FLOAT
                                  : run == 1 ? MCL_QUANT_PATH_DOT : MCL_QUANT_PATH_AUTO;
            if (path == MCL_QUANT_PATH_DOT && !has_dot)
                continue;
            /* The integer-dot path: every format in the GEMV, Q8_0 and Q4_0 in the GEMM; each
             * one's own: the f32 weight too. */
            uint32_t count = path == MCL_QUANT_PATH_DOT ? (s == 0 ? W : 2)
                             : path == MCL_QUANT_PATH_AUTO ? W + 1 : W;
            assert_mcl_ok(mcl_matmul_multi_ex(ctx, d[0].ta, count, ws, bs, cs, path));
            for (uint32_t i = 0; i < count; i++) {
                const mm_data *di = &d[i < W ? i : 0];
                float *got = malloc((size_t)(di->rows * di->p.n) * sizeof *got);
                assert_non_null(got);
                assert_mcl_ok(mcl_tensor_download(cs[i], 0, got,
                                                  (uint64_t)(di->rows * di->p.n) * 4));
                float *want = ref_product(di, di->a);
                /* The f32 weight's product is mcl_matmul's f32 one, exact. */
                int exact = path == MCL_QUANT_PATH_FLOAT || i == W ||
                            (path == MCL_QUANT_PATH_AUTO &&
                             auto_path(fmts[i], di->rows) == MCL_QUANT_PATH_FLOAT);
                char name[200], what[64];
                snprintf(what, sizeof what, "multi (%s path) weight %u of %u",
                         path == MCL_QUANT_PATH_FLOAT ? "float" : path == MCL_QUANT_PATH_DOT
                         ? "dot" : "own", i, count);
                case_name(name, sizeof name, what, i < W ? fmts[i] : MCL_DTYPE_F32, &di->p);
                expect_nmse(name, mcl_nmse(got, want, (size_t)(di->rows * di->p.n)),
                            exact ? NMSE_FLOAT : NMSE_DOT_VS_F32);
                free(got);
                free(want);
            }
        }
        if (s == 0) {
            /* Refusals, each before anything is recorded: d[0]'s output keeps a sentinel. */
            size_t n0 = (size_t)(d[0].rows * ns[0]);
            float *sentinel = malloc(n0 * sizeof *sentinel), *back = malloc(n0 * sizeof *back);
            assert_true(sentinel && back);
            for (size_t j = 0; j < n0; j++)
                sentinel[j] = 1234.5f;
            assert_mcl_ok(mcl_tensor_upload(cs[0], 0, sentinel, n0 * 4));
            mcl_tensor *aliased[W] = {cs[0], cs[0], cs[2], cs[3]};
            mcl_tensor *onto_a[W] = {cs[0], d[0].ta, cs[2], cs[3]};
            mcl_tensor *onto_w[W] = {cs[0], d[1].tw, cs[2], cs[3]};
            int64_t si[2] = {300, shapes[s].k};
            mcl_tensor *i32 = NULL;
            mcl_tensor_desc idesc = {.size = sizeof idesc, .dtype = MCL_DTYPE_I32, .ndim = 2,
                                     .shape = {si[0], si[1]}};
            assert_mcl_ok(mcl_tensor_create_ex(ctx, &idesc, &i32));
            const mcl_tensor *i32_w[W] = {ws[0], i32, ws[2], ws[3]};
            /* An f32 weight of the wrong width ([3, K] for an output of 300). */
            const mcl_tensor *narrow_w[W] = {ws[0], d[0].ta, ws[2], ws[3]};
            assert_int_equal(mcl_matmul_multi(ctx, d[0].ta, 0, ws, bs, cs), INVALID);
            assert_int_equal(mcl_matmul_multi(ctx, d[0].ta, MCL_MATMUL_MULTI_MAX + 1, ws, bs, cs),
                             INVALID);
            assert_int_equal(mcl_matmul_multi(ctx, d[0].ta, W, ws, bs, aliased), INVALID);
            assert_int_equal(mcl_matmul_multi(ctx, d[0].ta, W, ws, bs, onto_a), INVALID);
            assert_int_equal(mcl_matmul_multi(ctx, d[0].ta, W, ws, bs, onto_w), INVALID);
            assert_int_equal(mcl_matmul_multi(ctx, d[0].ta, W, i32_w, bs, cs), DTYPE);
            assert_int_equal(mcl_matmul_multi(ctx, d[0].ta, W, narrow_w, bs, cs), SHAPE);
            mcl_tensor_destroy(i32);
            /* The first weight's bias the second one's ([300] for N = 67), others valid. */
            const mcl_tensor *bad_bias[W] = {bs[1], NULL, NULL, NULL};
            assert_int_equal(mcl_matmul_multi(ctx, d[0].ta, W, ws, bad_bias, cs), SHAPE);
            assert_mcl_ok(mcl_tensor_download(cs[0], 0, back, n0 * 4));
            int kept = memcmp(back, sentinel, n0 * 4) == 0;
            if (!mcl_test_record_bool("mcl_matmul_multi: a refused call records nothing", kept))
                fail_msg("a refused mcl_matmul_multi wrote an output");
            free(sentinel);
            free(back);
        }
        for (int i = 0; i < W; i++)
            mm_free(&d[i]);
        mcl_tensor_destroy(w_f32);
        mcl_tensor_destroy(cs[W]);
    }
}

static void gemm_float(void **state)
{
    (void)state;
    for (size_t f = 0; f < FORMAT_COUNT; f++) {
        mcl_dtype t = all_formats[f];
        const mm_case cases[] = {
            {1, 67, 1031, kq(t, 96, 512), 1},  /* 64-wide tiles, partial both ways */
            {3, 100, 37, kq(t, 4128, 4352), 0}, /* batched, 300 rows, many K steps */
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            check_float_path(t, &cases[i], (uint32_t)(2000 + 10 * f + i));
    }
    /* Enough tiles for the 128 x 128 shape, with partial edge tiles. */
    const mm_case big = {1, 300, 4100, 256, 1};
    check_float_path(MCL_DTYPE_Q6_K, &big, 2100);
    /* K split as the override says (the default splits the cases above by 2 to 16): 3 slices
     * of unequal length with a bias added by the reduction, none, and a count out of range
     * (ignored, with a warning). */
    static const char *const slices[] = {"3", "1", "17"};
    for (size_t i = 0; i < sizeof slices / sizeof slices[0]; i++) {
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMM_SLICES", slices[i]);
        mcl_dtype t = all_formats[(i + 1) % FORMAT_COUNT];
        const mm_case c = {1, 20, 67, kq(t, 4128, 4352), 1};
        check_float_path(t, &c, (uint32_t)(2200 + i));
    }
    mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMM_SLICES", NULL);
    /* The inner loop unrolled as the override says: not at all, whole, and a count that does
     * not divide the tile (ignored, with a warning). */
    static const char *const unroll[] = {"1", "16", "3"};
    for (size_t i = 0; i < sizeof unroll / sizeof unroll[0]; i++) {
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMM_UNROLL", unroll[i]);
        mcl_dtype t = all_formats[(i + 2) % FORMAT_COUNT];
        const mm_case c = {1, 70, 131, kq(t, 96, 512), 1};
        check_float_path(t, &c, (uint32_t)(2300 + i));
    }
    mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMM_UNROLL", NULL);
    /* Tiles as the override says: tall (16 rows of a an invocation), wide, narrow, and two
     * shapes it refuses (ignored, with a warning). Partial tiles both ways, a split K. Unrolled
     * 2 at a time: unrolled 8, the NVIDIA driver took 45 s to create the 256 x 128 pipeline. */
    mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMM_UNROLL", "2");
    static const struct {
        const char *env;
        uint32_t bm, bn; /* the tile taken: the default 64 x 64 for a refused shape */
    } tiles[] = {{"256x128", 256, 128}, {"128x256", 128, 256}, {"256x64", 256, 64},
                 {"64x128", 64, 128},   {"256x256", 64, 64},   {"96x64", 64, 64}};
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMM_FLOAT_TILE", tiles[i].env);
        mcl_dtype t = all_formats[i % FORMAT_COUNT];
        const mm_case c = {1, 300, 200, kq(t, 512, 1024), 1};
        uint32_t bm = 0, bn = 0;
        mcl_quant_gemm_float_tile(ctx, (uint32_t)c.m, (uint32_t)c.n, &bm, &bn);
        assert_int_equal(bm, tiles[i].bm);
        assert_int_equal(bn, tiles[i].bn);
        check_float_path(t, &c, (uint32_t)(2400 + i));
    }
    mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMM_FLOAT_TILE", NULL);
    mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMM_UNROLL", NULL);
    /* A device with Vulkan's least shared memory, 16 KiB: the 128 x 128 tile (16.5 KiB) and
     * the 256-row one do not fit, so a large product takes 64 x 64 and the override is
     * ignored. Control: with the device's own limit the same query gives 128 x 128. */
    uint32_t bm = 0, bn = 0;
    mcl_quant_gemm_float_tile(ctx, 4096, 4096, &bm, &bn);
    if (mcl_inspect_traits(ctx)->max_shared_bytes >= 16u * (128u + 4u + 128u + 4u) * 4u) {
        assert_int_equal(bm, 128);
        assert_int_equal(bn, 128);
    }
    const uint32_t shared = mcl_inspect_traits(ctx)->max_shared_bytes;
    uint32_t dm = 0, dn = 0;
    mcl_inspect_traits(ctx)->max_shared_bytes = 16384;
    mcl_quant_gemm_float_tile(ctx, 4096, 4096, &dm, &dn);
    mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMM_FLOAT_TILE", "256x128");
    mcl_quant_gemm_float_tile(ctx, 4096, 4096, &bm, &bn);
    mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMM_FLOAT_TILE", NULL);
    mcl_inspect_traits(ctx)->max_shared_bytes = shared;
    assert_int_equal(dm, 64);
    assert_int_equal(dn, 64);
    assert_int_equal(bm, 64);
    assert_int_equal(bn, 64);
}

/* ---------------------------------------------------------------------------------------
 * Integer-dot path
 * ------------------------------------------------------------------------------------- */

/* What the GPU quantizer made of a: codes, scales and sums, downloaded. */
typedef struct act_q8 {
    int64_t blocks;
    uint32_t *words;
} act_q8;

static void quantize_on_gpu(const mm_data *d, act_q8 *out)
{
    out->blocks = d->rows * d->p.k / 32;
    int64_t words = out->blocks * 10;
    mcl_tensor *act = NULL;
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_I32, 1, &words, &act));
    assert_mcl_ok(mcl_quantize_activations(ctx, d->ta, (uint32_t)d->rows, (uint32_t)d->p.k, act));
    out->words = malloc((size_t)words * 4);
    assert_non_null(out->words);
    assert_mcl_ok(mcl_tensor_download(act, 0, out->words, (uint64_t)words * 4));
    mcl_tensor_destroy(act);
}

static int act_code(const act_q8 *q, int64_t i) /* element i of a, row-major */
{
    return (int8_t)(q->words[i / 4] >> (8 * (i % 4)) & 0xFF);
}

static float act_scale(const act_q8 *q, int64_t block)
{
    float d;
    memcpy(&d, &q->words[8 * q->blocks + block], 4);
    return d;
}

/* The quantizer against the CPU's: d = amax * fl(1/127) bit for bit, code = roundf(x / d)
 * (x times the correctly rounded 1/d) off by one at most, rarely; sums equal the codes'. */
static void check_quantizer(const mm_data *d, const act_q8 *q, const char *name)
{
    int64_t off_by_one = 0, worse = 0, bad_scale = 0, bad_sum = 0;
    for (int64_t b = 0; b < q->blocks; b++) {
        const float *x = d->a + 32 * b;
        float amax = 0.0f;
        for (int i = 0; i < 32; i++)
            amax = fmaxf(amax, fabsf(x[i]));
        float scale = amax * 0x1.020408p-7f, id = scale != 0.0f ? 1.0f / scale : 0.0f;
        bad_scale += memcmp(&scale, &q->words[8 * q->blocks + b], 4) != 0;
        int sum = 0;
        for (int i = 0; i < 32; i++) {
            int code = act_code(q, 32 * b + i), want = (int)roundf(x[i] * id);
            sum += code;
            off_by_one += abs(code - want) == 1;
            worse += abs(code - want) > 1;
        }
        bad_sum += (int32_t)q->words[9 * q->blocks + b] != sum;
    }
    printf("%-70s scales %lld wrong, codes %lld off by one, %lld worse, sums %lld wrong\n",
           name, (long long)bad_scale, (long long)off_by_one, (long long)worse,
           (long long)bad_sum);
    int ok = bad_scale == 0 && worse == 0 && bad_sum == 0 &&
             off_by_one * 1000 <= 32 * q->blocks;
    mcl_test_record_bool(name, ok);
    if (!ok)
        fail_msg("%s: the GPU quantizer disagrees with the CPU's", name);
}

/* c in double with a replaced by its 8-bit quantization `q` (d * code), rounded to float. */
static float *ref_dot_product(const mm_data *d, const act_q8 *q)
{
    int64_t rows = d->rows, n = d->p.n, k = d->p.k;
    float *want = malloc((size_t)(rows * n) * sizeof *want);
    double *ahat = malloc((size_t)k * sizeof *ahat);
    assert_true(want && ahat);
    for (int64_t r = 0; r < rows; r++) {
        for (int64_t i = 0; i < k; i++)
            ahat[i] = (double)act_scale(q, (r * k + i) / 32) * act_code(q, r * k + i);
        for (int64_t j = 0; j < n; j++) {
            double s = d->p.bias ? d->bias[j] : 0.0;
            for (int64_t i = 0; i < k; i++)
                s += ahat[i] * (double)d->w[j * k + i];
            want[r * n + j] = (float)s;
        }
    }
    free(ahat);
    return want;
}

static void check_dot_path(mcl_dtype dtype, const mm_case *p, uint32_t seed)
{
    mm_data d;
    mm_setup(&d, dtype, p, seed);
    char name[160], what[64];
    snprintf(what, sizeof what, "dot %s", d.rows <= 8 ? "gemv" : "gemm");
    case_name(name, sizeof name, what, dtype, p);

    act_q8 q;
    quantize_on_gpu(&d, &q);
    char qname[200];
    snprintf(qname, sizeof qname, "%s: quantizer", name);
    check_quantizer(&d, &q, qname);

    float *got = mm_run(&d, MCL_QUANT_PATH_DOT);
    float *want = ref_dot_product(&d, &q);
    expect_nmse(name, mcl_nmse(got, want, (size_t)(d.rows * p->n)), NMSE_DOT);
    /* Against f32: the 8-bit activations' noise, which NMSE measures where there are enough
     * outputs; one or two outputs are a sample or two of it, which a large common part of W
     * (a K type's mins) can put anywhere. */
    if (d.rows * p->n >= 16) {
        float *want_f32 = ref_product(&d, d.a);
        char fname[200];
        snprintf(fname, sizeof fname, "%s vs f32", name);
        expect_nmse(fname, mcl_nmse(got, want_f32, (size_t)(d.rows * p->n)), NMSE_DOT_VS_F32);
        free(want_f32);
    }
    free(got);
    free(want);
    free(q.words);
    mm_free(&d);
}

static void dot_path(void **state)
{
    (void)state;
    if (!has_dot) {
        /* Polaris (or a device without it): the path must be refused, not faked. */
        mm_case p = {1, 1, 37, 64, 0};
        mm_data d;
        mm_setup(&d, MCL_DTYPE_Q8_0, &p, 3000);
        assert_int_equal(mcl_matmul_quant_ex(ctx, d.ta, MCL_NO_TRANSPOSE, d.tw, MCL_TRANSPOSE,
                                             NULL, d.tc, MCL_QUANT_PATH_DOT, NULL),
                         MCL_ERROR_UNSUPPORTED);
        mm_free(&d);
        mcl_test_record_bool("integer-dot path refused without integer dot product", 1);
        mcl_test_note("dot_path", "not run: integer dot product is not enabled on this context");
        return;
    }
    for (size_t f = 0; f < FORMAT_COUNT; f++) {
        mcl_dtype t = all_formats[f];
        for (int rows = 1; rows <= 8; rows++) {
            static const int64_t ns[4] = {67, 300, 37, 5};
            mm_case c = {1, rows, ns[rows % 4], layout_k(t, rows), rows % 2};
            check_dot_path(t, &c, (uint32_t)(8000 + 10 * f + (uint32_t)rows));
        }
        const mm_case cases[] = {
            {1, 1, 1031, kq(t, 4128, 4352), 1},
            {1, 3, 37, kq(t, 96, 768), 0},   /* an odd block count */
            {2, 4, 1031, kq(t, 32, 256), 1}, /* 8 rows, one block per row */
            {1, 1, 1, kq(t, 64, 512), 0},
            {1, 1, 300, kq(t, 4096, 4096), 1}, /* Q4_0: its row one round of 4 pieces */
            {1, 67, 1031, 96, 1},            /* GEMM: partial tiles, an odd block count */
            {3, 100, 37, 4128, 0},           /* GEMM: batched, many blocks */
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            if (cases[i].batch * cases[i].m <= 8 || f < 2) {
                check_dot_path(t, &cases[i], (uint32_t)(3000 + 10 * f + i));
                continue;
            }
            /* The K types' GEMM is not the integer-dot one: asked for explicitly, the dot path
             * is refused; left to the library, the GEMM's selected path runs (matrix or
             * float). */
            mm_case c = cases[i];
            c.k = 512;
            mm_data d;
            mm_setup(&d, t, &c, (uint32_t)(3500 + 10 * f + i));
            assert_int_equal(mcl_matmul_quant_ex(ctx, d.ta, MCL_NO_TRANSPOSE, d.tw,
                                                 MCL_TRANSPOSE, d.tbias, d.tc,
                                                 MCL_QUANT_PATH_DOT, NULL),
                             MCL_ERROR_UNSUPPORTED);
            mcl_quant_path ran = MCL_QUANT_PATH_DOT;
            assert_mcl_ok(mcl_matmul_quant_ex(ctx, d.ta, MCL_NO_TRANSPOSE, d.tw, MCL_TRANSPOSE,
                                              d.tbias, d.tc, MCL_QUANT_PATH_AUTO, &ran));
            assert_int_equal(ran, mcl_quant_gemm_path_select(ctx, t));
            assert_int_not_equal(ran, MCL_QUANT_PATH_DOT);
            mm_free(&d);
        }
    }
    mcl_test_record_bool("integer-dot GEMM of a K type refused, its automatic path another", 1);
}

/* ---------------------------------------------------------------------------------------
 * Matrix path
 * ------------------------------------------------------------------------------------- */

static void check_matrix_path(mcl_dtype dtype, const mm_case *p, uint32_t seed)
{
    mm_data d;
    mm_setup(&d, dtype, p, seed);
    float *got = mm_run(&d, MCL_QUANT_PATH_MATRIX);
    float *want = ref_product(&d, d.a);
    char name[160];
    case_name(name, sizeof name, "matrix gemm", dtype, p);
    double nmse = mcl_nmse(got, want, (size_t)(d.rows * p->n));
    expect_nmse(name, nmse, NMSE_MATRIX);
    /* f16 operands: the result is not the f32 product's (else the path did not run). */
    if (!mcl_test_record_bool("matrix gemm rounds to f16 (nmse above the float path's)",
                              nmse > NMSE_FLOAT))
        fail_msg("%s: nmse %g, as exact as the float path", name, nmse);
    free(got);
    free(want);
    mm_free(&d);
}

/* The matrix GEMM for every format: tiles of 64 and 128 both ways, partial edge tiles, rows
 * just past the GEMV's, batched a, many K steps, the tile override (and one it ignores);
 * where cooperative matrices are not enabled, the path must be refused. */
static void matrix_path(void **state)
{
    (void)state;
    if (!has_matrix) {
        mm_case p = {1, 16, 37, 64, 0};
        mm_data d;
        mm_setup(&d, MCL_DTYPE_Q8_0, &p, 3700);
        assert_int_equal(mcl_matmul_quant_ex(ctx, d.ta, MCL_NO_TRANSPOSE, d.tw, MCL_TRANSPOSE,
                                             NULL, d.tc, MCL_QUANT_PATH_MATRIX, NULL),
                         MCL_ERROR_UNSUPPORTED);
        mcl_quant_path ran = MCL_QUANT_PATH_MATRIX;
        assert_mcl_ok(mcl_matmul_quant_ex(ctx, d.ta, MCL_NO_TRANSPOSE, d.tw, MCL_TRANSPOSE,
                                          NULL, d.tc, MCL_QUANT_PATH_AUTO, &ran));
        assert_int_not_equal(ran, MCL_QUANT_PATH_MATRIX);
        mm_free(&d);
        mcl_test_record_bool("matrix path refused without cooperative matrices", 1);
        mcl_test_note("matrix_path", "not run: cooperative matrices are not enabled on this "
                      "context");
        return;
    }
    for (size_t f = 0; f < FORMAT_COUNT; f++) {
        mcl_dtype t = all_formats[f];
        const mm_case cases[] = {
            {1, 9, 37, kq(t, 96, 512), 1},        /* one row past the GEMV; 64 x 64 tiles */
            {1, 67, 1031, kq(t, 4128, 4352), 1},  /* 128 x 64, partial both ways, many K steps */
            {3, 100, 37, kq(t, 160, 768), 0},     /* batched, 300 rows */
            {1, 300, 4100, 256, 1},               /* many 128 x 64 tiles */
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
            check_matrix_path(t, &cases[i], (uint32_t)(3700 + 10 * f + i));
    }
    /* The last one is not a tile: ignored, with a warning. */
    static const char *const tiles[] = {"64x128", "128x64", "128x128", "96x128"};
    for (size_t i = 0; i < sizeof tiles / sizeof tiles[0]; i++) {
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMM_TILE", tiles[i]);
        mm_case c = {1, 130, 200, 512, 1};
        check_matrix_path(all_formats[(i + 1) % FORMAT_COUNT], &c, (uint32_t)(3800 + i));
    }
    mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMM_TILE", NULL);
    /* Asked for at the GEMV's rows, the matrix path is refused. */
    mm_case p = {1, 8, 37, 64, 0};
    mm_data d;
    mm_setup(&d, MCL_DTYPE_Q4_0, &p, 3900);
    assert_int_equal(mcl_matmul_quant_ex(ctx, d.ta, MCL_NO_TRANSPOSE, d.tw, MCL_TRANSPOSE, NULL,
                                         d.tc, MCL_QUANT_PATH_MATRIX, NULL),
                     MCL_ERROR_UNSUPPORTED);
    mm_free(&d);
    mcl_test_record_bool("matrix path refused at 8 rows of a", 1);
}

/* A weight bound in row ranges: larger than MOTIFCL_MAX_BINDING (set small here, so that any
 * device splits), each part a view at an aligned offset writing its columns of c. GEMV and
 * GEMM, float and integer dot, bias on and off, rows of an odd number of blocks (the last part
 * ends in half a word of d values). The control: a limit below one aligned step of rows is
 * refused, which shows the limit is in force. */
static void split_weight(void **state)
{
    (void)state;
    mcl_test_switch_env(ctx, "MOTIFCL_MAX_BINDING", "3000");
    for (size_t f = 0; f < FORMAT_COUNT; f++) {
        mcl_dtype t = all_formats[f];
        const mm_case cases[] = {
            {1, 1, 67, kq(t, 96, 256), 1},  /* Q8_0: 102 bytes a row, 29 rows a part */
            {1, 5, 37, kq(t, 160, 512), 0},
            {1, 70, 67, kq(t, 96, 256), 1}, /* GEMM */
        };
        for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
            check_float_path(t, &cases[i], (uint32_t)(9500 + 10 * f + i));
            if (has_dot && (f < 2 || cases[i].m <= 8))
                check_dot_path(t, &cases[i], (uint32_t)(9600 + 10 * f + i));
            if (has_matrix && cases[i].m > 8)
                check_matrix_path(t, &cases[i], (uint32_t)(9650 + 10 * f + i));
        }
    }
    mcl_test_switch_env(ctx, "MOTIFCL_MAX_BINDING", "16");
    mm_case p = {1, 1, 37, 256, 0};
    mm_data d;
    mm_setup(&d, MCL_DTYPE_Q4_K, &p, 9700);
    assert_int_equal(mcl_matmul(ctx, d.ta, MCL_NO_TRANSPOSE, d.tw, MCL_TRANSPOSE, NULL, d.tc),
                     MCL_ERROR_TOO_LARGE);
    mcl_test_record_bool("a binding limit below one row of W is refused", 1);
    mm_free(&d);
    mcl_test_switch_env(ctx, "MOTIFCL_MAX_BINDING", NULL);
}

/* A weight larger than the device's maxStorageBufferRange (Lavapipe: 128 MiB), where that is
 * small enough to allocate here: a Q8_0 weight of 153 MB against one row of x. */
static void weight_beyond_binding(void **state)
{
    (void)state;
    mm_case p = {1, 1, 3904, 36864, 1};
    uint64_t bytes = (uint64_t)p.n * (uint64_t)(p.k / 32) * 34;
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(ctx, &info));
    uint64_t range = info.max_storage_buffer_range;
    if (bytes <= range) {
        char why[160];
        snprintf(why, sizeof why, "not run: maxStorageBufferRange (%llu bytes) holds the %llu "
                 "bytes of the weight; split_weight forces the split instead",
                 (unsigned long long)range, (unsigned long long)bytes);
        mcl_test_note("weight_beyond_binding", why);
        return;
    }
    check_float_path(MCL_DTYPE_Q8_0, &p, 9800);
    mcl_test_record_bool("a Q8_0 weight beyond maxStorageBufferRange multiplies", 1);
}

/* ---------------------------------------------------------------------------------------
 * Path selection, replay, negative controls, arguments
 * ------------------------------------------------------------------------------------- */

/* A product of 16 rows of a by a weight of 8 rows of 64 (past the GEMV's rows: a GEMM) set up
 * in d and run on `path`; the caller frees d. */
static mcl_status small_gemm(mm_data *d, mcl_dtype t, uint32_t seed, mcl_quant_path path,
                             mcl_quant_path *ran)
{
    const mm_case g = {1, 16, 8, 64, 0};
    mm_setup(d, t, &g, seed);
    return mcl_matmul_quant_ex(ctx, d->ta, MCL_NO_TRANSPOSE, d->tw, MCL_TRANSPOSE, NULL, d->tc,
                               path, ran);
}

static void path_selection(void **state)
{
    (void)state;
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(ctx, &info));
    int accelerated = (info.features_enabled & MCL_FEATURE_INTEGER_DOT_ACCELERATED) != 0;
    int polaris = strcmp(info.profile, "polaris") == 0;
    if (polaris)
        assert_false(has_dot); /* the profile masks it */
    /* Set the switches here, restore the caller's at the end. */
    const char *force = getenv("MOTIFCL_FORCE"), *quant_path = getenv("MOTIFCL_QUANT_PATH");
    char *saved_force = force ? strdup(force) : NULL;
    char *saved_path = quant_path ? strdup(quant_path) : NULL;
    mcl_test_switch_env(ctx, "MOTIFCL_FORCE", NULL);
    mcl_test_switch_env(ctx, "MOTIFCL_QUANT_PATH", NULL);

    for (size_t f = 0; f < FORMAT_COUNT; f++) {
        mcl_dtype t = all_formats[f];
        mcl_quant_path want = has_dot && accelerated ? MCL_QUANT_PATH_DOT : MCL_QUANT_PATH_FLOAT;
        assert_int_equal(mcl_quant_path_select(ctx, t), want);
        /* Forcing: MOTIFCL_FORCE=integer-dot takes the dot path wherever the device has
         * integer dot product enabled, accelerated or not; MOTIFCL_QUANT_PATH overrides. */
        mcl_test_switch_env(ctx, "MOTIFCL_FORCE", "integer-dot");
        want = has_dot ? MCL_QUANT_PATH_DOT : MCL_QUANT_PATH_FLOAT;
        assert_int_equal(mcl_quant_path_select(ctx, t), want);
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_PATH", "float");
        assert_int_equal(mcl_quant_path_select(ctx, t), MCL_QUANT_PATH_FLOAT);
        mcl_test_switch_env(ctx, "MOTIFCL_FORCE", NULL);
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_PATH", "dot");
        assert_int_equal(mcl_quant_path_select(ctx, t), want);
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_PATH", NULL);
        /* The GEMM: matrix where cooperative matrices are enabled, unless MOTIFCL_QUANT_PATH
         * names another; integer dot for Q8_0 and Q4_0 only. */
        int dot_gemm = t == MCL_DTYPE_Q8_0 || t == MCL_DTYPE_Q4_0;
        mcl_quant_path gemm = has_matrix ? MCL_QUANT_PATH_MATRIX
                              : has_dot && accelerated && dot_gemm ? MCL_QUANT_PATH_DOT
                                                                   : MCL_QUANT_PATH_FLOAT;
        assert_int_equal(mcl_quant_gemm_path_select(ctx, t), gemm);
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_PATH", "float");
        assert_int_equal(mcl_quant_gemm_path_select(ctx, t), MCL_QUANT_PATH_FLOAT);
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_PATH", "dot");
        assert_int_equal(mcl_quant_gemm_path_select(ctx, t),
                         has_dot && dot_gemm ? MCL_QUANT_PATH_DOT : MCL_QUANT_PATH_FLOAT);
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_PATH", NULL);
    }
    if (polaris)
        assert_false(has_matrix); /* the profile masks f16, and with it the matrix path */

    /* mcl_matmul itself, forced onto the dot path where there is one: AUTO resolves to the
     * selected path and the result is right. */
    mcl_test_switch_env(ctx, "MOTIFCL_FORCE", "integer-dot");
    mm_case p = {1, 2, 37, 96, 1};
    mm_data d;
    mm_setup(&d, MCL_DTYPE_Q4_0, &p, 4000);
    mcl_quant_path ran = MCL_QUANT_PATH_AUTO;
    assert_mcl_ok(mcl_matmul_quant_ex(ctx, d.ta, MCL_NO_TRANSPOSE, d.tw, MCL_TRANSPOSE, d.tbias,
                                      d.tc, MCL_QUANT_PATH_AUTO, &ran));
    assert_int_equal(ran, has_dot ? MCL_QUANT_PATH_DOT : MCL_QUANT_PATH_FLOAT);
    assert_mcl_ok(mcl_matmul(ctx, d.ta, MCL_NO_TRANSPOSE, d.tw, MCL_TRANSPOSE, d.tbias, d.tc));
    float got[2 * 37];
    assert_mcl_ok(mcl_tensor_download(d.tc, 0, got, sizeof got));
    float *want = ref_product(&d, d.a);
    expect_nmse("mcl_matmul q4_0, MOTIFCL_FORCE=integer-dot", mcl_nmse(got, want, 2 * 37),
                has_dot ? NMSE_DOT_VS_F32 : NMSE_FLOAT);
    free(want);
    mm_free(&d);
    mcl_test_switch_env(ctx, "MOTIFCL_FORCE", NULL);
    /* The integer-dot GEMM holds 16.5 KiB of shared memory: under Vulkan's least limit (16
     * KiB) the GEMM takes the float path even where the dot path is asked for, and an explicit
     * request for the dot GEMM is refused; the GEMV (no such tile) stays on the dot path.
     * Control: the device's own limit keeps the dot GEMM. */
    if (has_dot && info.max_compute_shared_memory_size >= 16896) {
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_PATH", "dot");
        assert_int_equal(mcl_quant_gemm_path_select(ctx, MCL_DTYPE_Q4_0), MCL_QUANT_PATH_DOT);
        const uint32_t shared = mcl_inspect_traits(ctx)->max_shared_bytes;
        mcl_inspect_traits(ctx)->max_shared_bytes = 16384;
        mcl_quant_path small = mcl_quant_gemm_path_select(ctx, MCL_DTYPE_Q4_0);
        mcl_quant_path small_gemv = mcl_quant_path_select(ctx, MCL_DTYPE_Q4_0);
        mcl_status explicit_dot = small_gemm(&d, MCL_DTYPE_Q4_0, 4100, MCL_QUANT_PATH_DOT, NULL);
        ran = MCL_QUANT_PATH_AUTO;
        mcl_status auto_status = mcl_matmul_quant_ex(ctx, d.ta, MCL_NO_TRANSPOSE, d.tw,
                                                     MCL_TRANSPOSE, NULL, d.tc,
                                                     MCL_QUANT_PATH_AUTO, &ran);
        mcl_inspect_traits(ctx)->max_shared_bytes = shared;
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_PATH", NULL);
        assert_int_equal(small, MCL_QUANT_PATH_FLOAT);
        assert_int_equal(small_gemv, MCL_QUANT_PATH_DOT);
        assert_int_equal(explicit_dot, MCL_ERROR_UNSUPPORTED);
        assert_non_null(strstr(mcl_context_last_error(ctx), "shared memory"));
        assert_mcl_ok(auto_status);
        assert_int_equal(ran, MCL_QUANT_PATH_FLOAT);
        float got16[16 * 8];
        assert_mcl_ok(mcl_tensor_download(d.tc, 0, got16, sizeof got16));
        float *want16 = ref_product(&d, d.a);
        expect_nmse("q4_0 GEMM under a 16 KiB shared-memory limit",
                    mcl_nmse(got16, want16, 16 * 8), NMSE_FLOAT);
        free(want16);
        mm_free(&d);
    }
    /* The matrix GEMM's tile (28 KiB at 128 x 128, 23 KiB at 128 x 64, 18 KiB at 64 x 64)
     * within the device's shared memory: 128 rows of a by 64 of W, 64 x 64 for at most 64
     * rows of a; under 20 KiB 64 x 64 (an override that does not fit is ignored, one that
     * fits taken), under 16 KiB no matrix GEMM at all, an explicit request refused. Control:
     * the device's own limit gives 128 x 64 for a large product. */
    if (has_matrix && info.max_compute_shared_memory_size >= 28672) {
        uint32_t bm = 0, bn = 0, sm = 0, sn = 0, om = 0, on = 0, fm = 0, fn = 0, lm = 0,
                 ln = 0;
        mcl_quant_gemm_matrix_tile(ctx, 4096, &bm, &bn);
        mcl_quant_gemm_matrix_tile(ctx, 64, &lm, &ln);
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMM_TILE", "128x128");
        mcl_quant_gemm_matrix_tile(ctx, 4096, &fm, &fn);
        const uint32_t shared = mcl_inspect_traits(ctx)->max_shared_bytes;
        mcl_inspect_traits(ctx)->max_shared_bytes = 20480;
        mcl_quant_gemm_matrix_tile(ctx, 4096, &om, &on);
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_GEMM_TILE", NULL);
        mcl_quant_gemm_matrix_tile(ctx, 4096, &sm, &sn);
        mcl_inspect_traits(ctx)->max_shared_bytes = 16384;
        mcl_quant_path small = mcl_quant_gemm_path_select(ctx, MCL_DTYPE_Q8_0);
        mcl_status explicit_matrix = small_gemm(&d, MCL_DTYPE_Q8_0, 4200, MCL_QUANT_PATH_MATRIX,
                                                NULL);
        mcl_inspect_traits(ctx)->max_shared_bytes = shared;
        mm_free(&d);
        assert_int_equal(bm, 128);
        assert_int_equal(bn, 64);
        assert_int_equal(lm, 64);
        assert_int_equal(ln, 64);
        assert_int_equal(fm, 128);
        assert_int_equal(fn, 128);
        assert_int_equal(sm, 64);
        assert_int_equal(sn, 64);
        assert_int_equal(om, 64);
        assert_int_equal(on, 64);
        assert_int_equal(small, MCL_QUANT_PATH_FLOAT);
        assert_int_equal(explicit_matrix, MCL_ERROR_UNSUPPORTED);
        mcl_test_record_bool("matrix tile within shared memory", 1);
    }
    mcl_test_note("quant_path_q8_0", mcl_quant_path_select(ctx, MCL_DTYPE_Q8_0) ==
                                             MCL_QUANT_PATH_DOT ? "dot" : "float");
    mcl_test_note("quant_gemm_path_q8_0",
                  has_matrix ? "matrix"
                  : mcl_quant_gemm_path_select(ctx, MCL_DTYPE_Q8_0) == MCL_QUANT_PATH_DOT
                      ? "dot" : "float");
    mcl_test_record_bool("path selection", 1);
    if (saved_force)
        mcl_test_switch_env(ctx, "MOTIFCL_FORCE", saved_force);
    if (saved_path)
        mcl_test_switch_env(ctx, "MOTIFCL_QUANT_PATH", saved_path);
    free(saved_force);
    free(saved_path);
}

/* A captured graph replays the dispatch, with new inputs each time. */
static void graph_replay(void **state)
{
    (void)state;
    mm_case p = {1, 3, 37, 96, 1}; /* Q8_0, 111 blocks: the d area ends in half a word */
    /* Whole, then split in row ranges (96 bytes of block bodies a row: several parts, each
     * bound as two views, bodies and d values) whose views are gone before the replays. */
    for (int split = 0; split < 2; split++) {
        if (split)
            mcl_test_switch_env(ctx, "MOTIFCL_MAX_BINDING", "1000");
        mm_data d;
        mm_setup(&d, MCL_DTYPE_Q8_0, &p, 5000);
        mcl_graph *graph = NULL;
        assert_mcl_ok(mcl_graph_begin(ctx));
        assert_mcl_ok(
            mcl_matmul(ctx, d.ta, MCL_NO_TRANSPOSE, d.tw, MCL_TRANSPOSE, d.tbias, d.tc));
        assert_mcl_ok(mcl_graph_end(ctx, &graph));
        mcl_test_switch_env(ctx, "MOTIFCL_MAX_BINDING", NULL);
        int dot = mcl_quant_path_select(ctx, MCL_DTYPE_Q8_0) == MCL_QUANT_PATH_DOT;
        for (int rep = 0; rep < 2; rep++) {
            mcl_fill_random(d.a, (size_t)(d.rows * p.k), 5100u + (uint32_t)rep, -1, 1);
            assert_mcl_ok(mcl_tensor_upload(d.ta, 0, d.a, mcl_tensor_nbytes(d.ta)));
            assert_mcl_ok(mcl_graph_replay(ctx, graph));
            float got[3 * 37];
            assert_mcl_ok(mcl_tensor_download(d.tc, 0, got, sizeof got));
            float *want = ref_product(&d, d.a);
            char name[64];
            snprintf(name, sizeof name, "graph replay %d%s", rep + 1, split ? ", W split" : "");
            expect_nmse(name, mcl_nmse(got, want, 3 * 37), dot ? NMSE_DOT_VS_F32 : NMSE_FLOAT);
            free(want);
        }
        mcl_graph_destroy(graph);
        mm_free(&d);
    }
}

/* Each comparison must be able to fail: a reference built from a corrupted copy of the
 * weights (one block's scale negated, one code bit flipped) is caught. */
static void negative_controls(void **state)
{
    (void)state;
    /* Dequantize: one bit of one code. */
    int64_t shape[2] = {5, 256};
    uint8_t *q = random_blocks(MCL_DTYPE_Q5_K, 5, 256, 6000);
    uint8_t *bad = malloc(mcl_quant_row_size(MCL_DTYPE_Q5_K, 5 * 256));
    assert_non_null(bad);
    memcpy(bad, q, mcl_quant_row_size(MCL_DTYPE_Q5_K, 5 * 256));
    bad[2 * 176 + 100] ^= 0x10;
    float *want = cpu_dequantize(MCL_DTYPE_Q5_K, bad, 5 * 256);
    int64_t mismatches = gpu_dequantize_mismatches(MCL_DTYPE_Q5_K, 2, shape, q, want, 16,
                                                   "negative control");
    int caught = mismatches > 0;
    mcl_test_record_bool("negative control: dequantize against a reference with a flipped bit",
                         caught);
    assert_true(caught);
    free(want);
    free(bad);
    free(q);

    /* Float GEMV: one block's scale negated in the reference's weights. */
    mm_case p = {1, 1, 1031, 4128, 1};
    mm_data d;
    mm_setup(&d, MCL_DTYPE_Q4_0, &p, 6100);
    float *got = mm_run(&d, MCL_QUANT_PATH_FLOAT);
    int64_t block = 3 * (4128 / 32) + 7; /* row 3, block 7 */
    d.q[block * 18 + 1] ^= 0x80;
    free(d.w);
    d.w = cpu_dequantize(MCL_DTYPE_Q4_0, d.q, p.n * p.k);
    want = ref_product(&d, d.a);
    double nmse = mcl_nmse(got, want, (size_t)p.n);
    printf("%-70s nmse %.3g\n", "negative control: gemv against a corrupted block", nmse);
    caught = nmse > NMSE_FLOAT;
    mcl_test_record_bool("negative control: gemv against a reference with a negated block scale",
                         caught);
    assert_true(caught);
    free(want);
    free(got);

    /* Integer-dot: against the f32 reference of the uncorrupted problem it must stay within
     * NMSE_DOT_VS_F32, but not within NMSE_DOT: the quantized reference is what makes the
     * tight bound meaningful. */
    if (has_dot) {
        free(d.w);
        d.q[block * 18 + 1] ^= 0x80;
        d.w = cpu_dequantize(MCL_DTYPE_Q4_0, d.q, p.n * p.k);
        got = mm_run(&d, MCL_QUANT_PATH_DOT);
        want = ref_product(&d, d.a);
        nmse = mcl_nmse(got, want, (size_t)p.n);
        printf("%-70s nmse %.3g\n", "negative control: dot path against the f32 reference",
               nmse);
        caught = nmse > NMSE_DOT && nmse <= NMSE_DOT_VS_F32;
        mcl_test_record_bool("negative control: the dot path's 8-bit activations are seen by "
                             "the tight bound", caught);
        assert_true(caught);
        free(want);
        free(got);
    }
    mm_free(&d);

    /* Matrix GEMM: NMSE_MATRIX must see one block's scale negated in the reference (one block
     * of ten, so that its share of the product is far above f16's rounding). */
    if (has_matrix) {
        mm_case pm = {1, 16, 5, 64, 0};
        mm_setup(&d, MCL_DTYPE_Q8_0, &pm, 6200);
        got = mm_run(&d, MCL_QUANT_PATH_MATRIX);
        d.q[3 * 34 + 1] ^= 0x80; /* block 3: row 1, second block */
        free(d.w);
        d.w = cpu_dequantize(MCL_DTYPE_Q8_0, d.q, pm.n * pm.k);
        want = ref_product(&d, d.a);
        nmse = mcl_nmse(got, want, (size_t)(pm.m * pm.n));
        printf("%-70s nmse %.3g\n", "negative control: matrix gemm against a corrupted block",
               nmse);
        caught = nmse > NMSE_MATRIX;
        mcl_test_record_bool("negative control: matrix gemm against a reference with a negated "
                             "block scale", caught);
        assert_true(caught);
        free(want);
        free(got);
        mm_free(&d);
    }
}

static void bad_arguments(void **state)
{
    (void)state;
    int64_t sa[2] = {2, 64}, sa_wrong_k[2] = {2, 96}, sw[2] = {5, 64}, sw3[3] = {1, 5, 64};
    int64_t sc[2] = {2, 5}, sc_wrong[2] = {2, 6}, s4[1] = {4};
    uint8_t blocks[10 * 34] = {0};
    mcl_tensor *a = make_f32(NULL, 2, sa), *a_k = make_f32(NULL, 2, sa_wrong_k);
    mcl_tensor *c = make_f32(NULL, 2, sc), *c_wrong = make_f32(NULL, 2, sc_wrong);
    mcl_tensor *bias4 = make_f32(NULL, 1, s4);
    mcl_tensor *w = upload_blocks(MCL_DTYPE_Q8_0, 2, sw, blocks);
    mcl_tensor *w3 = upload_blocks(MCL_DTYPE_Q8_0, 3, sw3, blocks);
    mcl_tensor *wk = upload_blocks(MCL_DTYPE_Q4_K, 1, (int64_t[]){256}, blocks);
    mcl_tensor *i32 = NULL, *deq_wrong = make_f32(NULL, 2, sc);
    assert_mcl_ok(mcl_tensor_create(ctx, MCL_DTYPE_I32, 2, sa, &i32));

    assert_mcl_ok(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, w, MCL_TRANSPOSE, NULL, c));
    assert_int_equal(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, w, MCL_NO_TRANSPOSE, NULL, c),
                     MCL_ERROR_UNSUPPORTED);
    assert_non_null(strstr(mcl_context_last_error(ctx), "MCL_TRANSPOSE"));
    assert_int_equal(mcl_matmul(ctx, a, MCL_TRANSPOSE, w, MCL_TRANSPOSE, NULL, c),
                     MCL_ERROR_UNSUPPORTED);
    assert_int_equal(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, w3, MCL_TRANSPOSE, NULL, c),
                     MCL_ERROR_UNSUPPORTED);
    assert_int_equal(mcl_matmul(ctx, a_k, MCL_NO_TRANSPOSE, w, MCL_TRANSPOSE, NULL, c),
                     MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, w, MCL_TRANSPOSE, NULL, c_wrong),
                     MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, w, MCL_TRANSPOSE, bias4, c),
                     MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_matmul(ctx, i32, MCL_NO_TRANSPOSE, w, MCL_TRANSPOSE, NULL, c),
                     MCL_ERROR_DTYPE_MISMATCH);
    assert_int_equal(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, w, (mcl_transpose)7, NULL, c),
                     MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_matmul(ctx, a, MCL_NO_TRANSPOSE, w, MCL_TRANSPOSE, NULL, NULL),
                     MCL_ERROR_INVALID_ARGUMENT);
    int64_t s256[2] = {2, 256}, sc2[2] = {2, 1};
    mcl_tensor *a256 = make_f32(NULL, 2, s256), *c21 = make_f32(NULL, 2, sc2);
    assert_int_equal(mcl_matmul_quant_ex(ctx, a256, MCL_NO_TRANSPOSE, wk, MCL_TRANSPOSE, NULL,
                                         c21, MCL_QUANT_PATH_DOT, NULL),
                     MCL_ERROR_UNSUPPORTED); /* wk is 1-D: refused before the path */
    assert_int_equal(mcl_dequantize_tensor(ctx, w, deq_wrong), MCL_ERROR_SHAPE_MISMATCH);
    assert_int_equal(mcl_dequantize_tensor(ctx, w, i32), MCL_ERROR_DTYPE_MISMATCH);
    assert_int_equal(mcl_dequantize_tensor(ctx, a, c), MCL_ERROR_DTYPE_MISMATCH);
    assert_int_equal(mcl_dequantize_tensor(ctx, NULL, c), MCL_ERROR_INVALID_ARGUMENT);
    assert_int_equal(mcl_dequantize_tensor(NULL, w, c), MCL_ERROR_INVALID_ARGUMENT);

    /* Without integer dot product the dot path is refused, for every format. */
    int64_t swk[2] = {1, 256};
    mcl_tensor *wk2 = upload_blocks(MCL_DTYPE_Q4_K, 2, swk, blocks);
    mcl_status dot = mcl_matmul_quant_ex(ctx, a256, MCL_NO_TRANSPOSE, wk2, MCL_TRANSPOSE, NULL,
                                         c21, MCL_QUANT_PATH_DOT, NULL);
    assert_int_equal(dot, has_dot ? MCL_SUCCESS : MCL_ERROR_UNSUPPORTED);
    /* A piece size the format has not. */
    assert_int_equal(mcl_dequantize_tensor_ex(ctx, w, deq_wrong, 8), MCL_ERROR_SHAPE_MISMATCH);
    int64_t s5x64[2] = {5, 64};
    mcl_tensor *deq = make_f32(NULL, 2, s5x64);
    assert_int_equal(mcl_dequantize_tensor_ex(ctx, w, deq, 8), MCL_ERROR_INVALID_ARGUMENT);
    mcl_tensor_destroy(deq);
    assert_mcl_ok(mcl_finish(ctx));

    mcl_tensor *all[] = {a, a_k, c, c_wrong, bias4, w, w3, wk, i32, deq_wrong, a256, c21, wk2};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    mcl_device_info info = {.size = sizeof info};
    if (mcl_context_device_info(ctx, &info) == MCL_SUCCESS) {
        has_dot = (info.features_enabled & MCL_FEATURE_INTEGER_DOT_PRODUCT) != 0;
        has_matrix = (info.features_enabled & MCL_FEATURE_COOPERATIVE_MATRIX) != 0;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(path_selection),
        cmocka_unit_test(device_layout),
        cmocka_unit_test(dequantize_exact),
        cmocka_unit_test(gemv_float),
        cmocka_unit_test(gemv_layouts),
        cmocka_unit_test(gemv_plan_override),
        cmocka_unit_test(gemv_plans),
        cmocka_unit_test(split_weight),
        cmocka_unit_test(weight_beyond_binding),
        cmocka_unit_test(matmul_multi),
        cmocka_unit_test(gemm_float),
        cmocka_unit_test(dot_path),
        cmocka_unit_test(matrix_path),
        cmocka_unit_test(graph_replay),
        cmocka_unit_test(negative_controls),
        cmocka_unit_test(bad_arguments),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
