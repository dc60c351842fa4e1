/* A GPT's configuration checked and its layout planned, and a checkpoint's header read and
 * checked (gpt_layout.h): no device, no allocation. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "gpt_layout.h"

uint32_t mcl_gpt_get_u32(const unsigned char *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

uint64_t mcl_gpt_get_u64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint64_t mcl_gpt_checksum(uint64_t h, const void *data, size_t n)
{
    const unsigned char *p = data;
    for (size_t i = 0; i < n; i++) {
        h ^= p[i];
        h *= 0x100000001B3ull;
    }
    return h;
}

/* x floats rounded up to whole alignment units; x is at most 2^62 here. */
static uint64_t padded(uint64_t x)
{
    return (x + GPT_ALIGN_FLOATS - 1) / GPT_ALIGN_FLOATS * GPT_ALIGN_FLOATS;
}

/* *sum += x * times unless the sum would pass GPT_MAX_FLAT_FLOATS (then 0). x is below 2^63
 * and times below 2^32, *sum at most GPT_MAX_FLAT_FLOATS: nothing here wraps. */
static int add_floats(uint64_t *sum, uint64_t x, uint64_t times)
{
    if (times && x > (GPT_MAX_FLAT_FLOATS - *sum) / times)
        return 0;
    *sum += x * times;
    return 1;
}

/* Field checks and hard bounds, then the layout's sizes in unsigned 64-bit arithmetic that
 * stops at the flat buffers' limit: every field is at most 2^31 - 1, so a product of two fits,
 * and each sum is checked before it is made. Nothing is allocated. */
void mcl_gpt_linear_shape(const mcl_gpt_desc *c, int which, int64_t *out, int64_t *in)
{
    const int64_t d = c->dim, qd = c->dim, kvd = (int64_t)c->kv_heads * (c->dim / c->heads);
    const int64_t shapes[GPT_COUNTER_LINEARS][2] = {{qd, d}, {kvd, d}, {kvd, d}, {d, qd},
                                                    {c->hidden, d}, {c->hidden, d},
                                                    {d, c->hidden}};
    *out = shapes[which][0];
    *in = shapes[which][1];
}

mcl_status mcl_gpt_plan_check(mcl_gpt_desc *c, gpt_plan *plan, char *why, size_t why_size)
{
    memset(plan, 0, sizeof *plan);
    const int counter = (c->flags & MCL_GPT_COUNTER) != 0;
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
    else if (c->layers < 1 || c->layers > GPT_MAX_LAYERS)
        bad = "layers must be in 1.." GPT_MAX_LAYERS_TEXT;
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
    else if (c->flags & ~(uint32_t)(MCL_GPT_REVERSIBLE | MCL_GPT_COUNTER))
        bad = "flags has unknown bits";
    else if (c->reversible_anchor < 0 || c->reversible_anchor > GPT_MAX_LAYERS)
        bad = "reversible_anchor must be in 0.." GPT_MAX_LAYERS_TEXT;
    else if (c->reversible_anchor != 0 && !(c->flags & MCL_GPT_REVERSIBLE))
        bad = "reversible_anchor needs flags MCL_GPT_REVERSIBLE";
    else if (c->counter_c != 0 && !counter)
        bad = "counter_c needs flags MCL_GPT_COUNTER";
    else if (counter && c->counter_c > MCL_COUNTER_MAX_C)
        bad = "counter_c must be in 0..11";
    else if (counter && (c->dim % 16 != 0 || c->hidden % 16 != 0))
        bad = "a counter-state model's dim and hidden must be multiples of 16";
    if (!bad && counter) {
        if (c->counter_c == 0)
            c->counter_c = MCL_COUNTER_DEFAULT_C;
        for (int i = 0; i < GPT_COUNTER_LINEARS; i++) {
            int64_t o, n;
            mcl_gpt_linear_shape(c, i, &o, &n);
            if ((uint64_t)o * (uint64_t)n >= (UINT64_C(1) << 32) || o > 1048560)
                bad = "a counter-state layer must have fewer than 2^32 weights and at most "
                      "1048560 rows";
        }
    }
    if (bad) {
        snprintf(why, why_size, "%s", bad);
        return MCL_ERROR_INVALID_ARGUMENT;
    }

    const uint64_t d = (uint64_t)c->dim, f = (uint64_t)c->hidden, v = (uint64_t)c->vocab;
    const uint64_t layers = (uint64_t)c->layers, heads = (uint64_t)c->heads;
    const uint64_t kvd = (uint64_t)c->kv_heads * (d / heads);
    const uint64_t tables = c->tied_head ? 1 : 2; /* the embedding, and the head if untied */
    /* Per layer, 2-D: wq and wo [d, d], wk and wv [kvd, d], w_gate, w_up, w_down [f, d]
     * (none in the flat buffer of a counter-state model). */
    uint64_t per_layer = 0, flat = 0;
    int fits = add_floats(&per_layer, padded(d * d), 2) &&
               add_floats(&per_layer, padded(kvd * d), 2) &&
               add_floats(&per_layer, padded(f * d), 3) &&
               add_floats(&flat, padded(v * d), tables) &&
               add_floats(&flat, per_layer, counter ? 0 : layers);
    const uint64_t decay_end = flat;
    /* 1-D: two norms a layer and the final norm, [d] each. */
    fits = fits && add_floats(&flat, padded(d), 2 * layers + 1);
    if (!fits) {
        snprintf(why, why_size, "the parameters need more than %llu floats, the limit of one "
                 "flat buffer", (unsigned long long)GPT_MAX_FLAT_FLOATS);
        return MCL_ERROR_TOO_LARGE;
    }
    plan->flat_floats = (int64_t)flat;
    plan->decay_end = (int64_t)decay_end;
    /* Each term is at most flat now. */
    const uint64_t per_layer_counts = 2 * d * d + 2 * kvd * d + 3 * f * d;
    if (counter) {
        /* Each layer below 2^32 weights (checked above): no sum here passes 2^48. */
        plan->total_params = (int64_t)(tables * v * d + (2 * layers + 1) * d);
        plan->param_count = (uint32_t)(1 + layers * GPT_LAYER_PARAMS_COUNTER + 1 + (tables - 1));
        plan->counter_weights = (int64_t)(layers * per_layer_counts);
        const uint64_t rows = 3 * d + 2 * kvd + 2 * f;
        plan->counter_bytes = GPT_COUNTER_HEADER_BYTES +
                              layers * (per_layer_counts / 4 * 3 + 8 * rows);
        return MCL_SUCCESS;
    }
    plan->total_params =
        (int64_t)(tables * v * d + layers * per_layer_counts + (2 * layers + 1) * d);
    plan->param_count = (uint32_t)(1 + layers * GPT_LAYER_PARAMS + 1 + (tables - 1));
    return MCL_SUCCESS;
}

