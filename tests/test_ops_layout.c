/* Layout operations against their CPU references: copy, permute, concat, embedding, RoPE.
 *
 * Tolerances:
 *  - copy, permute, concat, embedding move words without arithmetic: results must be
 *    bit-identical (0 mismatched words).
 *  - RoPE, against ref_rope_angle() (the shader's float angle steps, which use only correctly
 *    rounded add/subtract/multiply and so give the same bits on any conformant driver), with
 *    sin, cos and the rotation in double: what is left is the driver's sin/cos on [-pi, pi]
 *    and the float rotation. NMSE <= 1e-12, an RMS error of 1e-6 relative (~8 ulp of 1.0):
 *    Lavapipe's sin/cos are within a few ulp and NVIDIA's sin.approx within 2^-20.9
 *    absolute. (Vulkan itself promises only 2^-11 absolute on [-pi, pi]; a driver that poor
 *    would fail here, rightly so for RoPE.)
 *  - RoPE against the definition (angle = pos * theta^(-2i/Dh) in double): the shader's
 *    angle, reduced to [-pi, pi] from double-float turns, is within 5e-7 rad of the exact one
 *    at any position below 2^24 (ref_rope_angle sampled over Dh 2..512, theta 1e2..1e8 and
 *    positions up to 2^24 - 1: 4.6e-7 at most, 3.4e-7 up to 2^17), which adds at most 5e-7
 *    relative to the RMS error above: NMSE <= 3e-12 at every position. A wrong frequency,
 *    pairing or offset gives NMSE of order 1; float frequencies (the low parts dropped) give
 *    1e-9 at position 4091 and 7e-7 at 100003.
 *  - RoPE accuracy at long positions (Dh 128 and 64, theta 1e4 and 5e5, positions around 1,
 *    4096, 65536 and 131072): per position, the device's largest element error against the
 *    definition must not exceed that of the f32 convention of the reference implementations
 *    (angle = f32(f32(pos) * f32(inv_freq)), sin/cos and rotation in double) by more than
 *    2e-6 absolute, the allowance for the device's sin/cos on [-pi, pi] and its float
 *    rotation, which the host's angle is spared (Lavapipe's sin/cos are within a few ulp,
 *    NVIDIA's sin.approx within 2^-20.9 ~ 5e-7). Negative control: single-float turns (the
 *    same reduction with float frequencies and float products) exceed that bound at 65536.
 *  - embedding of a block-quantised table (Q8_0, Q4_0, Q4_K, Q5_K, Q6_K): bit-identical to
 *    mcl_dequantize() of each row (0 mismatched words). Every product in the formats is exact
 *    in f32 and the one rounding (Q4_K/Q5_K's min) happens once, so a correct decoder gives
 *    the CPU reference's bits (docs/quant-formats.md, "Arithmetic"). The table is also read
 *    in row ranges (MOTIFCL_MAX_BINDING set small, and a table beyond Lavapipe's 128 MiB
 *    binding), one dispatch per range, each writing only its rows.
 */
#define _POSIX_C_SOURCE 200809L /* setenv, unsetenv */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "ops/ops_internal.h"
#include "ref/ref.h"
#include "vk/inspect.h"

static mcl_context *ctx;

static int64_t numel(const int64_t *shape, uint32_t ndim)
{
    int64_t n = 1;
    for (uint32_t i = 0; i < ndim; i++)
        n *= shape[i];
    return n;
}

static double mismatches(const void *got, const void *want, size_t words)
{
    const uint32_t *g = got, *w = want;
    size_t bad = 0;
    for (size_t i = 0; i < words; i++)
        bad += g[i] != w[i];
    return (double)bad;
}

static uint32_t *random_words(size_t n, uint32_t seed)
{
    float *data = malloc(n * sizeof *data);
    assert_non_null(data);
    mcl_fill_random(data, n, seed, -8.0f, 8.0f);
    return (uint32_t *)data;
}

/* --- copy ------------------------------------------------------------------------------ */

static void copy_matches_source(void **state)
{
    (void)state;
    /* 1, primes, several 256-wide workgroups with a ragged end, and more words than 65535
     * workgroups of 256 cover (the grid-stride loop of grid_loop.glsl takes a second lap). */
    static const int64_t sizes[] = {1, 7, 4099, 65536 * 3 + 5, 65535 * 256 + 4099};
    for (size_t c = 0; c < sizeof sizes / sizeof sizes[0]; c++) {
        int64_t n = sizes[c];
        uint32_t *src = random_words((size_t)n, (uint32_t)c + 3);
        uint32_t *got = calloc((size_t)n, 4);
        /* Reshape on the way: [n] -> [1, n] (f32), and i32 the same way. */
        int64_t dst_shape[2] = {1, n};
        mcl_dtype dtype = c % 2 ? MCL_DTYPE_I32 : MCL_DTYPE_F32;
        mcl_tensor *ts = mcl_test_tensor(ctx, dtype, 1, &n, src), *td = mcl_test_tensor(ctx, dtype, 2, dst_shape, NULL);
        assert_mcl_ok(mcl_copy(ctx, ts, td));
        assert_mcl_ok(mcl_tensor_download(td, 0, got, (uint64_t)n * 4));
        char name[64];
        snprintf(name, sizeof name, "copy %s n=%lld", mcl_dtype_name(dtype), (long long)n);
        int passed = mcl_test_record(name, "mismatched words", mismatches(got, src, (size_t)n), 0);
        mcl_tensor_destroy(ts);
        mcl_tensor_destroy(td);
        free(src);
        free(got);
        assert_true(passed);
    }
}

/* --- permute --------------------------------------------------------------------------- */

/* Permute x of `shape` by `perm` on the device and count words that differ from `want`. */
static double permute_mismatches(const uint32_t *x, const int64_t *shape, uint32_t ndim,
                                 const uint32_t *perm, const uint32_t *want)
{
    int64_t n = numel(shape, ndim), dst_shape[4];
    for (uint32_t i = 0; i < ndim; i++)
        dst_shape[i] = shape[perm[i]];
    mcl_tensor *ts = mcl_test_tensor(ctx, MCL_DTYPE_F32, ndim, shape, x);
    mcl_tensor *td = mcl_test_tensor(ctx, MCL_DTYPE_F32, ndim, dst_shape, NULL);
    uint32_t *got = calloc((size_t)n, 4);
    assert_non_null(got);
    assert_mcl_ok(mcl_permute(ctx, ts, perm, td));
    assert_mcl_ok(mcl_tensor_download(td, 0, got, (uint64_t)n * 4));
    double bad = mismatches(got, want, (size_t)n);
    mcl_tensor_destroy(ts);
    mcl_tensor_destroy(td);
    free(got);
    return bad;
}

static void permute_all_24_of_4d(void **state)
{
    (void)state;
    const int64_t shape[4] = {2, 3, 5, 7};
    const size_t n = 210;
    uint32_t *x = random_words(n, 11);
    uint32_t want[210];
    int failed = 0, count = 0;
    for (uint32_t a = 0; a < 4; a++)
        for (uint32_t b = 0; b < 4; b++)
            for (uint32_t c = 0; c < 4; c++) {
                uint32_t d = 6 - a - b - c;
                if (a == b || a == c || b == c || d > 3 || d == a || d == b || d == c)
                    continue;
                uint32_t perm[4] = {a, b, c, d};
                ref_permute_u32(x, shape, 4, perm, want);
                char name[64];
                snprintf(name, sizeof name, "permute [2,3,5,7] by (%u,%u,%u,%u)", a, b, c, d);
                failed += !mcl_test_record(name, "mismatched words",
                                           permute_mismatches(x, shape, 4, perm, want), 0);
                count++;
            }
    free(x);
    assert_int_equal(count, 24);
    assert_int_equal(failed, 0);
}

