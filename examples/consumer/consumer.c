/* consumer.c: a program that uses MotifCL the way a user does, from an installed tree with
 * nothing but `#include <motifcl.h>` and the package files (find_package or pkg-config).
 * It checks that the linked library is the one the header describes, then adds two small
 * vectors on the GPU and checks the sum.
 * Exit status: 0 pass, 1 failure, 77 no Vulkan compute device (1 instead when the
 * environment variable MOTIFCL_REQUIRE_VULKAN_COMPUTE is 1). */
#include <motifcl.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define STR_(x) #x
#define STR(x) STR_(x)

#define CHECK(call)                                                                        \
    do {                                                                                   \
        mcl_status s_ = (call);                                                            \
        if (s_ != MCL_SUCCESS) {                                                           \
            fprintf(stderr, "consumer.c: %s failed: %s\n", #call, mcl_status_string(s_));  \
            goto fail;                                                                     \
        }                                                                                  \
    } while (0)

int main(void)
{
    const char *header_version =
        STR(MOTIFCL_VERSION_MAJOR) "." STR(MOTIFCL_VERSION_MINOR) "." STR(MOTIFCL_VERSION_PATCH);
    printf("consumer.c: MotifCL library %s, header %s\n", mcl_version_string(), header_version);
    if (strcmp(mcl_version_string(), header_version) != 0 ||
        mcl_version() != MOTIFCL_VERSION_NUMBER) {
        fprintf(stderr, "consumer.c: the library (%s, %u) does not match the header (%s, %u)\n",
                mcl_version_string(), mcl_version(), header_version,
                (unsigned)MOTIFCL_VERSION_NUMBER);
        return 1;
    }

    mcl_context_desc desc = {.size = sizeof desc, .device_index = -1};
    mcl_context *ctx = NULL;
    mcl_status status = mcl_context_create(&desc, &ctx);
    if (status == MCL_ERROR_VULKAN_UNAVAILABLE || status == MCL_ERROR_NO_DEVICE) {
        const char *strict = getenv("MOTIFCL_REQUIRE_VULKAN_COMPUTE");
        if (strict && strcmp(strict, "1") == 0) {
            fprintf(stderr, "consumer.c: no Vulkan compute device (%s) and "
                            "MOTIFCL_REQUIRE_VULKAN_COMPUTE=1: failing\n",
                    mcl_status_string(status));
            return 1;
        }
        printf("consumer.c: no Vulkan compute device (%s): skipped\n", mcl_status_string(status));
        return 77;
    }
    if (status != MCL_SUCCESS) {
        fprintf(stderr, "consumer.c: mcl_context_create failed: %s\n", mcl_status_string(status));
        return 1;
    }

    mcl_device_info info = {.size = sizeof info};
    mcl_tensor *ta = NULL, *tb = NULL, *ty = NULL;
    enum { N = 7 };
    const float a[N] = {0.0f, 1.0f, -2.5f, 3.25f, 1e6f, -0.0f, 42.0f};
    const float b[N] = {1.0f, 1.0f, 2.5f, -3.0f, 1.0f, 0.0f, -40.0f};
    float y[N] = {0};
    const int64_t shape[1] = {N};
    int mismatches = 0;

    CHECK(mcl_context_device_info(ctx, &info));
    printf("consumer.c: device %s (%s)\n", info.name, mcl_device_type_name(info.device_type));
    CHECK(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, shape, &ta));
    CHECK(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, shape, &tb));
    CHECK(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, shape, &ty));
    CHECK(mcl_tensor_upload(ta, 0, a, sizeof a));
    CHECK(mcl_tensor_upload(tb, 0, b, sizeof b));
    CHECK(mcl_add(ctx, ta, tb, ty));
    CHECK(mcl_tensor_download(ty, 0, y, sizeof y));
    for (int i = 0; i < N; i++) {
        if (y[i] != a[i] + b[i]) {
            fprintf(stderr, "consumer.c: y[%d] = %g, expected %g\n", i, (double)y[i],
                    (double)(a[i] + b[i]));
            mismatches++;
        }
    }
    mcl_tensor_destroy(ta);
    mcl_tensor_destroy(tb);
    mcl_tensor_destroy(ty);
    mcl_context_destroy(ctx);
    printf("consumer.c: add over %d elements: %s\n", N, mismatches ? "FAIL" : "ok");
    return mismatches ? 1 : 0;

fail:
    mcl_tensor_destroy(ta);
    mcl_tensor_destroy(tb);
    mcl_tensor_destroy(ty);
    mcl_context_destroy(ctx);
    return 1;
}
