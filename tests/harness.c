#include "harness.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "env.h"
#include "vk/inspect.h"
#include "witness.h"

static mcl_witness *witness;
static mcl_context *context;
static int record_failures;

void mcl_test_begin(int argc, char **argv)
{
    /* One witness per suite, profile and forced quantized path: test_ops_add.json,
     * test_ops_add.polaris.json, test_engine.dot.json. */
    const char *profile = mcl_env("MOTIFCL_DEVICE_PROFILE");
    const char *path = mcl_env("MOTIFCL_QUANT_PATH");
    char name[256];
    snprintf(name, sizeof name, "%s%s%s%s%s", argv[0], profile && strcmp(profile, "none") ? "."
             : "", profile && strcmp(profile, "none") ? profile : "",
             path && strcmp(path, "auto") ? "." : "", path && strcmp(path, "auto") ? path : "");
    witness = mcl_witness_create("test", name, argc, argv);
    /* A development aid: run only the tests whose names match the pattern (cmocka's). The
     * witness records it, so that a filtered run never passes for a whole one. */
    const char *filter = getenv("MOTIFCL_TEST_FILTER");
    if (filter && *filter) {
        cmocka_set_test_filter(filter);
        mcl_witness_set_note(witness, "MOTIFCL_TEST_FILTER", filter);
    }
    mcl_witness_set_note(witness, "strict", mcl_test_strict() ? "1" : "0");
    mcl_witness_set_note(witness, "MOTIFCL_DEVICE_PROFILE", profile ? profile : "");
    const char *validation = mcl_env("MOTIFCL_VALIDATION");
    mcl_witness_set_note(witness, "MOTIFCL_VALIDATION", validation ? validation : "");
}

int mcl_test_strict(void)
{
    return mcl_env_truthy("MOTIFCL_REQUIRE_VULKAN_COMPUTE");
}

/* 0, or -1 where MOTIFCL_WITNESS_DIR names a folder the witness could not be written into. */
static int write_witness(const char *result)
{
    const char *dir = mcl_env("MOTIFCL_WITNESS_DIR");
    if (dir && mcl_witness_write(witness, dir, result) != 0) {
        fprintf(stderr, "harness: could not write the witness into %s\n", dir);
        return -1;
    }
    return 0;
}

static void log_to_stderr(void *user, mcl_log_level level, const char *message)
{
    (void)user;
    if (level <= MCL_LOG_WARNING)
        fprintf(stderr, "[motifcl %s] %s\n", level == MCL_LOG_ERROR ? "error" : "warning",
                message);
}

mcl_context *mcl_test_device_context(void)
{
    mcl_context_desc desc = {
        .size = sizeof desc,
        .device_index = -1,
        .log_fn = log_to_stderr,
        .log_level = MCL_LOG_WARNING,
    };
    mcl_status status = mcl_context_create(&desc, &context);
    if (status == MCL_SUCCESS) {
        mcl_device_info info = {.size = sizeof info};
        mcl_context_device_info(context, &info);
        printf("device: %s (%s, %s), subgroup %u, profile %s, validation %s\n", info.name,
               info.driver_name, info.driver_info, info.subgroup_size, info.profile,
               info.validation ? "on" : "off");
        return context;
    }
    int no_device = status == MCL_ERROR_VULKAN_UNAVAILABLE || status == MCL_ERROR_NO_DEVICE;
    mcl_witness_set_note(witness, "context_status", mcl_status_string(status));
    if (no_device && !mcl_test_strict()) {
        printf("SKIP: no Vulkan compute device (%s); set MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 to "
               "make this a failure\n", mcl_status_string(status));
        write_witness("skipped");
        mcl_witness_destroy(witness);
        exit(MCL_TEST_SKIP);
    }
    fprintf(stderr, "FAIL: %s%s\n", mcl_status_string(status),
            no_device ? " - strict mode (MOTIFCL_REQUIRE_VULKAN_COMPUTE=1): a device test that "
                        "no Vulkan compute device executed is a failure"
                      : "");
    write_witness("failed");
    mcl_witness_destroy(witness);
    exit(1);
}

int mcl_test_record(const char *name, const char *metric, double value, double tolerance)
{
    int passed = value <= tolerance;  /* NaN fails */
    mcl_witness_add_check(witness, name, metric, value, tolerance, passed);
    if (!passed)
        record_failures++;
    return passed;
}

int mcl_test_record_bool(const char *name, int passed)
{
    mcl_witness_add_check(witness, name, "pass", passed ? 1.0 : 0.0, 1.0, passed);
    if (!passed)
        record_failures++;
    return passed;
}

void mcl_test_record_figure(const char *name, double value, const char *unit)
{
    mcl_witness_add_figure(witness, name, value, unit, "measured");
}

void mcl_test_switch_env(mcl_context *ctx, const char *name, const char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
    mcl_inspect_reread_environment(ctx);
}

void mcl_test_note(const char *key, const char *value)
{
    mcl_witness_set_note(witness, key, value);
}