static void permute_other_ranks(void **state)
{
    (void)state;
    /* A transpose across more than one 256-wide workgroup, a 3-D rotation, the identity. */
    static const struct {
        uint32_t ndim;
        int64_t shape[4];
        uint32_t perm[4];
    } cases[] = {
        {2, {129, 67}, {1, 0}},
        {3, {67, 3, 5}, {2, 0, 1}},
        {3, {4, 33, 64}, {1, 0, 2}},
        {1, {1}, {0}},
        {4, {1, 1, 1, 1}, {3, 2, 1, 0}},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        int64_t n = numel(cases[c].shape, cases[c].ndim);
        uint32_t *x = random_words((size_t)n, (uint32_t)c + 40);
        uint32_t *want = malloc((size_t)n * 4);
        assert_non_null(want);
        ref_permute_u32(x, cases[c].shape, cases[c].ndim, cases[c].perm, want);
        char name[64];
        snprintf(name, sizeof name, "permute %u-D case %zu", cases[c].ndim, c);
        int passed = mcl_test_record(name, "mismatched words",
                                     permute_mismatches(x, cases[c].shape, cases[c].ndim,
                                                        cases[c].perm, want), 0);
        free(x);
        free(want);
        assert_true(passed);
    }
}

/* --- concat ---------------------------------------------------------------------------- */

static void concat_each_axis(void **state)
{
    (void)state;
    const int64_t base[4] = {2, 3, 5, 7};
    for (uint32_t ndim = 1; ndim <= 4; ndim++) {
        for (uint32_t axis = 0; axis < ndim; axis++) {
            int64_t a_shape[4], b_shape[4], o_shape[4];
            for (uint32_t i = 0; i < ndim; i++)
                a_shape[i] = b_shape[i] = base[4 - ndim + i];
            b_shape[axis] = 4 + axis;  /* the two sides differ along the axis */
            for (uint32_t i = 0; i < ndim; i++)
                o_shape[i] = i == axis ? a_shape[i] + b_shape[i] : a_shape[i];
            int64_t na = numel(a_shape, ndim), nb = numel(b_shape, ndim), no = na + nb;
            uint32_t *a = random_words((size_t)na, 100 + axis);
            uint32_t *b = random_words((size_t)nb, 200 + axis);
            uint32_t *want = malloc((size_t)no * 4), *got = calloc((size_t)no, 4);
            assert_true(want && got);
            ref_concat_u32(a, a_shape, b, b_shape, ndim, axis, want);
            mcl_dtype dtype = axis % 2 ? MCL_DTYPE_I32 : MCL_DTYPE_F32;
            mcl_tensor *ta = mcl_test_tensor(ctx, dtype, ndim, a_shape, a), *tb = mcl_test_tensor(ctx, dtype, ndim, b_shape, b);
            mcl_tensor *to = mcl_test_tensor(ctx, dtype, ndim, o_shape, NULL);
            assert_mcl_ok(mcl_concat(ctx, ta, tb, axis, to));
            assert_mcl_ok(mcl_tensor_download(to, 0, got, (uint64_t)no * 4));
            char name[64];
            snprintf(name, sizeof name, "concat %u-D on axis %u", ndim, axis);
            int passed = mcl_test_record(name, "mismatched words",
                                         mismatches(got, want, (size_t)no), 0);
            mcl_tensor_destroy(ta);
            mcl_tensor_destroy(tb);
            mcl_tensor_destroy(to);
            free(a);
            free(b);
            free(want);
            free(got);
            assert_true(passed);
        }
    }
}

/* --- embedding ------------------------------------------------------------------------- */

/* Gather with ids of `ids_shape`, checking against `reference` (the real one, or a wrong one
 * for the negative control). The output starts as NaN, so a zero row must have been written. */
static double embedding_mismatches(const int32_t *ids, const int64_t *ids_shape, uint32_t ids_ndim,
                                   int64_t vocab, int64_t dim, int clamp_reference)
{
    int64_t rows = numel(ids_shape, ids_ndim), t_shape[2] = {vocab, dim}, o_shape[4];
    for (uint32_t i = 0; i < ids_ndim; i++)
        o_shape[i] = ids_shape[i];
    o_shape[ids_ndim] = dim;
    float *table = malloc((size_t)(vocab * dim) * 4);
    float *want = malloc((size_t)(rows * dim) * 4), *got = malloc((size_t)(rows * dim) * 4);
    assert_true(table && want && got);
    mcl_fill_random(table, (size_t)(vocab * dim), 77, -1.0f, 1.0f);
    if (clamp_reference) {
        /* Wrong on purpose: clamps bad ids into range instead of giving zeros. */
        int32_t *clamped = malloc((size_t)rows * sizeof *clamped);
        assert_non_null(clamped);
        for (int64_t r = 0; r < rows; r++)
            clamped[r] = ids[r] < 0 ? 0 : ids[r] >= vocab ? (int32_t)(vocab - 1) : ids[r];
        ref_embedding_f32(table, vocab, dim, clamped, rows, want);
        free(clamped);
    } else {
        ref_embedding_f32(table, vocab, dim, ids, rows, want);
    }
    for (int64_t i = 0; i < rows * dim; i++)
        got[i] = NAN;
    mcl_tensor *tt = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, t_shape, table);
    mcl_tensor *ti = mcl_test_tensor(ctx, MCL_DTYPE_I32, ids_ndim, ids_shape, ids);
    mcl_tensor *to = mcl_test_tensor(ctx, MCL_DTYPE_F32, ids_ndim + 1, o_shape, got);
    assert_mcl_ok(mcl_embedding(ctx, tt, ti, to));
    assert_mcl_ok(mcl_tensor_download(to, 0, got, (uint64_t)(rows * dim) * 4));
    double bad = mismatches(got, want, (size_t)(rows * dim));
    mcl_tensor_destroy(tt);
    mcl_tensor_destroy(ti);
    mcl_tensor_destroy(to);
    free(table);
    free(want);
    free(got);
    return bad;
}

/* 123 ids over a vocabulary of 37: valid ones, and every kind of bad one. */
static void make_ids(int32_t *ids, int64_t n, int64_t vocab)
{
    static const int32_t bad[] = {-1, INT32_MIN, INT32_MAX, 37, 38, 1 << 20, -37};
    for (int64_t i = 0; i < n; i++)
        ids[i] = i % 5 == 3 ? bad[(i / 5) % 7] : (int32_t)((i * 7 + 3) % vocab);
}

static void embedding_gathers_and_zeroes_bad_ids(void **state)
{
    (void)state;
    const int64_t vocab = 37;
    int32_t ids[123];
    make_ids(ids, 123, vocab);
    const int64_t shape1[1] = {1}, shape2[2] = {3, 41}, shape3[3] = {3, 1, 41};
    int passed = mcl_test_record("embedding one id, D=1", "mismatched words",
                                 embedding_mismatches(ids, shape1, 1, vocab, 1, 0), 0);
    passed &= mcl_test_record("embedding ids [3,41] with bad ids, D=67", "mismatched words",
                              embedding_mismatches(ids, shape2, 2, vocab, 67, 0), 0);
    passed &= mcl_test_record("embedding ids [3,1,41] with bad ids, D=300", "mismatched words",
                              embedding_mismatches(ids, shape3, 3, vocab, 300, 0), 0);
    int32_t bad_only[2] = {-1, (int32_t)vocab};
    const int64_t shape_bad[1] = {2};
    passed &= mcl_test_record("embedding only bad ids", "mismatched words",
                              embedding_mismatches(bad_only, shape_bad, 1, vocab, 5, 0), 0);
    assert_true(passed);
}

/* --- embedding of a block-quantised table ----------------------------------------------- */

static const mcl_dtype block_types[] = {MCL_DTYPE_Q8_0, MCL_DTYPE_Q4_0, MCL_DTYPE_Q4_K,
                                        MCL_DTYPE_Q5_K, MCL_DTYPE_Q6_K};
#define BLOCK_TYPE_COUNT (sizeof block_types / sizeof block_types[0])

/* Bytes of a block's body on the device: the block less its d where d is kept apart
 * (docs/quant-formats.md, "On the device"). */
