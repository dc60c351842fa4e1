/* Internal logging: to the context's callback, or to stderr when MOTIFCL_LOG asks. */
#ifndef MCL_CORE_LOG_H
#define MCL_CORE_LOG_H

#include "motifcl.h"

typedef struct mcl_logger {
    mcl_log_fn fn;
    void *user_data;
    mcl_log_level level;      /* most verbose level delivered to fn */
    int stderr_level;         /* most verbose level printed to stderr; -1 = none */
} mcl_logger;

/* Set up a logger from a descriptor's callback fields and the stderr level (MOTIFCL_LOG, read
 * by mcl_env_read; -1 prints nothing). */
void mcl_logger_init(mcl_logger *logger, mcl_log_fn fn, void *user_data, mcl_log_level level,
                     int stderr_level);

#if defined(__GNUC__) || defined(__clang__)
#define MCL_PRINTF(fmt_index, args_index) __attribute__((format(printf, fmt_index, args_index)))
#else
#define MCL_PRINTF(fmt_index, args_index)
#endif

void mcl_log(const mcl_logger *logger, mcl_log_level level, const char *fmt, ...)
    MCL_PRINTF(3, 4);

/* Whether a message of `level` would go anywhere (to skip building one that would not). */
static inline int mcl_log_enabled(const mcl_logger *logger, mcl_log_level level)
{
    return (logger->fn && level <= logger->level) || (int)level <= logger->stderr_level;
}

#endif
