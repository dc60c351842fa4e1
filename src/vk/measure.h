/* What measurements need of the runtime beyond runtime.h (motifcl-bench): GPU timestamps
 * around recorded work, a full barrier between measured commands, and the reference copy
 * the transfers are compared with. */
#ifndef MCL_VK_MEASURE_H
#define MCL_VK_MEASURE_H

#include "runtime.h"

/* A set of GPU timestamps. */
typedef struct mcl_timer mcl_timer;

/* Room for `count` timestamps. MCL_ERROR_UNSUPPORTED where the device has no timestamps. */
mcl_status mcl_timer_create(mcl_context *ctx, uint32_t count, mcl_timer **out);
void mcl_timer_destroy(mcl_timer *timer);
/* Record, in the open batch, a reset of the first `count` timestamps. */
mcl_status mcl_timer_reset(mcl_timer *timer, uint32_t count);
/* Record timestamp `index` after everything recorded before it (a full barrier first when
 * `barrier`). */
mcl_status mcl_timer_mark(mcl_timer *timer, uint32_t index, int barrier);
/* After the work has finished (mcl_finish): seconds[i] = time from timestamp 2i to 2i + 1,
 * for i < pairs, converted with the device's period and masked to its valid bits. */
mcl_status mcl_timer_pairs(mcl_timer *timer, uint32_t pairs, double *seconds);

/* After the work has finished: seconds[i] = time from timestamp 0 to timestamp i, i < count. */
mcl_status mcl_timer_since_first(mcl_timer *timer, uint32_t count, double *seconds);

/* Record a full barrier: everything before it finishes before anything after it starts. */
mcl_status mcl_record_barrier(mcl_context *ctx);

/* A host-visible buffer of the staging memory type, outside the tensor pools. */
typedef struct mcl_raw_buffer mcl_raw_buffer;
mcl_status mcl_raw_buffer_create(mcl_context *ctx, uint64_t bytes, mcl_raw_buffer **out);
void mcl_raw_buffer_destroy(mcl_raw_buffer *raw);
/* One vkCmdCopyBuffer of `bytes` from raw into t (upload) or from t into raw, submitted and
 * waited for: CPU seconds in *seconds. */
mcl_status mcl_raw_copy(mcl_context *ctx, mcl_raw_buffer *raw, mcl_tensor *t, uint64_t bytes,
                        int upload, double *seconds);

#endif
