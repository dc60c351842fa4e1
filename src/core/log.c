/* Logging: to the context's callback, and to stderr at the level MOTIFCL_LOG gave. */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>

void mcl_logger_init(mcl_logger *logger, mcl_log_fn fn, void *user_data, mcl_log_level level,
                     int stderr_level)
{
    logger->fn = fn;
    logger->user_data = user_data;
    logger->level = level;
    logger->stderr_level = stderr_level;
}

void mcl_log(const mcl_logger *logger, mcl_log_level level, const char *fmt, ...)
{
    static const char *const prefix[] = {"error", "warning", "info", "debug"};
    int to_callback = logger && logger->fn && level <= logger->level;
    int to_stderr = logger && (int)level <= logger->stderr_level;
    if (!to_callback && !to_stderr)
        return;

    char message[1024];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);

    if (to_callback)
        logger->fn(logger->user_data, level, message);
    if (to_stderr)
        fprintf(stderr, "motifcl %s: %s\n", prefix[level], message);
}
