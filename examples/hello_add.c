/* hello_add: the smallest complete MotifCL program. It opens the best Vulkan device, prints
 * what it is, adds two vectors on the GPU and checks the sum against the CPU.
 * Exit status: 0 when the check passes, 1 when it fails, 2 when there is no device. */
#include <stdio.h>
#include <stdlib.h>

#include "motifcl.h"

#define CHECK(call)                                                                        \
    do {                                                                                   \
        mcl_status s_ = (call);                                                            \
        if (s_ != MCL_SUCCESS) {                                                           \
            fprintf(stderr, "%s failed: %s\n", #call, mcl_status_string(s_));              \
            return 1;                                                                      \
        }                                                                                  \
    } while (0)

int main(void)
{
    enum { N = 1 << 20 };
    mcl_context *ctx = NULL;
    mcl_status status = mcl_context_create(NULL, &ctx);
    if (status != MCL_SUCCESS) {
        fprintf(stderr, "no Vulkan compute device: %s (MOTIFCL_LOG=info says more)\n",
                mcl_status_string(status));
        return 2;
    }
    mcl_device_info info = {.size = sizeof info};
    CHECK(mcl_context_device_info(ctx, &info));
    printf("MotifCL %s on %s (%s, %s), subgroup size %u, profile %s\n", mcl_version_string(),
           info.name, info.driver_name, info.driver_info, info.subgroup_size, info.profile);

    float *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b), *y = malloc(N * sizeof *y);
    if (!a || !b || !y)
        return 1;
    for (int i = 0; i < N; i++) {
        a[i] = (float)i * 0.5f;
        b[i] = 1.0f - (float)(i % 1000);
    }
    int64_t shape[1] = {N};
    mcl_tensor *ta, *tb, *ty;
    CHECK(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, shape, &ta));
    CHECK(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, shape, &tb));
    CHECK(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, shape, &ty));
    CHECK(mcl_tensor_upload(ta, 0, a, sizeof(float) * N));
    CHECK(mcl_tensor_upload(tb, 0, b, sizeof(float) * N));
    CHECK(mcl_add(ctx, ta, tb, ty));
    CHECK(mcl_tensor_download(ty, 0, y, sizeof(float) * N));

    long mismatches = 0;
    for (int i = 0; i < N; i++)
        mismatches += y[i] != a[i] + b[i];
    printf("add_f32 over %d elements: %ld mismatches against the CPU -> %s\n", N, mismatches,
           mismatches ? "FAIL" : "ok");

    mcl_tensor_destroy(ta);
    mcl_tensor_destroy(tb);
    mcl_tensor_destroy(ty);
    mcl_context_destroy(ctx);
    free(a);
    free(b);
    free(y);
    return mismatches ? 1 : 0;
}