static uint64_t body_bytes(mcl_dtype t)
{
    switch (t) {
    case MCL_DTYPE_Q8_0:
        return 32;
    case MCL_DTYPE_Q4_0:
        return 16;
    case MCL_DTYPE_Q6_K:
        return 208;
    default:
        return mcl_dtype_block_bytes(t);
    }
}

/* GGUF bytes of one table row of dim weights. */
static size_t quant_row_bytes(mcl_dtype t, int64_t dim)
{
    return (size_t)(dim / mcl_dtype_block_weights(t)) * mcl_dtype_block_bytes(t);
}

/* Set (value) or unset (NULL) MOTIFCL_MAX_BINDING and have ctx read it: a context reads the
 * environment when it is created, and this one lives for the suite. */
static void switch_max_binding(const char *value)
{
    if (value)
        setenv("MOTIFCL_MAX_BINDING", value, 1);
    else
        unsetenv("MOTIFCL_MAX_BINDING");
    mcl_inspect_reread_environment(ctx);
}

/* A [vocab, dim] table of type t: random weights in [-1, 1), row r scaled by 2^-(r % 16) so
 * that scales span many binades (small rows' fp16 d are subnormal), quantized on the host. */
static uint8_t *quant_table(mcl_dtype t, int64_t vocab, int64_t dim, uint32_t seed)
{
    float *w = mcl_test_random_floats((size_t)(vocab * dim), seed, -1.0f, 1.0f);
    for (int64_t r = 0; r < vocab; r++)
        for (int64_t i = 0; i < dim; i++)
            w[r * dim + i] = ldexpf(w[r * dim + i], -(int)(r % 16));
    uint8_t *q = malloc(quant_row_bytes(t, dim) * (size_t)vocab);
    assert_non_null(q);
    assert_mcl_ok(mcl_quantize(t, w, q, vocab * dim));
    free(w);
    return q;
}

/* The host's answer: row ids[r] of the table dequantized by mcl_dequantize (with `shift`, the
 * row after it, cyclically: a wrong reference for the negative control), zeros for a bad id. */
static void ref_embedding_quant(mcl_dtype t, const uint8_t *table, int64_t vocab, int64_t dim,
                                const int32_t *ids, int64_t rows, int shift, float *want)
{
    size_t rb = quant_row_bytes(t, dim);
    for (int64_t r = 0; r < rows; r++) {
        float *y = want + r * dim;
        if (ids[r] < 0 || ids[r] >= vocab) {
            memset(y, 0, (size_t)dim * sizeof *y);
            continue;
        }
        int64_t id = shift ? (ids[r] + 1) % vocab : ids[r];
        assert_mcl_ok(mcl_dequantize(t, table + (size_t)id * rb, y, dim));
    }
}

/* Gather from `table` (GGUF bytes of [vocab, dim] of type t) on the device, into an output
 * that starts as NaN (so a zero row must have been written), and count the words that differ
 * from `want`. With `dispatches` not NULL the gather is captured in a graph, which is replayed
 * and whose dispatch count is returned there. */
static double embedding_quant_mismatches(mcl_dtype t, const uint8_t *table, int64_t vocab,
                                         int64_t dim, const int32_t *ids, uint32_t ids_ndim,
                                         const int64_t *ids_shape, const float *want,
                                         uint32_t *dispatches)
{
    int64_t rows = numel(ids_shape, ids_ndim), t_shape[2] = {vocab, dim}, o_shape[4];
    for (uint32_t i = 0; i < ids_ndim; i++)
        o_shape[i] = ids_shape[i];
    o_shape[ids_ndim] = dim;
    float *got = mcl_test_floats((size_t)(rows * dim));
    for (int64_t i = 0; i < rows * dim; i++)
        got[i] = NAN;
    mcl_tensor *tt = mcl_test_tensor(ctx, t, 2, t_shape, table);
    mcl_tensor *ti = mcl_test_tensor(ctx, MCL_DTYPE_I32, ids_ndim, ids_shape, ids);
    mcl_tensor *to = mcl_test_tensor(ctx, MCL_DTYPE_F32, ids_ndim + 1, o_shape, got);
    if (dispatches) {
        mcl_graph *g = NULL;
        assert_mcl_ok(mcl_graph_begin(ctx));
        mcl_status status = mcl_embedding(ctx, tt, ti, to);
        assert_mcl_ok(mcl_graph_end(ctx, &g));
        assert_mcl_ok(status);
        *dispatches = mcl_graph_dispatch_count(g);
        assert_mcl_ok(mcl_graph_replay(ctx, g));
        mcl_graph_destroy(g);
    } else {
        assert_mcl_ok(mcl_embedding(ctx, tt, ti, to));
    }
    assert_mcl_ok(mcl_tensor_download(to, 0, got, (uint64_t)(rows * dim) * 4));
    double bad = mismatches(got, want, (size_t)(rows * dim));
    mcl_tensor_destroy(tt);
    mcl_tensor_destroy(ti);
    mcl_tensor_destroy(to);
    free(got);
    return bad;
}

/* Gather ids from a fresh table of type t against the host reference; records the check. */
static int check_embedding_quant(mcl_dtype t, int64_t vocab, int64_t dim, const int32_t *ids,
                                 uint32_t ids_ndim, const int64_t *ids_shape, uint32_t seed,
                                 const char *what)
{
    int64_t rows = numel(ids_shape, ids_ndim);
    uint8_t *table = quant_table(t, vocab, dim, seed);
    float *want = mcl_test_floats((size_t)(rows * dim));
    ref_embedding_quant(t, table, vocab, dim, ids, rows, 0, want);
    double bad = embedding_quant_mismatches(t, table, vocab, dim, ids, ids_ndim, ids_shape, want,
                                            NULL);
    char name[128];
    snprintf(name, sizeof name, "embedding %s V=%lld D=%lld %s", mcl_dtype_name(t),
             (long long)vocab, (long long)dim, what);
    free(table);
    free(want);
    return mcl_test_record(name, "mismatched words", bad, 0);
}

/* n ids over a vocabulary of `vocab`: 0 and vocab - 1 first, then valid ids with repeats, and
 * every kind of bad one every fifth place. */
static void make_quant_ids(int32_t *ids, int64_t n, int64_t vocab)
{
    const int32_t bad[] = {-1, INT32_MIN, INT32_MAX, (int32_t)vocab, (int32_t)vocab + 1,
                           -(int32_t)vocab};
    for (int64_t i = 0; i < n; i++)
        ids[i] = i % 5 == 3 ? bad[(i / 5) % 6] : (int32_t)((i * 7 + 3) % vocab);
    ids[0] = 0;
    if (n > 1)
        ids[1] = (int32_t)(vocab - 1);
    if (n > 2)
        ids[2] = (int32_t)(vocab - 1);
}

/* Every block type: several blocks a row (an odd count, so the table's d values end in half a
 * word), one block a row, one row; ids of 1, 2 and 3 dimensions with repeats, 0, V - 1 and
 * bad ids. */
static void embedding_quant_matches_host(void **state)
{
    (void)state;
    int failed = 0;
    int32_t ids[123];
    make_quant_ids(ids, 123, 37);
    const int64_t shape2[2] = {3, 41}, shape3[3] = {2, 1, 7}, shape1[1] = {4};
    const int32_t one_row[4] = {0, -1, 1, 0};
    for (size_t f = 0; f < BLOCK_TYPE_COUNT; f++) {
        mcl_dtype t = block_types[f];
        int64_t qk = mcl_dtype_block_weights(t);
        uint32_t seed = 500 + 10 * (uint32_t)f;
        failed += !check_embedding_quant(t, 37, 3 * qk, ids, 2, shape2, seed, "ids [3,41]");
        failed += !check_embedding_quant(t, 37, qk, ids, 3, shape3, seed + 1, "ids [2,1,7]");
        failed += !check_embedding_quant(t, 1, 2 * qk, one_row, 1, shape1, seed + 2,
                                         "one row");
    }
    assert_int_equal(failed, 0);
}

