#version 450
// dequant_q: y = the f32 values of a block-quantised tensor (mcl_dequantize_tensor), exactly
// as the CPU reference computes them (quant.glsl says why exactness is possible).
//
// BY_LANE: one invocation per lane of a block (32 weights, quant_load / quant_decode, the
// GEMV's decoder); otherwise one invocation per 4 weights (quant_decode4, the GEMM's). Both
// exist so that the test suite can hold each decoder to the CPU reference bit for bit.
//
//   specialization constants: 0 workgroup size, 1 FORMAT (quant.glsl's FMT_*), 2 TAIL (the
//     tensor ends in half a word, copied to binding 1), 3 BY_LANE
//   set 0: 0 the blocks (uint words), 1 tail word (any buffer when unused), 2 y (f32)
//   push constants: number of blocks
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0;
layout(constant_id = 2) const bool TAIL = false;
layout(constant_id = 3) const bool BY_LANE = true;

layout(std430, set = 0, binding = 0) readonly buffer BufQ { uint wq[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufQ4 { uvec4 wq4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufTail { uint wtail[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufY { vec4 y4[]; };

layout(push_constant) uniform Push {
    uint blocks;
} pc;

#include "grid_loop.glsl"
#include "quant.glsl"

void main() {
    const uint stride = grid_stride();
    const uint per_block = BY_LANE ? LANES : QK / 4u;
    const uint units = pc.blocks * per_block;
    uint u = gl_GlobalInvocationID.x;
    if (u >= units) {
        return;
    }
    for (;;) {
        const uint b = u / per_block, j = u % per_block;
        const uint s = b * BLOCK_BYTES;
        if (BY_LANE) {
            QuantRaw raw = quant_load(s, j);
            vec4 scale, minv;
            quant_scales(raw, s, j, scale, minv);
            [[unroll]] for (uint g = 0u; g < 8u; g++) {
                const uint seg = g / GROUPS_PER_SEG;
                vec4 y = scale[seg] * quant_group(raw, s, j, g);
                if (HAS_MIN) {
                    y -= minv[seg];
                }
                y4[(b * QK + quant_group_pos(j, g)) / 4u] = y;
            }
        } else {
            y4[u] = quant_decode4(s, 4u * j);
        }
        if (!grid_next(u, units, stride)) {
            break;
        }
    }
}
