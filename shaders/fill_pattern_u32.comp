#version 450
// fill_pattern_u32: y[i] = mcl_hash(seed ^ mcl_hash(i)) for i in [0, n), except that where
// stride > 0 every word i with i % stride == 0 is `value` (stride 1: every word); with
// floats = 1, y[i] is the float (h / 2^23 - 1) * value's float for h = that hash >> 8,
// uniform in [-value, value) and exact for a power-of-two value. A pattern
// that differs per tensor (seed) and per word (i), so that two tensors sharing bytes cannot
// both read back right (the allocator's no-aliasing tests write it into every tensor and check
// it on the CPU); with a stride, the benchmarks' random weights with fixed scales. With signs,
// a word that is `value` has the bits of `signs` flipped where that hash has them set (whole:
// all of them where its bit 0 is), so that the scales' signs are random and the weights have
// a mean of zero.
//
//   workgroup size : specialization constant 0
//   set 0 binding 0: y (writeonly uint[])
//   push constants : { uint n; uint seed; uint stride; uint value; uint floats; uint signs;
//                      uint whole; }
#extension GL_GOOGLE_include_directive : require
#include "hash.glsl"

layout(local_size_x_id = 0, local_size_x = 256) in;

layout(std430, set = 0, binding = 0) writeonly buffer BufY { uint y[]; };

layout(push_constant) uniform Push {
    uint n;
    uint seed;
    uint stride;
    uint value;
    uint floats;
    uint signs;
    uint whole;
} pc;

void main() {
    // Grid-stride loop; the stride is below 2^32 because the dispatch is capped at 65535
    // workgroups of at most 1024 invocations, and the loop stops before i can wrap.
    uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.n; i += stride) {
        const uint h = mcl_hash(pc.seed ^ mcl_hash(i));
        if (pc.floats != 0u) {
            y[i] = floatBitsToUint((float(h >> 8) * (1.0 / 8388608.0) - 1.0) *
                                   uintBitsToFloat(pc.value));
        } else {
            const uint flip = pc.whole != 0u ? ((h & 1u) != 0u ? pc.signs : 0u) : h & pc.signs;
            y[i] = pc.stride != 0u && i % pc.stride == 0u ? pc.value ^ flip : h;
        }
        if (stride >= pc.n - i) {
            break;
        }
    }
}
