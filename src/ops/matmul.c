/* f32 matrix products: a matrix-vector kernel for a few rows against a [N, K] weight
 * (decode), and a tiled GEMM for everything else (prefill, training); and the split-K
 * helpers the quantized GEMM shares. Plans: docs/tuning.md, "FP32 GEMM" and "FP32 GEMV". */
#include "../vk/runtime.h"
#include "ops_internal.h"

typedef struct gemm_push {
    uint32_t m, n, k;
    uint32_t stride_a, stride_b, stride_c;
    uint32_t has_bias;
    uint32_t batches;
    uint32_t k_chunk;
    uint32_t counter_c; /* COUNTER_B: the layer's C (gemm_f32.comp) */
} gemm_push;

typedef struct reduce_push {
    uint32_t total, n, slices, has_bias;
} reduce_push;

/* Split K until a problem has about this many workgroups: enough to fill a large GPU (an
 * H200 has 132 multiprocessors) several times over. */
#define MCL_GEMM_TARGET_GROUPS 512u
/* No slice shorter than this many K values: below it the partial tiles cost more traffic
 * than the parallelism gains. */
#define MCL_GEMM_MIN_SLICE 256u
#define MCL_GEMM_MAX_SLICES 16u
/* gemm_f32's unrolled K step holds this many multiply-adds where an invocation holds 64
 * accumulators or more: 8 values of K for 8 x 8 (gemm_q's measured choice, FLOAT_UNROLL in
 * quant_plan.c, for the same cost), 4 for 16 x 8 (docs/tuning.md, "The K step's unroll"). */
#define GEMM_F32_UNROLL_FMAS 512u

typedef struct gemv_push {
    uint32_t n, k;
    uint32_t has_bias;
} gemv_push;

/* The matrix-vector kernel handles up to this many rows of x (its accumulators are
 * registers, unrolled per row). */
#define MCL_GEMV_MAX_ROWS 8
/* Vulkan guarantees 65535 workgroups per dimension. */
#define MCL_MAX_GROUPS 65535u

static int64_t dim_from_end(const mcl_tensor *t, uint32_t i)
{
    return t->shape[t->ndim - 1 - i];
}

uint32_t mcl_gemm_shared_bytes(const mcl_gemm_config *cfg, uint32_t db)
{
    /* gemm_f32.comp pads each k-row of its tiles by 4 floats. */
    return (db ? 2u : 1u) * cfg->bk * (cfg->bm + cfg->bn + 8u) * 4u;
}

uint32_t mcl_gemm_unroll(const mcl_context *ctx, const mcl_gemm_config *cfg)
{
    /* Whole below 64 accumulators an invocation; else GEMM_F32_UNROLL_FMAS multiply-adds
     * (MOTIFCL_GEMM_UNROLL values of K where set) at a time where that divides the step. */
    uint32_t accs = cfg->tm * cfg->tn;
    uint32_t unroll = mcl_traits_of(ctx)->gemm_f32_unroll ? mcl_traits_of(ctx)->gemm_f32_unroll
                      : accs && accs < GEMM_F32_UNROLL_FMAS ? GEMM_F32_UNROLL_FMAS / accs
                                                            : 1u;
    return accs >= 64 && cfg->bk % unroll == 0 ? unroll : cfg->bk;
}

/* Tile shape for a problem (docs/tuning.md, "FP32 GEMM"): 128 x 128 tiles where they pad the
 * product no more than the tiles of 128 invocations and each slice of K runs at least
 * MCL_GEMM_LONG_K values; otherwise 128 x 64 or 64 x 128 (8 x 8 an invocation, 128
 * invocations), whichever pads less (128 x 64 where equal); 64 x 64 tiles of 4 x 4 where
 * those, with their slices of K, would make fewer than MCL_GEMM_MIN_GROUPS workgroups. The
 * 128 x 128 tile is 16 x 8 an invocation (128 invocations) in K steps of 8; on AMD's waves of
 * 64 it is 8 x 8 (256 invocations) in K steps of 16, or 32 for a transposed B where the
 * shared memory holds them. Single-buffered shared tiles. MOTIFCL_GEMM_TILE picks one of the
 * four shapes instead. */
