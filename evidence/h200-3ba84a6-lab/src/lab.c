/* Lab: standalone Vulkan micro-benchmarks of candidate GEMV layouts (not part of the library). */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <volk.h>

#define CHECK(x)                                                                   \
    do {                                                                           \
        VkResult r_ = (x);                                                         \
        if (r_ != VK_SUCCESS) {                                                    \
            fprintf(stderr, "%s:%d: %s = %d\n", __FILE__, __LINE__, #x, (int)r_);  \
            exit(1);                                                               \
        }                                                                          \
    } while (0)

static VkInstance inst;
static VkPhysicalDevice phys;
static VkDevice dev;
static VkQueue queue;
static uint32_t qfam;
static VkCommandPool cpool;
static VkFence fence;
static VkQueryPool qpool;
static double tperiod;
static uint64_t tmask;
static VkPhysicalDeviceMemoryProperties memprops;
static VkDescriptorPool dpool;
static const char *shdir = "lab/sh";
static int check_only;
static double stream_gbs = 1;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + 1e-9 * ts.tv_nsec;
}

typedef struct {
    VkBuffer b;
    VkDeviceMemory m;
    VkDeviceSize size;
} buf;

static uint32_t memtype(uint32_t bits, VkMemoryPropertyFlags want)
{
    for (uint32_t i = 0; i < memprops.memoryTypeCount; i++)
        if ((bits & (1u << i)) && (memprops.memoryTypes[i].propertyFlags & want) == want)
            return i;
    fprintf(stderr, "no memory type\n");
    exit(1);
}

static buf buf_create(VkDeviceSize size, int host)
{
    buf r = {.size = size};
    VkBufferCreateInfo bi = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                             .size = size,
                             .usage = VK_BUFFER_USAGE_STORAGE_BUFFER_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
                                      VK_BUFFER_USAGE_TRANSFER_DST_BIT};
    CHECK(vkCreateBuffer(dev, &bi, NULL, &r.b));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, r.b, &req);
    VkMemoryAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                               .allocationSize = req.size,
                               .memoryTypeIndex = memtype(req.memoryTypeBits,
                                                          host ? (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                                                                  VK_MEMORY_PROPERTY_HOST_COHERENT_BIT)
                                                               : VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT)};
    CHECK(vkAllocateMemory(dev, &ai, NULL, &r.m));
    CHECK(vkBindBufferMemory(dev, r.b, r.m, 0));
    return r;
}

static void buf_free(buf *b)
{
    if (b->b) {
        vkDestroyBuffer(dev, b->b, NULL);
        vkFreeMemory(dev, b->m, NULL);
    }
    memset(b, 0, sizeof *b);
}

static VkCommandBuffer cmd_begin(void)
{
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = cpool,
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    VkCommandBuffer c;
    CHECK(vkAllocateCommandBuffers(dev, &ai, &c));
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO,
                                   .flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT};
    CHECK(vkBeginCommandBuffer(c, &bi));
    return c;
}

static void cmd_submit(VkCommandBuffer c)
{
    CHECK(vkEndCommandBuffer(c));
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO, .commandBufferCount = 1,
                       .pCommandBuffers = &c};
    CHECK(vkResetFences(dev, 1, &fence));
    CHECK(vkQueueSubmit(queue, 1, &si, fence));
    CHECK(vkWaitForFences(dev, 1, &fence, VK_TRUE, UINT64_MAX));
    vkFreeCommandBuffers(dev, cpool, 1, &c);
}

static void barrier(VkCommandBuffer c)
{
    VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                          .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT,
                          .dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT |
                                           VK_ACCESS_TRANSFER_READ_BIT};
    vkCmdPipelineBarrier(c, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0,
                         1, &mb, 0, NULL, 0, NULL);
}

static void upload(buf *dst, const void *src, VkDeviceSize size)
{
    buf st = buf_create(size, 1);
    void *p;
    CHECK(vkMapMemory(dev, st.m, 0, size, 0, &p));
    memcpy(p, src, size);
    vkUnmapMemory(dev, st.m);
    VkCommandBuffer c = cmd_begin();
    VkBufferCopy r = {.size = size};
    vkCmdCopyBuffer(c, st.b, dst->b, 1, &r);
    cmd_submit(c);
    buf_free(&st);
}

static void copy_buf(buf *dst, buf *src, VkDeviceSize size)
{
    VkCommandBuffer c = cmd_begin();
    VkBufferCopy r = {.size = size};
    vkCmdCopyBuffer(c, src->b, dst->b, 1, &r);
    cmd_submit(c);
}

