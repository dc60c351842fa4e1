#include "ref.h"

void ref_matmul_f32(const float *a, int ta, const float *b, int tb, const float *bias, float *c,
                    int64_t batch, int64_t m, int64_t n, int64_t k, int shared_b)
{
    for (int64_t p = 0; p < batch; p++) {
        const float *ap = a + p * m * k;
        const float *bp = b + (shared_b ? 0 : p * k * n);
        float *cp = c + p * m * n;
        for (int64_t i = 0; i < m; i++) {
            for (int64_t j = 0; j < n; j++) {
                double sum = bias ? bias[j] : 0.0;
                for (int64_t q = 0; q < k; q++) {
                    double x = ta ? ap[q * m + i] : ap[i * k + q];
                    double y = tb ? bp[j * k + q] : bp[q * n + j];
                    sum += x * y;
                }
                cp[i * n + j] = (float)sum;
            }
        }
    }
}
