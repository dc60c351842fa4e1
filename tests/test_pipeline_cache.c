/* The persistent pipeline cache on a real device: a context that compiled a kernel writes the
 * device's cache file when destroyed and the next context loads it; damaged files and files
 * from elsewhere are ignored with a warning and the context still computes; "off" and
 * MCL_CONTEXT_NO_PIPELINE_CACHE write nothing; the folder follows MOTIFCL_PIPELINE_CACHE,
 * XDG_CACHE_HOME and HOME. Every context here works in the suite's scratch folder. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "vk/private.h"

/* Messages of the context being watched, at info level and above. */
static char captured[16384];
static void capture_log(void *user, mcl_log_level level, const char *message)
{
    (void)user;
    size_t used = strlen(captured);
    snprintf(captured + used, sizeof captured - used, "%s: %s\n",
             level == MCL_LOG_ERROR     ? "error"
             : level == MCL_LOG_WARNING ? "warning"
                                        : "info",
             message);
}

static int captured_has(const char *what)
{
    if (strstr(captured, what))
        return 1;
    print_error("the log does not say \"%s\":\n%s", what, captured);
    return 0;
}

/* A context with the log captured (cleared first). */
static mcl_context *open_context(uint32_t flags)
{
    captured[0] = '\0';
    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1, .flags = flags,
                             .log_fn = capture_log, .log_level = MCL_LOG_INFO};
    mcl_context *c = NULL;
    assert_mcl_ok(mcl_context_create(&desc, &c));
    return c;
}

/* Destroy c with its log captured from here on (what the save said), after checking that
 * the validation layer, when on, saw nothing wrong. */
static void close_context(mcl_context *c)
{
    assert_int_equal(mcl_context_validation_errors(c), 0);
    captured[0] = '\0';
    mcl_context_destroy(c);
}

/* Compile and run a kernel: y = a + b on 1000 values, checked against the host's sum, so a
 * context that loaded (or refused) a cache is seen to compute. */
static void compute_something(mcl_context *c)
{
    enum { N = 1000 };
    float a[N], b[N], y[N];
    mcl_fill_random(a, N, 3, -4.0f, 4.0f);
    mcl_fill_random(b, N, 5, -4.0f, 4.0f);
    int64_t shape = N;
    mcl_tensor *ta = mcl_test_tensor(c, MCL_DTYPE_F32, 1, &shape, a);
    mcl_tensor *tb = mcl_test_tensor(c, MCL_DTYPE_F32, 1, &shape, b);
    mcl_tensor *ty = mcl_test_tensor(c, MCL_DTYPE_F32, 1, &shape, NULL);
    assert_mcl_ok(mcl_add(c, ta, tb, ty));
    assert_mcl_ok(mcl_tensor_download(ty, 0, y, sizeof y));
    for (int i = 0; i < N; i++)
        assert_true(y[i] == a[i] + b[i]);
    mcl_tensor_destroy(ta);
    mcl_tensor_destroy(tb);
    mcl_tensor_destroy(ty);
}

/* The variables the cache's folder depends on: saved in main, restored at the end. */
static const char *const variables[] = {"MOTIFCL_PIPELINE_CACHE", "XDG_CACHE_HOME", "HOME"};
#define VARIABLES 3
static char *saved_values[VARIABLES];

static void set_or_unset(const char *name, const char *value)
{
    if (value)
        setenv(name, value, 1);
    else
        unsetenv(name);
}

/* A folder under the scratch folder (not created). */
static const char *scratch(const char *name)
{
    static char paths[4][512];
    static int next;
    char *p = paths[next++ % 4];
    snprintf(p, sizeof paths[0], "%s/%s", mcl_test_scratch_dir(), name);
    return p;
}

/* Entries of `dir` other than . and .., or -1 when it does not exist. */
static int entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)))
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

static uint8_t *read_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    long n = file_size(path);
    assert_true(n > 0);
    uint8_t *bytes = malloc((size_t)n);
    assert_non_null(bytes);
    assert_int_equal(fread(bytes, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return bytes;
}

static void write_file(const char *path, const uint8_t *bytes, size_t size)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(bytes, 1, size, f), size);
    assert_int_equal(fclose(f), 0);
}

/* A context that compiles writes the device's file into a folder it creates (mode 0700,
 * with its parent); the next context loads all of it and says so, and still computes. */
