/* A file's bytes (mapped.h): mapped read-only and private on POSIX systems, read whole into
 * host memory elsewhere or where the mapping fails. */
#include "mapped.h"
#include "core/alloc.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if defined(__unix__) || defined(__APPLE__)
#define MCL_MAPPED_POSIX 1
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#endif

static mcl_status refuse(char *why, size_t why_size, mcl_status status, const char *path,
                         const char *reason)
{
    if (why && why_size)
        snprintf(why, why_size, "%s: %s", path ? path : "(null)", reason);
    return status;
}

#ifdef MCL_MAPPED_POSIX

/* The whole of an open descriptor, read into malloc'd memory (when mmap is refused). */
static mcl_status read_whole_fd(int fd, uint64_t size, mcl_mapped *out, const char *path,
                                char *why, size_t why_size)
{
    unsigned char *data = mcl_mem_malloc((size_t)size);
    if (!data)
        return refuse(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, path,
                      "no memory to read the file");
    uint64_t done = 0;
    while (done < size) {
        ssize_t n = read(fd, data + done, (size_t)(size - done));
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            mcl_mem_free(data);
            return refuse(why, why_size, MCL_ERROR_IO, path,
                          n < 0 ? strerror(errno) : "the file shrank while it was read");
        }
        done += (uint64_t)n;
    }
    out->data = data;
    out->size = size;
    out->is_mapped = 0;
    return MCL_SUCCESS;
}

mcl_status mcl_mapped_open(const char *path, mcl_mapped *out, char *why, size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    if (!out)
        return refuse(why, why_size, MCL_ERROR_INVALID_ARGUMENT, path, "out is NULL");
    memset(out, 0, sizeof *out);
    if (!path)
        return refuse(why, why_size, MCL_ERROR_INVALID_ARGUMENT, path, "no path");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return refuse(why, why_size, MCL_ERROR_IO, path, strerror(errno));
    struct stat st;
    mcl_status status = MCL_SUCCESS;
    if (fstat(fd, &st) != 0) {
        status = refuse(why, why_size, MCL_ERROR_IO, path, strerror(errno));
        goto done;
    }
    if (S_ISDIR(st.st_mode)) {
        status = refuse(why, why_size, MCL_ERROR_IO, path, "is a directory");
        goto done;
    }
    if (!S_ISREG(st.st_mode)) {
        status = refuse(why, why_size, MCL_ERROR_IO, path,
                        "not a regular file");
        goto done;
    }
    uint64_t size = (uint64_t)st.st_size;
    if (size == 0)
        goto done; /* an empty file: no bytes, nothing mapped */
    if (size > SIZE_MAX) {
        status = refuse(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, path,
                        "larger than the address space");
        goto done;
    }
    void *map = mmap(NULL, (size_t)size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map != MAP_FAILED) {
        /* Read front to back: the kernel may read further ahead. */
        posix_madvise(map, (size_t)size, POSIX_MADV_SEQUENTIAL);
        out->data = map;
        out->size = size;
        out->is_mapped = 1;
    } else {
        status = read_whole_fd(fd, size, out, path, why, why_size);
    }
done:
    close(fd);
    return status;
}

void mcl_mapped_close(mcl_mapped *m)
{
    if (!m)
        return;
    if (m->data && m->is_mapped)
        munmap((void *)m->data, (size_t)m->size);
    else
        mcl_mem_free((void *)m->data);
    memset(m, 0, sizeof *m);
}

#else /* no mmap: the whole file read with stdio */

mcl_status mcl_mapped_open(const char *path, mcl_mapped *out, char *why, size_t why_size)
{
    if (why && why_size)
        why[0] = '\0';
    if (!out)
        return refuse(why, why_size, MCL_ERROR_INVALID_ARGUMENT, path, "out is NULL");
    memset(out, 0, sizeof *out);
    if (!path)
        return refuse(why, why_size, MCL_ERROR_INVALID_ARGUMENT, path, "no path");
    FILE *f = fopen(path, "rb");
    if (!f)
        return refuse(why, why_size, MCL_ERROR_IO, path, strerror(errno));
    mcl_status status = MCL_SUCCESS;
    unsigned char *data = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len == cap) {
            size_t grow = cap ? cap : 1 << 16;
            unsigned char *p = grow > SIZE_MAX - cap ? NULL : mcl_mem_realloc(data, cap + grow);
            if (!p) {
                status = refuse(why, why_size, MCL_ERROR_OUT_OF_HOST_MEMORY, path,
                                "no memory to read the file");
                break;
            }
            data = p;
            cap += grow;
        }
        size_t n = fread(data + len, 1, cap - len, f);
        len += n;
        if (n == 0) {
            if (ferror(f))
                status = refuse(why, why_size, MCL_ERROR_IO, path,
                                "read error (or a directory)");
            break;
        }
    }
    fclose(f);
    if (status != MCL_SUCCESS || len == 0) {
        mcl_mem_free(data);
        return status;
    }
    out->data = data;
    out->size = len;
    out->is_mapped = 0;
    return MCL_SUCCESS;
}

void mcl_mapped_close(mcl_mapped *m)
{
    if (!m)
        return;
    mcl_mem_free((void *)m->data);
    memset(m, 0, sizeof *m);
}

#endif
