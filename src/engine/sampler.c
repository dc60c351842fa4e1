/* Choosing a token from logits: the parameters of the device's sampler (sample_f32.comp,
 * what mcl_session_sample runs) and the same choice on the host, which the session takes
 * where the device's parameters cannot hold the penalties and which the tests hold the
 * device to. Penalties, then a threshold on the logit from top-k, min-p and top-p (tokens
 * equal to a cut are kept), then the draw: the largest (l - max) / T + G over the kept
 * tokens, with G a Gumbel variate of the draw's key and the token id, so that the same seed,
 * logits and history give the same token (Gumbel-max: token i wins with probability
 * exp(l_i / T) over the kept tokens' sum). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../core/hash.h"
#include "../ops/ops_internal.h"

#include "engine_internal.h"

/* splitmix64: a 64-bit counter to 64 well-mixed bits. */
static uint64_t mix64(uint64_t x)
{
    x += 0x9E3779B97F4A7C15ull;
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
    x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
    return x ^ (x >> 31);
}

/* The penalties over the last `n` tokens of the history, applied to l. */
static void penalize(float *l, uint32_t vocab, const int32_t *history, uint32_t n,
                     const mcl_sampler_desc *d)
{
    int repeat = d->repeat_penalty > 0.0f && d->repeat_penalty != 1.0f;
    if (!repeat && d->frequency_penalty == 0.0f && d->presence_penalty == 0.0f)
        return;
    for (uint32_t j = 0; j < n; j++) {
        int32_t t = history[j];
        if (t < 0 || (uint32_t)t >= vocab)
            continue;
        int first = 1;
        uint32_t count = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (history[i] == t) {
                first &= i >= j;
                count++;
            }
        }
        if (!first)
            continue; /* each token once */
        if (repeat)
            l[t] = l[t] > 0.0f ? l[t] / d->repeat_penalty : l[t] * d->repeat_penalty;
        l[t] -= (float)count * d->frequency_penalty + d->presence_penalty;
    }
}

/* Whether id a ranks below id b (a lower logit, or an equal one and a higher id). */
static int below(const float *l, int32_t a, int32_t b)
{
    return l[a] < l[b] || (l[a] == l[b] && a > b);
}

/* Restore the heap of ids[0, n) (its root the worst) below position i, holding t there. */
static void sift_down(const float *l, int32_t *ids, uint32_t n, uint32_t i, int32_t t)
{
    for (;;) {
        uint32_t c = 2 * i + 1;
        if (c >= n)
            break;
        if (c + 1 < n && below(l, ids[c + 1], ids[c]))
            c++;
        if (!below(l, ids[c], t))
            break;
        ids[i] = ids[c];
        i = c;
    }
    ids[i] = t;
}

/* The k best ids of l into ids, best first: a heap of the best so far whose root is the
 * worst of them, then sorted by taking the root out to the end, one at a time. */
static uint32_t top_k_ids(const float *l, uint32_t vocab, uint32_t k, int32_t *ids)
{
    uint32_t n = 0;
    for (int32_t t = 0; t < (int32_t)vocab; t++) {
        if (n < k) {
            uint32_t i = n++;
            while (i > 0 && below(l, t, ids[(i - 1) / 2])) {
                ids[i] = ids[(i - 1) / 2];
                i = (i - 1) / 2;
            }
            ids[i] = t;
        } else if (below(l, ids[0], t)) {
            sift_down(l, ids, n, 0, t);
        }
    }
    for (uint32_t end = n; end > 1; end--) {
        int32_t worst = ids[0];
        sift_down(l, ids, end - 1, 0, ids[end - 1]);
        ids[end - 1] = worst;
    }
    return n;
}

uint32_t mcl_sample_key(uint64_t seed, uint64_t draw)
{
    return (uint32_t)(mix64(seed ^ mix64(draw)) >> 32);
}

double mcl_sample_gumbel(uint32_t key, uint32_t token)
{
    uint32_t h = mcl_hash32(mcl_hash32(token) ^ key);
    double u = ((double)(h >> 9) + 0.5) / 8388608.0;
    return -log(-log1p(u - 1.0));
}

