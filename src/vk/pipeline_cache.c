/* The persistent pipeline cache: a file per device that the context's VkPipelineCache is
 * created from and written back to, so that a process does not pay again for the pipelines
 * that an earlier one compiled (seconds a kernel on some drivers).
 *
 * The file is MotifCL's header followed by the driver's data (vkGetPipelineCacheData) as is:
 *   0  magic "MCLPCACH"
 *   8  u32 format version (MCL_PIPELINE_CACHE_FORMAT)
 *  12  u32 driverVersion of the device that wrote it
 *  16  u64 bytes of driver data that follow
 *  24  u64 FNV-1a 64 of those bytes
 * little-endian, as the Vulkan header at the front of the driver's data is. Drivers are meant
 * to reject data that is not theirs, but not every driver checks everything (and none checks
 * for a file cut short by a full disk), so nothing is passed on that does not pass
 * mcl_pipeline_cache_check. A file that does not is ignored with a warning and replaced when
 * the context saves: the cache only ever saves time, it never decides whether a context
 * works. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#define MCL_PIPELINE_CACHE_FILES 1
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

#include "core/alloc.h"
#include "env.h"
#include "private.h"

#define MCL_PIPELINE_CACHE_MAGIC "MCLPCACH"
#define MCL_PIPELINE_CACHE_FORMAT 1u
/* sizeof(VkPipelineCacheHeaderVersionOne): the Vulkan spec fixes its layout at 32 bytes,
 * fields written least significant byte first. */
#define MCL_VK_CACHE_HEADER 32u
/* A file larger than this is not read: no driver's cache of MotifCL's kernels comes near it,
 * and reading a stray huge file whole would be the cost the cache is there to avoid. */
#define MCL_PIPELINE_CACHE_MAX_FILE (UINT64_C(1) << 30)

static uint32_t get32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
    return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
    put32(p, (uint32_t)v);
    put32(p + 4, (uint32_t)(v >> 32));
}

/* FNV-1a 64 (offset basis and prime from the FNV reference). It catches the flipped or lost
 * bytes of a damaged file; it is no defence against a file made to pass, and need not be: a
 * driver must survive any data it is given, the checks only spare it the likely accidents. */
static uint64_t fnv1a64(const void *data, size_t size)
{
    const uint8_t *p = data;
    uint64_t h = UINT64_C(0xcbf29ce484222325);
    for (size_t i = 0; i < size; i++) {
        h ^= p[i];
        h *= UINT64_C(0x100000001b3);
    }
    return h;
}

void mcl_pipeline_cache_header(uint8_t out[MCL_PIPELINE_CACHE_HEADER], uint32_t driver_version,
                               const void *data, size_t data_size)
{
    memcpy(out, MCL_PIPELINE_CACHE_MAGIC, 8);
    put32(out + 8, MCL_PIPELINE_CACHE_FORMAT);
    put32(out + 12, driver_version);
    put64(out + 16, data_size);
    put64(out + 24, fnv1a64(data, data_size));
}

const char *mcl_pipeline_cache_check(const void *file, size_t size,
                                     const mcl_pipeline_cache_expect *want, const void **data,
                                     size_t *data_size)
{
    const uint8_t *f = file;
    if (size < MCL_PIPELINE_CACHE_HEADER)
        return "shorter than its header (truncated)";
    if (memcmp(f, MCL_PIPELINE_CACHE_MAGIC, 8) != 0)
        return "not a MotifCL pipeline cache (wrong magic)";
    if (get32(f + 8) != MCL_PIPELINE_CACHE_FORMAT)
        return "written in another version of the file format";
    if (get32(f + 12) != want->driver_version)
        return "written by another driver version";
    if (get64(f + 16) != size - MCL_PIPELINE_CACHE_HEADER)
        return "its size is not the size its header gives (truncated or extended)";
    /* The driver's own header, checked before the checksum so that a whole file from another
     * device is named as that, not as damage. */
    const uint8_t *d = f + MCL_PIPELINE_CACHE_HEADER;
    size_t n = size - MCL_PIPELINE_CACHE_HEADER;
    if (n < MCL_VK_CACHE_HEADER)
        return "the driver's data is shorter than the Vulkan cache header";
    uint32_t header_size = get32(d);
    if (header_size < MCL_VK_CACHE_HEADER || header_size > n)
        return "the Vulkan cache header's headerSize is out of range";
    if (get32(d + 4) != VK_PIPELINE_CACHE_HEADER_VERSION_ONE)
        return "the Vulkan cache header's headerVersion is not VERSION_ONE";
    if (get32(d + 8) != want->vendor_id || get32(d + 12) != want->device_id)
        return "written for another device (vendorID or deviceID differ)";
    if (memcmp(d + 16, want->uuid, VK_UUID_SIZE) != 0)
        return "written by another driver build (pipelineCacheUUID differs)";
    if (fnv1a64(d, n) != get64(f + 24))
        return "checksum mismatch (corrupt)";
    *data = d;
    *data_size = n;
    return NULL;
}