/* The table read in row ranges: MOTIFCL_MAX_BINDING holds 21 rows of block bodies (fewer
 * where the device's offset alignment needs a coarser step of rows), so a table of 101 rows
 * takes several dispatches. Rows of 3 blocks: a range's first d is then not at an aligned
 * offset (on Lavapipe, 16-byte alignment), so its d binding starts below it and the kernel's
 * dlo is not 0. The graph's dispatch count shows the ranges; ids fall in every range, on
 * both sides of each boundary, and bad ids (zeroed by the first dispatch) sit among them; a
 * gather whose ids are all in the last range or bad shows that the zero rows do not depend
 * on the first range's ids. The control: a limit below one row is refused. */
static void embedding_quant_split_binding(void **state)
{
    (void)state;
    const int64_t vocab = 101;
    const int64_t part_wanted = 21;
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(ctx, &info));
    uint64_t align = info.min_storage_buffer_offset_alignment < 4
                         ? 4 : info.min_storage_buffer_offset_alignment;
    int failed = 0;
    for (size_t f = 0; f < BLOCK_TYPE_COUNT; f++) {
        mcl_dtype t = block_types[f];
        int64_t dim = 3 * mcl_dtype_block_weights(t);
        uint64_t row_body = (uint64_t)(dim / mcl_dtype_block_weights(t)) * body_bytes(t);
        /* The parts' rows: a multiple of the rows whose bodies are a multiple of align. */
        uint64_t step = 1;
        while ((step * row_body) % align != 0)
            step++;
        uint64_t part_rows = (uint64_t)part_wanted / step * step;
        assert_true(part_rows > 0);
        uint32_t want_dispatches = (uint32_t)((vocab + part_rows - 1) / part_rows);
        char limit[32];
        snprintf(limit, sizeof limit, "%llu", (unsigned long long)(part_wanted * row_body));
        switch_max_binding(limit);

        int32_t ids[64];
        int64_t n = 0;
        for (uint64_t r0 = 0; r0 < (uint64_t)vocab; r0 += part_rows) {
            ids[n++] = (int32_t)r0;                               /* a range's first row */
            ids[n++] = (int32_t)(r0 + part_rows / 2);             /* inside it (or past V) */
            if (r0 > 0)
                ids[n++] = (int32_t)(r0 - 1);                     /* the row before it */
        }
        ids[n++] = (int32_t)vocab - 1;
        ids[n++] = -3;
        ids[n++] = (int32_t)vocab;
        ids[n++] = 0;                                             /* a repeat */
        assert_true(n <= 64);
        int64_t shape[2] = {1, n};
        uint8_t *table = quant_table(t, vocab, dim, 700 + (uint32_t)f);
        float *want = mcl_test_floats((size_t)(n * dim));
        ref_embedding_quant(t, table, vocab, dim, ids, n, 0, want);
        uint32_t dispatches = 0;
        double bad = embedding_quant_mismatches(t, table, vocab, dim, ids, 2, shape, want,
                                                &dispatches);
        char name[128];
        snprintf(name, sizeof name, "embedding %s V=%lld D=%lld in %u row ranges (replayed)",
                 mcl_dtype_name(t), (long long)vocab, (long long)dim, want_dispatches);
        failed += !mcl_test_record(name, "mismatched words", bad, 0);
        printf("%s: %u dispatches\n", name, dispatches);
        snprintf(name, sizeof name, "embedding %s: %u dispatches, one per row range",
                 mcl_dtype_name(t), want_dispatches);
        failed += !mcl_test_record_bool(name, dispatches == want_dispatches && dispatches >= 3);

        const int32_t last_only[3] = {(int32_t)vocab - 1, -5, (int32_t)vocab};
        const int64_t shape3[1] = {3};
        ref_embedding_quant(t, table, vocab, dim, last_only, 3, 0, want);
        bad = embedding_quant_mismatches(t, table, vocab, dim, last_only, 1, shape3, want, NULL);
        snprintf(name, sizeof name, "embedding %s in row ranges, ids in the last range or bad",
                 mcl_dtype_name(t));
        failed += !mcl_test_record(name, "mismatched words", bad, 0);
        free(table);
        free(want);
    }

    switch_max_binding("16");
    const int64_t t_shape[2] = {4, 256}, o_shape[2] = {2, 256}, i_shape[1] = {2};
    const int32_t ids[2] = {0, 3};
    mcl_tensor *tt = mcl_test_tensor(ctx, MCL_DTYPE_Q4_K, 2, t_shape, NULL);
    mcl_tensor *ti = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, i_shape, ids);
    mcl_tensor *to = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, o_shape, NULL);
    mcl_status status = mcl_embedding(ctx, tt, ti, to);
    switch_max_binding(NULL);
    failed += !mcl_test_record_bool("embedding: a binding limit below one table row is refused",
                                    status == MCL_ERROR_TOO_LARGE);
    mcl_tensor_destroy(tt);
    mcl_tensor_destroy(ti);
    mcl_tensor_destroy(to);
    assert_int_equal(failed, 0);
}

/* A table larger than the device's maxStorageBufferRange (Lavapipe: 128 MiB), where that is
 * small enough to allocate here: Q8_0 rows of 4096 weights, a few hundred more than one
 * binding's bodies hold, as random bytes with random finite scales (quantizing 140 million
 * floats would take longer and prove nothing more). Ids on both sides of the boundary. */
static void embedding_quant_beyond_binding(void **state)
{
    (void)state;
    const mcl_dtype t = MCL_DTYPE_Q8_0;
    const int64_t dim = 4096;
    mcl_device_info info = {.size = sizeof info};
    assert_mcl_ok(mcl_context_device_info(ctx, &info));
    uint64_t row_body = (uint64_t)(dim / 32) * body_bytes(t);
    uint64_t rows_per_binding = info.max_storage_buffer_range / row_body;
    int64_t vocab = (int64_t)rows_per_binding + 300;
    size_t rb = quant_row_bytes(t, dim), bytes = rb * (size_t)vocab;
    if (bytes > ((size_t)1 << 28)) {
        char why[200];
        snprintf(why, sizeof why, "not run: a table beyond maxStorageBufferRange (%llu bytes) "
                 "would take %zu bytes; embedding_quant_split_binding forces the split instead",
                 (unsigned long long)info.max_storage_buffer_range, bytes);
        mcl_test_note("embedding_quant_beyond_binding", why);
        return;
    }
    uint8_t *table = malloc(bytes);
    assert_non_null(table);
    uint32_t x = 2463534242u;
    for (size_t i = 0; i < bytes; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        table[i] = (uint8_t)(x >> 24);
    }
    /* Each d a finite half of magnitude 2^-14 .. 2^-5 or a subnormal, either sign. */
    for (int64_t b = 0; b < vocab * (dim / 32); b++) {
        uint8_t *d = table + (size_t)b * 34;
        d[1] = (uint8_t)((d[1] & 0x83) | (uint8_t)((b % 10) << 2));
    }
    int32_t ids[] = {0, (int32_t)rows_per_binding - 1, (int32_t)rows_per_binding,
                     (int32_t)vocab - 1, -1, (int32_t)vocab, 17, (int32_t)rows_per_binding};
    const int64_t shape[1] = {sizeof ids / sizeof ids[0]};
    float *want = mcl_test_floats((size_t)(shape[0] * dim));
    ref_embedding_quant(t, table, vocab, dim, ids, shape[0], 0, want);
    uint32_t dispatches = 0;
    double bad = embedding_quant_mismatches(t, table, vocab, dim, ids, 1, shape, want,
                                            &dispatches);
    char name[128];
    snprintf(name, sizeof name, "embedding q8_0 V=%lld D=4096 (%zu bytes) beyond one binding",
             (long long)vocab, bytes);
    int passed = mcl_test_record(name, "mismatched words", bad, 0);
    passed &= mcl_test_record_bool("embedding beyond one binding: two dispatches",
                                   dispatches == 2);
    free(table);
    free(want);
    assert_true(passed);
}