static void saved_then_loaded(void **state)
{
    (void)state;
    const char *dir = scratch("round/trip");
    setenv("MOTIFCL_PIPELINE_CACHE", dir, 1);
    mcl_context *c = open_context(0);
    assert_non_null(c->pipeline_cache_path);
    assert_true(strncmp(c->pipeline_cache_path, dir, strlen(dir)) == 0);
    assert_int_equal(c->pipeline_cache_loaded_bytes, 0);
    char path[1024];
    snprintf(path, sizeof path, "%s", c->pipeline_cache_path);
    compute_something(c);
    close_context(c);
    assert_true(captured_has("pipeline cache: saved ") && captured_has(path));
    long written = file_size(path);
    assert_true(written >= MCL_PIPELINE_CACHE_HEADER + 32);
    struct stat st;
    assert_int_equal(stat(dir, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0700);
    assert_int_equal(entries(dir), 1);   /* no temporary file left beside it */

    c = open_context(0);
    uint64_t loaded = c->pipeline_cache_loaded_bytes;
    char said[1200];
    snprintf(said, sizeof said, "pipeline cache: loaded %lu bytes from %s",
             (unsigned long)(written - MCL_PIPELINE_CACHE_HEADER), path);
    int ok = captured_has(said) && !strstr(captured, "warning");
    compute_something(c);
    close_context(c);
    mcl_test_record_figure("pipeline cache bytes of driver data", (double)loaded, "bytes");
    mcl_test_record_bool("pipeline cache: written by one context, loaded whole by the next",
                         ok && loaded == (uint64_t)(written - MCL_PIPELINE_CACHE_HEADER));
    assert_true(ok);
    assert_int_equal(loaded, written - MCL_PIPELINE_CACHE_HEADER);
}

/* One way of damaging the good file at `path` (of `size` bytes in `file`). */
typedef struct damage {
    const char *name;
    const char *reason;    /* part of the warning it must give */
} damage;

static size_t apply(int which, uint8_t *file, size_t size)
{
    uint8_t *vk = file + MCL_PIPELINE_CACHE_HEADER;
    size_t data = size - MCL_PIPELINE_CACHE_HEADER;
    switch (which) {
    case 0:
        /* A byte of the driver's data past its header; Lavapipe's data is its header alone,
         * and there the stored checksum takes the flip (the same check either way). */
        if (data > 32)
            file[size - 1] ^= 0x5a;
        else
            file[24] ^= 0x5a;
        return size;
    case 1:
        return size - 7;
    case 2:
        vk[12] ^= 0x01;    /* VkPipelineCacheHeaderVersionOne.deviceID */
        return size;
    case 3:
        file[12] ^= 0x01;  /* the driver version in MotifCL's header */
        return size;
    default:
        memcpy(file, "NOTACACH", 8);
        return size;
    }
}

/* Each damaged or foreign file is ignored with a warning that names the file and the reason,
 * is not given to the driver (nothing loaded), the context still computes, and its save
 * replaces the file with a good one, which the next context loads. The control is the
 * previous test: the undamaged file loads without a warning. */
static void damaged_files_are_ignored(void **state)
{
    (void)state;
    static const damage damages[] = {
        {"a flipped byte", "checksum mismatch"},
        {"truncated", "truncated"},
        {"another device id", "another device"},
        {"another driver version", "another driver version"},
        {"not a cache", "wrong magic"},
    };
    const char *dir = scratch("damaged");
    setenv("MOTIFCL_PIPELINE_CACHE", dir, 1);
    mcl_context *c = open_context(0);
    char path[1024];
    snprintf(path, sizeof path, "%s", c->pipeline_cache_path);
    compute_something(c);
    close_context(c);
    size_t size;
    uint8_t *good = read_file(path, &size);
    int all = 1;
    for (int i = 0; i < (int)(sizeof damages / sizeof damages[0]); i++) {
        uint8_t *bad = malloc(size);
        assert_non_null(bad);
        memcpy(bad, good, size);
        write_file(path, bad, apply(i, bad, size));
        free(bad);
        c = open_context(0);
        char said[1200];
        snprintf(said, sizeof said, "warning: pipeline cache %s ignored: ", path);
        int ok = captured_has(said) && captured_has(damages[i].reason) &&
                 c->pipeline_cache_loaded_bytes == 0;
        compute_something(c);
        close_context(c);
        ok &= captured_has("pipeline cache: saved ");
        c = open_context(0);
        ok &= c->pipeline_cache_loaded_bytes > 0 && !strstr(captured, "warning");
        close_context(c);
        char name[160];
        snprintf(name, sizeof name, "pipeline cache: %s file ignored with a warning, "
                 "then replaced", damages[i].name);
        mcl_test_record_bool(name, ok);
        all &= ok;
    }
    free(good);
    assert_true(all);
}

/* "off" and the flag keep no cache: nothing read, nothing written, not even the folder.
 * Control: the same with neither writes the file, so the emptiness check can fail. */
static void disabled_writes_nothing(void **state)
{
    (void)state;
    const char *dir = scratch("disabled");
    setenv("MOTIFCL_PIPELINE_CACHE", "off", 1);
    mcl_context *c = open_context(0);
    int ok = c->pipeline_cache_path == NULL;
    compute_something(c);
    close_context(c);

    setenv("MOTIFCL_PIPELINE_CACHE", dir, 1);
    c = open_context(MCL_CONTEXT_NO_PIPELINE_CACHE);
    ok &= c->pipeline_cache_path == NULL;
    compute_something(c);
    close_context(c);
    ok &= entries(dir) == -1;
    mcl_test_record_bool("pipeline cache: off and MCL_CONTEXT_NO_PIPELINE_CACHE write nothing",
                         ok);

    c = open_context(0);
    compute_something(c);
    close_context(c);
    int control = entries(dir) == 1;
    mcl_test_record_bool("pipeline cache: control: the same context without either writes",
                         control);
    assert_true(ok);
    assert_true(control);
}

/* Where the file goes: MOTIFCL_PIPELINE_CACHE, else $XDG_CACHE_HOME/motifcl, else
 * $HOME/.cache/motifcl, else nowhere (said at info), end to end (test_core checks the
 * parsing). A context that ignores the environment
 * still keeps its cache in the user's folder. Bad values warn by name and keep the default.
 * Only paths are compared: these contexts compile nothing, so write nothing. */
static void folder_follows_the_environment(void **state)
{
    (void)state;
    char want[600];
    const char *xdg = scratch("xdg"), *home = scratch("home");
    setenv("XDG_CACHE_HOME", xdg, 1);
    setenv("HOME", home, 1);
    unsetenv("MOTIFCL_PIPELINE_CACHE");

    mcl_context *c = open_context(0);
    snprintf(want, sizeof want, "%s/motifcl/pipelines-", xdg);
    assert_non_null(c->pipeline_cache_path);
    assert_true(strncmp(c->pipeline_cache_path, want, strlen(want)) == 0);
    close_context(c);

    setenv("MOTIFCL_PIPELINE_CACHE", "off", 1);
    c = open_context(MCL_CONTEXT_IGNORE_ENVIRONMENT);
    assert_non_null(c->pipeline_cache_path);
    assert_true(strncmp(c->pipeline_cache_path, want, strlen(want)) == 0);
    close_context(c);
    c = open_context(MCL_CONTEXT_IGNORE_ENVIRONMENT | MCL_CONTEXT_NO_PIPELINE_CACHE);
    assert_null(c->pipeline_cache_path);
    close_context(c);

    /* Set but empty, and a relative path: warned by name, default kept. */
    static const char *const bad[] = {"", "relative/folder", "maybe"};
    for (int i = 0; i < 3; i++) {
        setenv("MOTIFCL_PIPELINE_CACHE", bad[i], 1);
        c = open_context(0);
        char said[120];
        snprintf(said, sizeof said, "MOTIFCL_PIPELINE_CACHE=\"%s\"", bad[i]);
        assert_true(captured_has("warning: ") && captured_has(said));
        assert_non_null(c->pipeline_cache_path);
        assert_true(strncmp(c->pipeline_cache_path, want, strlen(want)) == 0);
        close_context(c);
    }
    unsetenv("MOTIFCL_PIPELINE_CACHE");

    /* (A relative XDG_CACHE_HOME is tested in test_core: Mesa and the validation layer would
     * take it, and write their own caches into the working directory.) */
    unsetenv("XDG_CACHE_HOME");
    c = open_context(0);
    snprintf(want, sizeof want, "%s/.cache/motifcl/pipelines-", home);
    assert_non_null(c->pipeline_cache_path);
    assert_true(strncmp(c->pipeline_cache_path, want, strlen(want)) == 0);
    close_context(c);

    unsetenv("HOME");
    c = open_context(0);
    assert_null(c->pipeline_cache_path);
    assert_true(captured_has("info: pipeline cache: not kept across runs: no cache folder"));
    close_context(c);
    mcl_test_record_bool("pipeline cache: folder from MOTIFCL_PIPELINE_CACHE, XDG_CACHE_HOME, "
                         "HOME, none; bad values warned", 1);
}

/* A save that cannot be made (the folder's parent is a file) is a warning; the context was
 * fine and its destruction completes. */
static void failed_save_is_a_warning(void **state)
{
    (void)state;
    const char *blocker = scratch("a-file");
    write_file(blocker, (const uint8_t *)"x", 1);
    char dir[600];
    snprintf(dir, sizeof dir, "%s/sub", blocker);
    setenv("MOTIFCL_PIPELINE_CACHE", dir, 1);
    mcl_context *c = open_context(0);
    compute_something(c);
    close_context(c);
    int ok = captured_has("warning: pipeline cache: not saved to ") &&
             captured_has("creating its folder") && !strstr(captured, "error");
    mcl_test_record_bool("pipeline cache: a save that fails is a warning", ok);
    assert_true(ok);
}

int main(int argc, char **argv)
{
    mcl_test_begin(argc, argv);
    mcl_test_device_context();
    for (int i = 0; i < VARIABLES; i++) {
        const char *v = getenv(variables[i]);
        saved_values[i] = v ? strdup(v) : NULL;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(saved_then_loaded),
        cmocka_unit_test(damaged_files_are_ignored),
        cmocka_unit_test(disabled_writes_nothing),
        cmocka_unit_test(folder_follows_the_environment),
        cmocka_unit_test(failed_save_is_a_warning),
    };
    int failures = cmocka_run_group_tests(tests, mcl_test_scratch_setup, mcl_test_scratch_teardown);
    for (int i = 0; i < VARIABLES; i++) {
        set_or_unset(variables[i], saved_values[i]);
        free(saved_values[i]);
    }
    return mcl_test_finish(failures);
}