#define MCL_GEMM_MIN_GROUPS 192u
#define MCL_GEMM_LONG_K 2048u

static uint64_t round_up(uint64_t v, uint64_t to)
{
    return (v + to - 1) / to * to;
}

static uint64_t gemm_tile_count(uint64_t m, uint64_t n, uint64_t batch, const mcl_gemm_config *c)
{
    return (m + c->bm - 1) / c->bm * ((n + c->bn - 1) / c->bn) * batch;
}

/* The 128 x 128 tile of a device class. RADV's compiler for Polaris holds the 16 x 8 one in
 * 184 registers, one wave a SIMD, where the 8 x 8 one takes 112, two waves: no latency hidden
 * behind another wave of the same SIMD. */
static mcl_gemm_config gemm_big_tile(const mcl_context *ctx, int tb)
{
    const mcl_traits *tr = mcl_traits_of(ctx);
    if (tr->device_class != MCL_CLASS_AMD_WAVE64)
        return (mcl_gemm_config){.bm = 128, .bn = 128, .bk = 8, .tm = 16, .tn = 8};
    mcl_gemm_config big = {.bm = 128, .bn = 128, .bk = 16, .tm = 8, .tn = 8};
    /* A transposed B's tile is stored into shared memory a value at a time: a K step twice
     * as long halves its barriers and doubles the loads in flight behind them. */
    mcl_gemm_config deep = big;
    deep.bk = 32;
    return tb && mcl_gemm_shared_bytes(&deep, 0) <= tr->max_shared_bytes ? deep : big;
}

void mcl_gemm_tiles(const mcl_context *ctx, uint64_t m, uint64_t n, uint32_t k, uint64_t batch,
                    int tb, mcl_gemm_config *cfg)
{
    const mcl_gemm_config big = gemm_big_tile(ctx, tb);
    const mcl_gemm_config tall = {.bm = 128, .bn = 64, .bk = 16, .tm = 8, .tn = 8};
    const mcl_gemm_config wide = {.bm = 64, .bn = 128, .bk = 16, .tm = 8, .tn = 8};
    const mcl_gemm_config small = {.bm = 64, .bn = 64, .bk = 16, .tm = 4, .tn = 4};
    const uint32_t *forced = mcl_traits_of(ctx)->gemm_f32_tile;
    if (forced[0]) {
        *cfg = forced[0] == 64 && forced[1] == 64 ? small
               : forced[0] == 128 && forced[1] == 128 ? big
               : forced[0] == 128 ? tall : wide;
        return;
    }
    uint64_t pad_tall = round_up(m, 128) * round_up(n, 64);
    uint64_t pad_wide = round_up(m, 64) * round_up(n, 128);
    *cfg = pad_wide < pad_tall ? wide : tall;
    uint64_t tiles = gemm_tile_count(m, n, batch, cfg);
    if (tiles * mcl_gemm_slices(tiles, k) < MCL_GEMM_MIN_GROUPS) {
        *cfg = small;
        return;
    }
    uint64_t big_tiles = gemm_tile_count(m, n, batch, &big);
    uint32_t big_slices = mcl_gemm_slices(big_tiles, k);
    if (round_up(m, 128) * round_up(n, 128) <= (pad_wide < pad_tall ? pad_wide : pad_tall) &&
        k / big_slices >= MCL_GEMM_LONG_K)
        *cfg = big;
}

uint32_t mcl_gemm_slices(uint64_t tiles, uint32_t k)
{
    uint32_t slices = 1;
    while (tiles * slices * 2 <= MCL_GEMM_TARGET_GROUPS && slices * 2 <= MCL_GEMM_MAX_SLICES &&
           k / (slices * 2) >= MCL_GEMM_MIN_SLICE)
        slices *= 2;
    return slices;
}