/* Negative controls: for every block type the reference of the next row (a gather off by
 * one) and, for the table with one block's d changed (the d a kernel reads through its own
 * binding and offset), the unchanged table's reference must both disagree. */
static void embedding_quant_negative_controls(void **state)
{
    (void)state;
    int caught = 1;
    int32_t ids[123];
    make_quant_ids(ids, 123, 37);
    const int64_t shape[2] = {3, 41};
    for (size_t f = 0; f < BLOCK_TYPE_COUNT; f++) {
        mcl_dtype t = block_types[f];
        int64_t dim = 3 * mcl_dtype_block_weights(t);
        uint8_t *table = quant_table(t, 37, dim, 900 + (uint32_t)f);
        float *want = mcl_test_floats((size_t)(123 * dim));
        ref_embedding_quant(t, table, 37, dim, ids, 123, 1, want);
        double shifted = embedding_quant_mismatches(t, table, 37, dim, ids, 2, shape, want,
                                                    NULL);
        /* Block 1 of row 5 (an id the gather reads): its d's exponent changed by one. */
        ref_embedding_quant(t, table, 37, dim, ids, 123, 0, want);
        size_t d_at = t == MCL_DTYPE_Q6_K ? 208 : 0;
        size_t at = 5 * quant_row_bytes(t, dim) + mcl_dtype_block_bytes(t) + d_at + 1;
        table[at] ^= 0x04;
        double corrupted = embedding_quant_mismatches(t, table, 37, dim, ids, 2, shape, want,
                                                      NULL);
        printf("negative controls: embedding %s vs the next row's reference: %.0f mismatched "
               "words; one d changed: %.0f\n", mcl_dtype_name(t), shifted, corrupted);
        caught &= shifted > 0 && corrupted > 0;
        free(table);
        free(want);
    }
    int has_five = 0;
    for (int i = 0; i < 123; i++)
        has_five |= ids[i] == 5;
    assert_true(has_five);
    mcl_test_record_bool("negative control: embedding of a block table against the next row's "
                         "reference and with one d changed are detected", caught);
    assert_true(caught);
}

/* Statuses: D not a multiple of the block (not creatable through the API, so made by editing
 * a tensor's shape in place), a wrong output shape, wrong dtypes. */
static void embedding_quant_bad_arguments(void **state)
{
    (void)state;
    const int64_t t_shape[2] = {2, 64}, bad_create[2] = {4, 48}, i_shape[1] = {6};
    const int64_t o_ok[2] = {6, 64}, o_wide[2] = {6, 65}, o_rank[3] = {6, 1, 64};
    const int64_t o_short[2] = {6, 16};
    mcl_tensor *table = mcl_test_tensor(ctx, MCL_DTYPE_Q8_0, 2, t_shape, NULL);
    mcl_tensor *ids = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, i_shape, NULL);
    mcl_tensor *fids = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, i_shape, NULL);
    mcl_tensor *out = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, o_ok, NULL);
    mcl_tensor *wide = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, o_wide, NULL);
    mcl_tensor *rank = mcl_test_tensor(ctx, MCL_DTYPE_F32, 3, o_rank, NULL);
    mcl_tensor *shrt = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, o_short, NULL);
    mcl_tensor *i32 = mcl_test_tensor(ctx, MCL_DTYPE_I32, 2, t_shape, NULL);
    mcl_tensor *f16 = mcl_test_tensor(ctx, MCL_DTYPE_F16, 2, o_ok, NULL);
    mcl_tensor *q4 = mcl_test_tensor(ctx, MCL_DTYPE_Q4_0, 2, o_ok, NULL);

    mcl_tensor *none = NULL;
    EXPECT_STATUS(mcl_tensor_create(ctx, MCL_DTYPE_Q8_0, 2, bad_create, &none), INVALID);
    /* The same bytes as [8, 16]: D = 16 is half a Q8_0 block. */
    table->shape[0] = 8;
    table->shape[1] = 16;
    EXPECT_STATUS(mcl_embedding(ctx, table, ids, shrt), SHAPE);
    const char *why = mcl_context_last_error(ctx);
    int named = why && strstr(why, "multiple of 32") != NULL;
    printf("embedding of a [8, 16] q8_0 table: %s\n", why ? why : "(no message)");
    table->shape[0] = 2;
    table->shape[1] = 64;
    EXPECT_STATUS(mcl_embedding(ctx, table, ids, wide), SHAPE);
    EXPECT_STATUS(mcl_embedding(ctx, table, ids, rank), SHAPE);
    EXPECT_STATUS(mcl_embedding(ctx, table, ids, shrt), SHAPE);
    EXPECT_STATUS(mcl_embedding(ctx, table, fids, out), DTYPE);
    EXPECT_STATUS(mcl_embedding(ctx, table, ids, f16), DTYPE);
    EXPECT_STATUS(mcl_embedding(ctx, table, ids, q4), DTYPE);
    EXPECT_STATUS(mcl_embedding(ctx, i32, ids, out), DTYPE);
    EXPECT_STATUS(mcl_embedding(ctx, f16, ids, out), DTYPE);
    /* The control: the same table and ids with the right output are accepted. */
    const int32_t good[6] = {0, 1, 1, -1, 2, 0};
    assert_mcl_ok(mcl_tensor_upload(ids, 0, good, sizeof good));
    EXPECT_STATUS(mcl_embedding(ctx, table, ids, out), MCL_SUCCESS);

    mcl_tensor *all[] = {table, ids, fids, out, wide, rank, shrt, i32, f16, q4};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    int passed = mcl_test_record("embedding of a block table: bad arguments give the "
                                 "documented statuses", "wrong statuses",
                                 mcl_test_wrong_statuses, 0);
    passed &= mcl_test_record_bool("embedding: a block table's D that is not a multiple of "
                                   "its block is refused as such", named);
    assert_true(passed);
}

/* --- RoPE ------------------------------------------------------------------------------ */

typedef struct rope_case {
    int64_t shape[4];
    mcl_rope_layout layout;
    float theta;
    int64_t offset;
} rope_case;

/* Run RoPE on the device (in place when `in_place`), return NMSE against the reference with
 * the given layout, offset and angle mode. */
static double rope_nmse(const rope_case *c, int in_place, mcl_rope_layout ref_layout,
                        int64_t ref_offset, int exact_angle)
{
    int64_t n = numel(c->shape, 4);
    float *x = malloc((size_t)n * 4), *want = malloc((size_t)n * 4), *got = malloc((size_t)n * 4);
    assert_true(x && want && got);
    mcl_fill_random(x, (size_t)n, (uint32_t)(n + c->offset), -2.0f, 2.0f);
    ref_rope_f32(x, want, c->shape[0], c->shape[1], c->shape[2], c->shape[3],
                 ref_layout == MCL_ROPE_SPLIT_HALF, c->theta, ref_offset, exact_angle);
    mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, c->shape, x);
    mcl_tensor *ty = in_place ? tx : mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, c->shape, NULL);
    assert_mcl_ok(mcl_rope(ctx, tx, c->layout, c->theta, c->offset, ty));
    assert_mcl_ok(mcl_tensor_download(ty, 0, got, (uint64_t)n * 4));
    double nmse = mcl_nmse(got, want, (size_t)n);
    if (!in_place)
        mcl_tensor_destroy(ty);
    mcl_tensor_destroy(tx);
    free(x);
    free(want);
    free(got);
    return nmse;
}

static const rope_case rope_cases[] = {
    {{1, 1, 1, 2}, MCL_ROPE_INTERLEAVED, 10000.0f, 0},
    {{2, 67, 3, 64}, MCL_ROPE_INTERLEAVED, 10000.0f, 0},
    {{2, 67, 3, 64}, MCL_ROPE_SPLIT_HALF, 10000.0f, 13},
    {{1, 5, 2, 80}, MCL_ROPE_SPLIT_HALF, 500000.0f, 4091},
    {{1, 3, 4, 128}, MCL_ROPE_INTERLEAVED, 10000.0f, 100003},
    {{1, 2, 1, 256}, MCL_ROPE_SPLIT_HALF, 1000000.0f, (1 << 24) - 2},
    {{3, 7, 5, 6}, MCL_ROPE_INTERLEAVED, 100.0f, 1},
};

