/* A model's weights onto the device: each tensor's device type, the memory they need against
 * the budget (checked before anything is uploaded), and the upload, a chunk of rows at a
 * time: f16 and bf16 become f32, weights are quantized or dequantized where the caller asks,
 * and llama.cpp's q and k permutation is undone. Block-quantised bytes otherwise go to the
 * device as the file holds them, straight from the mapped file. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model_internal.h"
#include "../io/convert.h"
#include "core/alloc.h"

/* Host memory a chunk of rows takes at most (as f32), where the rows are converted. */
#define MODEL_CHUNK_BYTES (4u << 20)
/* File bytes of one upload where they go to the device as they are: large enough that each
 * call's fixed costs vanish, small enough for a progress report every few milliseconds. */
#define MODEL_DIRECT_BYTES (32u << 20)

/* How far ahead of the upload the read-ahead thread may map the file's pages. */
#define MODEL_READAHEAD_BYTES (256u << 20)

/* A thread that maps the file's pages in the order the upload reads them, at most
 * MODEL_READAHEAD_BYTES ahead of it: a cold file comes off the disk while the bytes before
 * it go to the device, and the upload takes no page faults of its own. */
typedef struct readahead {
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t moved;
    const mcl_model *m;
    uint64_t consumed; /* file bytes the upload is done with */
    int stop;
} readahead;

/* Whether the thread may read up to `touched` bytes; waits while it may not. 0: stop. */
static int readahead_wait(readahead *r, uint64_t touched)
{
    pthread_mutex_lock(&r->lock);
    while (!r->stop && touched > r->consumed + MODEL_READAHEAD_BYTES)
        pthread_cond_wait(&r->moved, &r->lock);
    int go = !r->stop;
    pthread_mutex_unlock(&r->lock);
    return go;
}

static void *readahead_main(void *arg)
{
    readahead *r = arg;
    long page_size = sysconf(_SC_PAGESIZE);
    uint64_t page = page_size > 0 ? (uint64_t)page_size : 4096, touched = 0;
    unsigned sum = 0;
    for (uint32_t i = 0; i < r->m->tensor_count; i++) {
        const model_tensor *t = &r->m->tensors[i];
        uint32_t parts = t->parts ? t->parts : 1;
        uint64_t each = t->bytes / parts;
        for (uint32_t q = 0; q < parts; q++) {
            const unsigned char *data = t->parts ? t->part_data[q] : t->data;
            for (uint64_t o = 0; o < each; o += page) {
                if (o % (4u << 20) == 0 && !readahead_wait(r, touched + (4u << 20)))
                    return NULL;
                sum += ((const volatile unsigned char *)data)[o];
                touched += page < each - o ? page : each - o;
            }
        }
    }
    return (void *)(uintptr_t)(sum & 1); /* keeps the reads */
}

/* Starts the thread where the files are mapped (read into memory, they need none); returns 0
 * where it does not run, and the load goes on without it. */
static int readahead_start(readahead *r, const mcl_model *m)
{
    memset(r, 0, sizeof *r);
    r->m = m;
    for (uint32_t f = 0; f < m->file_count; f++)
        if (!m->files[f].is_mapped)
            return 0;
    if (pthread_mutex_init(&r->lock, NULL) != 0)
        return 0;
    if (pthread_cond_init(&r->moved, NULL) != 0) {
        pthread_mutex_destroy(&r->lock);
        return 0;
    }
    if (pthread_create(&r->thread, NULL, readahead_main, r) != 0) {
        pthread_cond_destroy(&r->moved);
        pthread_mutex_destroy(&r->lock);
        return 0;
    }
    return 1;
}

static void readahead_advance(readahead *r, uint64_t consumed)
{
    pthread_mutex_lock(&r->lock);
    r->consumed = consumed;
    pthread_cond_signal(&r->moved);
    pthread_mutex_unlock(&r->lock);
}

static void readahead_stop(readahead *r)
{
    pthread_mutex_lock(&r->lock);
    r->stop = 1;
    pthread_cond_signal(&r->moved);
    pthread_mutex_unlock(&r->lock);
    pthread_join(r->thread, NULL);
    pthread_cond_destroy(&r->moved);
    pthread_mutex_destroy(&r->lock);
}

