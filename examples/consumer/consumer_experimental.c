/* consumer_experimental.c: a program that opts in to motifcl.h's experimental section, built
 * against an installed tree with MOTIFCL_EXPERIMENTAL defined by its build (CMakeLists.txt;
 * `#define MOTIFCL_EXPERIMENTAL` before the include does the same). It links the same shared
 * library as consumer.c. Since the experimental API may change in any release, it first
 * checks that it runs with the very version it was built against, then trains a tiny GPT
 * (mcl_gpt_*) on a repeating sequence for a few steps on the GPU and checks that the loss
 * falls.
 * run.cmake also compiles this file WITHOUT MOTIFCL_EXPERIMENTAL and requires that to fail.
 * Exit status: 0 pass, 1 failure, 77 no Vulkan compute device (1 instead when the
 * environment variable MOTIFCL_REQUIRE_VULKAN_COMPUTE is 1). */
#include <motifcl.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(call)                                                                        \
    do {                                                                                   \
        mcl_status s_ = (call);                                                            \
        if (s_ != MCL_SUCCESS) {                                                           \
            fprintf(stderr, "consumer_experimental.c: %s failed: %s\n", #call,             \
                    mcl_status_string(s_));                                                \
            goto fail;                                                                     \
        }                                                                                  \
    } while (0)

enum { VOCAB = 11, BATCH = 2, SEQ = 8, STEPS = 40 };

int main(void)
{
    if (mcl_version() != MOTIFCL_VERSION_NUMBER) {
        fprintf(stderr, "consumer_experimental.c: built against %u, running with %u: the "
                        "experimental API is only valid for the version built against\n",
                (unsigned)MOTIFCL_VERSION_NUMBER, mcl_version());
        return 1;
    }
    mcl_context *ctx = NULL;
    mcl_status status = mcl_context_create(NULL, &ctx);
    if (status == MCL_ERROR_VULKAN_UNAVAILABLE || status == MCL_ERROR_NO_DEVICE) {
        const char *strict = getenv("MOTIFCL_REQUIRE_VULKAN_COMPUTE");
        if (strict && strcmp(strict, "1") == 0) {
            fprintf(stderr, "consumer_experimental.c: no Vulkan compute device (%s) and "
                            "MOTIFCL_REQUIRE_VULKAN_COMPUTE=1: failing\n",
                    mcl_status_string(status));
            return 1;
        }
        printf("consumer_experimental.c: no Vulkan compute device (%s): skipped\n",
               mcl_status_string(status));
        return 77;
    }
    if (status != MCL_SUCCESS) {
        fprintf(stderr, "consumer_experimental.c: mcl_context_create failed: %s\n",
                mcl_status_string(status));
        return 1;
    }

    mcl_gpt *gpt = NULL;
    mcl_tensor *tokens = NULL, *targets = NULL, *loss = NULL;
    float first = NAN, last = NAN;
    const int64_t shape[2] = {BATCH, SEQ}, one = 1;
    int32_t tok[BATCH * SEQ], tgt[BATCH * SEQ];
    /* Each token is followed by the next one modulo VOCAB: easy to learn in a few steps. */
    for (int i = 0; i < BATCH * SEQ; i++) {
        tok[i] = (i * 3 + i / SEQ) % VOCAB;
        tgt[i] = (tok[i] + 1) % VOCAB;
    }

    mcl_gpt_desc desc = {.size = sizeof desc, .vocab = VOCAB, .dim = 16, .layers = 1,
                         .heads = 2, .hidden = 32, .max_seq = SEQ, .tied_head = 1};
    CHECK(mcl_gpt_create(ctx, &desc, 7, &gpt));
    mcl_gpt_desc got = {.size = sizeof got};
    CHECK(mcl_gpt_config(gpt, &got));
    printf("consumer_experimental.c: MotifCL %s, GPT of %lld parameters in %u tensors, "
           "kv_heads %d (defaulted)\n",
           mcl_version_string(), (long long)mcl_gpt_param_numel(gpt), mcl_gpt_param_count(gpt),
           got.kv_heads);
    CHECK(mcl_tensor_create(ctx, MCL_DTYPE_I32, 2, shape, &tokens));
    CHECK(mcl_tensor_create(ctx, MCL_DTYPE_I32, 2, shape, &targets));
    CHECK(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, &one, &loss));
    CHECK(mcl_tensor_upload(tokens, 0, tok, sizeof tok));
    CHECK(mcl_tensor_upload(targets, 0, tgt, sizeof tgt));
    for (int step = 1; step <= STEPS; step++) {
        mcl_adamw_desc adam = {.size = sizeof adam, .lr = 1e-2f, .step = step};
        CHECK(mcl_gpt_set_optimizer(gpt, &adam, 1.0f));
        CHECK(mcl_gpt_forward(gpt, tokens, targets, loss));
        CHECK(mcl_gpt_backward(gpt));
        CHECK(mcl_gpt_step(gpt));
        float l = NAN;
        CHECK(mcl_tensor_download(loss, 0, &l, sizeof l));
        if (step == 1)
            first = l;
        last = l;
    }
    /* The loss is measured before each step: `last` is after STEPS - 1 updates. */
    int learned = isfinite(first) && isfinite(last) && last < 0.5f * first;
    printf("consumer_experimental.c: loss %.4f -> %.4f over %d steps: %s\n", (double)first,
           (double)last, STEPS, learned ? "ok" : "FAIL (expected to halve)");
    mcl_gpt_destroy(gpt);
    mcl_context_destroy(ctx);
    return learned ? 0 : 1;

fail:
    mcl_gpt_destroy(gpt);
    mcl_context_destroy(ctx);
    return 1;
}