static void rope_matches_reference(void **state)
{
    (void)state;
    int failed = 0;
    for (size_t c = 0; c < sizeof rope_cases / sizeof rope_cases[0]; c++) {
        const rope_case *rc = &rope_cases[c];
        char name[128];
        snprintf(name, sizeof name, "rope %s [%lld,%lld,%lld,%lld] offset %lld",
                 rc->layout == MCL_ROPE_SPLIT_HALF ? "split-half" : "interleaved",
                 (long long)rc->shape[0], (long long)rc->shape[1], (long long)rc->shape[2],
                 (long long)rc->shape[3], (long long)rc->offset);
        double mirrored = rope_nmse(rc, (int)(c % 2), rc->layout, rc->offset, 0);
        printf("%s: nmse %.3g (float angle)\n", name, mirrored);
        failed += !mcl_test_record(name, "nmse", mirrored, 1e-12);

        double exact = rope_nmse(rc, 0, rc->layout, rc->offset, 1);
        printf("%s: nmse %.3g against the exact angle\n", name, exact);
        strcat(name, " vs exact angle");
        failed += !mcl_test_record(name, "nmse", exact, 3e-12);
    }
    assert_int_equal(failed, 0);
}

/* --- RoPE accuracy at long positions ---------------------------------------------------- */

/* 2 pi; M_PI is not in strict C11. */
#define ROPE_TWO_PI 6.283185307179586476925
/* What the device may lose beyond the host-side angles: its sin/cos on [-pi, pi] and its
 * float rotation and output (see the opening comment). */
#define ROPE_DEVICE_ALLOWANCE 2e-6

/* The definition, in double. */
static double rope_exact_angle(float theta, int64_t dh, int64_t i, int64_t pos)
{
    return (double)pos * pow((double)theta, -2.0 * (double)i / (double)dh);
}

/* The f32 convention of HF transformers and PyTorch: inv_freq in f32 (here the correctly
 * rounded float of the double value, the most favourable rounding it can get), then
 * freqs = pos * inv_freq in f32. */
static double rope_f32_convention_angle(float theta, int64_t dh, int64_t i, int64_t pos)
{
    float inv_freq = (float)pow((double)theta, -2.0 * (double)i / (double)dh);
    return (double)((float)pos * inv_freq);
}

/* Single-float turns, the negative control: rope_f32.comp's reduction with c0 and r[b]
 * rounded to float and plain float products, so the frequency carries up to 9 roundings and
 * pos * f one more, at the scale of the whole number of turns. */
static double rope_single_float_angle(float theta, int64_t dh, int64_t i, int64_t pos)
{
    float f = (float)(1.0 / ROPE_TWO_PI);
    for (int b = 0; b < 8; b++) {
        if (i & (1 << b))
            f = f * (float)pow((double)theta, -2.0 * (double)(1u << b) / (double)dh);
    }
    float turns = (float)pos * f;
    float frac = turns - nearbyintf(turns);
    return (double)(frac * (float)ROPE_TWO_PI);
}

/* The larger element error of the pair (x0, x1) rotated by `angle` in double against the
 * exact result (e0, e1). */
static double rope_pair_error(double x0, double x1, double angle, double e0, double e1)
{
    double y0 = x0 * cos(angle) - x1 * sin(angle), y1 = x0 * sin(angle) + x1 * cos(angle);
    return fmax(fabs(y0 - e0), fabs(y1 - e1));
}

enum { ROPE_ACC_SEQ = 3, ROPE_ACC_HEADS = 2 };

/* Largest element errors at one position against the definition: the device's, and those of
 * the f32 convention's and single-float turns' angles. */
typedef struct rope_max_errors {
    double device, f32, single;
} rope_max_errors;

/* mcl_rope over [1, ROPE_ACC_SEQ, ROPE_ACC_HEADS, dh] at positions offset + t; errs[t] gets
 * the largest errors at each position. Every pair of head h holds pair_values[h]: (1, 0)
 * rotates into the angle's cosine and sine, (-0.6, 0.8) is a unit vector off the axes. */
static void rope_position_errors(int64_t dh, float theta, mcl_rope_layout layout,
                                 int64_t offset, rope_max_errors *errs)
{
    static const float pair_values[ROPE_ACC_HEADS][2] = {{1.0f, 0.0f}, {-0.6f, 0.8f}};
    const int64_t half = dh / 2, shape[4] = {1, ROPE_ACC_SEQ, ROPE_ACC_HEADS, dh};
    const int split = layout == MCL_ROPE_SPLIT_HALF;
    const size_t n = (size_t)(ROPE_ACC_SEQ * ROPE_ACC_HEADS * dh);
    float *x = mcl_test_floats(n), *got = mcl_test_floats(n);
    for (int64_t row = 0; row < ROPE_ACC_SEQ * ROPE_ACC_HEADS; row++) {
        for (int64_t i = 0; i < half; i++) {
            int64_t i0 = row * dh + (split ? i : 2 * i), i1 = i0 + (split ? half : 1);
            x[i0] = pair_values[row % ROPE_ACC_HEADS][0];
            x[i1] = pair_values[row % ROPE_ACC_HEADS][1];
        }
    }
    mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, shape, x);
    mcl_tensor *ty = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, shape, NULL);
    assert_mcl_ok(mcl_rope(ctx, tx, layout, theta, offset, ty));
    assert_mcl_ok(mcl_tensor_download(ty, 0, got, (uint64_t)n * 4));
    mcl_tensor_destroy(tx);
    mcl_tensor_destroy(ty);

    for (int64_t t = 0; t < ROPE_ACC_SEQ; t++) {
        const int64_t pos = offset + t;
        rope_max_errors *e = &errs[t];
        *e = (rope_max_errors){0.0, 0.0, 0.0};
        for (int64_t row = t * ROPE_ACC_HEADS; row < (t + 1) * ROPE_ACC_HEADS; row++) {
            for (int64_t i = 0; i < half; i++) {
                int64_t i0 = row * dh + (split ? i : 2 * i), i1 = i0 + (split ? half : 1);
                double x0 = x[i0], x1 = x[i1];
                double exact = rope_exact_angle(theta, dh, i, pos);
                double e0 = x0 * cos(exact) - x1 * sin(exact);
                double e1 = x0 * sin(exact) + x1 * cos(exact);
                double f32 = rope_f32_convention_angle(theta, dh, i, pos);
                double single = rope_single_float_angle(theta, dh, i, pos);
                e->device = fmax(e->device, fmax(fabs(got[i0] - e0), fabs(got[i1] - e1)));
                e->f32 = fmax(e->f32, rope_pair_error(x0, x1, f32, e0, e1));
                e->single = fmax(e->single, rope_pair_error(x0, x1, single, e0, e1));
            }
        }
    }
    free(x);
    free(got);
}