/* The library dtype of a block-quantised ggml type, or -1. */
static int block_dtype(uint32_t type)
{
    int d = mcl_ggml_type_dtype(type);
    return d >= 0 && mcl_dtype_block_weights((mcl_dtype)d) > 1 ? d : -1;
}

static int float_type(uint32_t type)
{
    return type == MCL_GGML_F32 || type == MCL_GGML_F16 || type == MCL_GGML_BF16;
}

static int64_t numel(const model_tensor *t)
{
    int64_t n = 1;
    for (uint32_t d = 0; d < t->ndim; d++)
        n *= t->shape[d];
    return n;
}

/* Whether the library reads t's file type. */
static int readable(const model_tensor *t)
{
    return float_type(t->file_type) || block_dtype(t->file_type) >= 0;
}

/* The device type of t under desc. */
static mcl_status decide_dtype(mcl_model *m, model_tensor *t, const mcl_model_desc *desc)
{
    int quant = block_dtype(t->file_type);
    if (!readable(t)) {
        const char *name = mcl_ggml_type_name(t->file_type);
        return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                          "model: tensor %s is %s, which the library does not read (it reads "
                          "f32, f16, bf16, q8_0, q4_0, q4_K, q5_K and q6_K)", t->name,
                          name ? name : "of an unknown type");
    }
    int set = (desc->flags & MCL_MODEL_WEIGHT_TYPE_SET) != 0;
    int64_t k = t->shape[t->ndim - 1];
    /* Matrices, and the 3-D stacks of a mixture's experts (one matrix on the device). */
    int matrix = t->ndim == 2 || (t->ndim == 3 && m->info.experts > 0);
    if (quant >= 0) {
        if (!matrix)
            return MODEL_FAIL(m->ctx, MCL_ERROR_UNSUPPORTED,
                              "model: tensor %s is block-quantised with %u dimensions (the "
                              "library reads quantized matrices)", t->name, t->ndim);
        t->dtype = set && desc->weight_type == MCL_DTYPE_F32 ? MCL_DTYPE_F32 : (mcl_dtype)quant;
    } else if (set && desc->weight_type != MCL_DTYPE_F32 && matrix &&
               k % mcl_dtype_block_weights(desc->weight_type) == 0) {
        t->dtype = desc->weight_type;
    } else {
        t->dtype = MCL_DTYPE_F32;
    }
    return MCL_SUCCESS;
}

/* GGUF bytes of one row (the last dimension) of `k` elements of dtype. */
static uint64_t row_bytes(mcl_dtype dtype, int64_t k)
{
    return (uint64_t)(k / mcl_dtype_block_weights(dtype)) * mcl_dtype_block_bytes(dtype);
}

/* Bytes of the file's row of t. */
static uint64_t file_row_bytes(const model_tensor *t)
{
    return (uint64_t)t->shape[t->ndim - 1] / mcl_ggml_block_elems(t->file_type) *
           mcl_ggml_block_bytes(t->file_type);
}

/* The device memory the tensors need: their bytes, a split block type's d area rounded to
 * 16 bytes, each at the allocator's 256-byte alignment. */
/* Device memory of the weights: all but the expert stacks where they stay in host memory
 * (MCL_MODEL_EXPERTS_IN_HOST_MEMORY). */
static uint64_t device_bytes(const mcl_model *m, uint32_t flags)
{
    uint64_t total = 0;
    for (uint32_t i = 0; i < m->tensor_count; i++) {
        const model_tensor *t = &m->tensors[i];
        if (t->ndim == 3 && (flags & MCL_MODEL_EXPERTS_IN_HOST_MEMORY))
            continue;
        uint64_t rows = (uint64_t)(numel(t) / t->shape[t->ndim - 1]);
        uint64_t bytes = rows * row_bytes(t->dtype, t->shape[t->ndim - 1]);
        total += (bytes + 255) / 256 * 256;
    }
    return total;
}

