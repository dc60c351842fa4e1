/* The data-type table (dtype.h) and the public getters that read it. */
#include "dtype.h"

static const mcl_dtype_traits dtype_table[] = {
    {MCL_DTYPE_F32, "f32", 0, 1, sizeof(float)},
    {MCL_DTYPE_F16, "f16", 0, 1, MCL_FP16_BYTES},
    {MCL_DTYPE_I32, "i32", 0, 1, sizeof(int32_t)},
    {MCL_DTYPE_U8, "u8", 0, 1, sizeof(uint8_t)},
    {MCL_DTYPE_Q8_0, "q8_0", 1, MCL_QK8_0, MCL_BLOCK_Q8_0_BYTES},
    {MCL_DTYPE_Q4_0, "q4_0", 1, MCL_QK4_0, MCL_BLOCK_Q4_0_BYTES},
    {MCL_DTYPE_Q4_K, "q4_k", 1, MCL_QK_K, MCL_BLOCK_Q4_K_BYTES},
    {MCL_DTYPE_Q5_K, "q5_k", 1, MCL_QK_K, MCL_BLOCK_Q5_K_BYTES},
    {MCL_DTYPE_Q6_K, "q6_k", 1, MCL_QK_K, MCL_BLOCK_Q6_K_BYTES},
};

_Static_assert(sizeof(float) == 4, "f32 elements are 4 bytes");

const mcl_dtype_traits *mcl_dtype_traits_of(mcl_dtype dtype)
{
    for (size_t i = 0; i < sizeof dtype_table / sizeof dtype_table[0]; i++) {
        if (dtype_table[i].dtype == dtype)
            return &dtype_table[i];
    }
    return NULL;
}

const char *mcl_dtype_name(mcl_dtype dtype)
{
    const mcl_dtype_traits *t = mcl_dtype_traits_of(dtype);
    return t ? t->name : NULL;
}

size_t mcl_dtype_size(mcl_dtype dtype)
{
    const mcl_dtype_traits *t = mcl_dtype_traits_of(dtype);
    return t && !t->is_block ? t->block_bytes : 0;
}

int64_t mcl_dtype_block_weights(mcl_dtype dtype)
{
    const mcl_dtype_traits *t = mcl_dtype_traits_of(dtype);
    return t ? (int64_t)t->block_weights : 0;
}

size_t mcl_dtype_block_bytes(mcl_dtype dtype)
{
    const mcl_dtype_traits *t = mcl_dtype_traits_of(dtype);
    return t ? t->block_bytes : 0;
}
