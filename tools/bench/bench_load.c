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

enum { DIM = 4096, HIDDEN = 11008, HEADS = 32, KV_HEADS = 8, VOCAB = 32000 };

/* q4_0 bytes of an [n, k] matrix. */
static uint64_t q4_bytes(uint64_t n, uint64_t k)
{
    return n * k / 32 * 18;
}

/* Q4_0 blocks with a finite scale and pseudo-random nibbles. */
static void fill_q4(unsigned char *p, uint64_t bytes, uint64_t seed)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (uint64_t b = 0; b + 18 <= bytes; b += 18) {
        p[b] = 0x00;
        p[b + 1] = 0x20; /* fp16 0.0078125 */
        for (int i = 0; i < 16; i += 8) {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            memcpy(p + b + 2 + i, &x, 8);
        }
    }
}

static int add_u32(mcl_gguf_writer *w, const char *key, uint32_t v)
{
    return mcl_gguf_writer_add(w, key, MCL_GGUF_UINT32, &v) != MCL_SUCCESS;
}

static int add_q4(mcl_gguf_writer *w, const char *name, uint64_t n, uint64_t k,
                  unsigned char *scratch, uint64_t seed)
{
    uint64_t dims[2] = {k, n}, bytes = q4_bytes(n, k);
    fill_q4(scratch, bytes, seed);
    return mcl_gguf_writer_add_tensor(w, name, 2, dims, MCL_GGML_Q4_0, scratch, bytes) !=
           MCL_SUCCESS;
}

static int add_norm(mcl_gguf_writer *w, const char *name, float *ones)
{
    uint64_t dims[1] = {DIM};
    return mcl_gguf_writer_add_tensor(w, name, 1, dims, MCL_GGML_F32, ones, DIM * 4) !=
           MCL_SUCCESS;
}

/* The model file of `layers` layers at `path`; 0 on success. */
static int write_model(const char *path, uint32_t layers)
{
    mcl_gguf_writer *w = mcl_gguf_writer_create(3, 32);
    unsigned char *scratch = malloc(q4_bytes(VOCAB, DIM));
    float *ones = malloc(DIM * sizeof *ones);
    if (!w || !scratch || !ones)
        return 1;
    for (int i = 0; i < DIM; i++)
        ones[i] = 1.0f;
    int bad = mcl_gguf_writer_add(w, "general.architecture", MCL_GGUF_STRING, "llama") !=
              MCL_SUCCESS;
    bad |= mcl_gguf_writer_add(w, "general.name", MCL_GGUF_STRING, "motifcl-bench load") !=
           MCL_SUCCESS;
    bad |= add_u32(w, "llama.context_length", 4096) | add_u32(w, "llama.embedding_length", DIM);
    bad |= add_u32(w, "llama.block_count", layers) |
           add_u32(w, "llama.feed_forward_length", HIDDEN);
    bad |= add_u32(w, "llama.attention.head_count", HEADS) |
           add_u32(w, "llama.attention.head_count_kv", KV_HEADS);
    float eps = 1e-5f;
    bad |= mcl_gguf_writer_add(w, "llama.attention.layer_norm_rms_epsilon", MCL_GGUF_FLOAT32,
                               &eps) != MCL_SUCCESS;
    uint64_t seed = 1;
    bad |= add_q4(w, "token_embd.weight", VOCAB, DIM, scratch, seed++);
    char name[64];
    const uint64_t kv = DIM / HEADS * KV_HEADS;
    for (uint32_t l = 0; l < layers && !bad; l++) {
#define NAME(s) (snprintf(name, sizeof name, "blk.%u.%s", l, s), name)
        bad |= add_norm(w, NAME("attn_norm.weight"), ones);
        bad |= add_q4(w, NAME("attn_q.weight"), DIM, DIM, scratch, seed++);
        bad |= add_q4(w, NAME("attn_k.weight"), kv, DIM, scratch, seed++);
        bad |= add_q4(w, NAME("attn_v.weight"), kv, DIM, scratch, seed++);
        bad |= add_q4(w, NAME("attn_output.weight"), DIM, DIM, scratch, seed++);
        bad |= add_norm(w, NAME("ffn_norm.weight"), ones);
        bad |= add_q4(w, NAME("ffn_gate.weight"), HIDDEN, DIM, scratch, seed++);
        bad |= add_q4(w, NAME("ffn_up.weight"), HIDDEN, DIM, scratch, seed++);
        bad |= add_q4(w, NAME("ffn_down.weight"), DIM, HIDDEN, scratch, seed++);
#undef NAME
    }
    bad |= add_norm(w, "output_norm.weight", ones);
    bad |= add_q4(w, "output.weight", VOCAB, DIM, scratch, seed++);
    free(scratch);
    free(ones);
    void *file = NULL;
    uint64_t size = 0;
    if (bad || mcl_gguf_writer_finish(w, &file, &size) != MCL_SUCCESS)
        return 1;
    mcl_gguf_writer_destroy(w);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return 1;
    for (uint64_t done = 0; done < size;) {
        ssize_t n = write(fd, (const char *)file + done, size - done > (1u << 30)
                                                             ? (1u << 30)
                                                             : (size_t)(size - done));
        if (n <= 0) {
            close(fd);
            return 1;
        }
        done += (uint64_t)n;
    }
    free(file);
    return fsync(fd) != 0 || close(fd) != 0;
}

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
    const uint64_t kv = DIM / HEADS * KV_HEADS;
    uint64_t per_layer = q4_bytes(DIM, DIM) * 2 + q4_bytes(kv, DIM) * 2 +
                         q4_bytes(HIDDEN, DIM) * 3 + 2 * DIM * 4;
    uint64_t fixed = 2 * q4_bytes(VOCAB, DIM) + DIM * 4;
    double want = size_mb * 1e6;
    uint32_t layers = want > (double)fixed ? (uint32_t)((want - (double)fixed) /
                                                        (double)per_layer + 0.5) : 1;
    if (layers < 1)
        layers = 1;
    char path[512];
    snprintf(path, sizeof path, "%s/motifcl-bench-load-%d.gguf", dir, (int)getpid());
    fflush(stdout);
    pid_t child = fork();
    if (child == 0)
        _exit(write_model(path, layers));
    int wstatus = 0;
    if (child < 0 || waitpid(child, &wstatus, 0) != child || !WIFEXITED(wstatus) ||
        WEXITSTATUS(wstatus) != 0) {
        fprintf(stderr, "motifcl-bench load: could not write %s\n", path);
        unlink(path);
        return 1;
    }
    struct stat st;
    if (stat(path, &st) != 0) {
        unlink(path);
        return 1;
    }
    uint64_t file_bytes = (uint64_t)st.st_size;
    char note[64];
    snprintf(note, sizeof note, "%u", layers);
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
