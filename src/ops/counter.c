/* The counter-state linear layer (MEMORY_NATIVE.md section 1): its state, conversion from and
 * to f32 weights on the host, and the dispatches of its forward and backward passes.
 *
 * Dispatch plan (kernels in shaders/counter_*):
 *   forward   gemm_f32 (COUNTER_B, TRANS_B): y = x W^T, W decoded as the GEMM's tiles load
 *   backward  gemm_f32 (COUNTER_B): grad_x = grad_out W (the W before the update)
 *             counter_stats_f32: G per tile (16, 32 or 64 rows by 64 columns), each row's
 *                                partial sum G^2 and G t
 *             counter_rows_f32:  the row sums, v, s and the two factors of the row
 *             counter_apply_f32: G per tile again, each weight's step, written in place
 * G is never stored: computing it twice costs arithmetic, not memory (the statistics pass's
 * with fused multiply-adds, half of it: its sums need G only within rounding, the weight
 * step's the exact order of counter_grad.glsl). An update invocation
 * owns 16 weights of a row, three whole words of the packed state (in a multiple of 16), so
 * no two invocations write one word and the kernels need no 8-bit storage. */
#include <math.h>
#include <string.h>

#include "../core/alloc.h"
#include "../vk/runtime.h"
#include "counter.h"
#include "ops_internal.h"

/* The update's tiles: 64 columns, 16 to 64 rows (counter_grad.glsl's constant 3; the
 * library's choice COUNTER_DEFAULT_ROWS, MOTIFCL_COUNTER_ROWS where set). */
#define COUNTER_TILE_COLS 64u
#define COUNTER_DEFAULT_ROWS 32u
/* The update passes' workgroup (counter_grad.glsl: a tile's sums spread over it, each a chain
 * of a batch's adds; at 64, with tiles of 16 rows, a step of the stories15M shape spent 53 of
 * its 76 ms in the two passes on an H100, ca2cd54:evidence/h100-5793ad7-lease), within the
 * device's limit. Tiles of 32 rows at 256: three workgroups a multiprocessor on an H100, the
 * step 6% faster than at 16 rows (evidence/h100-c8dfd41-rows, docs/counter-state.md). */
#define COUNTER_UPDATE_WG 256u
#define COUNTER_ROWS_WG 64u
/* Vulkan's minimum maxComputeWorkGroupCount per dimension. */
#define COUNTER_MAX_GROUPS 65535u
/* The most rows a grid of the shortest tiles (16 rows) reaches within that count. */
#define COUNTER_MAX_ROWS ((int64_t)COUNTER_MAX_GROUPS * 16)
/* The spec's defaults and the scale's range. */
#define COUNTER_DEFAULT_BETA 0.9f
#define COUNTER_DEFAULT_EPS 1e-3f
#define COUNTER_SCALE_MIN 1e-5f
#define COUNTER_SCALE_MAX 10.0f

struct mcl_counter_linear {
    mcl_child child;
    mcl_context *ctx;
    int64_t out, in;
    uint32_t C;
    mcl_tensor *state, *scale, *moment;
    uint32_t update_wg; /* mcl_counter_linear_update_wg's choice, 0: the library's */
};

typedef struct grad_push {
    uint32_t n, out_dim, in_dim, C, last; /* last: tiles (stats) or seed (apply) */
} grad_push;

typedef struct rows_push {
    uint32_t out_dim, in_dim, tiles, C;
    float lr, lr_scale, beta, eps;
} rows_push;

/* Bytes of the packed state of n weights (n a multiple of 4). */
static uint64_t packed_bytes(uint64_t n)
{
    return n / 4 * 3;
}

/* codes[0..n) (n a multiple of 4) into bytes, four codes in three bytes. */
static void pack_codes(const uint8_t *codes, uint64_t n, uint8_t *bytes)
{
    for (uint64_t g = 0; g < n / 4; g++) {
        const uint8_t *k = codes + 4 * g;
        uint8_t *b = bytes + 3 * g;
        b[0] = (uint8_t)(k[0] | (k[1] & 3) << 6);
        b[1] = (uint8_t)(((k[1] >> 2) & 15) | (k[2] & 15) << 4);
        b[2] = (uint8_t)(((k[2] >> 4) & 3) | k[3] << 2);
    }
}

static uint8_t unpack_code(const uint8_t *bytes, uint64_t e)
{
    const uint8_t *b = bytes + 3 * (e / 4);
    uint32_t bits = b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16;
    return (uint8_t)(bits >> (6 * (e % 4)) & 63);
}

