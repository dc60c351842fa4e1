#version 450
// quantize_q8_1: the first step of the integer-dot path. x [rows, K] f32 (K a multiple of 32)
// is quantized per block of 32 values to 8-bit codes with one f32 scale and the sum of the
// codes (ggml's q8_1 idea; layout in qdot.glsl): d = amax * (1/127), code = round(x / d),
// ties away from zero, so that codes lie in -127..127.
//
// One invocation per block; the reciprocal of d gets one Newton step so that it is the
// correctly rounded 1/d in all but rare cases (Vulkan's division is only within 2.5 ulp), which
// keeps the codes equal to a CPU reference's almost everywhere.
//
//   specialization constants: 0 workgroup size
//   set 0: 0 x (f32), 1 the quantized activations (u32 words)
//   push constants: number of blocks (rows * K / 32)
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer BufX4 { vec4 x4[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufAct { uint act[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufAct4 { uvec4 act4[]; };

layout(push_constant) uniform Push {
    uint blocks;
} pc;

#include "grid_loop.glsl"

// 1/127 rounded to float (0x1.020408p-7): a product with it is correctly rounded everywhere.
const float INV127 = 7.87401572e-3;

// round(v), halves away from zero, as C's roundf. v - trunc(v) is exact.
float round_away(float v) {
    float t = trunc(v);
    return abs(v - t) >= 0.5 ? t + sign(v) : t;
}

void main() {
    const uint stride = grid_stride();
    uint g = gl_GlobalInvocationID.x;
    if (g >= pc.blocks) {
        return;
    }
    for (;;) {
        vec4 v[8];
        float amax = 0.0;
        for (uint i = 0u; i < 8u; i++) {
            v[i] = x4[8u * g + i];
            vec4 a = abs(v[i]);
            amax = max(amax, max(max(a.x, a.y), max(a.z, a.w)));
        }
        const float d = amax * INV127;
        float id = 0.0;
        if (d != 0.0) {
            id = 1.0 / d;
            id = fma(id, fma(-d, id, 1.0), id);
        }
        uint words[8];
        int sum = 0;
        for (uint i = 0u; i < 8u; i++) {
            ivec4 q = ivec4(vec4(round_away(v[i].x * id), round_away(v[i].y * id),
                                 round_away(v[i].z * id), round_away(v[i].w * id)));
            sum += (q.x + q.y) + (q.z + q.w);
            words[i] = uint(q.x & 0xFF) | uint(q.y & 0xFF) << 8 | uint(q.z & 0xFF) << 16 |
                       uint(q.w & 0xFF) << 24;
        }
        act4[2u * g] = uvec4(words[0], words[1], words[2], words[3]);
        act4[2u * g + 1u] = uvec4(words[4], words[5], words[6], words[7]);
        act[8u * pc.blocks + g] = floatBitsToUint(d);
        act[9u * pc.blocks + g] = uint(sum);
        if (!grid_next(g, pc.blocks, stride)) {
            break;
        }
    }
}
