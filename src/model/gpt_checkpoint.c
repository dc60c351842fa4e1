/* GPT checkpoints: the file format of docs/gpt-checkpoint.md, saved and loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt_internal.h"
#include "core/alloc.h"
#include "../ops/counter.h"


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

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static void encode_header(const mcl_gpt *gpt, unsigned char *h)
{
    const mcl_gpt_desc *c = &gpt->cfg;
    memset(h, 0, GPT_HEADER_BYTES);
    memcpy(h, GPT_MAGIC, 8);
    put_u32(h + 8, (c->flags & MCL_GPT_COUNTER) ? GPT_VERSION_COUNTER
                   : c->flags                   ? GPT_VERSION_FLAGS
                                                : GPT_VERSION_ORDINARY);
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
    if (c->flags) {
        put_u32(h + 88, c->flags);
        put_u32(h + 92, (uint32_t)c->reversible_anchor);
    }
}

/* The counter section's bytes of each layer, in file order: the packed state, the scales,
 * the moments. */
static mcl_tensor *counter_part(mcl_gpt *gpt, size_t layer, int part)
{
    mcl_counter_linear *c = gpt->counter[layer];
    return part == 0 ? mcl_counter_linear_state(c)
           : part == 1 ? mcl_counter_linear_scale(c)
                       : mcl_counter_linear_moment(c);
}

/* Copy the counter section between the model and `bytes` (plan.counter_bytes long): to the
 * host (download) or to the device. */
static mcl_status counter_section(mcl_gpt *gpt, unsigned char *bytes, int download)
{
    if (download) {
        memset(bytes, 0, GPT_COUNTER_HEADER_BYTES);
        put_u32(bytes, gpt->cfg.counter_c);
        put_u32(bytes + 4, gpt->counter_update.seed);
    }
    size_t at = GPT_COUNTER_HEADER_BYTES;
    for (size_t i = 0; i < (size_t)gpt->cfg.layers * GPT_COUNTER_LINEARS; i++) {
        for (int part = 0; part < 3; part++) {
            mcl_tensor *t = counter_part(gpt, i, part);
            size_t n = (size_t)mcl_tensor_nbytes(t);
            mcl_status s = download ? mcl_tensor_download(t, 0, bytes + at, n)
                                    : mcl_tensor_upload(t, 0, bytes + at, n);
            if (s != MCL_SUCCESS)
                return s;
            at += n;
        }
    }
    return MCL_SUCCESS;
}

/* Host buffers are little-endian on every platform the library builds for; a big-endian
 * host would swap here. */
