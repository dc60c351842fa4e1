/* libFuzzer harness: each input as a MotifCL GPT checkpoint (docs/gpt-checkpoint.md), through
 * the checks mcl_gpt_load makes before it allocates (src/model/gpt_layout.c): the header's
 * configuration checked and planned with overflow-checked arithmetic (version 3's counter
 * section included), the file length that configuration needs against the input's, and where they agree the checksum. The plan must
 * stay inside the bounds the loader then allocates by; nothing here allocates by the
 * input's claims. */
#include <stddef.h>
#include <stdint.h>

#include "model/gpt_layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < GPT_HEADER_BYTES)
        return 0;
    mcl_gpt_desc cfg;
    gpt_plan plan;
    uint64_t step = 0, need = 0;
    char why[200];
    if (mcl_gpt_checkpoint_header(data, &cfg, &plan, &step, &need, why, sizeof why) !=
        MCL_SUCCESS)
        return 0;
    /* What the loader sizes its allocations by, bounded. */
    if (plan.flat_floats <= 0 || (uint64_t)plan.flat_floats > GPT_MAX_FLAT_FLOATS ||
        plan.decay_end > plan.flat_floats || plan.total_params > plan.flat_floats ||
        plan.param_count > 2u + GPT_MAX_LAYERS * GPT_LAYER_PARAMS + 1u ||
        cfg.layers < 1 || cfg.layers > GPT_MAX_LAYERS ||
        /* A counter section exactly where the counter flag is, each layer below 2^32
         * weights: below 2^48 bytes in all. */
        ((cfg.flags & MCL_GPT_COUNTER) != 0) != (plan.counter_bytes != 0) ||
        plan.counter_bytes >= (UINT64_C(1) << 48) ||
        need != GPT_HEADER_BYTES + (uint64_t)plan.flat_floats * 12u + plan.counter_bytes +
                    GPT_TRAILER_BYTES)
        __builtin_trap();
    if (need != size)
        return 0;
    volatile int intact = mcl_gpt_checksum(GPT_CHECKSUM_SEED, data, size - GPT_TRAILER_BYTES) ==
                          mcl_gpt_get_u64(data + size - GPT_TRAILER_BYTES);
    (void)intact;
    return 0;
}