int mcl_test_finish(int cmocka_failures)
{
    int ok = cmocka_failures == 0 && record_failures == 0;
    if (context) {
        mcl_finish(context);
        uint64_t errors = mcl_context_validation_errors(context);
        mcl_device_info info = {.size = sizeof info};
        mcl_context_device_info(context, &info);
        char traits[2048] = "";
        mcl_context_traits_json(context, traits, sizeof traits, NULL);
        mcl_witness_set_device(witness, &info, errors, traits);
        if (info.validation)
            mcl_witness_add_check(witness, "validation layer errors", "count", (double)errors,
                                  0.0, errors == 0);
        if (errors) {
            fprintf(stderr, "FAIL: the validation layer reported %llu error(s)\n",
                    (unsigned long long)errors);
            ok = 0;
        }
    }
    char failures[32];
    snprintf(failures, sizeof failures, "%d", cmocka_failures);
    mcl_witness_set_note(witness, "cmocka_failures", failures);
    /* In strict mode a run whose witness is lost has no evidence: it fails. */
    if (write_witness(ok ? "passed" : "failed") != 0 && mcl_test_strict()) {
        fprintf(stderr, "FAIL: strict mode (MOTIFCL_REQUIRE_VULKAN_COMPUTE=1): the witness "
                        "could not be written\n");
        ok = 0;
    }
    mcl_witness_destroy(witness);
    witness = NULL;
    mcl_context_destroy(context);
    context = NULL;
    return ok ? 0 : 1;
}

double mcl_nmse(const float *got, const float *want, size_t n)
{
    double err = 0.0, ref = 0.0;
    for (size_t i = 0; i < n; i++) {
        double d = (double)got[i] - (double)want[i];
        err += d * d;
        ref += (double)want[i] * (double)want[i];
    }
    if (n == 0)
        return 0.0;
    return ref > 0.0 ? err / ref : err / (double)n;
}

void mcl_fill_random(float *data, size_t n, uint32_t seed, float lo, float hi)
{
    uint32_t x = seed ? seed : 0x9e3779b9u;
    for (size_t i = 0; i < n; i++) {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        data[i] = lo + (hi - lo) * (float)(x >> 8) * (1.0f / 16777216.0f);
    }
}

int mcl_test_wrong_statuses;

void mcl_test_expect_status(const char *what, mcl_status got, mcl_status want)
{
    if (got != want) {
        printf("%s -> %s, want %s\n", what, mcl_status_string(got), mcl_status_string(want));
        mcl_test_wrong_statuses++;
    }
}

float *mcl_test_floats(size_t n)
{
    float *p = malloc((n ? n : 1) * sizeof *p);
    assert_non_null(p);
    return p;
}

float *mcl_test_random_floats(size_t n, uint32_t seed, float lo, float hi)
{
    float *p = mcl_test_floats(n);
    mcl_fill_random(p, n, seed, lo, hi);
    return p;
}

mcl_tensor *mcl_test_tensor(mcl_context *ctx, mcl_dtype dtype, uint32_t ndim,
                            const int64_t *shape, const void *data)
{
    mcl_tensor *t = NULL;
    assert_mcl_ok(mcl_tensor_create(ctx, dtype, ndim, shape, &t));
    if (data)
        assert_mcl_ok(mcl_tensor_upload(t, 0, data, mcl_tensor_nbytes(t)));
    return t;
}

mcl_context *mcl_test_context_without_subgroups(void)
{
    const char *old = getenv("MOTIFCL_DISABLE");
    char list[256];
    snprintf(list, sizeof list, "subgroup-arithmetic%s%s", old ? "," : "", old ? old : "");
    return mcl_test_context_with("MOTIFCL_DISABLE", list);
}

mcl_context *mcl_test_context_with(const char *name, const char *value)
{
    const char *old = getenv(name);
    char *saved = old ? strdup(old) : NULL;
    setenv(name, value, 1);
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1};
    mcl_context *c = NULL;
    mcl_status status = mcl_context_create(&desc, &c);
    if (saved)
        setenv(name, saved, 1);
    else
        unsetenv(name);
    free(saved);
    if (status != MCL_SUCCESS)
        fprintf(stderr, "FAIL: a context with %s=%s: %s\n", name, value,
                mcl_status_string(status));
    return c;
}

int mcl_test_context_release(mcl_context *c, const char *what)
{
    if (!c)
        return 0;
    int failed = mcl_finish(c) != MCL_SUCCESS;
    mcl_device_info info = {.size = sizeof info};
    if (mcl_context_device_info(c, &info) == MCL_SUCCESS && info.validation) {
        char name[200];
        snprintf(name, sizeof name, "validation layer errors (context%s)", what);
        failed |= !mcl_test_record(name, "count", (double)mcl_context_validation_errors(c), 0.0);
    }
    mcl_context_destroy(c);
    return failed;
}

void mcl_test_remove_tree(const char *path)
{
    DIR *d = opendir(path);
    if (!d) {
        remove(path);
        return;
    }
    struct dirent *e;
    char sub[768];
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
            continue;
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        mcl_test_remove_tree(sub);
    }
    closedir(d);
    rmdir(path);
}

static char scratch_dir[128];

int mcl_test_scratch_setup(void **state)
{
    (void)state;
    snprintf(scratch_dir, sizeof scratch_dir, "/tmp/motifcl-test-XXXXXX");
    return mkdtemp(scratch_dir) ? 0 : -1;
}

int mcl_test_scratch_teardown(void **state)
{
    (void)state;
    if (scratch_dir[0])
        mcl_test_remove_tree(scratch_dir);
    scratch_dir[0] = '\0';
    return 0;
}

const char *mcl_test_scratch_dir(void)
{
    return scratch_dir;
}

void mcl_test_random_ids(int32_t *ids, size_t n, int vocab, uint32_t seed)
{
    uint32_t s = seed * 2654435761u + 1u;
    for (size_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        ids[i] = (int32_t)((s >> 8) % (uint32_t)vocab);
    }
}