mcl_status mcl_gemm_reduce(mcl_context *ctx, mcl_tensor *partial, mcl_tensor *bias,
                           mcl_tensor *c, uint32_t total, uint32_t n, uint32_t slices)
{
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_simple(ctx, MCL_KERNEL_GEMM_REDUCE_F32, 3,
                                          sizeof(reduce_push), &kernel);
    if (status != MCL_SUCCESS)
        return status;
    reduce_push push = {.total = total, .n = n, .slices = slices, .has_bias = bias != NULL};
    uint32_t groups = (total + mcl_kernel_local_size(kernel) - 1) / mcl_kernel_local_size(kernel);
    if (groups > MCL_MAX_GROUPS)
        groups = MCL_MAX_GROUPS;
    mcl_tensor *reads[2] = {partial, bias ? bias : partial};
    return mcl_dispatch(ctx, kernel, reads, 2, &c, 1, &push, groups, 1, 1);
}

static mcl_status gemm_dispatch(mcl_context *ctx, const mcl_gemm_config *cfg, mcl_tensor *a,
                                int ta, mcl_tensor *b, int tb, mcl_tensor *bias, mcl_tensor *c,
                                uint32_t m, uint32_t n, uint32_t k, uint32_t batch,
                                uint32_t stride_a, uint32_t stride_b, mcl_tensor *scratch,
                                uint32_t counter_c);

mcl_status mcl_gemm_dispatch(mcl_context *ctx, const mcl_gemm_config *cfg, mcl_tensor *a,
                             int ta, mcl_tensor *b, int tb, mcl_tensor *bias, mcl_tensor *c,
                             uint32_t m, uint32_t n, uint32_t k, uint32_t batch,
                             uint32_t stride_a, uint32_t stride_b)
{
    return gemm_dispatch(ctx, cfg, a, ta, b, tb, bias, c, m, n, k, batch, stride_a, stride_b,
                         NULL, 0);
}

mcl_status mcl_gemm_counter(mcl_context *ctx, mcl_tensor *a, int transposed, mcl_tensor *state,
                            mcl_tensor *scale, uint32_t counter_c, mcl_tensor *c,
                            uint32_t rows, uint32_t k, uint32_t cols, mcl_tensor *split)
{
    mcl_gemm_config cfg;
    mcl_gemm_tiles(ctx, rows, cols, k, 1, !transposed, &cfg);
    return gemm_dispatch(ctx, &cfg, a, 0, state, !transposed, scale, c, rows, cols, k, 1, 0, 0,
                         split, counter_c);
}

/* As mcl_gemm_dispatch; split-K partials go to `scratch` where not NULL, the split reduced
 * to what it holds (none when it holds fewer than two slices). */
