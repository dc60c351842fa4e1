/* CPU reference for softmax cross-entropy, in double precision. */
#include <math.h>

#include "ref.h"

double ref_cross_entropy_f32(const float *logits, const int32_t *targets, int64_t rows,
                             int64_t vocab, float *lse, int divide_by_all_rows)
{
    double total = 0.0;
    int64_t counted = 0;
    for (int64_t r = 0; r < rows; r++) {
        const float *x = logits + r * vocab;
        double max = -INFINITY, sum = 0.0;
        for (int64_t c = 0; c < vocab; c++)
            max = x[c] > max ? x[c] : max;
        for (int64_t c = 0; c < vocab; c++)
            sum += exp((double)x[c] - max);
        double row_lse = max + log(sum);
        if (lse)
            lse[r] = (float)row_lse;
        if (targets[r] >= 0 && targets[r] < vocab) {
            total += row_lse - (double)x[targets[r]];
            counted++;
        }
    }
    int64_t divisor = divide_by_all_rows ? rows : counted;
    return divisor > 0 ? total / (double)divisor : 0.0;
}