static void download(buf *src, void *dst, VkDeviceSize size)
{
    buf st = buf_create(size, 1);
    VkCommandBuffer c = cmd_begin();
    barrier(c);
    VkBufferCopy r = {.size = size};
    vkCmdCopyBuffer(c, src->b, st.b, 1, &r);
    cmd_submit(c);
    void *p;
    CHECK(vkMapMemory(dev, st.m, 0, size, 0, &p));
    memcpy(dst, p, size);
    vkUnmapMemory(dev, st.m);
    buf_free(&st);
}

typedef struct {
    VkPipeline p;
    VkPipelineLayout l;
    VkDescriptorSetLayout dsl;
    double ms;
} pipe;

static uint32_t *read_spv(const char *name, size_t *bytes)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", shdir, name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "cannot open %s\n", path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint32_t *w = malloc((size_t)n);
    if (fread(w, 1, (size_t)n, f) != (size_t)n)
        exit(1);
    fclose(f);
    *bytes = (size_t)n;
    return w;
}

static pipe pipe_create(const char *name, int nbind, const uint32_t *spec, int nspec)
{
    pipe r = {0};
    size_t bytes;
    uint32_t *code = read_spv(name, &bytes);
    VkShaderModuleCreateInfo mi = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                   .codeSize = bytes, .pCode = code};
    VkShaderModule mod;
    CHECK(vkCreateShaderModule(dev, &mi, NULL, &mod));
    free(code);
    VkDescriptorSetLayoutBinding b[8];
    for (int i = 0; i < nbind; i++)
        b[i] = (VkDescriptorSetLayoutBinding){.binding = (uint32_t)i,
                                              .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                              .descriptorCount = 1,
                                              .stageFlags = VK_SHADER_STAGE_COMPUTE_BIT};
    VkDescriptorSetLayoutCreateInfo dli = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
                                           .bindingCount = (uint32_t)nbind, .pBindings = b};
    CHECK(vkCreateDescriptorSetLayout(dev, &dli, NULL, &r.dsl));
    VkPushConstantRange pr = {.stageFlags = VK_SHADER_STAGE_COMPUTE_BIT, .size = 32};
    VkPipelineLayoutCreateInfo pli = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                      .setLayoutCount = 1, .pSetLayouts = &r.dsl,
                                      .pushConstantRangeCount = 1, .pPushConstantRanges = &pr};
    CHECK(vkCreatePipelineLayout(dev, &pli, NULL, &r.l));
    VkSpecializationMapEntry me[16];
    for (int i = 0; i < nspec; i++)
        me[i] = (VkSpecializationMapEntry){.constantID = (uint32_t)i, .offset = 4u * (uint32_t)i,
                                           .size = 4};
    VkSpecializationInfo si = {.mapEntryCount = (uint32_t)nspec, .pMapEntries = me,
                               .dataSize = 4u * (uint32_t)nspec, .pData = spec};
    VkComputePipelineCreateInfo ci = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT, .module = mod, .pName = "main",
                  .pSpecializationInfo = &si},
        .layout = r.l};
    double t0 = now();
    CHECK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &ci, NULL, &r.p));
    r.ms = (now() - t0) * 1e3;
    vkDestroyShaderModule(dev, mod, NULL);
    return r;
}

static void pipe_free(pipe *p)
{
    vkDestroyPipeline(dev, p->p, NULL);
    vkDestroyPipelineLayout(dev, p->l, NULL);
    vkDestroyDescriptorSetLayout(dev, p->dsl, NULL);
}

static VkDescriptorSet set_make(pipe *p, buf **bs, int n)
{
    VkDescriptorSetAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO,
                                      .descriptorPool = dpool, .descriptorSetCount = 1,
                                      .pSetLayouts = &p->dsl};
    VkDescriptorSet s;
    CHECK(vkAllocateDescriptorSets(dev, &ai, &s));
    VkDescriptorBufferInfo bi[8];
    VkWriteDescriptorSet w[8];
    for (int i = 0; i < n; i++) {
        bi[i] = (VkDescriptorBufferInfo){.buffer = bs[i]->b, .range = VK_WHOLE_SIZE};
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstSet = s, .dstBinding = (uint32_t)i,
                                      .descriptorCount = 1,
                                      .descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER,
                                      .pBufferInfo = &bi[i]};
    }
    vkUpdateDescriptorSets(dev, (uint32_t)n, w, 0, NULL);
    return s;
}

typedef struct {
    pipe *p;
    VkDescriptorSet set[16];
    int nsets;
    uint32_t push[8];
    uint32_t gx, gy;
} job;