static int descending(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

int32_t mcl_sample_logits(const float *logits, uint32_t vocab, const int32_t *history,
                          uint32_t history_length, const mcl_sampler_desc *desc, uint64_t draw,
                          float *work, int32_t *work_ids)
{
    mcl_sampler_desc d = {0};
    if (desc)
        memcpy(&d, desc, desc->size < sizeof d ? desc->size : sizeof d);
    float *l = work;
    memcpy(l, logits, (size_t)vocab * sizeof *l);
    uint32_t window = d.penalty_last_n ? d.penalty_last_n : 64;
    if (window > history_length)
        window = history_length;
    if (window > 0)
        penalize(l, vocab, history + (history_length - window), window, &d);

    int32_t best = 0;
    for (int32_t t = 1; t < (int32_t)vocab; t++)
        if (l[t] > l[best])
            best = t;
    if (!(d.temperature > 0.0f))
        return best;
    float m = l[best];
    double temp = (double)d.temperature;
    float thr_k = -INFINITY;
    if (d.top_k > 0 && d.top_k < vocab) {
        uint32_t n = top_k_ids(l, vocab, d.top_k, work_ids);
        thr_k = l[work_ids[n - 1]];
    }
    float thr = thr_k;
    if (d.min_p > 0.0f) {
        float cut = m + d.temperature * logf(d.min_p);
        cut = cut < m ? cut : m;
        thr = cut > thr ? cut : thr;
    }
    if (d.top_p > 0.0f && d.top_p < 1.0f) {
        double z = 0.0;
        float *kept = work + vocab;
        uint32_t n = 0;
        for (uint32_t t = 0; t < vocab; t++) {
            if (l[t] >= thr_k)
                z += exp(((double)l[t] - (double)m) / temp);
            if (l[t] >= thr)
                kept[n++] = l[t];
        }
        qsort(kept, n, sizeof *kept, descending);
        double target = (double)d.top_p * z, acc = 0.0;
        for (uint32_t i = 0; i < n; i++) {
            acc += exp(((double)kept[i] - (double)m) / temp);
            if (acc >= target) {
                thr = kept[i];
                break;
            }
        }
    }
    uint32_t key = mcl_sample_key(d.seed, draw);
    int32_t chosen = best;
    double top = -INFINITY;
    for (uint32_t t = 0; t < vocab; t++) {
        if (!(l[t] >= thr))
            continue;
        double score = ((double)l[t] - (double)m) / temp + mcl_sample_gumbel(key, t);
        if (score > top) {
            top = score;
            chosen = (int32_t)t;
        }
    }
    return chosen;
}

static int by_token(const void *a, const void *b)
{
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

int mcl_sample_params(const mcl_sampler_desc *desc, const int32_t *history,
                      uint32_t history_length, uint64_t draw, uint32_t logits_row,
                      uint32_t cap, int32_t *scratch, uint32_t *row)
{
    mcl_sampler_desc d = {0};
    if (desc)
        memcpy(&d, desc, desc->size < sizeof d ? desc->size : sizeof d);
    float repeat = d.repeat_penalty > 0.0f ? d.repeat_penalty : 1.0f;
    float f[6] = {d.temperature, d.top_p, d.min_p, repeat, d.frequency_penalty,
                  d.presence_penalty};
    memset(row, 0, MCL_SAMPLE_HEADER * sizeof *row);
    row[0] = logits_row;
    row[1] = d.top_k;
    memcpy(row + 2, f, sizeof f);
    row[8] = mcl_sample_key(d.seed, draw);
    uint32_t pairs = 0;
    int any = repeat != 1.0f || d.frequency_penalty != 0.0f || d.presence_penalty != 0.0f;
    uint32_t window = d.penalty_last_n ? d.penalty_last_n : 64;
    if (window > history_length)
        window = history_length;
    if (any && window > 0) {
        memcpy(scratch, history + (history_length - window), window * sizeof *scratch);
        qsort(scratch, window, sizeof *scratch, by_token);
        for (uint32_t i = 0; i < window;) {
            uint32_t j = i;
            while (j < window && scratch[j] == scratch[i])
                j++;
            if (scratch[i] >= 0) {
                if (pairs == cap)
                    return 0;
                row[MCL_SAMPLE_HEADER + 2 * pairs] = (uint32_t)scratch[i];
                row[MCL_SAMPLE_HEADER + 2 * pairs + 1] = j - i;
                pairs++;
            }
            i = j;
        }
    }
    row[9] = pairs;
    return 1;
}