static mcl_status gemm_dispatch(mcl_context *ctx, const mcl_gemm_config *cfg, mcl_tensor *a,
                                int ta, mcl_tensor *b, int tb, mcl_tensor *bias, mcl_tensor *c,
                                uint32_t m, uint32_t n, uint32_t k, uint32_t batch,
                                uint32_t stride_a, uint32_t stride_b, mcl_tensor *scratch,
                                uint32_t counter_c)
{
    uint32_t stored_a_cols = ta ? m : k, stored_b_cols = tb ? k : n;
    uint32_t ku = mcl_gemm_unroll(ctx, cfg);
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_GEMM_F32,
        .binding_count = 4,
        .push_size = sizeof(gemm_push),
        .local_size_x = (cfg->bm / cfg->tm) * (cfg->bn / cfg->tn),
        .spec_count = 12,
        .spec = {cfg->bm, cfg->bn, cfg->bk, cfg->tm, cfg->tn, (uint32_t)ta, (uint32_t)tb,
                 stored_a_cols % 4 == 0, stored_b_cols % 4 == 0, cfg->db != 0, ku,
                 counter_c != 0},
    };
    if (mcl_gemm_shared_bytes(cfg, cfg->db) > mcl_traits_of(ctx)->max_shared_bytes)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "GEMM tile needs %u bytes of shared memory",
                        mcl_gemm_shared_bytes(cfg, cfg->db));
    const mcl_kernel *kernel;
    mcl_status status = mcl_kernel_get(ctx, &desc, &kernel);
    if (status != MCL_SUCCESS)
        return status;
    if (mcl_kernel_local_size(kernel) != desc.local_size_x)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "GEMM tile needs %u invocations per group",
                        desc.local_size_x);
    uint32_t groups_x = (n + cfg->bn - 1) / cfg->bn, groups_y = (m + cfg->bm - 1) / cfg->bm;
    uint32_t slices = mcl_gemm_slices((uint64_t)groups_x * groups_y * batch, k);
    uint64_t total = (uint64_t)batch * m * n;
    if (slices > 1 && slices * total * 4 > mcl_traits_of(ctx)->max_binding_bytes)
        slices = 1;
    while (scratch && slices > 1 && slices * total > (uint64_t)mcl_tensor_numel(scratch))
        slices /= 2;
    uint32_t k_chunk = (k + slices - 1) / slices;
    k_chunk = (k_chunk + cfg->bk - 1) / cfg->bk * cfg->bk;
    slices = (k + k_chunk - 1) / k_chunk;
    if (groups_x > MCL_MAX_GROUPS || groups_y > MCL_MAX_GROUPS ||
        (uint64_t)batch * slices > MCL_MAX_GROUPS)
        return mcl_fail(ctx, MCL_ERROR_TOO_LARGE, "matmul grid beyond 65535 workgroups");

    /* Split K: slices write partial tiles to scratch, a second pass sums them. */
    mcl_tensor *partial = NULL, *made = NULL;
    if (slices > 1 && scratch) {
        partial = scratch;
    } else if (slices > 1) {
        mcl_tensor_desc pd = {.size = sizeof pd, .dtype = MCL_DTYPE_F32, .ndim = 1,
                              .shape = {(int64_t)(slices * total)},
                              .memory_class = MCL_MEMORY_SCRATCH};
        if ((status = mcl_tensor_create_ex(ctx, &pd, &made)) != MCL_SUCCESS)
            return status;
        partial = made;
    }
    gemm_push push = {
        .m = m, .n = n, .k = k,
        .stride_a = stride_a, .stride_b = stride_b, .stride_c = m * n,
        .has_bias = bias != NULL && slices == 1 && !counter_c,
        .batches = batch,
        .k_chunk = k_chunk,
        .counter_c = counter_c,
    };
    mcl_tensor *reads[3] = {a, b, bias ? bias : a};
    mcl_tensor *out = partial ? partial : c;
    mcl_profile_op(ctx, counter_c ? "counter matmul" : "matmul gemm f32",
                   (double)a->nbytes + (double)b->nbytes + 4.0 * (double)total * slices,
                   2.0 * m * n * k * batch);
    status = mcl_dispatch(ctx, kernel, reads, 3, &out, 1, &push, groups_x, groups_y,
                                 batch * slices);
    if (status == MCL_SUCCESS && partial)
        status = mcl_gemm_reduce(ctx, partial, counter_c ? NULL : bias, c, (uint32_t)total, n,
                                 slices);
    /* Safe at once: its memory stays reserved until the recorded work has run. */
    mcl_tensor_destroy(made);
    return status;
}

/* The GEMV's shape (shaders/gemv_nt_f32.comp's specialization). A workgroup of `threads`
 * invocations holds `groups` row groups of threads / groups invocations that stride over K
 * together; a row group owns `nr` rows of w. `steps` 0 reads x from memory (the direct path);
 * otherwise the workgroup copies x into shared memory in chunks of steps * (threads / groups)
 * vec4s of K, and each invocation keeps steps * nr vec4s of w in flight (the staged path). */
typedef struct gemv_config {
    uint32_t threads, groups, nr, steps;
} gemv_config;