static void record(VkCommandBuffer c, job *j, int which)
{
    vkCmdBindPipeline(c, VK_PIPELINE_BIND_POINT_COMPUTE, j->p->p);
    vkCmdBindDescriptorSets(c, VK_PIPELINE_BIND_POINT_COMPUTE, j->p->l, 0, 1,
                            &j->set[which % j->nsets], 0, NULL);
    vkCmdPushConstants(c, j->p->l, VK_SHADER_STAGE_COMPUTE_BIT, 0, 32, j->push);
    vkCmdDispatch(c, j->gx, j->gy, 1);
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Median GPU seconds of `count` dispatches (rotating sets) between timestamps. */
static double time_job(job *j, int count, int reps)
{
    if (reps > 64)
        reps = 64;
    double t[64];
    /* warm-up ~0.2 s */
    double t0 = now();
    while (now() - t0 < (check_only ? 0.0 : 0.2)) {
        VkCommandBuffer c = cmd_begin();
        for (int i = 0; i < 16; i++)
            record(c, j, i);
        cmd_submit(c);
    }
    VkCommandBuffer c = cmd_begin();
    vkCmdResetQueryPool(c, qpool, 0, 128);
    for (int r = 0; r < reps; r++) {
        barrier(c);
        vkCmdWriteTimestamp(c, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qpool, 2 * r);
        for (int i = 0; i < count; i++)
            record(c, j, r * count + i);
        vkCmdWriteTimestamp(c, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qpool, 2 * r + 1);
    }
    cmd_submit(c);
    uint64_t ts[128];
    CHECK(vkGetQueryPoolResults(dev, qpool, 0, 2 * reps, sizeof ts, ts, 8,
                                VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    for (int r = 0; r < reps; r++)
        t[r] = (double)((ts[2 * r + 1] - ts[2 * r]) & tmask) * tperiod * 1e-9;
    qsort(t, (size_t)reps, sizeof t[0], cmp_d);
    return t[reps / 2];
}

/* ---------------- data ---------------- */

static uint32_t rng = 2463534242u;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 17;
    rng ^= rng << 5;
    return rng;
}
static float rndf(void) { return (float)(rnd() >> 8) * (2.0f / 16777216.0f) - 1.0f; }

static float half_to_float(uint16_t h)
{
    uint32_t sign = (h & 0x8000u) << 16, em = h & 0x7FFFu, bits;
    float f;
    if (em < 0x400) {
        f = (float)em / 16777216.0f;
        memcpy(&bits, &f, 4);
    } else {
        bits = (em << 13) + 0x38000000u;
    }
    bits |= sign;
    memcpy(&f, &bits, 4);
    return f;
}

static uint16_t rnd_half(void)
{
    /* exponents 1..20 mostly (2^-14 .. 2^5), sometimes subnormal */
    uint32_t e = (rnd() % 16 == 0) ? 0 : 6 + rnd() % 10;
    return (uint16_t)(((rnd() & 1) << 15) | (e << 10) | (rnd() & 0x3FF));
}

enum { F_Q8_0, F_Q4_0, F_Q4_K };
static const int blk_bytes[] = {34, 18, 144};
static const int blk_w[] = {32, 32, 256};

static void get_scale_min_k4(int j, const uint8_t *q, uint8_t *d, uint8_t *m)
{
    if (j < 4) {
        *d = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *d = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *m = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

static void dequant_block(int f, const uint8_t *b, float *y)
{
    if (f == F_Q8_0) {
        float d = half_to_float((uint16_t)(b[0] | b[1] << 8));
        for (int i = 0; i < 32; i++)
            y[i] = d * (float)(int8_t)b[2 + i];
    } else if (f == F_Q4_0) {
        float d = half_to_float((uint16_t)(b[0] | b[1] << 8));
        for (int j = 0; j < 16; j++) {
            y[j] = d * (float)((b[2 + j] & 0xF) - 8);
            y[j + 16] = d * (float)((b[2 + j] >> 4) - 8);
        }
    } else {
        float d = half_to_float((uint16_t)(b[0] | b[1] << 8));
        float dmin = half_to_float((uint16_t)(b[2] | b[3] << 8));
        const uint8_t *sc = b + 4, *q = b + 16;
        int is = 0;
        for (int c = 0; c < 4; c++) {
            uint8_t s, m;
            get_scale_min_k4(is, sc, &s, &m);
            float d1 = d * s, m1 = dmin * m;
            get_scale_min_k4(is + 1, sc, &s, &m);
            float d2 = d * s, m2 = dmin * m;
            for (int l = 0; l < 32; l++) {
                y[64 * c + l] = d1 * (float)(q[l] & 0xF) - m1;
                y[64 * c + 32 + l] = d2 * (float)(q[l] >> 4) - m2;
            }
            q += 32;
            is += 2;
        }
    }
}

static void rnd_block(int f, uint8_t *b)
{
    for (int i = 0; i < blk_bytes[f]; i++)
        b[i] = (uint8_t)rnd();
    uint16_t d = rnd_half();
    b[0] = (uint8_t)d;
    b[1] = (uint8_t)(d >> 8);
    if (f == F_Q8_0) {
        for (int i = 0; i < 32; i++)
            if (b[2 + i] == 0x80)
                b[2 + i] = 0x81; /* -127..127 */
    }
    if (f == F_Q4_K) {
        /* keep d and dmin moderate, both normal */
        uint16_t dd = (uint16_t)((10u + rnd() % 6) << 10 | (rnd() & 0x3FF));
        uint16_t dm = (uint16_t)((8u + rnd() % 6) << 10 | (rnd() & 0x3FF));
        b[0] = (uint8_t)dd;
        b[1] = (uint8_t)(dd >> 8);
        b[2] = (uint8_t)dm;
        b[3] = (uint8_t)(dm >> 8);
    }
}

/* q8_1 activations (qdot.glsl layout) of x [M, K]; also the dequantized values. */
static void quant_act(const float *x, int M, int K, uint32_t *act, float *xq)
{
    int nb = K / 32, AB = M * nb;
    for (int g = 0; g < AB; g++) {
        const float *v = x + (size_t)g * 32;
        float amax = 0;
        for (int i = 0; i < 32; i++)
            amax = fmaxf(amax, fabsf(v[i]));
        float d = amax / 127.0f, id = d ? 1.0f / d : 0.0f;
        int sum = 0;
        uint8_t *codes = (uint8_t *)(act + 8 * (size_t)g);
        for (int i = 0; i < 32; i++) {
            int q = (int)roundf(v[i] * id);
            codes[i] = (uint8_t)(int8_t)q;
            sum += q;
            xq[(size_t)g * 32 + i] = (float)q * d;
        }
        memcpy(&act[8 * (size_t)AB + g], &d, 4);
        act[9 * (size_t)AB + g] = (uint32_t)sum;
    }
}

/* W-shaped activations for lab_gg_dot. */
static uint32_t *gg_act(int f, const uint32_t *act, int M, int K, size_t *words)
{
    int nb = K / 32, AB = M * nb, BB = blk_bytes[f];
    size_t RW = (size_t)nb * BB / 4, NA = f == F_Q8_0 ? 1 : 2;
    *words = NA * M * RW + 2 * (size_t)M * nb;
    uint32_t *a = calloc(*words, 4);
    for (int m = 0; m < M; m++) {
        for (int b = 0; b < nb; b++) {
            const uint8_t *codes = (const uint8_t *)(act + 8 * ((size_t)m * nb + b));
            uint8_t *lo = (uint8_t *)(a + (size_t)m * RW) + (size_t)BB * b;
            if (f == F_Q8_0) {
                memcpy(lo + 2, codes, 32);
            } else {
                uint8_t *hi = (uint8_t *)(a + (M + (size_t)m) * RW) + (size_t)BB * b;
                memcpy(lo + 2, codes, 16);
                memcpy(hi + 2, codes + 16, 16);
            }
            a[NA * M * RW + (size_t)m * nb + b] = act[8 * (size_t)AB + (size_t)m * nb + b];
            a[NA * M * RW + (size_t)M * nb + (size_t)m * nb + b] = act[9 * (size_t)AB + (size_t)m * nb + b];
        }
    }
    return a;
}

/* ---------------- experiments ---------------- */

#define COPIES 8
#define MAXM 8

typedef struct {
    int f;
    int n, k;
    size_t bytes;         /* GGUF bytes */
    buf gg[COPIES], pk[COPIES];
    buf x, act, ggact, y;
    float *ref, *refq;    /* [MAXM][n] */
    size_t ggact_words;
    uint32_t dword0;      /* packed d area, in words */
} problem;

static void problem_make(problem *P, int f, int n, int k, int copies)
{
    memset(P, 0, sizeof *P);
    P->f = f;
    P->n = n;
    P->k = k;
    int nb = k / blk_w[f];
    P->bytes = (size_t)n * nb * blk_bytes[f];
    uint8_t *g = malloc(P->bytes), *pk = malloc(P->bytes);
    for (size_t i = 0; i < (size_t)n * nb; i++)
        rnd_block(f, g + i * blk_bytes[f]);
    /* packed: body then halves */
    size_t nblk = (size_t)n * nb;
    if (f != F_Q4_K) {
        size_t body = (size_t)blk_bytes[f] - 2;
        for (size_t i = 0; i < nblk; i++) {
            memcpy(pk + i * body, g + i * blk_bytes[f] + 2, body);
            memcpy(pk + nblk * body + 2 * i, g + i * blk_bytes[f], 2);
        }
        P->dword0 = (uint32_t)(nblk * body / 4);
    } else {
        memcpy(pk, g, P->bytes);
    }
    float *x = malloc(sizeof(float) * MAXM * k), *xq = malloc(sizeof(float) * MAXM * k);
    for (int i = 0; i < MAXM * k; i++)
        x[i] = rndf();
    size_t act_words = (size_t)MAXM * (k / 32) * 10;
    uint32_t *act = calloc(act_words, 4);
    quant_act(x, MAXM, k, act, xq);
    /* references for M = MAXM (and M = 1 is row 0 of it) */
    P->ref = malloc(sizeof(float) * MAXM * n);
    P->refq = malloc(sizeof(float) * MAXM * n);
    float *w = malloc(sizeof(float) * k);
    for (int r = 0; r < n; r++) {
        for (int b = 0; b < nb; b++)
            dequant_block(f, g + ((size_t)r * nb + b) * blk_bytes[f], w + (size_t)b * blk_w[f]);
        for (int m = 0; m < MAXM; m++) {
            double s = 0, sq = 0;
            for (int i = 0; i < k; i++) {
                s += (double)w[i] * x[(size_t)m * k + i];
                sq += (double)w[i] * xq[(size_t)m * k + i];
            }
            P->ref[(size_t)m * n + r] = (float)s;
            P->refq[(size_t)m * n + r] = (float)sq;
        }
    }
    for (int c = 0; c < copies; c++) {
        P->gg[c] = buf_create(P->bytes, 0);
        P->pk[c] = buf_create(P->bytes + 16, 0);
        if (c == 0) {
            upload(&P->gg[0], g, P->bytes);
            upload(&P->pk[0], pk, P->bytes);
        } else {
            copy_buf(&P->gg[c], &P->gg[0], P->bytes);
            copy_buf(&P->pk[c], &P->pk[0], P->bytes);
        }
    }
    P->x = buf_create(sizeof(float) * MAXM * k, 0);
    upload(&P->x, x, sizeof(float) * MAXM * k);
    P->act = buf_create(act_words * 4, 0);
    upload(&P->act, act, act_words * 4);
    if (f != F_Q4_K) {
        uint32_t *ga = gg_act(f, act, MAXM, k, &P->ggact_words);
        P->ggact = buf_create(P->ggact_words * 4, 0);
        upload(&P->ggact, ga, P->ggact_words * 4);
        free(ga);
    }
    P->y = buf_create(sizeof(float) * MAXM * n, 0);
    free(g);
    free(pk);
    free(x);
    free(xq);
    free(act);
    free(w);
}

/* Activations for M rows: the kernels index AB = M * nb, so lay out a fresh buffer for M. */
static buf act_for(problem *P, int M, int gg)
{
    /* rebuild from the MAXM layout: simplest is to requantize rows 0..M-1 on the CPU */
    int k = P->k, nb = k / 32;
    uint32_t *full = calloc((size_t)MAXM * nb * 10, 4);
    download(&P->act, full, (size_t)MAXM * nb * 40);
    size_t AB = (size_t)M * nb, FAB = (size_t)MAXM * nb;
    uint32_t *a = calloc(AB * 10, 4);
    memcpy(a, full, AB * 32);
    memcpy(a + 8 * AB, full + 8 * FAB, AB * 4);
    memcpy(a + 9 * AB, full + 9 * FAB, AB * 4);
    buf r;
    if (gg) {
        size_t words;
        uint32_t *ga = gg_act(P->f, a, M, k, &words);
        r = buf_create(words * 4, 0);
        upload(&r, ga, words * 4);
        free(ga);
    } else {
        r = buf_create(AB * 40, 0);
        upload(&r, a, AB * 40);
    }
    free(full);
    free(a);
    return r;
}

static double check(problem *P, int M, int dot)
{
    float *y = malloc(sizeof(float) * M * P->n);
    download(&P->y, y, sizeof(float) * M * P->n);
    const float *ref = dot ? P->refq : P->ref;
    double e = 0, r = 0;
    for (int m = 0; m < M; m++)
        for (int i = 0; i < P->n; i++) {
            double d = (double)y[(size_t)m * P->n + i] - ref[(size_t)m * P->n + i];
            if (!isfinite(y[(size_t)m * P->n + i]))
                d = 1e30;
            e += d * d;
            r += (double)ref[(size_t)m * P->n + i] * ref[(size_t)m * P->n + i];
        }
    free(y);
    return sqrt(e / r);
}

static const char *fname[] = {"q8_0", "q4_0", "q4_k"};

/* kind: 0 pk_dot, 1 pk_float, 2 gg_dot, 3 q4k_dot */
static void run_gemv(problem *P, int kind, int M, int T, int G, int NR, int U, int CW, int fasth,
                     int copies)
{
    static const char *spv[] = {"lab_pk_dot.spv", "lab_pk_float.spv", "lab_gg_dot.spv",
                                "lab_q4k_dot.spv"};
    static const char *kname[] = {"pk_dot", "pk_float", "gg_dot", "q4k_dot"};
    uint32_t spec[8] = {(uint32_t)T, (uint32_t)G, (uint32_t)P->f, (uint32_t)M, (uint32_t)NR,
                        (uint32_t)U, (uint32_t)CW, (uint32_t)fasth};
    pipe p = pipe_create(spv[kind], 3, spec, 8);
    job j = {.p = &p, .nsets = copies};
    buf act = {0};
    int dot = kind != 1;
    if (kind == 0 || kind == 3)
        act = act_for(P, M, 0);
    else if (kind == 2)
        act = act_for(P, M, 1);
    for (int c = 0; c < copies; c++) {
        buf *bs[3] = {kind == 2 || kind == 3 ? &P->gg[c] : &P->pk[c], dot ? &act : &P->x, &P->y};
        j.set[c] = set_make(&p, bs, 3);
    }
    j.push[0] = (uint32_t)P->n;
    j.push[1] = (uint32_t)P->k;
    j.push[2] = P->dword0;
    uint32_t groups = (uint32_t)((P->n + G * NR - 1) / (G * NR));
    j.gx = groups < 65535 ? groups : 65535;
    j.gy = (groups + j.gx - 1) / j.gx;
    /* correctness on copy 0 */
    VkCommandBuffer c = cmd_begin();
    record(c, &j, 0);
    cmd_submit(c);
    double err = check(P, M, dot);
    double t1 = check_only ? 1 : time_job(&j, 1, 30);
    double tb = check_only ? 1 : time_job(&j, copies, 20) / copies;
    double gb1 = P->bytes / t1 / 1e9, gbb = P->bytes / tb / 1e9;
    printf("%-8s %s %5dx%-5d M=%d T=%-3d G=%-2d NR=%d U=%d CW=%d fh=%d | err %.2e | alone %6.2f us "
           "%5.1f%% | batched %6.2f us %5.1f%% | %6.1f ms\n",
           kname[kind], fname[P->f], P->n, P->k, M, T, G, NR, U, CW, fasth, err, t1 * 1e6,
           100 * gb1 / stream_gbs, tb * 1e6, 100 * gbb / stream_gbs, p.ms);
    fflush(stdout);
    vkDeviceWaitIdle(dev);
    vkResetDescriptorPool(dev, dpool, 0);
    pipe_free(&p);
    buf_free(&act);
}

static void run_stream(buf *bufs, int copies, size_t bytes, const char *what)
{
    pipe p = pipe_create("lab_stream.spv", 3, NULL, 0);
    job j = {.p = &p, .nsets = copies};
    buf y = buf_create(1 << 24, 0);
    for (int c = 0; c < copies; c++) {
        buf *bs[3] = {&bufs[c], &bufs[c], &y};
        j.set[c] = set_make(&p, bs, 3);
    }
    uint32_t n4 = (uint32_t)(bytes / 16);
    j.push[0] = n4;
    uint32_t g = n4 / 256 / 8;
    j.gx = g > 65535 ? 65535 : g ? g : 1;
    j.gy = 1;
    double t1 = time_job(&j, 1, 30), tb = time_job(&j, copies, 20) / copies;
    printf("stream %-28s %8.1f MB: alone %7.1f GB/s (%5.1f%%)  batched %7.1f GB/s (%5.1f%%)\n", what,
           bytes / 1e6, bytes / t1 / 1e9, 100 * bytes / t1 / 1e9 / stream_gbs, bytes / tb / 1e9,
           100 * bytes / tb / 1e9 / stream_gbs);
    fflush(stdout);
    vkDeviceWaitIdle(dev);
    vkResetDescriptorPool(dev, dpool, 0);
    pipe_free(&p);
    buf_free(&y);
}

/* ---------------- pipeline creation timing ---------------- */

typedef struct {
    const char *spv;
    uint32_t spec[8];
    int nspec;
    double ms;
} ctask;

static void *ctask_run(void *arg)
{
    ctask *t = arg;
    pipe p = pipe_create(t->spv, 5, t->spec, t->nspec);
    t->ms = p.ms;
    pipe_free(&p);
    return NULL;
}

static void compile_times(void)
{
    static const char *v[] = {"gemm_g0.spv", "gemm_g1.spv", "gemm_g2.spv", "gemm_g3.spv"};
    static const uint32_t fmts[] = {0, 1, 2, 4};
    ctask tasks[16];
    pthread_t th[16];
    int n = 0;
    for (int i = 0; i < 4; i++)
        for (int f = 0; f < 4; f++) {
            tasks[n] = (ctask){.spv = v[i], .spec = {256, fmts[f], 0, 128, 128, 8, 8}, .nspec = 7};
            n++;
        }
    double t0 = now();
    for (int i = 0; i < n; i++)
        pthread_create(&th[i], NULL, ctask_run, &tasks[i]);
    for (int i = 0; i < n; i++) {
        pthread_join(th[i], NULL);
    }
    for (int i = 0; i < n; i++)
        printf("compile %s fmt %u 128x128: %.1f ms\n", tasks[i].spv, tasks[i].spec[1], tasks[i].ms);
    printf("compile: all in %.1f s\n", now() - t0);
    fflush(stdout);
}

/* ---------------- main ---------------- */

static void init(void)
{
    CHECK(volkInitialize());
    VkApplicationInfo app = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                             .apiVersion = VK_API_VERSION_1_3};
    VkInstanceCreateInfo ii = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                               .pApplicationInfo = &app};
    CHECK(vkCreateInstance(&ii, NULL, &inst));
    volkLoadInstance(inst);
    uint32_t n = 8;
    VkPhysicalDevice pds[8];
    CHECK(vkEnumeratePhysicalDevices(inst, &n, pds));
    phys = pds[0];
    VkPhysicalDeviceProperties props;
    vkGetPhysicalDeviceProperties(phys, &props);
    printf("device: %s, api %u.%u\n", props.deviceName, VK_API_VERSION_MAJOR(props.apiVersion),
           VK_API_VERSION_MINOR(props.apiVersion));
    tperiod = props.limits.timestampPeriod;
    vkGetPhysicalDeviceMemoryProperties(phys, &memprops);
    uint32_t nf = 16;
    VkQueueFamilyProperties qf[16];
    vkGetPhysicalDeviceQueueFamilyProperties(phys, &nf, qf);
    qfam = UINT32_MAX;
    for (uint32_t i = 0; i < nf; i++)
        if ((qf[i].queueFlags & VK_QUEUE_COMPUTE_BIT) && qfam == UINT32_MAX)
            qfam = i;
    tmask = qf[qfam].timestampValidBits >= 64 ? ~0ull : (1ull << qf[qfam].timestampValidBits) - 1;
    float prio = 1;
    VkDeviceQueueCreateInfo qi = {.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                  .queueFamilyIndex = qfam, .queueCount = 1,
                                  .pQueuePriorities = &prio};
    VkPhysicalDeviceVulkan13Features f13 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
                                            .shaderIntegerDotProduct = VK_TRUE};
    VkPhysicalDeviceVulkan12Features f12 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES,
                                            .pNext = &f13};
    VkPhysicalDeviceFeatures2 f2 = {.sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2,
                                    .pNext = &f12};
    VkDeviceCreateInfo di = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO, .pNext = &f2,
                             .queueCreateInfoCount = 1, .pQueueCreateInfos = &qi};
    CHECK(vkCreateDevice(phys, &di, NULL, &dev));
    volkLoadDevice(dev);
    vkGetDeviceQueue(dev, qfam, 0, &queue);
    VkCommandPoolCreateInfo pi = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                  .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                  .queueFamilyIndex = qfam};
    CHECK(vkCreateCommandPool(dev, &pi, NULL, &cpool));
    VkFenceCreateInfo fi = {.sType = VK_STRUCTURE_TYPE_FENCE_CREATE_INFO};
    CHECK(vkCreateFence(dev, &fi, NULL, &fence));
    VkQueryPoolCreateInfo qpi = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                 .queryType = VK_QUERY_TYPE_TIMESTAMP, .queryCount = 128};
    CHECK(vkCreateQueryPool(dev, &qpi, NULL, &qpool));
    VkDescriptorPoolSize ps = {.type = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, .descriptorCount = 4096};
    VkDescriptorPoolCreateInfo dpi = {.sType = VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO,
                                      .maxSets = 1024, .poolSizeCount = 1, .pPoolSizes = &ps};
    CHECK(vkCreateDescriptorPool(dev, &dpi, NULL, &dpool));
}