static void release(mcl_counter_linear *layer)
{
    mcl_tensor **t[] = {&layer->state, &layer->scale, &layer->moment};
    for (size_t i = 0; i < sizeof t / sizeof *t; i++) {
        mcl_tensor_destroy(*t[i]);
        *t[i] = NULL;
    }
}

static void release_child(mcl_child *child)
{
    release((mcl_counter_linear *)(void *)((char *)child - offsetof(mcl_counter_linear, child)));
}

/* The layer's device state, or why it is gone. */
static mcl_status check_layer(const mcl_counter_linear *layer)
{
    mcl_status status = mcl_context_check(layer->ctx);
    if (status == MCL_SUCCESS && !layer->state)
        status = MCL_ERROR_CONTEXT_DESTROYED;
    return status;
}

/* Upload codes (t, c per weight, or one code for all when t is NULL), s and v = 0. */
static mcl_status upload_state(mcl_counter_linear *layer, const int8_t *t, const float *s)
{
    const uint64_t n = (uint64_t)layer->out * (uint64_t)layer->in;
    const uint32_t C = layer->C;
    uint8_t *codes = mcl_mem_malloc(n);
    uint8_t *bytes = mcl_mem_malloc(packed_bytes(n));
    float *ones = s ? NULL : mcl_mem_malloc((size_t)layer->out * sizeof(float));
    mcl_status status = MCL_SUCCESS;
    if (!codes || !bytes || (!s && !ones)) {
        status = mcl_fail(layer->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        goto done;
    }
    for (uint64_t e = 0; e < n; e++)
        codes[e] = (uint8_t)((uint32_t)((t ? t[e] : 0) + 1) * (2 * C - 1) + (C - 1));
    pack_codes(codes, n, bytes);
    if (!s) {
        for (int64_t o = 0; o < layer->out; o++)
            ones[o] = 1.0f;
    }
    if ((status = mcl_tensor_upload(layer->state, 0, bytes, packed_bytes(n))) != MCL_SUCCESS ||
        (status = mcl_tensor_upload(layer->scale, 0, s ? s : ones,
                                    (uint64_t)layer->out * sizeof(float))) != MCL_SUCCESS)
        goto done;
    status = mcl_tensor_zero(layer->moment);
done:
    mcl_mem_free(codes);
    mcl_mem_free(bytes);
    mcl_mem_free(ones);
    return status;
}

mcl_status mcl_counter_linear_create(mcl_context *ctx, const mcl_counter_linear_desc *desc,
                                     mcl_counter_linear **layer)
{
    static const char op[] = "mcl_counter_linear_create";
    if (layer)
        *layer = NULL;
    if (!ctx)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (!desc || !layer || desc->size < offsetof(mcl_counter_linear_desc, reserved))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: NULL argument or desc->size not set", op);
    const uint32_t C = desc->C ? desc->C : MCL_COUNTER_DEFAULT_C;
    int reserved_set = desc->reserved0 != 0;
    if (desc->size >= sizeof *desc) {
        for (size_t i = 0; i < sizeof desc->reserved / sizeof *desc->reserved; i++)
            reserved_set |= desc->reserved[i] != 0;
    }
    if (desc->out < 1 || desc->in < 16 || desc->in % 16 != 0 || C > MCL_COUNTER_MAX_C ||
        reserved_set)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: out >= 1, in >= 16 and a multiple of 16, C in 1..%d (6-bit "
                        "codes) and reserved fields zero are required", op, MCL_COUNTER_MAX_C);
    if (desc->out > COUNTER_MAX_ROWS || desc->in > COUNTER_MAX_ROWS ||
        (uint64_t)desc->out * (uint64_t)desc->in > UINT32_MAX)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE,
                        "%s: out and in at most %lld, out x in below 2^32", op,
                        (long long)COUNTER_MAX_ROWS);
    mcl_counter_linear *l = mcl_mem_calloc(1, sizeof *l);
    if (!l)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    l->ctx = ctx;
    l->out = desc->out;
    l->in = desc->in;
    l->C = C;
    mcl_context_adopt(ctx, &l->child, release_child);
    const int64_t bytes = (int64_t)packed_bytes((uint64_t)l->out * (uint64_t)l->in);
    mcl_status status;
    if ((status = mcl_tensor_create(ctx, MCL_DTYPE_U8, 1, &bytes, &l->state)) != MCL_SUCCESS ||
        (status = mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &l->out, &l->scale)) !=
            MCL_SUCCESS ||
        (status = mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &l->out, &l->moment)) !=
            MCL_SUCCESS ||
        (status = upload_state(l, NULL, NULL)) != MCL_SUCCESS) {
        mcl_counter_linear_destroy(l);
        return status;
    }
    *layer = l;
    return MCL_SUCCESS;
}