static void rope_accuracy_at_long_positions(void **state)
{
    (void)state;
    static const int64_t head_dims[] = {128, 64};
    static const float thetas[] = {10000.0f, 500000.0f};
    static const mcl_rope_layout layouts[] = {MCL_ROPE_INTERLEAVED, MCL_ROPE_SPLIT_HALF};
    /* Each case covers centre - 1, centre and centre + 1. */
    static const int64_t centres[] = {1, 4096, 65536, 131072};
    enum { CASES = 2 * 2 * 2 * 4 };
    int failed = 0, control_caught = 1, control_cases = 0;
    for (int k = 0; k < CASES; k++) {
        const int64_t dh = head_dims[k / 16], offset = centres[k % 4] - 1;
        const float theta = thetas[k / 8 % 2];
        const mcl_rope_layout layout = layouts[k / 4 % 2];
        rope_max_errors errs[ROPE_ACC_SEQ];
        rope_position_errors(dh, theta, layout, offset, errs);
        for (int64_t t = 0; t < ROPE_ACC_SEQ; t++) {
            const int64_t pos = offset + t;
            const rope_max_errors *e = &errs[t];
            const double bound = e->f32 + ROPE_DEVICE_ALLOWANCE;
            char name[160], figure[224];
            snprintf(name, sizeof name, "rope accuracy Dh %lld theta %g %s position %lld",
                     (long long)dh, (double)theta,
                     layout == MCL_ROPE_SPLIT_HALF ? "split-half" : "interleaved",
                     (long long)pos);
            printf("%s: max abs error device %.3g, f32 convention %.3g, single-float turns "
                   "%.3g\n", name, e->device, e->f32, e->single);
            failed += !mcl_test_record(name, "device max abs error (<= f32 convention's + 2e-6)",
                                       e->device, bound);
            snprintf(figure, sizeof figure, "%s: f32 convention max abs error", name);
            mcl_test_record_figure(figure, e->f32, "absolute");
            snprintf(figure, sizeof figure, "%s: single-float turns max abs error", name);
            mcl_test_record_figure(figure, e->single, "absolute");
            if (pos == 65536) {
                control_caught &= e->single > bound;
                control_cases++;
            }
        }
    }
    int caught = mcl_test_record_bool(
        "negative control: single-float turns exceed the device's bound at position 65536 "
        "(every Dh, theta and layout)",
        control_caught && control_cases == CASES / 4);
    assert_int_equal(failed, 0);
    assert_true(caught);
}

/* --- negative controls ----------------------------------------------------------------- */

/* --- RoPE with a frequency table (mcl_rope_table) -------------------------------------- */

/* mcl_rope_table of `c` with per-pair divisors (llama 3.1's rope_freqs; NULL for none)
 * against the definition in double, angle = pos * theta^(-2i/Dh) / factor_i: NMSE. With
 * `ref_factors` the reference takes other divisors than the device (the control). */
static double rope_table_nmse(const rope_case *c, const float *factors, const float *ref_factors,
                              int in_place)
{
    int64_t n = numel(c->shape, 4), half = c->shape[3] / 2;
    float *x = malloc((size_t)n * 4), *got = malloc((size_t)n * 4);
    float *table = malloc((size_t)half * 2 * 4);
    double *want = malloc((size_t)n * sizeof *want);
    assert_true(x && got && table && want);
    mcl_fill_random(x, (size_t)n, (uint32_t)(n + c->offset + 7), -2.0f, 2.0f);
    mcl_rope_table_values(c->theta, (uint32_t)c->shape[3], factors, table);
    int64_t rows = n / c->shape[3];
    for (int64_t r = 0; r < rows; r++) {
        int64_t pos = c->offset + (r / c->shape[2]) % c->shape[1];
        for (int64_t i = 0; i < half; i++) {
            double angle = rope_exact_angle(c->theta, c->shape[3], i, pos);
            if (ref_factors)
                angle /= (double)ref_factors[i];
            int split = c->layout == MCL_ROPE_SPLIT_HALF;
            int64_t i0 = r * c->shape[3] + (split ? i : 2 * i);
            int64_t i1 = split ? i0 + half : i0 + 1;
            want[i0] = (double)x[i0] * cos(angle) - (double)x[i1] * sin(angle);
            want[i1] = (double)x[i0] * sin(angle) + (double)x[i1] * cos(angle);
        }
    }
    int64_t tshape[2] = {half, 2};
    mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, c->shape, x);
    mcl_tensor *tt = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, tshape, table);
    mcl_tensor *ty = in_place ? tx : mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, c->shape, NULL);
    assert_mcl_ok(mcl_rope_table(ctx, tx, c->layout, tt, c->offset, ty));
    assert_mcl_ok(mcl_tensor_download(ty, 0, got, (uint64_t)n * 4));
    double num = 0.0, den = 0.0;
    for (int64_t k = 0; k < n; k++) {
        num += ((double)got[k] - want[k]) * ((double)got[k] - want[k]);
        den += want[k] * want[k];
    }
    if (!in_place)
        mcl_tensor_destroy(ty);
    mcl_tensor_destroy(tt);
    mcl_tensor_destroy(tx);
    free(x);
    free(got);
    free(table);
    free(want);
    return num / den;
}

/* The table variant against the definition, with llama 3.1-like divisors (1 to 8) and
 * without, in both layouts, at positions up to 131072 and near 2^24, in place and not: NMSE
 * <= 3e-12, as mcl_rope's against the exact angle. Control: the reference without the
 * divisors is far off. A wrong table shape is refused. */
static void rope_table_matches_definition(void **state)
{
    (void)state;
    static const rope_case cases[] = {
        {{1, 5, 3, 64}, MCL_ROPE_SPLIT_HALF, 500000.0f, 0},
        {{2, 4, 2, 128}, MCL_ROPE_INTERLEAVED, 10000.0f, 65533},
        {{1, 3, 4, 128}, MCL_ROPE_SPLIT_HALF, 500000.0f, 131069},
        {{1, 2, 1, 256}, MCL_ROPE_SPLIT_HALF, 1000000.0f, (1 << 24) - 2},
    };
    float factors[128];
    for (int i = 0; i < 128; i++)
        factors[i] = 1.0f + 7.0f * (float)i / 127.0f;
    int failed = 0;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const rope_case *rc = &cases[c];
        for (int scaled = 0; scaled < 2; scaled++) {
            const float *f = scaled ? factors : NULL;
            char name[160];
            snprintf(name, sizeof name, "rope table %s Dh %lld offset %lld%s",
                     rc->layout == MCL_ROPE_SPLIT_HALF ? "split-half" : "interleaved",
                     (long long)rc->shape[3], (long long)rc->offset,
                     scaled ? ", divisors 1..8" : "");
            failed += !mcl_test_record(name, "nmse", rope_table_nmse(rc, f, f, (int)c % 2),
                                       3e-12);
        }
    }
    double control = rope_table_nmse(&cases[1], factors, NULL, 0);
    char name[160];
    snprintf(name, sizeof name, "rope table: control, the definition without the divisors "
                                "(nmse %.3g) is far off", control);
    failed += !mcl_test_record_bool(name, control > 1e-3);
    int64_t bad_shape[2] = {16, 2}; /* Dh 64 wants [32, 2] */
    mcl_tensor *tx = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, cases[0].shape, NULL);
    mcl_tensor *tt = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, bad_shape, NULL);
    failed += !mcl_test_record_bool(
        "rope table of the wrong shape refused",
        mcl_rope_table(ctx, tx, MCL_ROPE_SPLIT_HALF, tt, 0, tx) == MCL_ERROR_SHAPE_MISMATCH);
    mcl_tensor_destroy(tt);
    mcl_tensor_destroy(tx);
    assert_int_equal(failed, 0);
}

static void negative_controls(void **state)
{
    (void)state;
    /* Permute: the reference of another permutation. */
    const int64_t shape[4] = {2, 3, 5, 7};
    uint32_t *x = random_words(210, 11);
    uint32_t want[210];
    const uint32_t perm[4] = {0, 2, 1, 3}, other[4] = {0, 1, 2, 3};
    ref_permute_u32(x, shape, 4, other, want);
    int caught = permute_mismatches(x, shape, 4, perm, want) > 0;
    free(x);

    /* Embedding: a reference that clamps bad ids instead of zeroing their rows. */
    int32_t ids[123];
    make_ids(ids, 123, 37);
    const int64_t ids_shape[2] = {3, 41};
    caught &= embedding_mismatches(ids, ids_shape, 2, 37, 67, 1) > 0;

    /* RoPE: the other layout, and a position offset off by one. */
    const rope_case *rc = &rope_cases[2];
    double wrong_layout = rope_nmse(rc, 0, MCL_ROPE_INTERLEAVED, rc->offset, 0);
    double wrong_offset = rope_nmse(rc, 0, rc->layout, rc->offset + 1, 0);
    printf("negative controls: rope wrong layout nmse %.3g, offset off by one %.3g\n",
           wrong_layout, wrong_offset);
    caught &= wrong_layout > 1e-12 && wrong_offset > 1e-12;
    mcl_test_record_bool("negative control: wrong permutation, clamped ids, wrong RoPE layout "
                         "and offset are all detected", caught);
    assert_true(caught);
}


