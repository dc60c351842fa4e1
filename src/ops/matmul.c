/* Matrix products: a matrix-vector path for few rows and a tiled GEMM. */
#include "../vk/context.h"

mcl_status mcl_matmul(mcl_context *ctx, const mcl_tensor *a, mcl_transpose ta,
                      const mcl_tensor *b, mcl_transpose tb, const mcl_tensor *bias,
                      mcl_tensor *c)
{
    (void)a, (void)ta, (void)b, (void)tb, (void)bias, (void)c;
    return ctx ? mcl_fail(ctx, MCL_ERROR_UNSUPPORTED, "mcl_matmul is not implemented yet")
               : MCL_ERROR_INVALID_ARGUMENT;
}