void mcl_counter_linear_destroy(mcl_counter_linear *layer)
{
    if (!layer)
        return;
    release(layer);
    mcl_context_disown(layer->ctx, &layer->child);
    mcl_mem_free(layer);
}

mcl_tensor *mcl_counter_linear_state(const mcl_counter_linear *layer)
{
    return layer ? layer->state : NULL;
}

mcl_tensor *mcl_counter_linear_scale(const mcl_counter_linear *layer)
{
    return layer ? layer->scale : NULL;
}

mcl_tensor *mcl_counter_linear_moment(const mcl_counter_linear *layer)
{
    return layer ? layer->moment : NULL;
}

mcl_status mcl_counter_linear_from_f32(mcl_counter_linear *layer, const float *w,
                                       float threshold_ratio)
{
    if (!layer)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = check_layer(layer);
    if (status != MCL_SUCCESS)
        return status;
    if (!w || !(threshold_ratio >= 0.0f) || !isfinite(threshold_ratio))
        return mcl_fail(layer->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_counter_linear_from_f32: w NULL or threshold_ratio not finite "
                        "and >= 0");
    const uint64_t n = (uint64_t)layer->out * (uint64_t)layer->in;
    for (uint64_t e = 0; e < n; e++) {
        if (!isfinite(w[e]))
            return mcl_fail(layer->ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "mcl_counter_linear_from_f32: weight %llu is not finite",
                            (unsigned long long)e);
    }
    int8_t *t = mcl_mem_malloc(n);
    float *s = mcl_mem_malloc((size_t)layer->out * sizeof(float));
    if (!t || !s) {
        status = mcl_fail(layer->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        goto done;
    }
    for (int64_t o = 0; o < layer->out; o++) {
        const float *row = w + o * layer->in;
        int8_t *trow = t + o * layer->in;
        double sum = 0.0, kept = 0.0;
        int64_t nonzero = 0;
        for (int64_t i = 0; i < layer->in; i++)
            sum += fabs((double)row[i]);
        const double delta = (double)threshold_ratio * sum / (double)layer->in;
        for (int64_t i = 0; i < layer->in; i++) {
            const double a = fabs((double)row[i]);
            trow[i] = (int8_t)(a > delta ? (row[i] > 0.0f ? 1 : -1) : 0);
            if (trow[i] != 0) {
                kept += a;
                nonzero++;
            }
        }
        double scale = nonzero ? kept / (double)nonzero : sum / (double)layer->in;
        if (scale < COUNTER_SCALE_MIN)
            scale = COUNTER_SCALE_MIN;
        if (scale > COUNTER_SCALE_MAX)
            scale = COUNTER_SCALE_MAX;
        s[o] = (float)scale;
    }
    status = upload_state(layer, t, s);
done:
    mcl_mem_free(t);
    mcl_mem_free(s);
    return status;
}

mcl_status mcl_counter_linear_to_f32(mcl_counter_linear *layer, float *w, int8_t *t, int8_t *c)
{
    if (!layer)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = check_layer(layer);
    if (status != MCL_SUCCESS)
        return status;
    const uint64_t n = (uint64_t)layer->out * (uint64_t)layer->in;
    const uint32_t levels = 2 * layer->C - 1;
    uint8_t *bytes = mcl_mem_malloc(packed_bytes(n));
    float *s = mcl_mem_malloc((size_t)layer->out * sizeof(float));
    if (!bytes || !s) {
        status = mcl_fail(layer->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
        goto done;
    }
    if ((status = mcl_tensor_download(layer->state, 0, bytes, packed_bytes(n))) !=
            MCL_SUCCESS ||
        (status = mcl_tensor_download(layer->scale, 0, s, (uint64_t)layer->out * 4)) !=
            MCL_SUCCESS)
        goto done;
    for (uint64_t e = 0; e < n; e++) {
        const uint32_t code = unpack_code(bytes, e);
        const int tv = (int)(code / levels) - 1;
        if (w)
            w[e] = s[e / (uint64_t)layer->in] * (float)tv;
        if (t)
            t[e] = (int8_t)tv;
        if (c)
            c[e] = (int8_t)((int)(code % levels) - (int)(layer->C - 1));
    }
done:
    mcl_mem_free(bytes);
    mcl_mem_free(s);
    return status;
}

/* Rows of t when its last dimension is `last` (0 when it is not, or t has no dimension). */
static int64_t rows_of(const mcl_tensor *t, int64_t last)
{
    if (t->ndim < 1 || t->shape[t->ndim - 1] != last)
        return 0;
    return mcl_tensor_numel(t) / last;
}

static mcl_status check_input(mcl_counter_linear *layer, const char *op, const mcl_tensor *t,
                              const char *what)
{
    if (!t)
        return mcl_fail(layer->ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: %s is NULL", op, what);
    if (t->ctx != layer->ctx)
        return mcl_fail(layer->ctx, MCL_ERROR_WRONG_CONTEXT, "%s: %s is of another context",
                        op, what);
    if (t->dtype != MCL_DTYPE_F32)
        return mcl_fail(layer->ctx, MCL_ERROR_DTYPE_MISMATCH, "%s: %s is not f32", op, what);
    return MCL_SUCCESS;
}

/* Batch rows a group of the update passes stages at a time (counter_grad.glsl's constant 2).
 * 32 halve the chunks' barriers, but the next chunk's loads then hold 139 registers an
 * invocation on an H200, one workgroup of 256 a multiprocessor; 16 hold 113, two
 * (docs/counter-state.md). */
#define COUNTER_CHUNK 16u

/* Shared memory of an update pass of workgroup `wg` and tiles of `rows` rows
 * (counter_grad.glsl: wg / (4 rows) groups of COUNTER_CHUNK x (rows / 4 + 16) x 16 bytes, and
 * rows x 256 of totals; counter_stats_f32's rows x 32 bytes of row sums beside them). */
static uint32_t update_shared_bytes(uint32_t wg, uint32_t rows)
{
    return wg / (4 * rows) * COUNTER_CHUNK * (rows / 4 + 16) * 16 + rows * 256 + rows * 32;
}

/* The update passes' workgroup and tile rows: the rows at most a quarter of the workgroup,
 * both narrower where the device's invocations or shared memory do not hold them. */
typedef struct update_shape {
    uint32_t wg, rows;
} update_shape;

static update_shape fit_update(const mcl_context *ctx, uint32_t wg)
{
    const mcl_traits *t = mcl_traits_of(ctx);
    update_shape s = {wg, t->counter_rows ? t->counter_rows : COUNTER_DEFAULT_ROWS};
    for (;;) {
        while (4 * s.rows > s.wg)
            s.rows /= 2;
        if (s.wg == 64 || (s.wg <= t->max_invocations &&
                           update_shared_bytes(s.wg, s.rows) <= t->max_shared_bytes))
            return s;
        s.wg /= 2;
    }
}

static mcl_status get_kernel(mcl_context *ctx, mcl_kernel_id id, uint32_t bindings,
                             uint32_t local_size, uint32_t spec1, uint32_t chunk,
                             uint32_t rows, uint32_t push_size, const mcl_kernel **kernel)
{
    mcl_kernel_desc desc = {
        .id = id,
        .binding_count = bindings,
        .push_size = push_size,
        .local_size_x = local_size,
        .spec_count = 3,
        .spec = {spec1, chunk, rows},
    };
    mcl_status status = mcl_kernel_get(ctx, &desc, kernel);
    if (status == MCL_SUCCESS && mcl_kernel_local_size(*kernel) != local_size)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED,
                        "counter layer: the device runs no workgroup of %u invocations",
                        local_size);
    return status;
}

/* c [rows, cols] = a [rows, k] times W^T (forward) or W (transposed): the f32 GEMM with W
 * decoded as its tiles load, split-K partials in `split` (NULL: made per call). */
static mcl_status record_matmul(mcl_counter_linear *layer, int transposed,
                                const mcl_tensor *a, mcl_tensor *c, int64_t rows,
                                mcl_tensor *split)
{
    if (rows == 0)
        return MCL_SUCCESS;
    const int64_t k = transposed ? layer->out : layer->in;
    const int64_t cols = transposed ? layer->in : layer->out;
    return mcl_gemm_counter(layer->ctx, (mcl_tensor *)a, transposed, layer->state,
                            layer->scale, layer->C, c, (uint32_t)rows, (uint32_t)k,
                            (uint32_t)cols, split);
}

mcl_status mcl_counter_linear_forward(mcl_counter_linear *layer, const mcl_tensor *x,
                                      mcl_tensor *y)
{
    return mcl_counter_linear_forward_dev(layer, x, y, NULL);
}

mcl_status mcl_counter_linear_forward_dev(mcl_counter_linear *layer, const mcl_tensor *x,
                                          mcl_tensor *y, mcl_tensor *split)
{
    static const char op[] = "mcl_counter_linear_forward";
    if (!layer)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = check_layer(layer);
    if (status != MCL_SUCCESS || (status = check_input(layer, op, x, "x")) != MCL_SUCCESS ||
        (status = check_input(layer, op, y, "y")) != MCL_SUCCESS ||
        (split && (status = check_input(layer, op, split, "split")) != MCL_SUCCESS))
        return status;
    if (x == y || (split && (split == x || split == y)))
        return mcl_fail(layer->ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: y, x and split alias", op);
    const int64_t rows = rows_of(x, layer->in);
    if (rows == 0 || rows_of(y, layer->out) != rows || x->ndim != y->ndim)
        return mcl_fail(layer->ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "%s: x must be [..., %lld] and y [..., %lld] with the same rows", op,
                        (long long)layer->in, (long long)layer->out);
    if (rows > COUNTER_MAX_ROWS)
        return mcl_fail(layer->ctx, MCL_ERROR_TOO_LARGE, "%s: more than %lld rows", op,
                        (long long)COUNTER_MAX_ROWS);
    return record_matmul(layer, 0, x, y, rows, split);
}

mcl_status mcl_counter_update_hyper(mcl_context *ctx, const char *op,
                                    const mcl_counter_update_desc *desc, float hyper[4])
{
    if (desc->size < offsetof(mcl_counter_update_desc, reserved))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "%s: update->size not set", op);
    int reserved_set = 0;
    if (desc->size >= sizeof *desc) {
        for (size_t i = 0; i < sizeof desc->reserved / sizeof *desc->reserved; i++)
            reserved_set |= desc->reserved[i] != 0;
    }
    const float beta = desc->beta != 0.0f || (desc->flags & MCL_COUNTER_BETA_SET)
                           ? desc->beta
                           : COUNTER_DEFAULT_BETA;
    const float eps = desc->eps != 0.0f ? desc->eps : COUNTER_DEFAULT_EPS;
    if ((desc->flags & ~(uint32_t)MCL_COUNTER_BETA_SET) || reserved_set ||
        !(desc->lr >= 0.0f) || !isfinite(desc->lr) || !(desc->lr_scale >= 0.0f) ||
        !isfinite(desc->lr_scale) || !(beta >= 0.0f && beta < 1.0f) || !(eps > 0.0f) ||
        !isfinite(eps))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: lr and lr_scale finite and >= 0, beta in [0, 1), eps finite and "
                        "> 0, known flags and zero reserved fields are required", op);
    hyper[0] = desc->lr;
    hyper[1] = desc->lr_scale;
    hyper[2] = beta;
    hyper[3] = eps;
    return MCL_SUCCESS;
}

/* Zero-initialised update fields with their defaults; MCL_ERROR_INVALID_ARGUMENT for a bad
 * descriptor. */
static mcl_status read_update(mcl_counter_linear *layer, const mcl_counter_update_desc *desc,
                              rows_push *push, uint32_t *seed)
{
    float h[4];
    mcl_status status = mcl_counter_update_hyper(layer->ctx, "mcl_counter_linear_backward",
                                                 desc, h);
    if (status != MCL_SUCCESS)
        return status;
    *push = (rows_push){
        .out_dim = (uint32_t)layer->out,
        .in_dim = (uint32_t)layer->in,
        .tiles = (uint32_t)((layer->in + COUNTER_TILE_COLS - 1) / COUNTER_TILE_COLS),
        .C = layer->C,
        .lr = h[0],
        .lr_scale = h[1],
        .beta = h[2],
        .eps = h[3],
    };
    *seed = desc->seed;
    return MCL_SUCCESS;
}

/* One layer's update among those recorded together (record_updates). The scratch: partial
 * [out, tiles, 2] and factors [out, 2] f32, each NULL for a tensor made there. hyper NULL: lr,
 * lr_scale, beta, eps and the seed from `push` and `seed`; else read from hyper on the device
 * (its floats 0-3 and word 4 plus `seed`). */
typedef struct update_job {
    mcl_counter_linear *layer;
    const mcl_tensor *x, *grad_out;
    int64_t rows;
    rows_push push;
    mcl_tensor *hyper;
    uint32_t seed;
    mcl_tensor *partial, *factors;
} update_job;

/* The three dispatches of the updates of n layers, each pass recorded for every layer before
 * the next pass: a pass's dispatches of different layers are independent (each writes its own
 * scratch and state), so they run side by side, and the three passes of n layers meet two
 * barriers, not 3n - 1. n is at most MCL_COUNTER_GROUP_MAX. */
static mcl_status record_updates(update_job *jobs, int n, int first_pass, int last_pass)
{
    mcl_status status = MCL_SUCCESS;
    mcl_tensor *made[2 * MCL_COUNTER_GROUP_MAX] = {0};
    const mcl_kernel *stats[MCL_COUNTER_GROUP_MAX], *finish[MCL_COUNTER_GROUP_MAX],
        *apply[MCL_COUNTER_GROUP_MAX];
    uint32_t tile_rows[MCL_COUNTER_GROUP_MAX];
    for (int j = 0; j < n; j++) {
        update_job *u = &jobs[j];
        mcl_counter_linear *layer = u->layer;
        mcl_context *ctx = layer->ctx;
        const uint32_t from_buffer = u->hyper != NULL;
        const update_shape sh =
            fit_update(ctx, layer->update_wg ? layer->update_wg : COUNTER_UPDATE_WG);
        const uint32_t chunk = COUNTER_CHUNK;
        tile_rows[j] = sh.rows;
        if ((status = get_kernel(ctx, MCL_KERNEL_COUNTER_STATS_F32, 4, sh.wg, 0, chunk, sh.rows,
                                 sizeof(grad_push), &stats[j])) != MCL_SUCCESS ||
            (status = get_kernel(ctx, MCL_KERNEL_COUNTER_ROWS_F32, 5, COUNTER_ROWS_WG,
                                 from_buffer, 0, 0, sizeof(rows_push), &finish[j])) !=
                MCL_SUCCESS ||
            (status = get_kernel(ctx, MCL_KERNEL_COUNTER_APPLY_F32, 5, sh.wg, from_buffer, chunk,
                                 sh.rows, sizeof(grad_push), &apply[j])) != MCL_SUCCESS)
            goto done;
        const int64_t partial_len = layer->out * (int64_t)u->push.tiles * 2;
        const int64_t factors_len = layer->out * 2;
        if ((!u->partial &&
             (status = mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &partial_len, &made[2 * j])) !=
                 MCL_SUCCESS) ||
            (!u->factors &&
             (status = mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &factors_len,
                                         &made[2 * j + 1])) != MCL_SUCCESS))
            goto done;
        if (!u->partial)
            u->partial = made[2 * j];
        if (!u->factors)
            u->factors = made[2 * j + 1];
    }
    for (int pass = first_pass; pass <= last_pass; pass++) {
        for (int j = 0; j < n && status == MCL_SUCCESS; j++) {
            update_job *u = &jobs[j];
            mcl_counter_linear *layer = u->layer;
            mcl_context *ctx = layer->ctx;
            const uint32_t groups_x = u->push.tiles;
            const uint32_t groups_y = (uint32_t)((layer->out + tile_rows[j] - 1) /
                                                 tile_rows[j]);
            grad_push push = {(uint32_t)u->rows, (uint32_t)layer->out, (uint32_t)layer->in,
                              layer->C, pass == 0 ? u->push.tiles : u->seed};
            if (pass == 0) {
                mcl_tensor *reads[3] = {(mcl_tensor *)u->x, (mcl_tensor *)u->grad_out,
                                        layer->state};
                status = mcl_dispatch(ctx, stats[j], reads, 3, &u->partial, 1, &push, groups_x,
                                      groups_y, 1);
            } else if (pass == 1) {
                /* With push constants the hyper binding is bound but unread: a tensor of the
                 * layer that the dispatch does not write. */
                uint64_t row_groups = ((uint64_t)layer->out + COUNTER_ROWS_WG - 1) /
                                      COUNTER_ROWS_WG;
                mcl_tensor *reads[2] = {u->partial, u->hyper ? u->hyper : layer->state};
                mcl_tensor *writes[3] = {layer->scale, layer->moment, u->factors};
                status = mcl_dispatch(ctx, finish[j], reads, 2, writes, 3, &u->push,
                                      (uint32_t)row_groups, 1, 1);
            } else {
                mcl_tensor *reads[4] = {(mcl_tensor *)u->x, (mcl_tensor *)u->grad_out,
                                        u->factors, u->hyper ? u->hyper : layer->scale};
                status = mcl_dispatch(ctx, apply[j], reads, 4, &layer->state, 1, &push,
                                      groups_x, groups_y, 1);
            }
        }
    }
