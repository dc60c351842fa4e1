/* Choosing a token from logits on the host (mcl_session_sample): penalties, top-k,
 * temperature, top-p, min-p, then a draw from a counter-based generator, so that the same
 * seed, logits and history give the same token. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    penalize(l, vocab, history + (history_length - window), window, &d);

    if (!(d.temperature > 0.0f)) {
        int32_t best = 0;
        for (int32_t t = 1; t < (int32_t)vocab; t++)
            if (l[t] > l[best])
                best = t;
        return best;
    }
    uint32_t n = d.top_k > 0 && d.top_k < vocab ? d.top_k : vocab;
    n = top_k_ids(l, vocab, n, work_ids);
    /* Probabilities of the candidates at the temperature, best first. */
    double sum = 0.0;
    float *prob = work + vocab;
    double top = (double)l[work_ids[0]];
    for (uint32_t i = 0; i < n; i++) {
        double e = exp(((double)l[work_ids[i]] - top) / (double)d.temperature);
        prob[i] = (float)e;
        sum += e;
    }
    uint32_t keep = n;
    if (d.top_p > 0.0f && d.top_p < 1.0f) {
        double acc = 0.0;
        for (uint32_t i = 0; i < n; i++) {
            acc += (double)prob[i] / sum;
            if (acc >= (double)d.top_p) {
                keep = i + 1;
                break;
            }
        }
    }
    if (d.min_p > 0.0f) {
        double floor_p = (double)d.min_p * (double)prob[0];
        uint32_t i = 1;
        while (i < keep && (double)prob[i] >= floor_p)
            i++;
        keep = i;
    }
    double total = 0.0;
    for (uint32_t i = 0; i < keep; i++)
        total += (double)prob[i];
    double u = (double)(mix64(d.seed ^ mix64(draw)) >> 11) * 0x1.0p-53 * total;
    for (uint32_t i = 0; i < keep; i++) {
        u -= (double)prob[i];
        if (u < 0.0)
            return work_ids[i];
    }
    return work_ids[keep - 1];
}
