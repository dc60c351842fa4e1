/* A file's bytes in memory: mapped read-only where the platform allows (POSIX mmap), else
 * read whole into host memory. Internal (src/io, src/model). */
#ifndef MCL_IO_MAPPED_H
#define MCL_IO_MAPPED_H

#include <stddef.h>
#include <stdint.h>

#include "motifcl.h"

typedef struct mcl_mapped {
    const unsigned char *data; /* size bytes; NULL for an empty file */
    uint64_t size;
    int is_mapped;             /* 1: a mapping (unmapped on close); 0: malloc'd */
} mcl_mapped;

/* Open `path`. MCL_ERROR_IO (missing or unreadable file, a directory, a read error),
 * MCL_ERROR_INVALID_ARGUMENT (NULL path or out) or MCL_ERROR_OUT_OF_HOST_MEMORY, with the
 * reason in `why`. */
mcl_status mcl_mapped_open(const char *path, mcl_mapped *out, char *why, size_t why_size);
/* Accepts a zeroed or closed map. */
void mcl_mapped_close(mcl_mapped *m);

#endif
