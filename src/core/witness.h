/* Witness files: JSON records of what ran, where, and with what result. Strict test runs and
 * benchmarks write one each (DESIGN.md, "Evidence"). Internal: used by the test harness and
 * the tools, which link the static library. */
#ifndef MCL_CORE_WITNESS_H
#define MCL_CORE_WITNESS_H

#include "motifcl.h"

typedef struct mcl_witness mcl_witness;

/* Start a witness for `kind` ("test" or "bench") named `name` (the program). NULL when out of
 * memory; every other function accepts NULL and then does nothing. */
mcl_witness *mcl_witness_create(const char *kind, const char *name, int argc,
                                char *const *argv);
void mcl_witness_destroy(mcl_witness *w);

/* Record the device a context runs on (mcl_context_device_info), the validation errors it
 * counted, and its traits (mcl_context_traits_json: a JSON object, copied; NULL for none). */
void mcl_witness_set_device(mcl_witness *w, const mcl_device_info *info,
                            uint64_t validation_errors, const char *traits_json);

/* A named fact about the run ("strict": "1", "skip_reason": ...). */
void mcl_witness_set_note(mcl_witness *w, const char *key, const char *value);

/* One check: `value` of `metric` (e.g. "nmse") against `tolerance`, and whether it passed. */
void mcl_witness_add_check(mcl_witness *w, const char *name, const char *metric, double value,
                           double tolerance, int passed);

/* One figure with its unit, labelled "measured" or "modeled". */
void mcl_witness_add_figure(mcl_witness *w, const char *name, double value, const char *unit,
                            const char *label);

/* Write `<dir>/<name>.json` with the final `result` ("passed", "failed", "skipped"), dir and
 * its missing parents made first; the file is written whole under another name and renamed
 * into place. Returns 0 on success, -1 if the file could not be written. */
int mcl_witness_write(mcl_witness *w, const char *dir, const char *result);

#endif
