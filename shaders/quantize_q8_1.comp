#version 450
// quantize_q8_1: the first step of the integer-dot path. x [rows, K] f32 (K a multiple of 32)
// is quantized per block of 32 values to 8-bit codes with one f32 scale and the sum of the
// codes (ggml's q8_1 idea; layout in qdot.glsl): d = amax * (1/127), code = round(x / d),
// ties away from zero, so that codes lie in -127..127.
//
// Eight invocations per block, a vec4 each: the GEMV that follows waits for this kernel, so it
// is spread wide (a 4096-wide row is 1024 invocations, not 128 serial ones). The block's amax
// and code sum meet in shared memory. The reciprocal of d gets one Newton step so that it is
// the correctly rounded 1/d in all but rare cases (Vulkan's division is only within 2.5 ulp),
// which keeps the codes equal to a CPU reference's almost everywhere.
//
//   specialization constants: 0 workgroup size (a multiple of 8)
//   set 0: 0 x (f32), 1 the quantized activations (u32 words)
//   push constants: number of blocks (rows * K / 32)
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufAct { uint act[]; };

layout(push_constant) uniform Push {
    uint blocks;
} pc;

const uint LANES = 8u;                            // invocations per block
const uint BPW = gl_WorkGroupSize.x / LANES;      // blocks per workgroup and round
shared float q_amax[gl_WorkGroupSize.x];
shared int q_sum[gl_WorkGroupSize.x];

// 1/127 rounded to float (0x1.020408p-7): a product with it is correctly rounded everywhere.
const float INV127 = 7.87401572e-3;

// round(v), halves away from zero, as C's roundf. v - trunc(v) is exact.
float round_away(float v) {
    float t = trunc(v);
    return abs(v - t) >= 0.5 ? t + sign(v) : t;
}

void main() {
    const uint lid = gl_LocalInvocationID.x, j = lid % LANES, first = lid - j;
    // Rounds of whole workgroups, so that every invocation meets every barrier.
    for (uint g0 = gl_WorkGroupID.x * BPW; g0 < pc.blocks; g0 += gl_NumWorkGroups.x * BPW) {
        const uint g = g0 + lid / LANES;
        const bool valid = g < pc.blocks;
        const vec4 v = valid ? x4[LANES * g + j] : vec4(0.0);
        const vec4 a = abs(v);
        q_amax[lid] = max(max(a.x, a.y), max(a.z, a.w));
        barrier();
        float amax = 0.0;
        [[unroll]] for (uint k = 0u; k < LANES; k++) {
            amax = max(amax, q_amax[first + k]);
        }
        const float d = amax * INV127;
        float id = 0.0;
        if (d != 0.0) {
            id = 1.0 / d;
            id = fma(id, fma(-d, id, 1.0), id);
        }
        const ivec4 q = ivec4(vec4(round_away(v.x * id), round_away(v.y * id),
                                   round_away(v.z * id), round_away(v.w * id)));
        if (valid) {
            act[LANES * g + j] = uint(q.x & 0xFF) | uint(q.y & 0xFF) << 8 |
                                 uint(q.z & 0xFF) << 16 | uint(q.w & 0xFF) << 24;
        }
        q_sum[lid] = (q.x + q.y) + (q.z + q.w);
        barrier();
        if (j == 0u && valid) {
            int sum = 0;
            [[unroll]] for (uint k = 0u; k < LANES; k++) {
                sum += q_sum[first + k];
            }
            act[8u * pc.blocks + g] = floatBitsToUint(d);
            act[9u * pc.blocks + g] = uint(sum);
        }
    }
}