/* Row r of the result's order is row src_row(r) of the file: llama.cpp's converter stored
 * the rows of each head as pairs (2i, 2i + 1) where Hugging Face has (i, i + head_dim / 2). */
static uint64_t src_row(const model_tensor *t, uint64_t r)
{
    if (!t->unpermute_heads)
        return r;
    uint64_t hd = (uint64_t)t->shape[0] / t->unpermute_heads, half = hd / 2;
    uint64_t head = r / hd, j = r % hd;
    return head * hd + 2 * (j % half) + j / half;
}

/* Row `row` of the file's tensor t: in its part where its experts are separate tensors. */
static const unsigned char *file_row(const model_tensor *t, uint64_t row)
{
    if (t->parts)
        return t->part_data[row / t->part_rows] + row % t->part_rows * file_row_bytes(t);
    return t->data + row * file_row_bytes(t);
}

/* Row `row` of the file's tensor t into `k` floats. */
static mcl_status row_to_f32(const model_tensor *t, uint64_t row, float *out)
{
    int64_t k = t->shape[t->ndim - 1];
    const unsigned char *p = file_row(t, row);
    switch (t->file_type) {
    case MCL_GGML_F32:
        mcl_convert_f32_to_f32(p, out, (uint64_t)k);
        return MCL_SUCCESS;
    case MCL_GGML_F16:
        mcl_convert_f16_to_f32(p, out, (uint64_t)k);
        return MCL_SUCCESS;
    case MCL_GGML_BF16:
        mcl_convert_bf16_to_f32(p, out, (uint64_t)k);
        return MCL_SUCCESS;
    default:
        return mcl_dequantize((mcl_dtype)block_dtype(t->file_type), p, out, k);
    }
}

/* Upload tensor t, rows [r0, r1) at a time through host buffers (f32 rows, the device
 * type's rows). */
static mcl_status upload(model_tensor *t, float *f32, unsigned char *dev,
                         uint64_t chunk_rows, const mcl_model_desc *desc, uint64_t *done,
                         uint64_t total, readahead *ahead)
{
    int64_t k = t->shape[t->ndim - 1];
    uint64_t rows = (uint64_t)(numel(t) / k);
    uint64_t in_row = file_row_bytes(t), out_row = row_bytes(t->dtype, k);
    int same = block_dtype(t->file_type) == (int)t->dtype ||
               (t->file_type == MCL_GGML_F32 && t->dtype == MCL_DTYPE_F32);
    mcl_status status = MCL_SUCCESS;
    if (same && !t->unpermute_heads) {
        chunk_rows = MODEL_DIRECT_BYTES / in_row;
        if (chunk_rows == 0)
            chunk_rows = 1;
    }
    for (uint64_t r0 = 0, n = 0; status == MCL_SUCCESS && r0 < rows; r0 += n) {
        n = rows - r0 < chunk_rows ? rows - r0 : chunk_rows;
        if (t->parts && n > t->part_rows - r0 % t->part_rows) /* within one part */
            n = t->part_rows - r0 % t->part_rows;
        const void *src = dev;
        if (same && !t->unpermute_heads) {
            src = file_row(t, r0);  /* straight from the mapped file */
        } else if (same) {
            for (uint64_t r = 0; r < n; r++)
                memcpy(dev + r * out_row, file_row(t, src_row(t, r0 + r)), in_row);
        } else {
            for (uint64_t r = 0; status == MCL_SUCCESS && r < n; r++)
                status = row_to_f32(t, src_row(t, r0 + r), f32 + r * (uint64_t)k);
            if (status != MCL_SUCCESS)
                break;
            if (t->dtype == MCL_DTYPE_F32)
                src = f32;
            else
                status = mcl_quantize(t->dtype, f32, dev, (int64_t)(n * (uint64_t)k));
        }
        /* Never through imported host memory: the file's mapped pages imported left the
         * tensor reading at host-memory speed for a while on NVIDIA (runtime.h). */
        if (status == MCL_SUCCESS)
            status = mcl_tensor_upload_no_import(t->tensor, r0 * out_row, src, n * out_row);
        *done += n * in_row;
        if (ahead)
            readahead_advance(ahead, *done);
        if (desc->progress)
            desc->progress(desc->progress_user_data, *done, total);
    }
    return status;
}

