#version 450
// expert_copy: the copies an expert cache's plan listed (expert_residency.comp), for one
// segment of a stack: workgroup row y copies entry y's expert e from the pool into its slot,
// seg_bytes bytes from pool byte src0 + e seg_bytes to cache byte dst0 + slot seg_bytes (a
// stack of block weights has two segments, the block bodies and the d values, whose sizes
// need not be multiples of 4). Rows past the plan's count return at once, so the dispatch's
// size is fixed and a recorded step replays for any plan.
//
// The cache is written in 32-bit words: a word wholly inside the slot's bytes is stored; a
// word the slot shares with a neighbouring slot (which another entry may be writing at the
// same time) is changed by atomic and/or of this slot's bytes only.
//
//   specialization constants: 0 workgroup size
//   set 0: 0 state i32 (the plan: its count at word `count_at`, then its entries), 1 pool
//     uint[], 2 cache uint[] (written)
//   push constants: count_at, src0, dst0, seg_bytes (byte offsets inside the bindings)
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;

#include "grid_loop.glsl"

layout(std430, set = 0, binding = 0) restrict readonly buffer BufS { int state[]; };
layout(std430, set = 0, binding = 1) restrict readonly buffer BufP { uint pool[]; };
layout(std430, set = 0, binding = 2) restrict buffer BufC { uint cache[]; };

layout(push_constant) uniform Push {
    uint count_at, src0, dst0, seg_bytes;
} pc;

uint src_byte(uint at) {
    return (pool[at >> 2u] >> ((at & 3u) * 8u)) & 0xFFu;
}

void main() {
    const uint entry = gl_WorkGroupID.y;
    if (entry >= uint(state[pc.count_at])) {
        return;
    }
    const uint code = uint(state[pc.count_at + 1u + entry]);
    const uint e = code >> 16u, slot = code & 0xFFFFu;
    const uint src = pc.src0 + e * pc.seg_bytes, dst = pc.dst0 + slot * pc.seg_bytes;
    const uint end = dst + pc.seg_bytes;
    const uint w0 = dst >> 2u, words = ((end + 3u) >> 2u) - w0;
    const bool aligned = ((src | dst | pc.seg_bytes) & 3u) == 0u;
    const uint stride = grid_stride();
    for (uint i = gl_GlobalInvocationID.x; i < words;) {
        const uint w = w0 + i;
        if (aligned) {
            cache[w] = pool[(src >> 2u) + i];
        } else {
            uint value = 0u, mask = 0u;
            for (uint b = 0u; b < 4u; b++) {
                const uint at = w * 4u + b;
                if (at >= dst && at < end) {
                    value |= src_byte(src + (at - dst)) << (b * 8u);
                    mask |= 0xFFu << (b * 8u);
                }
            }
            if (mask == 0xFFFFFFFFu) {
                cache[w] = value;
            } else {
                atomicAnd(cache[w], ~mask);
                atomicOr(cache[w], value);
            }
        }
        if (!grid_next(i, words, stride)) {
            break;
        }
    }
}