/* Tunables of the GEMV, by rows of x and by device class (docs/tuning.md, "FP32 GEMV"): one
 * row reads x from memory, four rows of w per workgroup of 256; several rows stage x in
 * shared memory in chunks of `steps`, 4 rows of w per row group of 32 invocations (a row
 * group's load of w is 512 contiguous bytes of one row; no subgroup size is assumed). Five
 * to eight rows on a grid of 256 workgroups or more (two or more a multiprocessor on an
 * H100 or H200) keep 2 steps in flight, fewer on a narrower grid take 4: each of its
 * workgroups must cover more of its multiprocessor's bandwidth alone. AMD keeps 2: less
 * bandwidth per compute unit to cover. */
#define MCL_GEMV_THREADS 256u
#define MCL_GEMV_STAGED_NR 4u
#define MCL_GEMV_STAGED_LANES 32u      /* invocations per row group, staged */
#define MCL_GEMV_STEPS 4u              /* staged, 2 to 8 rows of x */
#define MCL_GEMV_STEPS_WIDE 2u         /* staged, 5 to 8 rows of x on a wide grid */
#define MCL_GEMV_WIDE_GRID 256u        /* workgroups from which a grid is wide */
#define MCL_GEMV_STEPS_AMD 2u

/* Shared memory of a configuration, as the shader sizes it. */
static uint64_t gemv_shared_bytes(const gemv_config *cfg, uint32_t rows)
{
    if (cfg->steps == 0)
        return (uint64_t)rows * cfg->nr * cfg->threads * sizeof(float) + 16u;
    uint64_t lanes = cfg->threads / cfg->groups;
    uint64_t chunk = 2ull * rows * cfg->steps * lanes;      /* vec4s: two chunks of x */
    uint64_t reduce = (cfg->threads + 1ull + 3ull) / 4ull;  /* one slot of partial sums */
    return (chunk > reduce ? chunk : reduce) * 16u + sizeof(float);
}

/* MOTIFCL_GEMV_PLAN (tuning): t invocations a workgroup, g row groups, nr rows of w a row
 * group, u the staged path's vec4s of K per invocation and chunk (0: x read from memory),
 * where the result fits the shader and the device; else cfg stays and a warning says so. */
static void gemv_override(mcl_context *ctx, uint32_t rows, gemv_config *cfg)
{
    const mcl_traits *tr = mcl_traits_of(ctx);
    const mcl_gemv_override *o = &tr->gemv_f32;
    if (!o->set)
        return;
    gemv_config c = *cfg;
    if (o->set & MCL_GEMV_SET_T)
        c.threads = o->t;
    if (o->set & MCL_GEMV_SET_G)
        c.groups = o->g;
    if (o->set & MCL_GEMV_SET_NR)
        c.nr = o->nr;
    if (o->set & MCL_GEMV_SET_U)
        c.steps = o->u;
    int ok = c.threads >= 1 && c.threads <= tr->max_invocations &&
             c.threads <= tr->max_workgroup_size[0] && c.groups >= 1 &&
             c.threads % c.groups == 0 && c.nr >= 1 && c.nr <= 8 && c.steps <= 8 &&
             gemv_shared_bytes(&c, rows) <= tr->max_shared_bytes;
    if (!ok) {
        mcl_ctx_log(ctx, MCL_LOG_WARNING,
                    "MOTIFCL_GEMV_PLAN does not fit this product or device; ignored");
        return;
    }
    *cfg = c;
}

static mcl_status gemv_choose(mcl_context *ctx, uint32_t rows, uint32_t n, gemv_config *cfg)
{
    const mcl_traits *tr = mcl_traits_of(ctx);
    uint32_t threads = MCL_GEMV_THREADS;
    while (threads > tr->max_invocations && threads > 64u)
        threads /= 2;
    if (rows == 1) {
        *cfg = (gemv_config){.threads = threads, .groups = 4, .nr = 1, .steps = 0};
    } else {
        uint32_t groups = threads / MCL_GEMV_STAGED_LANES;
        uint64_t per_group = (uint64_t)groups * MCL_GEMV_STAGED_NR;
        uint64_t workgroups = (n + per_group - 1) / per_group;
        uint32_t steps = rows > 4 && workgroups >= MCL_GEMV_WIDE_GRID ? MCL_GEMV_STEPS_WIDE
                                                                      : MCL_GEMV_STEPS;
        if (tr->device_class != MCL_CLASS_GENERIC)
            steps = MCL_GEMV_STEPS_AMD;
        *cfg = (gemv_config){.threads = threads, .groups = groups,
                             .nr = MCL_GEMV_STAGED_NR, .steps = steps};
        while (cfg->steps > 1 &&
               gemv_shared_bytes(cfg, rows) > tr->max_shared_bytes)
            cfg->steps--;
    }
    if (gemv_shared_bytes(cfg, rows) > tr->max_shared_bytes)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "GEMV needs more shared memory than the "
                        "device has");
    gemv_override(ctx, rows, cfg);
    return MCL_SUCCESS;
}