mcl_status mcl_model_plan_weights(mcl_model *m, const mcl_model_desc *desc)
{
    int tolerant = (desc->flags & MCL_MODEL_NO_WEIGHTS) != 0;
    for (uint32_t i = 0; i < m->tensor_count; i++) {
        model_tensor *t = &m->tensors[i];
        if (tolerant && !readable(t)) { /* described, never loaded */
            t->dtype = (mcl_dtype)-1;
            continue;
        }
        mcl_status status = decide_dtype(m, t, desc);
        if (status != MCL_SUCCESS && !tolerant)
            return status;
        if (status != MCL_SUCCESS)
            t->dtype = (mcl_dtype)-1;
    }
    if (!tolerant)
        m->info.device_bytes = device_bytes(m, desc->flags);
    return MCL_SUCCESS;
}

mcl_status mcl_model_load_weights(mcl_model *m, const mcl_model_desc *desc)
{
    mcl_status status = MCL_SUCCESS;
    uint64_t total = 0, widest = 1;
    for (uint32_t i = 0; i < m->tensor_count; i++) {
        const model_tensor *t = &m->tensors[i];
        total += t->bytes;
        uint64_t k = (uint64_t)t->shape[t->ndim - 1];
        if (k > widest)
            widest = k;
    }
    uint64_t need = device_bytes(m, desc->flags);
    uint64_t budget = desc->memory_budget ? desc->memory_budget : mcl_device_memory_left(m->ctx);
    if (need > budget)
        return MODEL_FAIL(m->ctx, MCL_ERROR_OUT_OF_DEVICE_MEMORY,
                          "model: the weights need %llu bytes (%.1f MiB) of device memory, "
                          "the budget is %llu (%.1f MiB)", (unsigned long long)need,
                          (double)need / 1048576.0, (unsigned long long)budget,
                          (double)budget / 1048576.0);
    /* Host buffers of a chunk of rows. */
    uint64_t chunk_rows = MODEL_CHUNK_BYTES / (widest * sizeof(float));
    if (chunk_rows == 0)
        chunk_rows = 1;
    float *f32 = mcl_mem_malloc(chunk_rows * widest * sizeof(float));
    unsigned char *dev = mcl_mem_malloc(chunk_rows * widest * sizeof(float));
    if (!f32 || !dev) {
        mcl_mem_free(f32);
        mcl_mem_free(dev);
        return MODEL_FAIL(m->ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
    }
    uint64_t done = 0;
    readahead r;
    int reading_ahead = readahead_start(&r, m);
    for (uint32_t i = 0; i < m->tensor_count && status == MCL_SUCCESS; i++) {
        model_tensor *t = &m->tensors[i];
        /* An expert stack [experts, rows, K] is one matrix [experts x rows, K] on the
         * device: expert e's rows start at row e x rows. */
        int64_t stacked[2] = {t->ndim == 3 ? t->shape[0] * t->shape[1] : 0, t->shape[2]};
        if (t->ndim == 3 && (desc->flags & MCL_MODEL_EXPERTS_IN_HOST_MEMORY))
            status = mcl_tensor_create_host_pool(m->ctx, t->dtype, 2, stacked, &t->tensor);
        else
            status = t->ndim == 3 ? mcl_tensor_create(m->ctx, t->dtype, 2, stacked, &t->tensor)
                                  : mcl_tensor_create(m->ctx, t->dtype, t->ndim, t->shape,
                                                      &t->tensor);
        if (status == MCL_SUCCESS)
            status = upload(t, f32, dev, chunk_rows, desc, &done, total,
                            reading_ahead ? &r : NULL);
    }
    if (reading_ahead)
        readahead_stop(&r);
    mcl_mem_free(f32);
    mcl_mem_free(dev);
    if (status == MCL_SUCCESS)
        status = mcl_finish(m->ctx);
    return status;
}
