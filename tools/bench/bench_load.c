/* Model loading: a llama-shaped GGUF file of q4_0 matrices (width 4096, feed-forward 11008,
 * 32 heads, 8 key/value heads, a 32000-token embedding and head; as many layers as make
 * size_mb=N megabytes, default 1024) is written by a child process, then read here cold (the
 * file's pages dropped from the page cache with posix_fadvise after an fsync) and warm: a
 * plain sequential read() of the whole file, and mcl_model_open of it. Figures: the file's
 * size, each time and rate, and the host memory of the load: the peak resident set
 * (VmHWM after clear_refs, file pages included) and the peak of anonymous memory (RssAnon,
 * sampled at every progress call). dir=PATH picks the folder of the file (default /tmp);
 * the file is removed at the end. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "bench.h"
#include "io/gguf.h"

/* The file's shape: llama-like, q4_0 matrices. */
static const bench_llama_shape LOAD_SHAPE = {.dim = 4096, .hidden = 11008, .heads = 32,
                                             .kv_heads = 8, .vocab = 32000,
                                             .type = MCL_GGML_Q4_0};

/* A /proc/self/status field in kB, or -1. */
static long status_kb(const char *field)
{
    FILE *f = fopen("/proc/self/status", "r");
    if (!f)
        return -1;
    char line[256];
    long v = -1;
    size_t n = strlen(field);
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, field, n) == 0 && line[n] == ':') {
            v = atol(line + n + 1);
            break;
        }
    }
    fclose(f);
    return v;
}

/* Reset the peak resident set (VmHWM) to the current one; 0 on success. */
static int reset_peak(void)
{
    FILE *f = fopen("/proc/self/clear_refs", "w");
    if (!f)
        return 1;
    int bad = fputs("5", f) < 0;
    return (fclose(f) != 0) | bad;
}

/* Drop the file's pages from the page cache (they are clean after the fsync). */
static void drop_cache(const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        close(fd);
    }
}

/* Seconds of a plain sequential read() of the file in 8 MiB pieces; < 0 on failure. */
static double sequential_read(const char *path, uint64_t *bytes)
{
    enum { PIECE = 8 << 20 };
    char *buf = malloc(PIECE);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (!buf || fd < 0) {
        free(buf);
        if (fd >= 0)
            close(fd);
        return -1;
    }
    double t0 = bench_now();
    uint64_t total = 0;
    ssize_t n;
    while ((n = read(fd, buf, PIECE)) > 0)
        total += (uint64_t)n;
    double t = bench_now() - t0;
    close(fd);
    free(buf);
    *bytes = total;
    return n < 0 ? -1 : t;
}

typedef struct load_watch {
    long anon_peak_kb;
    uint64_t calls;
} load_watch;

static void on_progress(void *user, uint64_t done, uint64_t total)
{
    (void)done;
    (void)total;
    load_watch *w = user;
    long anon = status_kb("RssAnon");
    if (anon > w->anon_peak_kb)
        w->anon_peak_kb = anon;
    w->calls++;
}

/* One timed mcl_model_open of the file; 0 on success. */
static int timed_load(bench *b, const char *path, const char *label, uint64_t file_bytes)
{
    long anon_before = status_kb("RssAnon");
    load_watch watch = {anon_before, 0};
    long rss_before = status_kb("VmRSS");
    if (reset_peak() != 0)
        fprintf(stderr, "motifcl-bench load: clear_refs refused; VmHWM is the process's peak\n");
    mcl_model_desc desc = {.size = sizeof desc, .progress = on_progress,
                           .progress_user_data = &watch};
    mcl_model *model = NULL;
    double t0 = bench_now();
    mcl_status s = mcl_model_open(b->ctx, path, &desc, &model);
    double t = bench_now() - t0;
    if (s != MCL_SUCCESS) {
        fprintf(stderr, "motifcl-bench load: %s (%s)\n", mcl_status_string(s),
                mcl_context_last_error(b->ctx));
        return 1;
    }
    long hwm = status_kb("VmHWM");
    mcl_model_info info = {.size = sizeof info};
    mcl_model_file_info(model, &info);
    mcl_model_close(model);
    char name[160];
    snprintf(name, sizeof name, "load %s: mcl_model_open", label);
    bench_figure(b, name, t, "s");
    snprintf(name, sizeof name, "load %s: mcl_model_open rate (file bytes)", label);
    bench_figure(b, name, (double)file_bytes / t / 1e9, "GB/s");
    snprintf(name, sizeof name, "load %s: peak RSS above the start (mapped file pages included)",
             label);
    bench_figure(b, name, (double)(hwm - rss_before) / 1024.0, "MiB");
    snprintf(name, sizeof name, "load %s: peak anonymous memory above the start", label);
    bench_figure(b, name, (double)(watch.anon_peak_kb - anon_before) / 1024.0, "MiB");
    snprintf(name, sizeof name, "load %s: device memory of the weights", label);
    bench_figure(b, name, (double)info.device_bytes / (1 << 20), "MiB");
    return 0;
}

int bench_load(bench *b)
{
    double size_mb = bench_arg(b, "size_mb", 1024);
    const char *dir = "/tmp";
    for (int i = 0; i < b->arg_count; i++)
        if (strncmp(b->args[i], "dir=", 4) == 0)
            dir = b->args[i] + 4;
    bench_llama_shape shape = LOAD_SHAPE;
    uint64_t per_layer = bench_llama_layer_bytes(&shape);
    uint64_t fixed = 2 * bench_llama_matrix_bytes(&shape, shape.vocab, shape.dim) +
                     shape.dim * 4;
    double want = size_mb * 1e6;
    shape.layers = want > (double)fixed ? (uint32_t)((want - (double)fixed) /
                                                     (double)per_layer + 0.5) : 1;
    if (shape.layers < 1)
        shape.layers = 1;
    char path[512];
    snprintf(path, sizeof path, "%s/motifcl-bench-load-%d.gguf", dir, (int)getpid());
    if (bench_write_llama(path, &shape) != 0)
        return 1;
    struct stat st;
    if (stat(path, &st) != 0) {
        unlink(path);
        return 1;
    }
    uint64_t file_bytes = (uint64_t)st.st_size;
    char note[64];
    snprintf(note, sizeof note, "%u", shape.layers);
    mcl_witness_set_note(b->witness, "load_layers", note);
    bench_figure(b, "load: file size (q4_0 llama, width 4096)", (double)file_bytes / 1e6, "MB");
    int rc = 0;
    for (int warm = 0; warm < 2 && rc == 0; warm++) {
        const char *label = warm ? "warm" : "cold";
        uint64_t got = 0;
        if (!warm)
            drop_cache(path);
        double t = sequential_read(path, &got);
        if (t < 0 || got != file_bytes) {
            rc = 1;
            break;
        }
        char name[128];
        snprintf(name, sizeof name, "load %s: sequential read() of the file", label);
        bench_figure(b, name, t, "s");
        snprintf(name, sizeof name, "load %s: sequential read() rate", label);
        bench_figure(b, name, (double)file_bytes / t / 1e9, "GB/s");
        if (!warm)
            drop_cache(path);
        rc |= timed_load(b, path, label, file_bytes);
    }
    unlink(path);
    return rc;
}
