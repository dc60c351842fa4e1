/* GPT checkpoints: the file format of docs/gpt-checkpoint.md, saved and loaded. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gpt_internal.h"
#include "core/alloc.h"


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
    put_u32(h + 8, c->flags ? GPT_VERSION_FLAGS : GPT_VERSION_ORDINARY);
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
    float *buf = mcl_mem_malloc(floats * 3 * sizeof *buf);
    char *tmp = mcl_mem_malloc(strlen(path) + 5);
    if (!buf || !tmp) {
        mcl_mem_free(buf);
        mcl_mem_free(tmp);
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    mcl_status s = mcl_tensor_download(gpt->flat_p, 0, buf, floats * 4);
    if (s == MCL_SUCCESS)
        s = mcl_tensor_download(gpt->flat_m, 0, buf + floats, floats * 4);
    if (s == MCL_SUCCESS)
        s = mcl_tensor_download(gpt->flat_v, 0, buf + 2 * floats, floats * 4);
    if (s != MCL_SUCCESS) {
        mcl_mem_free(buf);
        mcl_mem_free(tmp);
        return s;
    }
    unsigned char header[GPT_HEADER_BYTES], trailer[8];
    encode_header(gpt, header);
    uint64_t sum = mcl_gpt_checksum(GPT_CHECKSUM_SEED, header, sizeof header);
    sum = mcl_gpt_checksum(sum, buf, floats * 3 * sizeof *buf);
    put_u64(trailer, sum);
    sprintf(tmp, "%s.tmp", path);
    FILE *f = fopen(tmp, "wb");
    int ok = f && fwrite(header, sizeof header, 1, f) == 1 &&
             fwrite(buf, sizeof *buf, floats * 3, f) == floats * 3 &&
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

    size_t floats = (size_t)plan->flat_floats * 3;
    float *data = mcl_mem_malloc(floats * sizeof *data);
    if (!data)
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    unsigned char trailer[GPT_TRAILER_BYTES];
    int ok = fread(data, sizeof *data, floats, f) == floats &&
             fread(trailer, sizeof trailer, 1, f) == 1 && fgetc(f) == EOF;
    if (ok) {
        uint64_t sum = mcl_gpt_checksum(GPT_CHECKSUM_SEED, h, sizeof h);
        sum = mcl_gpt_checksum(sum, data, floats * sizeof *data);
        ok = sum == mcl_gpt_get_u64(trailer);
    }
    if (!ok) {
        mcl_mem_free(data);
        return mcl_fail(ctx, MCL_ERROR_INVALID_ARGUMENT,
                        "mcl_gpt_load: %s is truncated or corrupt (checksum)", path);
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
    mcl_mem_free(buf);
    if (s != MCL_SUCCESS) {
        mcl_gpt_destroy(gpt);
        return s;
    }
    gpt->step = (int64_t)step;
    *out = gpt;
    return MCL_SUCCESS;
}