static void expect_of(const mcl_context *ctx, mcl_pipeline_cache_expect *want)
{
    VkPhysicalDeviceProperties props;
    ctx->vki.vkGetPhysicalDeviceProperties(ctx->physical, &props);
    want->vendor_id = props.vendorID;
    want->device_id = props.deviceID;
    want->driver_version = props.driverVersion;
    memcpy(want->uuid, props.pipelineCacheUUID, VK_UUID_SIZE);
}

#ifdef MCL_PIPELINE_CACHE_FILES

/* The folder the device's file goes in, or 0 (logged) when the cache is not to be kept. */
static int choose_folder(mcl_context *ctx, int persistent, char *dir, size_t size)
{
    if (!persistent) {
        mcl_log(MCL_LOG(ctx), MCL_LOG_DEBUG, "pipeline cache: not kept across runs "
                "(MCL_CONTEXT_NO_PIPELINE_CACHE)");
        return 0;
    }
    switch (ctx->env.pipeline_cache) {
    case MCL_ENV_PIPELINE_CACHE_OFF:
        mcl_log(MCL_LOG(ctx), MCL_LOG_DEBUG, "pipeline cache: not kept across runs "
                "(MOTIFCL_PIPELINE_CACHE is off)");
        return 0;
    case MCL_ENV_PIPELINE_CACHE_DIR:
        snprintf(dir, size, "%s", ctx->env.pipeline_cache_dir);
        return 1;
    case MCL_ENV_PIPELINE_CACHE_DEFAULT:
        break;
    }
    if (!mcl_env_user_cache_dir(dir, size)) {
        mcl_log(MCL_LOG(ctx), MCL_LOG_INFO, "pipeline cache: not kept across runs: no cache "
                "folder (neither XDG_CACHE_HOME nor HOME is set, or the path is too long; "
                "MOTIFCL_PIPELINE_CACHE can name one)");
        return 0;
    }
    return 1;
}

/* "<dir>/pipelines-<vendor>-<device>-<pipelineCacheUUID>.bin": one file per device and driver
 * build, so that two GPUs (or two drivers of one) in a machine do not overwrite each other's. */
static char *file_path(const char *dir, const mcl_pipeline_cache_expect *want)
{
    char uuid[2 * VK_UUID_SIZE + 1];
    for (unsigned i = 0; i < VK_UUID_SIZE; i++)
        snprintf(uuid + 2 * i, 3, "%02x", want->uuid[i]);
    size_t len = strlen(dir);
    while (len > 1 && dir[len - 1] == '/')
        len--;
    size_t size = len + 64 + sizeof uuid;
    char *path = mcl_mem_malloc(size);
    if (path)
        snprintf(path, size, "%.*s/pipelines-%04x-%04x-%s.bin", (int)len, dir, want->vendor_id,
                 want->device_id, uuid);
    return path;
}

/* The whole file at `path` (malloc'd, *size bytes), or NULL: *why NULL when there is none
 * yet, else the reason. */