mcl_status mcl_gpt_checkpoint_header(const unsigned char *h, mcl_gpt_desc *cfg,
                                     gpt_plan *plan, uint64_t *step, uint64_t *file_bytes,
                                     char *why, size_t why_size)
{
    if (memcmp(h, GPT_MAGIC, 8) != 0) {
        snprintf(why, why_size, "not a MotifCL GPT checkpoint");
        return MCL_ERROR_INVALID_ARGUMENT;
    }
    uint32_t version = mcl_gpt_get_u32(h + 8);
    if (version < GPT_VERSION_ORDINARY || version > GPT_VERSION ||
        mcl_gpt_get_u32(h + 12) != GPT_HEADER_BYTES) {
        snprintf(why, why_size, "checkpoint version %u; this library reads %u to %u", version,
                 GPT_VERSION_ORDINARY, GPT_VERSION);
        return MCL_ERROR_INVALID_ARGUMENT;
    }
    memset(cfg, 0, sizeof *cfg);
    cfg->size = sizeof *cfg;
    int32_t *fields[8] = {&cfg->vocab, &cfg->dim, &cfg->layers, &cfg->heads, &cfg->kv_heads,
                          &cfg->hidden, &cfg->max_seq, &cfg->tied_head};
    for (int i = 0; i < 8; i++)
        *fields[i] = (int32_t)mcl_gpt_get_u32(h + 16 + 4 * i);
    cfg->rope_layout = (mcl_rope_layout)mcl_gpt_get_u32(h + 48);
    cfg->rope_theta = bits_f32(mcl_gpt_get_u32(h + 52));
    cfg->norm_eps = bits_f32(mcl_gpt_get_u32(h + 56));
    /* Version 1 files have zero there (reserved); version 2 is written only for a model
     * with flags, so that a reader of version 1 refuses it rather than load another model. */
    if (version >= GPT_VERSION_FLAGS) {
        cfg->flags = mcl_gpt_get_u32(h + 88);
        cfg->reversible_anchor = (int32_t)mcl_gpt_get_u32(h + 92);
        if (cfg->flags == 0) {
            snprintf(why, why_size, "a version %u checkpoint without flags", version);
            return MCL_ERROR_INVALID_ARGUMENT;
        }
        /* A counter-state model is written as version 3 only, the other models as 1 or 2, so
         * that an older reader refuses it; its C is in the counter section (read after the
         * checksum), the default standing in until then. */
        if (((cfg->flags & MCL_GPT_COUNTER) != 0) != (version >= GPT_VERSION_COUNTER)) {
            snprintf(why, why_size, "a version %u checkpoint with flags 0x%x", version,
                     cfg->flags);
            return MCL_ERROR_INVALID_ARGUMENT;
        }
    }
    /* mcl_gpt_save writes only configurations that pass these checks: any failure is a
     * damaged or foreign file (INVALID_ARGUMENT, whatever the check's own status). */
    char inner[160];
    if (mcl_gpt_plan_check(cfg, plan, inner, sizeof inner) != MCL_SUCCESS) {
        snprintf(why, why_size, "its configuration is invalid (%s)", inner);
        return MCL_ERROR_INVALID_ARGUMENT;
    }
    if (mcl_gpt_get_u32(h + 60) != 1 || mcl_gpt_get_u64(h + 72) != (uint64_t)plan->flat_floats ||
        mcl_gpt_get_u64(h + 80) != (uint64_t)plan->total_params) {
        snprintf(why, why_size, "the parameter layout does not match its configuration");
        return MCL_ERROR_INVALID_ARGUMENT;
    }
    *step = mcl_gpt_get_u64(h + 64);
    *file_bytes = GPT_HEADER_BYTES + (uint64_t)plan->flat_floats * 3 * sizeof(float) +
                  plan->counter_bytes + GPT_TRAILER_BYTES;
    return MCL_SUCCESS;
}