mcl_status mcl_gemv_f32_plan(mcl_context *ctx, uint32_t rows, uint32_t n, uint32_t plan[4])
{
    gemv_config cfg;
    mcl_status status = gemv_choose(ctx, rows, n, &cfg);
    if (status == MCL_SUCCESS) {
        plan[0] = cfg.threads;
        plan[1] = cfg.groups;
        plan[2] = cfg.nr;
        plan[3] = cfg.steps;
    }
    return status;
}

static mcl_status gemv_dispatch(mcl_context *ctx, mcl_tensor *x, mcl_tensor *w, mcl_tensor *bias,
                                mcl_tensor *y, uint32_t rows, uint32_t n, uint32_t k)
{
    gemv_config cfg;
    mcl_status status = gemv_choose(ctx, rows, n, &cfg);
    if (status != MCL_SUCCESS)
        return status;
    mcl_kernel_desc desc = {
        .id = MCL_KERNEL_GEMV_NT_F32,
        .binding_count = 4,
        .push_size = sizeof(gemv_push),
        .local_size_x = cfg.threads,
        .spec_count = 5,
        .spec = {cfg.nr, rows, k % 4 == 0, cfg.groups, cfg.steps},
    };
    const mcl_kernel *kernel;
    if ((status = mcl_kernel_get(ctx, &desc, &kernel)) != MCL_SUCCESS)
        return status;
    if (mcl_kernel_local_size(kernel) != cfg.threads)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "GEMV needs %u invocations per group",
                        cfg.threads);
    gemv_push push = {.n = n, .k = k, .has_bias = bias != NULL};
    /* Beyond 65535 workgroups the grid folds into y; the spare ones of its last line store
     * nothing. */
    uint32_t per_group = cfg.groups * cfg.nr;
    uint32_t count = (n + per_group - 1) / per_group;
    uint32_t gx = count < MCL_MAX_GROUPS ? count : MCL_MAX_GROUPS;
    uint32_t gy = (count + gx - 1) / gx;
    mcl_tensor *reads[3] = {x, w, bias ? bias : x};
    mcl_profile_op(ctx, "matmul gemv f32", (double)w->nbytes + (double)x->nbytes + 4.0 * rows * n,
                   2.0 * rows * n * k);
    return mcl_dispatch(ctx, kernel, reads, 3, &y, 1, &push, gx, gy, 1);
}

mcl_status mcl_matmul_f32(mcl_context *ctx, const mcl_tensor *ca, mcl_transpose ta,
                          const mcl_tensor *cb, mcl_transpose tb, const mcl_tensor *cbias,
                          mcl_tensor *c)
{
    return mcl_matmul_f32_scratch(ctx, ca, ta, cb, tb, cbias, c, NULL);
}

