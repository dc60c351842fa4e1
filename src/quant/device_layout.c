/* The device layout of the block formats (quant.h, docs/quant-formats.md "On the device"):
 * the mapping between GGUF byte offsets and device offsets, and the conversions that uploads
 * and downloads run on the host. */
#include <string.h>

#include "quant/quant.h"

int mcl_quant_layout_of(mcl_dtype type, mcl_quant_layout *out)
{
    memset(out, 0, sizeof *out);
    const mcl_dtype_traits *t = mcl_dtype_traits_of(type);
    if (!t || !t->is_block)
        return 0;
    uint32_t bytes = t->block_bytes;
    out->block_bytes = bytes;
    out->body_bytes = bytes;
    switch (type) {
    case MCL_DTYPE_Q8_0:
    case MCL_DTYPE_Q4_0:
        out->split = 1;
        out->d_at = 0;
        out->body_bytes = bytes - MCL_FP16_BYTES;
        break;
    case MCL_DTYPE_Q6_K:
        out->split = 1;
        out->d_at = bytes - MCL_FP16_BYTES;
        out->body_bytes = bytes - MCL_FP16_BYTES;
        break;
    default:
        break;
    }
    return 1;
}

/* d bytes among GGUF bytes [0, o): one fp16 per whole block, and the part of o's block's d
 * before o. */
static uint64_t d_before(const mcl_quant_layout *l, uint64_t o)
{
    uint64_t j = o % l->block_bytes;
    uint64_t in = j <= l->d_at                    ? 0
                  : j - l->d_at > MCL_FP16_BYTES ? MCL_FP16_BYTES
                                                 : j - l->d_at;
    return o / l->block_bytes * MCL_FP16_BYTES + in;
}

void mcl_quant_device_ranges(const mcl_quant_layout *l, uint64_t blocks, uint64_t offset,
                             uint64_t bytes, uint64_t *body_at, uint64_t *body_bytes,
                             uint64_t *d_at, uint64_t *d_bytes)
{
    uint64_t d0 = d_before(l, offset), d1 = d_before(l, offset + bytes);
    *body_at = offset - d0;
    *body_bytes = bytes - (d1 - d0);
    *d_at = blocks * l->body_bytes + d0;
    *d_bytes = d1 - d0;
}

/* Whole blocks of a B-byte block with its d at D: the byte-range walk below with the sizes
 * known to the compiler, which a model load runs over every block of the file. */
#define WHOLE_BLOCKS(B, D)                                                                 \
    for (uint64_t i = 0; i < n; i++) {                                                     \
        unsigned char *g = gguf + i * (B), *bd = body + i * ((B) - MCL_FP16_BYTES);        \
        unsigned char *g_body = g + ((D) == 0 ? MCL_FP16_BYTES : 0);                       \
        if (to_dev) {                                                                      \
            memcpy(bd, g_body, (B) - MCL_FP16_BYTES);                                      \
            memcpy(d + i * MCL_FP16_BYTES, g + (D), MCL_FP16_BYTES);                       \
        } else {                                                                           \
            memcpy(g_body, bd, (B) - MCL_FP16_BYTES);                                      \
            memcpy(g + (D), d + i * MCL_FP16_BYTES, MCL_FP16_BYTES);                       \
        }                                                                                  \
    }

/* The conversion of n whole blocks; 0 where the layout has no specialised loop. */
static int convert_whole(const mcl_quant_layout *l, uint64_t n, unsigned char *gguf,
                         unsigned char *body, unsigned char *d, int to_dev)
{
    if (l->block_bytes == 18 && l->d_at == 0)
        WHOLE_BLOCKS(18, 0)          /* q4_0 */
    else if (l->block_bytes == 34 && l->d_at == 0)
        WHOLE_BLOCKS(34, 0)          /* q8_0 */
    else if (l->block_bytes == 210 && l->d_at == 208)
        WHOLE_BLOCKS(210, 208)       /* q6_K */
    else
        return 0;
    return 1;
}

/* Walks GGUF bytes [offset, offset + bytes) block by block; `to_dev` copies gguf -> body and
 * d, else back. */
static void convert(const mcl_quant_layout *l, uint64_t offset, unsigned char *gguf,
                    uint64_t bytes, unsigned char *body, unsigned char *d, int to_dev)
{
    if (offset % l->block_bytes == 0 && bytes % l->block_bytes == 0 &&
        convert_whole(l, bytes / l->block_bytes, gguf, body, d, to_dev))
        return;
    uint64_t o = offset, end = offset + bytes;
    while (o < end) {
        uint64_t j = o % l->block_bytes;
        uint64_t run = l->block_bytes - j;
        if (run > end - o)
            run = end - o;
        /* [j, j + run) of this block: body bytes before d, d bytes, body bytes after d. */
        uint64_t lo = j, hi = j + run;
        uint64_t d_lo = l->d_at, d_hi = l->d_at + MCL_FP16_BYTES;
        uint64_t seg[3][2] = {{lo, hi < d_lo ? hi : d_lo},
                              {lo > d_lo ? lo : d_lo, hi < d_hi ? hi : d_hi},
                              {lo > d_hi ? lo : d_hi, hi}};
        for (int s = 0; s < 3; s++) {
            if (seg[s][1] <= seg[s][0])
                continue;
            uint64_t n = seg[s][1] - seg[s][0];
            unsigned char *g = gguf + (o - offset) + (seg[s][0] - j);
            unsigned char **at = s == 1 ? &d : &body;
            if (to_dev)
                memcpy(*at, g, (size_t)n);
            else
                memcpy(g, *at, (size_t)n);
            *at += n;
        }
        o += run;
    }
}

/* The d bytes among GGUF bytes [offset, offset + bytes). */
static uint64_t d_bytes_of(const mcl_quant_layout *l, uint64_t offset, uint64_t bytes)
{
    return d_before(l, offset + bytes) - d_before(l, offset);
}

void mcl_quant_split(const mcl_quant_layout *l, uint64_t offset, const void *gguf,
                     uint64_t bytes, void *dev)
{
    unsigned char *body = dev;
    convert(l, offset, (unsigned char *)(uintptr_t)gguf, bytes, body,
            body + bytes - d_bytes_of(l, offset, bytes), 1);
}

void mcl_quant_split_to(const mcl_quant_layout *l, uint64_t offset, const void *gguf,
                        uint64_t bytes, void *body, void *d)
{
    convert(l, offset, (unsigned char *)(uintptr_t)gguf, bytes, body, d, 1);
}

void mcl_quant_merge(const mcl_quant_layout *l, uint64_t offset, const void *dev,
                     uint64_t bytes, void *gguf)
{
    unsigned char *body = (unsigned char *)(uintptr_t)dev;
    convert(l, offset, gguf, bytes, body, body + bytes - d_bytes_of(l, offset, bytes), 0);
}