static void problem_free(problem *P, int copies)
{
    for (int c = 0; c < copies; c++) {
        buf_free(&P->gg[c]);
        buf_free(&P->pk[c]);
    }
    buf_free(&P->x);
    buf_free(&P->act);
    buf_free(&P->ggact);
    buf_free(&P->y);
    free(P->ref);
    free(P->refq);
}

/* The plan list: per (format, shape) the variants to run. */
static void sweep(problem *P, int copies, const char *only)
{
    int f = P->f;
    int big = P->n <= 4096; /* few rows: more lanes */
    if (f == F_Q4_K) {
        if (!only || strstr(only, "q4k")) {
            run_gemv(P, 3, 1, 32, 4, 2, 1, 1, 0, copies);
            run_gemv(P, 3, 1, 32, 4, 2, 1, 1, 1, copies);
            run_gemv(P, 3, 1, 32, 4, 4, 1, 1, 1, copies);
            run_gemv(P, 3, 1, 64, 2, 2, 1, 1, 1, copies);
            run_gemv(P, 3, 1, 32, 4, 2, 2, 1, 1, copies);
            run_gemv(P, 3, 8, 32, 4, 2, 1, 1, 1, copies);
        }
        return;
    }
    if (!only || strstr(only, "pkdot")) {
        run_gemv(P, 0, 1, 32, 4, 2, 1, 1, 0, copies);
        run_gemv(P, 0, 1, 32, 4, 2, 2, 1, 0, copies);
        run_gemv(P, 0, 1, 32, 4, 1, 2, 1, 0, copies);
        run_gemv(P, 0, 1, 32, 4, 4, 1, 1, 0, copies);
        if (big) {
            run_gemv(P, 0, 1, 64, 2, 2, 1, 1, 0, copies);
            run_gemv(P, 0, 1, 128, 1, 2, 1, 1, 0, copies);
            run_gemv(P, 0, 1, 128, 1, 1, 2, 1, 0, copies);
        }
        run_gemv(P, 0, 8, 32, 4, 1, 1, 1, 0, copies);
        run_gemv(P, 0, 8, 32, 4, 2, 1, 1, 0, copies);
        run_gemv(P, 0, 8, 32, 4, 4, 1, 1, 0, copies);
    }
    if (!only || strstr(only, "ggdot")) {
        run_gemv(P, 2, 1, 32, 4, 2, 1, 1, 0, copies);
        run_gemv(P, 2, 1, 32, 4, 2, 1, 1, 1, copies);
        run_gemv(P, 2, 1, 32, 4, 4, 1, 1, 1, copies);
        run_gemv(P, 2, 1, 32, 4, 2, 2, 1, 1, copies);
        if (big)
            run_gemv(P, 2, 1, 128, 1, 2, 1, 1, 1, copies);
    }
    if (!only || strstr(only, "pkfloat")) {
        run_gemv(P, 1, 1, 32, 4, 4, 1, 1, 0, copies);
        run_gemv(P, 1, 1, 32, 4, 4, 1, 1, 1, copies);
        run_gemv(P, 1, 1, 32, 4, 8, 1, 1, 1, copies);
        run_gemv(P, 1, 1, 32, 4, 4, 1, 2, 1, copies);
        run_gemv(P, 1, 1, 32, 4, 4, 1, 4, 1, copies);
        run_gemv(P, 1, 1, 32, 4, 2, 2, 1, 1, copies);
        if (big)
            run_gemv(P, 1, 1, 128, 1, 4, 1, 1, 1, copies);
        run_gemv(P, 1, 8, 32, 4, 4, 1, 1, 1, copies);
    }
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "bench";
    const char *only = argc > 2 ? argv[2] : NULL;
    if (getenv("LAB_SH"))
        shdir = getenv("LAB_SH");
    check_only = strcmp(mode, "check") == 0;
    init();
    if (strcmp(mode, "compile") == 0) {
        compile_times();
        return 0;
    }
    int copies = check_only ? 2 : COPIES;
    if (!check_only) {
        size_t bytes = (size_t)1 << 30;
        buf big = buf_create(bytes, 0);
        VkCommandBuffer c = cmd_begin();
        vkCmdFillBuffer(c, big.b, 0, VK_WHOLE_SIZE, 0x3c003c00u);
        cmd_submit(c);
        buf one[1] = {big};
        stream_gbs = 1;
        pipe p = pipe_create("lab_stream.spv", 3, NULL, 0);
        pipe_free(&p);
        run_stream(one, 1, bytes, "1 GiB (reference, % of 1 GB/s)");
        /* measure again to set the reference */
        {
            pipe q = pipe_create("lab_stream.spv", 3, NULL, 0);
            job j = {.p = &q, .nsets = 1};
            buf y = buf_create(1 << 24, 0);
            buf *bs[3] = {&big, &big, &y};
            j.set[0] = set_make(&q, bs, 3);
            j.push[0] = (uint32_t)(bytes / 16);
            j.gx = 65535;
            j.gy = 1;
            stream_gbs = bytes / time_job(&j, 1, 30) / 1e9;
            printf("stream reference: %.1f GB/s\n", stream_gbs);
            vkDeviceWaitIdle(dev);
            vkResetDescriptorPool(dev, dpool, 0);
            pipe_free(&q);
            buf_free(&y);
        }
        buf_free(&big);
    }
    static const int shapes[2][2] = {{14336, 4096}, {4096, 14336}};
    static const int small[2][2] = {{200, 512}, {72, 1024}};
    for (int f = 0; f < 3; f++) {
        for (int s = 0; s < 2; s++) {
            if (only && strstr(only, fname[f]) == NULL && strstr(only, "all") == NULL)
                continue;
            problem P;
            int n = check_only ? small[s][0] : shapes[s][0];
            int k = check_only ? small[s][1] : shapes[s][1];
            problem_make(&P, f, n, k, copies);
            if (!check_only) {
                char what[64];
                snprintf(what, sizeof what, "%s %dx%d", fname[f], n, k);
                run_stream(P.gg, copies, P.bytes, what);
            }
            sweep(&P, copies, only);
            problem_free(&P, copies);
        }
    }
    if (!check_only && (!only || strstr(only, "compile")))
        compile_times();
    return 0;
}
