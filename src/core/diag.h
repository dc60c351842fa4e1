/* The error state of a context: its logger and the message of its last failure. Every layer
 * reports failures through mcl_diag_fail (src/vk/runtime.h wraps it as mcl_fail). */
#ifndef MCL_CORE_DIAG_H
#define MCL_CORE_DIAG_H

#include "motifcl.h"
#include "log.h"

#define MCL_LAST_ERROR_BYTES 512

typedef struct mcl_diag {
    mcl_logger log;
    char last_error[MCL_LAST_ERROR_BYTES];
} mcl_diag;

/* Keep the formatted message as the last error and log it at error level, with the status's
 * name. `diag` may be NULL (nothing is kept). Returns `status`. */
mcl_status mcl_diag_fail(mcl_diag *diag, mcl_status status, const char *fmt, ...)
    MCL_PRINTF(3, 4);

#endif