/* --- bad arguments --------------------------------------------------------------------- */

static void bad_arguments(void **state)
{
    (void)state;
    const mcl_rope_layout IL = MCL_ROPE_INTERLEAVED;
    const int64_t s4[4] = {1, 2, 3, 4}, s4_odd[4] = {1, 2, 3, 5}, s2[2] = {6, 4}, s1[1] = {24};
    const int64_t s4p[4] = {1, 3, 2, 4}, s_table[2] = {10, 4}, s_ids[1] = {6};
    const int64_t s_big[4] = {1, 2, 3, 1024}, s23[2] = {2, 3}, s33[2] = {3, 3}, s53[2] = {5, 3};
    mcl_tensor *x = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s4, NULL), *y = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s4, NULL);
    mcl_tensor *odd = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s4_odd, NULL), *m2 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, s2, NULL);
    mcl_tensor *v1 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 1, s1, NULL), *i1 = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, s1, NULL);
    mcl_tensor *xp = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s4p, NULL), *big = mcl_test_tensor(ctx, MCL_DTYPE_F32, 4, s_big, NULL);
    mcl_tensor *table = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, s_table, NULL);
    mcl_tensor *ids = mcl_test_tensor(ctx, MCL_DTYPE_I32, 1, s_ids, NULL);
    mcl_tensor *f16 = mcl_test_tensor(ctx, MCL_DTYPE_F16, 1, s1, NULL), *u8 = mcl_test_tensor(ctx, MCL_DTYPE_U8, 1, s_ids, NULL);
    mcl_tensor *u8b = mcl_test_tensor(ctx, MCL_DTYPE_U8, 2, s23, NULL);
    mcl_tensor *c23 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, s23, NULL), *c33 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, s33, NULL);
    mcl_tensor *c53 = mcl_test_tensor(ctx, MCL_DTYPE_F32, 2, s53, NULL);

    /* RoPE */
    EXPECT_STATUS(mcl_rope(NULL, x, IL, 1e4f, 0, y), INVALID);
    EXPECT_STATUS(mcl_rope(ctx, NULL, IL, 1e4f, 0, y), INVALID);
    EXPECT_STATUS(mcl_rope(ctx, odd, IL, 1e4f, 0, odd), SHAPE);
    EXPECT_STATUS(mcl_rope(ctx, x, IL, 1e4f, 0, xp), SHAPE);
    EXPECT_STATUS(mcl_rope(ctx, m2, IL, 1e4f, 0, m2), SHAPE);
    EXPECT_STATUS(mcl_rope(ctx, x, (mcl_rope_layout)7, 1e4f, 0, y), INVALID);
    EXPECT_STATUS(mcl_rope(ctx, x, IL, 0.0f, 0, y), INVALID);
    EXPECT_STATUS(mcl_rope(ctx, x, IL, NAN, 0, y), INVALID);
    EXPECT_STATUS(mcl_rope(ctx, x, IL, 1e4f, -1, y), INVALID);
    EXPECT_STATUS(mcl_rope(ctx, x, IL, 1e4f, (1 << 24) - 1, y),
                     INVALID);  /* T = 2: the last position is 2^24 */
    EXPECT_STATUS(mcl_rope(ctx, big, IL, 1e4f, 0, big), UNSUPPORTED);
    /* Embedding */
    EXPECT_STATUS(mcl_embedding(ctx, table, x, y), DTYPE);
    EXPECT_STATUS(mcl_embedding(ctx, table, ids, y), SHAPE);
    EXPECT_STATUS(mcl_embedding(ctx, x, ids, m2), SHAPE);
    EXPECT_STATUS(mcl_embedding(ctx, table, ids, NULL), INVALID);
    /* Copy */
    EXPECT_STATUS(mcl_copy(ctx, x, odd), SHAPE);
    EXPECT_STATUS(mcl_copy(ctx, x, f16), DTYPE);
    EXPECT_STATUS(mcl_copy(ctx, u8, u8b), UNSUPPORTED);  /* 6 bytes: not whole words */
    {
        /* Block types: no element size, so only the same type matches (68 bytes of Q8_0
         * would overrun Q4_0's 36). */
        int64_t s64[1] = {64};
        mcl_tensor *q8 = mcl_test_tensor(ctx, MCL_DTYPE_Q8_0, 1, s64, NULL);
        mcl_tensor *q4 = mcl_test_tensor(ctx, MCL_DTYPE_Q4_0, 1, s64, NULL);
        EXPECT_STATUS(mcl_copy(ctx, q8, q4), DTYPE);
        EXPECT_STATUS(mcl_copy(ctx, q4, q8), DTYPE);
        mcl_tensor_destroy(q8);
        mcl_tensor_destroy(q4);
    }
    EXPECT_STATUS(mcl_copy(ctx, NULL, y), INVALID);
    /* Permute */
    const uint32_t p_ok[4] = {0, 2, 1, 3}, p_dup[4] = {0, 1, 1, 3}, p_range[4] = {0, 1, 2, 4};
    EXPECT_STATUS(mcl_permute(ctx, x, p_dup, xp), INVALID);
    EXPECT_STATUS(mcl_permute(ctx, x, p_range, xp), INVALID);
    EXPECT_STATUS(mcl_permute(ctx, x, NULL, xp), INVALID);
    EXPECT_STATUS(mcl_permute(ctx, x, p_ok, y), SHAPE);
    EXPECT_STATUS(mcl_permute(ctx, x, p_ok, m2), SHAPE);
    EXPECT_STATUS(mcl_permute(ctx, f16, p_ok, f16), DTYPE);
    EXPECT_STATUS(mcl_permute(ctx, v1, p_ok, i1), DTYPE);
    /* Concat */
    EXPECT_STATUS(mcl_concat(ctx, c23, c33, 0, c33), SHAPE);
    EXPECT_STATUS(mcl_concat(ctx, c23, c33, 1, c53), SHAPE);
    EXPECT_STATUS(mcl_concat(ctx, c23, c33, 2, c53), INVALID);
    EXPECT_STATUS(mcl_concat(ctx, c23, c23, 0, c23), SHAPE);
    EXPECT_STATUS(mcl_concat(ctx, c23, v1, 0, c53), SHAPE);
    EXPECT_STATUS(mcl_concat(ctx, f16, f16, 0, f16), DTYPE);

    mcl_tensor *all[] = {x, y, odd, m2, v1, i1, xp, big, table, ids, f16, u8, u8b, c23, c33, c53};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        mcl_tensor_destroy(all[i]);
    int passed = mcl_test_record("layout: bad arguments give the documented statuses",
                                 "wrong statuses", mcl_test_wrong_statuses, 0);
    assert_true(passed);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    ctx = mcl_test_device_context();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(copy_matches_source),
        cmocka_unit_test(permute_all_24_of_4d),
        cmocka_unit_test(permute_other_ranks),
        cmocka_unit_test(concat_each_axis),
        cmocka_unit_test(embedding_gathers_and_zeroes_bad_ids),
        cmocka_unit_test(embedding_quant_matches_host),
        cmocka_unit_test(embedding_quant_split_binding),
        cmocka_unit_test(embedding_quant_beyond_binding),
        cmocka_unit_test(embedding_quant_negative_controls),
        cmocka_unit_test(embedding_quant_bad_arguments),
        cmocka_unit_test(rope_matches_reference),
        cmocka_unit_test(rope_accuracy_at_long_positions),
        cmocka_unit_test(rope_table_matches_definition),
        cmocka_unit_test(negative_controls),
        cmocka_unit_test(bad_arguments),
    };
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