done:
    /* Safe with the dispatches still recorded: the memory is held until they have run. */
    for (int j = 0; j < 2 * n; j++)
        mcl_tensor_destroy(made[j]);
    return status;
}

/* The checks of a backward pass's arguments (MCL_ERROR_* through the layer's context), its
 * batch rows and the update's row parameters (tiles and C; lr and the rest from `update`
 * where it is given). */
static mcl_status check_backward(mcl_counter_linear *layer, const mcl_tensor *x,
                                 const mcl_tensor *grad_out, const mcl_tensor *grad_x,
                                 const mcl_counter_update_desc *update, const mcl_tensor *hyper,
                                 const mcl_tensor *partial, const mcl_tensor *row_factors,
                                 const mcl_tensor *split, int64_t *rows_out, rows_push *push,
                                 uint32_t *seed)
{
    static const char op[] = "mcl_counter_linear_backward";
    if (!layer)
        return MCL_ERROR_INVALID_ARGUMENT;
    mcl_status status = check_layer(layer);
    if (status != MCL_SUCCESS || (status = check_input(layer, op, x, "x")) != MCL_SUCCESS ||
        (status = check_input(layer, op, grad_out, "grad_out")) != MCL_SUCCESS ||
        (grad_x && (status = check_input(layer, op, grad_x, "grad_x")) != MCL_SUCCESS) ||
        (row_factors &&
         (status = check_input(layer, op, row_factors, "row_factors")) != MCL_SUCCESS) ||
        (partial && (status = check_input(layer, op, partial, "partial")) != MCL_SUCCESS) ||
        (hyper && (status = check_input(layer, op, hyper, "hyper")) != MCL_SUCCESS) ||
        (split && (status = check_input(layer, op, split, "split")) != MCL_SUCCESS))
        return status;
    if (grad_x && (grad_x == x || grad_x == grad_out))
        return mcl_fail(layer->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: grad_x aliases an input", op);
    if (split && (split == x || split == grad_out || split == grad_x))
        return mcl_fail(layer->ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "%s: split aliases an input or grad_x", op);
    const int64_t rows = rows_of(x, layer->in);
    const int64_t tiles = (layer->in + COUNTER_TILE_COLS - 1) / COUNTER_TILE_COLS;
    if (rows == 0 || rows_of(grad_out, layer->out) != rows || grad_out->ndim != x->ndim ||
        (grad_x && (rows_of(grad_x, layer->in) != rows || grad_x->ndim != x->ndim)) ||
        (row_factors && mcl_tensor_numel(row_factors) < 2 * layer->out) ||
        (partial && mcl_tensor_numel(partial) < 2 * layer->out * tiles) ||
        (hyper && mcl_tensor_numel(hyper) < MCL_COUNTER_HYPER_COUNT))
        return mcl_fail(layer->ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "%s: x [..., %lld], grad_out [..., %lld] and grad_x like x, with the "
                        "same rows, are required", op, (long long)layer->in,
                        (long long)layer->out);
    if (rows > COUNTER_MAX_ROWS)
        return mcl_fail(layer->ctx, MCL_ERROR_TOO_LARGE, "%s: more than %lld rows", op,
                        (long long)COUNTER_MAX_ROWS);
    *rows_out = rows;
    *push = (rows_push){.out_dim = (uint32_t)layer->out, .in_dim = (uint32_t)layer->in,
                        .tiles = (uint32_t)tiles, .C = layer->C};
    return update ? read_update(layer, update, push, seed) : MCL_SUCCESS;
}

/* The backward pass with its update from `update` (push constants), or from the device
 * tensor `hyper` (HYPER_BUF kernels, seed offset `salt`), or none (both NULL). */
static mcl_status backward(mcl_counter_linear *layer, const mcl_tensor *x,
                           const mcl_tensor *grad_out, mcl_tensor *grad_x,
                           const mcl_counter_update_desc *update, mcl_tensor *hyper,
                           uint32_t salt, mcl_tensor *partial, mcl_tensor *row_factors,
                           mcl_tensor *split)
{
    int64_t rows;
    rows_push push;
    uint32_t seed = salt;
    mcl_status status = check_backward(layer, x, grad_out, grad_x, update, hyper, partial,
                                       row_factors, split, &rows, &push, &seed);
    if (status != MCL_SUCCESS)
        return status;
    if (grad_x &&
        (status = record_matmul(layer, 1, grad_out, grad_x, rows, split)) != MCL_SUCCESS)
        return status;
    if (!update && !hyper)
        return MCL_SUCCESS;
    update_job job = {layer, x, grad_out, rows, push, update ? NULL : hyper, seed, partial,
                      row_factors};
    return record_updates(&job, 1, 0, 2);
}

static mcl_status update_group(const mcl_counter_update_item *items, int n, mcl_tensor *hyper,
                               int first_pass, int last_pass)
{
    if (!items || n < 1 || n > MCL_COUNTER_GROUP_MAX || !hyper)
        return MCL_ERROR_INVALID_ARGUMENT;
    update_job jobs[MCL_COUNTER_GROUP_MAX];
    for (int j = 0; j < n; j++) {
        const mcl_counter_update_item *it = &items[j];
        int64_t rows;
        rows_push push;
        uint32_t seed = it->salt;
        mcl_status status = check_backward(it->layer, it->x, it->grad_out, NULL, NULL, hyper,
                                           it->partial, it->row_factors, NULL, &rows, &push,
                                           &seed);
        if (status != MCL_SUCCESS)
            return status;
        if (it->layer->ctx != items[0].layer->ctx)
            return mcl_fail(it->layer->ctx, MCL_ERROR_WRONG_CONTEXT,
                            "mcl_counter_linear_backward: layers of different contexts");
        for (int i = 0; i < j; i++) {
            if (items[i].layer == it->layer ||
                (it->partial && items[i].partial == it->partial) ||
                (it->row_factors && items[i].row_factors == it->row_factors))
                return mcl_fail(it->layer->ctx, MCL_ERROR_INVALID_ARGUMENT,
                                "mcl_counter_linear_backward: a layer or scratch tensor twice "
                                "in one group");
        }
        if (first_pass != 0 || last_pass != 2) {
            if (!it->partial || !it->row_factors)
                return mcl_fail(it->layer->ctx, MCL_ERROR_INVALID_ARGUMENT,
                                "mcl_counter_linear_update_group_pass: partial and row_factors "
                                "are required");
        }
        jobs[j] = (update_job){it->layer, it->x, it->grad_out, rows, push, hyper, seed,
                               it->partial, it->row_factors};
    }
    return record_updates(jobs, n, first_pass, last_pass);
}

mcl_status mcl_counter_linear_update_group_dev(const mcl_counter_update_item *items, int n,
                                               mcl_tensor *hyper)
{
    return update_group(items, n, hyper, 0, 2);
}

mcl_status mcl_counter_linear_update_group_pass(const mcl_counter_update_item *items, int n,
                                                mcl_tensor *hyper, int pass)
{
    if (pass < 0 || pass > 2)
        return MCL_ERROR_INVALID_ARGUMENT;
    return update_group(items, n, hyper, pass, pass);
}

mcl_status mcl_counter_linear_backward_ex(mcl_counter_linear *layer, const mcl_tensor *x,
                                          const mcl_tensor *grad_out, mcl_tensor *grad_x,
                                          const mcl_counter_update_desc *update,
                                          mcl_tensor *row_factors)
{
    return backward(layer, x, grad_out, grad_x, update, NULL, 0, NULL, row_factors, NULL);
}

mcl_status mcl_counter_linear_backward_dev(mcl_counter_linear *layer, const mcl_tensor *x,
                                           const mcl_tensor *grad_out, mcl_tensor *grad_x,
                                           mcl_tensor *hyper, uint32_t salt,
                                           mcl_tensor *partial, mcl_tensor *row_factors,
                                           mcl_tensor *split)
{
    return backward(layer, x, grad_out, grad_x, NULL, hyper, salt, partial, row_factors,
                    split);
}

int64_t mcl_counter_linear_partial_floats(int64_t out, int64_t in)
{
    return 2 * out * ((in + COUNTER_TILE_COLS - 1) / COUNTER_TILE_COLS);
}

mcl_status mcl_counter_linear_backward(mcl_counter_linear *layer, const mcl_tensor *x,
                                       const mcl_tensor *grad_out, mcl_tensor *grad_x,
                                       const mcl_counter_update_desc *update)
{
    return mcl_counter_linear_backward_ex(layer, x, grad_out, grad_x, update, NULL);
}

mcl_status mcl_counter_linear_update_wg(mcl_counter_linear *layer, uint32_t wg)
{
    if (!layer || (wg != 0 && wg != 64 && wg != 128 && wg != 256))
        return MCL_ERROR_INVALID_ARGUMENT;
    layer->update_wg = wg;
    return MCL_SUCCESS;
}
