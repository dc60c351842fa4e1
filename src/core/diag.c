/* Failure reporting: the last error of a context and its log line. */
#include "diag.h"

#include <stdarg.h>
#include <stdio.h>

mcl_status mcl_diag_fail(mcl_diag *diag, mcl_status status, const char *fmt, ...)
{
    char message[MCL_LAST_ERROR_BYTES];
    va_list args;
    va_start(args, fmt);
    vsnprintf(message, sizeof message, fmt, args);
    va_end(args);
    if (diag) {
        snprintf(diag->last_error, sizeof diag->last_error, "%s", message);
        mcl_log(&diag->log, MCL_LOG_ERROR, "%s (%s)", message, mcl_status_string(status));
    }
    return status;
}
