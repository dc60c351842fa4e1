/* The test harness shared by every suite: strict mode, the skip convention, validation
 * accounting and the witness file.
 *
 *   A device suite calls mcl_test_device_context() in main. Without a Vulkan compute device it
 *   exits 77 (ctest: skipped), or 1 under MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 (strict mode).
 *   mcl_test_finish() fails the run when the validation layer reported any error, and writes
 *   the witness to $MOTIFCL_WITNESS_DIR/<program>.json.
 */
#ifndef MCL_TEST_HARNESS_H
#define MCL_TEST_HARNESS_H

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include "motifcl.h"

#define MCL_TEST_SKIP 77

/* Start the run: remember argv for the witness. MOTIFCL_TEST_FILTER (a cmocka name pattern,
 * '*' and '?') runs only the matching tests, a development aid that the witness notes. */
void mcl_test_begin(int argc, char **argv);

/* A context on the device the environment selects, or exit 77 / 1 as above. The harness
 * destroys it in mcl_test_finish(). */
mcl_context *mcl_test_device_context(void);

/* A second context on the same device and environment with subgroup arithmetic switched off
 * through MOTIFCL_DISABLE (added to whatever the variable already lists), so a suite covers
 * both reduction paths on one device. NULL (reported on stderr) if creation fails; the caller
 * destroys it and checks its validation errors. */
mcl_context *mcl_test_context_without_subgroups(void);

/* A second context on the same device and environment with the variable `name` set to
 * `value` while it is created (the traits read it then). NULL (reported on stderr) if
 * creation fails. */
mcl_context *mcl_test_context_with(const char *name, const char *value);

/* Finish and destroy a second context c (NULL is harmless): 0, or 1 where its work failed or
 * the validation layer counted errors on it (recorded as the check "validation layer errors
 * (context<what>)"). */
int mcl_test_context_release(mcl_context *c, const char *what);

/* Whether MOTIFCL_REQUIRE_VULKAN_COMPUTE asks for strict mode. */
int mcl_test_strict(void);

/* Record a check for the witness and return whether it passed (value <= tolerance). */
int mcl_test_record(const char *name, const char *metric, double value, double tolerance);

/* Record a check that is pass/fail by nature. */
int mcl_test_record_bool(const char *name, int passed);

/* Record a figure for the witness: a value the run computed that is not itself a check (what
 * a check was compared with, say), with its unit, labelled "measured". */
void mcl_test_record_figure(const char *name, double value, const char *unit);

/* Remove folder `path` and what it holds (files and folders of files): the tests' scratch
 * folders. */
void mcl_test_remove_tree(const char *path);

/* A scratch folder for a suite's files: cmocka group setup and teardown (a new folder under
 * /tmp, removed with what it holds), and its path in between. */
int mcl_test_scratch_setup(void **state);
int mcl_test_scratch_teardown(void **state);
const char *mcl_test_scratch_dir(void);

/* Set (or, with value NULL, unset) a MOTIFCL_* variable and have ctx read the environment's
 * tuning overrides again (the plans' overrides take effect on the next dispatch). */
void mcl_test_switch_env(mcl_context *ctx, const char *name, const char *value);

/* Record a note for the witness. */
void mcl_test_note(const char *key, const char *value);

/* Finish: checks validation errors, writes the witness, destroys the context, and returns the
 * process exit code (0 only if cmocka reported no failure and validation stayed clean). */
int mcl_test_finish(int cmocka_failures);

/* Normalised mean squared error sum((a-b)^2) / sum(b^2) of `got` against `want` (the
 * reference); when the reference is all zero, the plain mean squared error. */
double mcl_nmse(const float *got, const float *want, size_t n);

/* Deterministic pseudo-random floats in [lo, hi) from `seed` (xorshift). */
void mcl_fill_random(float *data, size_t n, uint32_t seed, float lo, float hi);

/* Short names for the statuses the bad-argument checks expect. */
#define INVALID MCL_ERROR_INVALID_ARGUMENT
#define SHAPE MCL_ERROR_SHAPE_MISMATCH
#define DTYPE MCL_ERROR_DTYPE_MISMATCH
#define UNSUPPORTED MCL_ERROR_UNSUPPORTED

/* Bad-argument checks: a call whose status is not the expected one is printed and counted
 * in mcl_test_wrong_statuses, which a suite then records as one check. */
extern int mcl_test_wrong_statuses;
#define EXPECT_STATUS(call, want) mcl_test_expect_status(#call, (call), (want))
void mcl_test_expect_status(const char *what, mcl_status got, mcl_status want);

/* A tensor of ctx, filled from `data` (its whole size in bytes) unless data is NULL; the
 * test fails if either step fails. */
mcl_tensor *mcl_test_tensor(mcl_context *ctx, mcl_dtype dtype, uint32_t ndim,
                            const int64_t *shape, const void *data);

/* malloc'd floats (the test fails if out of memory), random in [lo, hi) or uninitialised. */
/* n token ids in [0, vocab), the same for a seed on every machine (a linear congruential
 * sequence). */
void mcl_test_random_ids(int32_t *ids, size_t n, int vocab, uint32_t seed);
float *mcl_test_random_floats(size_t n, uint32_t seed, float lo, float hi);
float *mcl_test_floats(size_t n);

/* cmocka assertion on an mcl_status, printing its name on failure. */
#define assert_mcl_ok(expr)                                                                  \
    do {                                                                                     \
        mcl_status _s = (expr);                                                              \
        if (_s != MCL_SUCCESS)                                                               \
            fail_msg("%s -> %s", #expr, mcl_status_string(_s));                             \
    } while (0)

#endif
