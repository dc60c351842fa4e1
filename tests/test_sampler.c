/* The host sampler (src/engine/sampler.c, which the device's is held to) on fixed logits,
 * against a reference written here from the definitions in motifcl.h: greedy picks,
 * penalties, the distribution after top-k, temperature, top-p and min-p, with tokens equal
 * to a cut kept (drawn 200000 times and compared by a chi-square test whose control, the
 * reference at another temperature, must fail), determinism of seeded draws. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "engine/engine_internal.h"

#define V 12

static const float base_logits[V] = {1.0f, 3.5f, 2.0f, -1.0f, 3.5f, 0.5f,
                                     2.9f, -4.0f, 1.7f, 3.1f, 0.0f, 2.4f};

static float work[2 * V];
static int32_t work_ids[V];

static int32_t sample(const float *l, const int32_t *hist, uint32_t n, const mcl_sampler_desc *d,
                      uint64_t draw)
{
    return mcl_sample_logits(l, V, hist, n, d, draw, work, work_ids);
}

/* The reference: probabilities of every token after top-k, temperature, top-p and min-p. */
static void reference(const float *l, const mcl_sampler_desc *d, double *p)
{
    int order[V];
    for (int i = 0; i < V; i++)
        order[i] = i;
    /* insertion sort: descending logit, ascending id */
    for (int i = 1; i < V; i++)
        for (int j = i; j > 0 && (l[order[j]] > l[order[j - 1]] ||
                                  (l[order[j]] == l[order[j - 1]] && order[j] < order[j - 1]));
             j--) {
            int t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    int n = d->top_k > 0 && d->top_k < V ? (int)d->top_k : V;
    while (n < V && l[order[n]] == l[order[n - 1]])
        n++; /* equal to the k-th: kept */
    double q[V], sum = 0.0;
    for (int i = 0; i < n; i++) {
        q[i] = exp(((double)l[order[i]] - (double)l[order[0]]) / (double)d->temperature);
        sum += q[i];
    }
    int keep = n;
    if (d->top_p > 0.0f && d->top_p < 1.0f) {
        double acc = 0.0;
        for (int i = 0; i < n; i++) {
            acc += q[i] / sum;
            if (acc >= (double)d->top_p) {
                keep = i + 1;
                break;
            }
        }
        while (keep < n && l[order[keep]] == l[order[keep - 1]])
            keep++;
    }
    if (d->min_p > 0.0f)
        for (int i = 1; i < keep; i++)
            if (q[i] < (double)d->min_p * q[0]) {
                keep = i;
                break;
            }
    double total = 0.0;
    for (int i = 0; i < keep; i++)
        total += q[i];
    for (int i = 0; i < V; i++)
        p[i] = 0.0;
    for (int i = 0; i < keep; i++)
        p[order[i]] = q[i] / total;
}

/* Chi-square of counts against p over the tokens p allows; a token p excludes that appears
 * gives infinity. */
static double chi_square(const uint32_t *counts, const double *p, uint32_t draws, int *cells)
{
    double chi = 0.0;
    *cells = 0;
    for (int i = 0; i < V; i++) {
        if (p[i] == 0.0) {
            if (counts[i])
                return INFINITY;
            continue;
        }
        double e = p[i] * draws;
        chi += ((double)counts[i] - e) * ((double)counts[i] - e) / e;
        (*cells)++;
    }
    return chi;
}

static void greedy_and_ties(void **state)
{
    (void)state;
    mcl_sampler_desc d = {.size = sizeof d};
    /* Tokens 1 and 4 tie at 3.5: the lower id wins. */
    assert_int_equal(sample(base_logits, NULL, 0, &d, 0), 1);
    assert_int_equal(sample(base_logits, NULL, 0, NULL, 5), 1);
    /* Top-k 1 at a temperature keeps both, and draws each. */
    d.temperature = 0.7f;
    d.top_k = 1;
    int seen[V] = {0};
    for (uint64_t k = 0; k < 200; k++)
        seen[sample(base_logits, NULL, 0, &d, k)]++;
    assert_true(seen[1] + seen[4] == 200 && seen[1] > 50 && seen[4] > 50);
    mcl_test_record_bool("greedy picks the lowest id of the best; top-k 1 keeps both tied "
                         "best and draws each",
                         1);
}

static void penalties(void **state)
{
    (void)state;
    mcl_sampler_desc d = {.size = sizeof d, .repeat_penalty = 1.5f};
    int32_t hist[3] = {1, 4, 1};
    /* 3.5 / 1.5 = 2.33 for 1 and 4: the best is then 9 (3.1). */
    assert_int_equal(sample(base_logits, hist, 3, &d, 0), 9);
    /* The window: only the last token (1) counts, so 4 keeps 3.5. */
    d.penalty_last_n = 1;
    assert_int_equal(sample(base_logits, hist, 3, &d, 0), 4);
    /* Frequency: token 1, seen twice, loses 0.8; token 4, seen once, loses 0.4 and ties token
     * 9 at 3.1, and the lower id wins. A presence penalty of 0.05 more makes 9 the best. */
    mcl_sampler_desc f = {.size = sizeof f, .frequency_penalty = 0.4f};
    assert_int_equal(sample(base_logits, hist, 3, &f, 0), 4);
    f.presence_penalty = 0.05f;
    assert_int_equal(sample(base_logits, hist, 3, &f, 0), 9);
    /* A negative logit is multiplied: token 3 (-1) seen, with every other token far lower. */
    float low[V];
    for (int i = 0; i < V; i++)
        low[i] = -10.0f;
    low[3] = -1.0f;
    low[5] = -1.4f;
    int32_t h3 = 3;
    assert_int_equal(sample(low, &h3, 1, &d, 0), 5); /* -1 x 1.5 = -1.5 < -1.4 */
    mcl_test_record_bool("repeat, frequency and presence penalties over the window", 1);
}

/* The draws' distribution against the reference's for one configuration; also the control:
 * the reference at a different temperature must be rejected. */
static void distribution(const float *l, const mcl_sampler_desc *d, const char *name)
{
    enum { DRAWS = 200000 };
    uint32_t counts[V] = {0};
    for (uint64_t k = 0; k < DRAWS; k++) {
        int32_t t = sample(l, NULL, 0, d, k);
        assert_true(t >= 0 && t < V);
        counts[t]++;
    }
    double p[V];
    int cells;
    reference(l, d, p);
    double chi = chi_square(counts, p, DRAWS, &cells);
    /* 99.9th percentile of chi-square with up to 11 degrees of freedom: 31.3. */
    double limit = 31.3;
    assert_true(mcl_test_record(name, "chi-square", chi, limit));
    mcl_sampler_desc other = *d;
    other.temperature = d->temperature * 1.25f;
    reference(l, &other, p);
    double wrong = chi_square(counts, p, DRAWS, &cells);
    char control[200];
    snprintf(control, sizeof control, "%s: control, the reference at 1.25x the temperature, "
                                      "rejected (chi-square %.1f)", name, wrong);
    assert_true(mcl_test_record_bool(control, wrong > limit));
}

static void distributions(void **state)
{
    (void)state;
    mcl_sampler_desc d = {.size = sizeof d, .temperature = 1.0f, .seed = 7};
    distribution(base_logits, &d, "temperature 1");
    d.temperature = 0.6f;
    d.top_k = 6;
    distribution(base_logits, &d, "temperature 0.6, top-k 6");
    d.top_k = 0;
    d.temperature = 1.3f;
    d.top_p = 0.8f;
    distribution(base_logits, &d, "temperature 1.3, top-p 0.8");
    d.top_p = 0.0f;
    d.min_p = 0.2f;
    distribution(base_logits, &d, "temperature 1.3, min-p 0.2");
    d.top_k = 4;
    d.top_p = 0.95f;
    d.min_p = 0.05f;
    distribution(base_logits, &d, "temperature 1.3, top-k 4, top-p 0.95, min-p 0.05");
    /* Cuts at a tie: tokens 1 and 2 tie below token 0. Top-k 2 keeps all three; top-p 0.5
     * reaches its mass at token 1 and keeps 2 with it. */
    static const float tied[V] = {3.5f, 2.0f, 2.0f, 1.0f, 0.5f, 0.0f,
                                  -0.5f, -1.0f, 0.2f, 0.8f, -2.0f, 1.2f};
    d.top_k = 2;
    d.top_p = 0.0f;
    d.min_p = 0.0f;
    distribution(tied, &d, "temperature 1.3, top-k 2 at a tie");
    d.top_k = 0;
    d.top_p = 0.5f;
    distribution(tied, &d, "temperature 1.3, top-p 0.5 at a tie");
}

static void seeded_draws(void **state)
{
    (void)state;
    mcl_sampler_desc a = {.size = sizeof a, .temperature = 1.0f, .seed = 42};
    mcl_sampler_desc b = a;
    b.seed = 43;
    int same = 1, differ = 0;
    for (uint64_t k = 0; k < 1000; k++) {
        int32_t x = sample(base_logits, NULL, 0, &a, k);
        same &= x == sample(base_logits, NULL, 0, &a, k);
        differ += x != sample(base_logits, NULL, 0, &b, k);
    }
    mcl_test_record_bool("the same seed and draw give the same token", same);
    mcl_test_record_bool("another seed gives other tokens", differ > 100);
    assert_true(same);
    assert_true(differ > 100);
}

int main(int argc, char **argv)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(greedy_and_ties),
        cmocka_unit_test(penalties),
        cmocka_unit_test(distributions),
        cmocka_unit_test(seeded_draws),
    };
    mcl_test_begin(argc, argv);
    return mcl_test_finish(cmocka_run_group_tests(tests, NULL, NULL));
}
