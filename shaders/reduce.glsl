// Workgroup-wide sum and max for the row kernels, in two interchangeable paths chosen by the
// specialization constant MCL_USE_SUBGROUP (constant_id 1):
//
//   true : subgroupAdd / subgroupMax inside each subgroup, then the gl_NumSubgroups partials
//          through shared memory. Nothing assumes a subgroup size: it is 8 on Lavapipe, 32 on
//          NVIDIA, 64 on GCN, and a workgroup may hold one partial subgroup.
//   false: a shared-memory tree over the workgroup, for devices (or drivers) without subgroup
//          arithmetic.
//
// Both must be called from uniform control flow by every invocation of the workgroup, and
// both return the result in every invocation. Every invocation folds the partials in the
// same order, so all of them get bit-identical results (a row's max is the same everywhere).
//
// The includer declares `layout(local_size_x_id = 0) in;` with a workgroup of at most
// MCL_REDUCE_MAX_WG invocations.
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_arithmetic : require

layout(constant_id = 1) const bool MCL_USE_SUBGROUP = false;

// The host never asks for more (src/ops/rows.c, MCL_ROWS_MAX_WG).
#define MCL_REDUCE_MAX_WG 256

shared float mcl_red[MCL_REDUCE_MAX_WG];

// The tree starts at the largest power of two below the workgroup size, so a workgroup size
// that is not a power of two (a device limit can force one) still reduces every partial.
uint mcl_tree_start() {
    const uint n = gl_WorkGroupSize.x;
    return n > 1u ? 1u << findMSB(n - 1u) : 0u;
}

float mcl_wg_sum(float v) {
    float total = 0.0;
    if (MCL_USE_SUBGROUP) {
        const float part = subgroupAdd(v);
        if (subgroupElect()) {
            mcl_red[gl_SubgroupID] = part;
        }
        barrier();
        for (uint k = 0u; k < gl_NumSubgroups; k++) {
            total += mcl_red[k];
        }
    } else {
        const uint i = gl_LocalInvocationID.x;
        mcl_red[i] = v;
        barrier();
        for (uint s = mcl_tree_start(); s > 0u; s >>= 1) {
            if (i < s && i + s < gl_WorkGroupSize.x) {
                mcl_red[i] += mcl_red[i + s];
            }
            barrier();
        }
        total = mcl_red[0];
    }
    // The next reduction overwrites mcl_red: every invocation must have read it first.
    barrier();
    return total;
}

// Invocation 0's v, in every invocation, through shared memory. A value that several
// invocations keep in a register while others overwrite its source in place (out aliasing
// x) must come this way: a compiler that treats a readonly binding as unchanging may reload
// it from the buffer instead of keeping the register.
float mcl_wg_first(float v) {
    if (gl_LocalInvocationID.x == 0u) {
        mcl_red[0] = v;
    }
    barrier();
    const float first = mcl_red[0];
    barrier();
    return first;
}

float mcl_wg_max(float v) {
    float total;
    if (MCL_USE_SUBGROUP) {
        const float part = subgroupMax(v);
        if (subgroupElect()) {
            mcl_red[gl_SubgroupID] = part;
        }
        barrier();
        total = mcl_red[0];
        for (uint k = 1u; k < gl_NumSubgroups; k++) {
            total = max(total, mcl_red[k]);
        }
    } else {
        const uint i = gl_LocalInvocationID.x;
        mcl_red[i] = v;
        barrier();
        for (uint s = mcl_tree_start(); s > 0u; s >>= 1) {
            if (i < s && i + s < gl_WorkGroupSize.x) {
                mcl_red[i] = max(mcl_red[i], mcl_red[i + s]);
            }
            barrier();
        }
        total = mcl_red[0];
    }
    barrier();
    return total;
}