mcl_status mcl_matmul_f32_scratch(mcl_context *ctx, const mcl_tensor *ca, mcl_transpose ta,
                                  const mcl_tensor *cb, mcl_transpose tb,
                                  const mcl_tensor *cbias, mcl_tensor *c, mcl_tensor *scratch)
{
    mcl_tensor *a = (mcl_tensor *)ca, *b = (mcl_tensor *)cb, *bias = (mcl_tensor *)cbias;
    if (!ctx || !a || !b || !c)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (scratch && (scratch->ctx != ctx || scratch->dtype != MCL_DTYPE_F32 || scratch == a ||
                    scratch == b || scratch == c || scratch == bias))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_matmul: scratch is not an f32 tensor of its own");
    if (a->ctx != ctx || b->ctx != ctx || c->ctx != ctx || (bias && bias->ctx != ctx))
        return mcl_fail(ctx, MCL_ERROR_WRONG_CONTEXT, "mcl_matmul: tensor of another context");
    if (a->dtype != MCL_DTYPE_F32 || b->dtype != MCL_DTYPE_F32 || c->dtype != MCL_DTYPE_F32 ||
        (bias && bias->dtype != MCL_DTYPE_F32))
        return mcl_fail(ctx, MCL_ERROR_DTYPE_MISMATCH, "mcl_matmul takes f32 tensors");
    if ((ta != MCL_NO_TRANSPOSE && ta != MCL_TRANSPOSE) ||
        (tb != MCL_NO_TRANSPOSE && tb != MCL_TRANSPOSE))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_matmul: bad transpose flag");
    if (ta == MCL_TRANSPOSE && tb == MCL_TRANSPOSE)
        return mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_matmul: both operands transposed");
    if (c == a || c == b || (bias && c == bias))
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_matmul: c aliases an input");
    if (a->ndim < 2 || b->ndim < 2 || c->ndim != a->ndim)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_matmul: a and c need the same rank >= 2, b rank >= 2");

    int64_t m = ta ? dim_from_end(a, 0) : dim_from_end(a, 1);
    int64_t k = ta ? dim_from_end(a, 1) : dim_from_end(a, 0);
    int64_t kb = tb ? dim_from_end(b, 0) : dim_from_end(b, 1);
    int64_t n = tb ? dim_from_end(b, 1) : dim_from_end(b, 0);
    if (k != kb || dim_from_end(c, 1) != m || dim_from_end(c, 0) != n)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                        "mcl_matmul: op(a) is %lld x %lld, op(b) %lld x %lld, c %lld x %lld",
                        (long long)m, (long long)k, (long long)kb, (long long)n,
                        (long long)dim_from_end(c, 1), (long long)dim_from_end(c, 0));
    int64_t batch = 1;
    for (uint32_t i = 0; i + 2 < a->ndim; i++) {
        if (a->shape[i] != c->shape[i])
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_matmul: a and c batches differ");
        batch *= a->shape[i];
    }
    int shared_b = b->ndim == 2;
    if (!shared_b) {
        if (b->ndim != a->ndim)
            return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH,
                            "mcl_matmul: b is 2-D or has a's batch dimensions");
        for (uint32_t i = 0; i + 2 < b->ndim; i++) {
            if (b->shape[i] != a->shape[i])
                return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_matmul: a and b batches differ");
        }
    }
    if (bias && mcl_tensor_numel(bias) != n)
        return mcl_fail(ctx, MCL_ERROR_SHAPE_MISMATCH, "mcl_matmul: bias has %lld elements, not %lld",
                        (long long)mcl_tensor_numel(bias), (long long)n);

    /* Decode: a few rows of x against a shared [N, K] weight, read once at full bandwidth.
     * Batches of a 2-D weight fold into rows since a is contiguous. */
    if (!ta && tb && shared_b && batch * m <= MCL_GEMV_MAX_ROWS)
        return gemv_dispatch(ctx, a, b, bias, c, (uint32_t)(batch * m), (uint32_t)n, (uint32_t)k);

    mcl_gemm_config cfg;
    if (shared_b && !ta) {
        /* A 2-D b applies to every batch: fold the batches into the rows of a and c. */
        m *= batch;
        batch = 1;
    }
    mcl_gemm_tiles(ctx, (uint64_t)m, (uint64_t)n, (uint32_t)k, (uint64_t)batch, tb, &cfg);
    return gemm_dispatch(ctx, &cfg, a, ta, b, tb, bias, c, (uint32_t)m, (uint32_t)n,
                         (uint32_t)k, (uint32_t)batch, (uint32_t)(m * k),
                         shared_b ? 0u : (uint32_t)(k * n), scratch, 0);
}