static uint8_t *read_whole(const char *path, size_t *size, const char **why)
{
    *why = NULL;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
        if (errno != ENOENT)
            *why = strerror(errno);
        return NULL;
    }
    uint8_t *bytes = NULL;
    struct stat st;
    if (fstat(fd, &st) != 0)
        goto fail;
    if (!S_ISREG(st.st_mode)) {
        *why = "not a regular file";
        goto fail;
    }
    if ((uint64_t)st.st_size > MCL_PIPELINE_CACHE_MAX_FILE) {
        *why = "larger than 1 GiB";
        goto fail;
    }
    *size = (size_t)st.st_size;
    bytes = mcl_mem_malloc(*size ? *size : 1);
    if (!bytes)
        goto fail;
    size_t got = 0;
    while (got < *size) {
        ssize_t n = read(fd, bytes + got, *size - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    *size = got;    /* a file that shrank while read fails the size check */
    close(fd);
    return bytes;

fail:
    if (!*why)
        *why = strerror(errno);
    mcl_mem_free(bytes);
    close(fd);
    return NULL;
}

/* mkdir -p with mode 0700 (the XDG specification's mode for the user's cache folder; what
 * another process compiled is nobody else's business). 0, or -1 with errno. */
static int make_folders(char *dir)
{
    for (char *p = dir + 1;; p++) {
        if (*p != '/' && *p != '\0')
            continue;
        char saved = *p;
        *p = '\0';
        struct stat st;
        int ok = stat(dir, &st) == 0 || (errno == ENOENT && (mkdir(dir, 0700) == 0 ||
                                                             errno == EEXIST));
        *p = saved;
        if (!ok)
            return -1;
        if (saved == '\0')
            break;
    }
    struct stat st;
    if (stat(dir, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

static int write_all(int fd, const uint8_t *bytes, size_t size)
{
    while (size) {
        ssize_t n = write(fd, bytes, size);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        bytes += n;
        size -= (size_t)n;
    }
    return 0;
}

/* Write `bytes` to `path` whole or not at all: into a new file beside it, synced, then renamed
 * over it. Processes that save at once each rename a complete file, so the last one wins and
 * no reader ever opens half of one. NULL, or the step that failed (errno set). */
static const char *write_atomically(const char *path, const uint8_t *bytes, size_t size)
{
    const char *step = "out of host memory";
    size_t len = strlen(path);
    char *dir = mcl_mem_malloc(len + 1), *temp = mcl_mem_malloc(len + 8);
    int fd = -1;
    if (!dir || !temp)
        goto fail;
    memcpy(dir, path, len + 1);
    *strrchr(dir, '/') = '\0';
    step = "creating its folder";
    if (dir[0] && make_folders(dir) != 0)
        goto fail;
    snprintf(temp, len + 8, "%s.XXXXXX", path);
    step = "creating a temporary file";
    if ((fd = mkstemp(temp)) < 0)
        goto fail;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    step = "writing";
    if (write_all(fd, bytes, size) != 0)
        goto fail_unlink;
    step = "syncing";
    if (fsync(fd) != 0)
        goto fail_unlink;
    step = "closing";
    int closed = close(fd);
    fd = -1;
    if (closed != 0)
        goto fail_unlink;
    step = "renaming it into place";
    if (rename(temp, path) != 0)
        goto fail_unlink;
    mcl_mem_free(dir);
    mcl_mem_free(temp);
    return NULL;

fail_unlink: {
    int err = errno;
    if (fd >= 0)
        close(fd);
    unlink(temp);
    errno = err;
}
fail: {
    int err = errno;
    mcl_mem_free(dir);
    mcl_mem_free(temp);
    errno = err;
}
    return step;
}

#endif /* MCL_PIPELINE_CACHE_FILES */

/* The driver's data from the file chosen for ctx, or NULL (with a warning when there was a
 * file that could not be used). *file is what to free. */
static const void *load(mcl_context *ctx, const mcl_pipeline_cache_expect *want, size_t *size,
                        uint8_t **file)
{
    *file = NULL;
    if (!ctx->pipeline_cache_path)
        return NULL;
#ifdef MCL_PIPELINE_CACHE_FILES
    const char *path = ctx->pipeline_cache_path, *why;
    size_t file_size = 0;
    *file = read_whole(path, &file_size, &why);
    if (!*file) {
        if (!why)
            mcl_log(MCL_LOG(ctx), MCL_LOG_DEBUG, "pipeline cache: no file %s yet", path);
        else
            mcl_log(MCL_LOG(ctx), MCL_LOG_WARNING, "pipeline cache %s ignored: %s", path, why);
        return NULL;
    }
    const void *data = NULL;
    why = mcl_pipeline_cache_check(*file, file_size, want, &data, size);
    if (why) {
        mcl_log(MCL_LOG(ctx), MCL_LOG_WARNING, "pipeline cache %s ignored: %s", path, why);
        return NULL;
    }
    return data;
#else
    (void)want;
    (void)size;
    return NULL;
#endif
}

mcl_status mcl_pipeline_cache_create(mcl_context *ctx, int persistent)
{
    mcl_pipeline_cache_expect want;
    expect_of(ctx, &want);
#ifdef MCL_PIPELINE_CACHE_FILES
    char dir[MCL_ENV_PATH];
    if (choose_folder(ctx, persistent, dir, sizeof dir) &&
        !(ctx->pipeline_cache_path = file_path(dir, &want)))
        return mcl_fail(ctx, MCL_ERROR_OUT_OF_HOST_MEMORY, "out of host memory");
#else
    if (persistent)
        mcl_log(MCL_LOG(ctx), MCL_LOG_INFO, "pipeline cache: not kept across runs (no file "
                "support on this platform)");
#endif
    uint8_t *file;
    size_t size = 0;
    const void *data = load(ctx, &want, &size, &file);
    VkPipelineCacheCreateInfo info = {
        .sType = VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO,
        .initialDataSize = data ? size : 0,
        .pInitialData = data,
    };
    VkResult result = ctx->vk.vkCreatePipelineCache(ctx->device, &info, NULL,
                                                    &ctx->pipeline_cache);
    if (result != VK_SUCCESS && data) {
        mcl_log(MCL_LOG(ctx), MCL_LOG_WARNING, "pipeline cache %s ignored: the driver refused "
                "it (VkResult %d)", ctx->pipeline_cache_path, (int)result);
        data = NULL;
        info.initialDataSize = 0;
        info.pInitialData = NULL;
        result = ctx->vk.vkCreatePipelineCache(ctx->device, &info, NULL, &ctx->pipeline_cache);
    }
    if (data) {
        ctx->pipeline_cache_loaded_bytes = size;
        ctx->pipeline_cache_loaded_sum = fnv1a64(data, size);
        mcl_log(MCL_LOG(ctx), MCL_LOG_INFO, "pipeline cache: loaded %zu bytes from %s", size,
                ctx->pipeline_cache_path);
    }
    mcl_mem_free(file);
    if (result != VK_SUCCESS) {
        ctx->pipeline_cache = VK_NULL_HANDLE;
        return mcl_vk_fail(ctx, result, "vkCreatePipelineCache");
    }
    return MCL_SUCCESS;
}

/* Write the cache to its file if it holds something the file does not. Warnings only. */
static void save(mcl_context *ctx)
{
#ifdef MCL_PIPELINE_CACHE_FILES
    const char *path = ctx->pipeline_cache_path;
    size_t size = 0;
    uint8_t *bytes = NULL;
    VkResult result = ctx->vk.vkGetPipelineCacheData(ctx->device, ctx->pipeline_cache, &size,
                                                     NULL);
    if (result == VK_SUCCESS && size) {
        if (!(bytes = mcl_mem_malloc(MCL_PIPELINE_CACHE_HEADER + size)))
            result = VK_ERROR_OUT_OF_HOST_MEMORY;
        else
            result = ctx->vk.vkGetPipelineCacheData(ctx->device, ctx->pipeline_cache, &size,
                                                    bytes + MCL_PIPELINE_CACHE_HEADER);
    }
    if (result != VK_SUCCESS || !size) {
        mcl_log(MCL_LOG(ctx), MCL_LOG_WARNING, "pipeline cache: not saved to %s: "
                "vkGetPipelineCacheData gave %zu bytes (VkResult %d)", path, size, (int)result);
        mcl_mem_free(bytes);
        return;
    }
    uint8_t *data = bytes + MCL_PIPELINE_CACHE_HEADER;
    if (size == ctx->pipeline_cache_loaded_bytes &&
        fnv1a64(data, size) == ctx->pipeline_cache_loaded_sum) {
        mcl_log(MCL_LOG(ctx), MCL_LOG_DEBUG, "pipeline cache: %s unchanged", path);
        mcl_mem_free(bytes);
        return;
    }
    mcl_pipeline_cache_expect want;
    expect_of(ctx, &want);
    mcl_pipeline_cache_header(bytes, want.driver_version, data, size);
    /* What would be refused when read back is not worth writing (a driver whose data does
     * not start with the header the spec requires, say). */
    const void *checked;
    size_t checked_size;
    const char *why = mcl_pipeline_cache_check(bytes, MCL_PIPELINE_CACHE_HEADER + size, &want,
                                               &checked, &checked_size);
    if (why) {
        mcl_log(MCL_LOG(ctx), MCL_LOG_WARNING, "pipeline cache: not saved to %s: the driver's "
                "data would not be read back: %s", path, why);
        mcl_mem_free(bytes);
        return;
    }
    const char *failed = write_atomically(path, bytes, MCL_PIPELINE_CACHE_HEADER + size);
    if (failed)
        mcl_log(MCL_LOG(ctx), MCL_LOG_WARNING, "pipeline cache: not saved to %s: %s: %s", path,
                failed, strerror(errno));
    else
        mcl_log(MCL_LOG(ctx), MCL_LOG_INFO, "pipeline cache: saved %zu bytes to %s", size, path);
    mcl_mem_free(bytes);
#else
    (void)ctx;
#endif
}

void mcl_pipeline_cache_destroy(mcl_context *ctx)
{
    if (ctx->pipeline_cache && ctx->pipeline_cache_path && ctx->pipelines_created)
        save(ctx);
    if (ctx->pipeline_cache)
        ctx->vk.vkDestroyPipelineCache(ctx->device, ctx->pipeline_cache, NULL);
    ctx->pipeline_cache = VK_NULL_HANDLE;
    mcl_mem_free(ctx->pipeline_cache_path);
    ctx->pipeline_cache_path = NULL;
}