mcl_status mcl_gpt_save(mcl_gpt *gpt, const char *path)
{
    if (!gpt)
        return MCL_ERROR_INVALID_ARGUMENT;
    if (mcl_context_check(gpt->ctx) != MCL_SUCCESS)
        return MCL_ERROR_CONTEXT_DESTROYED;
    mcl_context *ctx = gpt->ctx;
    if (!path)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_gpt_save: path is NULL");
    size_t floats = (size_t)gpt->flat_floats;
    gpt_plan plan;
    mcl_gpt_desc cfg = gpt->cfg;
    mcl_status s = mcl_gpt_plan(ctx, &cfg, &plan);
    if (s != MCL_SUCCESS)
        return s;
    size_t counter_bytes = (size_t)plan.counter_bytes;
    float *buf = mcl_mem_malloc(floats * 3 * sizeof *buf + counter_bytes);
    char *tmp = mcl_mem_malloc(strlen(path) + 5);
    if (!buf || !tmp) {
        mcl_mem_free(buf);
        mcl_mem_free(tmp);
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    s = mcl_tensor_download(gpt->flat_p, 0, buf, floats * 4);
    if (s == MCL_SUCCESS)
        s = mcl_tensor_download(gpt->flat_m, 0, buf + floats, floats * 4);
    if (s == MCL_SUCCESS)
        s = mcl_tensor_download(gpt->flat_v, 0, buf + 2 * floats, floats * 4);
    if (s == MCL_SUCCESS && counter_bytes)
        s = counter_section(gpt, (unsigned char *)(buf + 3 * floats), 1);
    if (s != MCL_SUCCESS) {
        mcl_mem_free(buf);
        mcl_mem_free(tmp);
        return s;
    }
    unsigned char header[GPT_HEADER_BYTES], trailer[8];
    encode_header(gpt, header);
    uint64_t sum = mcl_gpt_checksum(GPT_CHECKSUM_SEED, header, sizeof header);
    const size_t payload = floats * 3 * sizeof *buf + counter_bytes;
    sum = mcl_gpt_checksum(sum, buf, payload);
    put_u64(trailer, sum);
    sprintf(tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(header, sizeof header, 1, f) == 1 &&
             fwrite(buf, 1, payload, f) == payload &&
             fwrite(trailer, sizeof trailer, 1, f) == 1;
    if (f && fclose(f) != 0)
        ok = 0;
    mcl_mem_free(buf);
    if (!ok || rename(tmp, path) != 0) {
        remove(tmp);
        mcl_mem_free(tmp);
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_gpt_save: cannot write %s", path);
    }
    mcl_mem_free(tmp);
    return MCL_SUCCESS;
}

/* The file's length, or -1 when it cannot be told. */
static int64_t file_length(FILE *f)
{
    if (fseek(f, 0, SEEK_END) != 0)
        return -1;
    long n = ftell(f);
    if (n < 0 || fseek(f, GPT_HEADER_BYTES, SEEK_SET) != 0)
        return -1;
    return (int64_t)n;
}

/* Read and check everything outside the device: the header's configuration (by the rules of
 * mcl_gpt_create), the file's length against what that configuration needs, then the
 * payload and its checksum. Memory and time stay proportional to the file: nothing is
 * allocated before its length matches, and no device memory before the checksum does. On
 * success *buf holds the parameters and both moments (3 * plan->flat_floats floats). */
static mcl_status read_checked(mcl_context *ctx, const char *path, FILE *f, mcl_gpt_desc *cfg,
                               gpt_plan *plan, float **buf, uint64_t *step)
{
    *buf = NULL;
    unsigned char h[GPT_HEADER_BYTES];
    if (fread(h, sizeof h, 1, f) != 1)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt_load: %s is not a MotifCL GPT checkpoint", path);
    char why[200];
    uint64_t need = 0;
    if (mcl_gpt_checkpoint_header(h, cfg, plan, step, &need, why, sizeof why) != MCL_SUCCESS)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT, "mcl_gpt_load: %s: %s", path, why);
    int64_t length = file_length(f);
    if (length < 0)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt_load: cannot tell the length of %s", path);
    if ((uint64_t)length != need)
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt_load: %s is truncated or has bytes past its end: %lld bytes "
                        "where its configuration needs %llu",
                        path, (long long)length, (unsigned long long)need);

    const size_t payload = (size_t)plan->flat_floats * 3 * sizeof(float) +
                           (size_t)plan->counter_bytes;
    float *data = mcl_mem_malloc(payload);
    if (!data)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    unsigned char trailer[GPT_TRAILER_BYTES];
    int ok = fread(data, 1, payload, f) == payload &&
             fread(trailer, sizeof trailer, 1, f) == 1 && fgetc(f) == EOF;
    if (ok) {
        uint64_t sum = mcl_gpt_checksum(GPT_CHECKSUM_SEED, h, sizeof h);
        sum = mcl_gpt_checksum(sum, data, payload);
        ok = sum == mcl_gpt_get_u64(trailer);
    }
    if (!ok) {
        mcl_mem_free(data);
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt_load: %s is truncated or corrupt (checksum)", path);
    }
    if (plan->counter_bytes) {
        /* The counter section's header: C (checked as mcl_gpt_create checks it) and the
         * seed; its reserved bytes zero. */
        const unsigned char *section = (const unsigned char *)(data + 3 * plan->flat_floats);
        uint32_t C = mcl_gpt_get_u32(section);
        if (C < 1 || C > MCL_COUNTER_MAX_C || mcl_gpt_get_u64(section + 8) != 0) {
            mcl_mem_free(data);
            return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                            "mcl_gpt_load: %s: its counter section is invalid (C %u)", path, C);
        }
        cfg->counter_c = C;
    }
    *buf = data;
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
    mcl_gpt_desc cfg = {.size = sizeof cfg};
    gpt_plan plan;
    float *buf;
    uint64_t step = 0;
    mcl_status s = read_checked(ctx, path, f, &cfg, &plan, &buf, &step);
    fclose(f);
    if (s != MCL_SUCCESS)
        return s;
    mcl_gpt *gpt;
    if ((s = mcl_gpt_alloc(ctx, &cfg, &gpt)) != MCL_SUCCESS) {
        mcl_mem_free(buf);
        return s;
    }
    size_t floats = (size_t)plan.flat_floats;
    s = mcl_tensor_upload(gpt->flat_p, 0, buf, floats * 4);
    if (s == MCL_SUCCESS)
        s = mcl_tensor_upload(gpt->flat_m, 0, buf + floats, floats * 4);
    if (s == MCL_SUCCESS)
        s = mcl_tensor_upload(gpt->flat_v, 0, buf + 2 * floats, floats * 4);
    if (s == MCL_SUCCESS && gpt->counter) {
        unsigned char *section = (unsigned char *)(buf + 3 * floats);
        s = counter_section(gpt, section, 0);
        gpt->counter_update.seed = mcl_gpt_get_u32(section + 4);
    }
    mcl_mem_free(buf);
    gpt->step = (int64_t)step;
    if (s == MCL_SUCCESS)
        s = mcl_gpt_counter_upload(gpt);
    if (s != MCL_SUCCESS) {
        mcl_gpt_destroy(gpt);
        return s;
    }
    *out = gpt;
    return MCL_SUCCESS;
}
