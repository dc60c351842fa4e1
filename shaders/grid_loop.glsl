// grid_loop.glsl: the grid-stride loop of the layout, loss and attention kernels.
//
// Ops cap their dispatches at 65535 workgroups in x (the minimum maxComputeWorkGroupCount that
// Vulkan guarantees), so a kernel walks its n elements in steps of the whole grid. The stride
// saturates instead of wrapping, and the step refuses to carry an index past 2^32 - 1: a
// wrapped index would revisit elements or never stop.
//
// Include it after the shader's `layout(local_size_x_id = ...) in;`: before that declaration
// glslang 12 folds gl_WorkGroupSize to (1, 1, 1) without a diagnostic (GLSL calls the use an
// error), and the stride silently becomes the workgroup count.
#ifndef GRID_LOOP_GLSL
#define GRID_LOOP_GLSL

uint grid_stride() {
    uint hi;
    uint lo;
    umulExtended(gl_NumWorkGroups.x, gl_WorkGroupSize.x, hi, lo);
    return hi != 0u ? 0xFFFFFFFFu : lo;
}

// Advance i by stride; false when that reaches n (or would wrap), so the loop ends.
bool grid_next(inout uint i, uint n, uint stride) {
    if (stride >= n - i) {
        return false;
    }
    i += stride;
    return true;
}

#endif
