#version 450
// dequant_q: y = the f32 values of a block-quantised tensor (mcl_dequantize_tensor), exactly
// as the CPU reference computes them (quant.glsl says why exactness is possible).
//
// PIECES: one invocation per piece of a block (piece_load / piece_values, the GEMVs' fields
// and positions, PB bytes of codes a piece for Q8_0 and Q4_0); otherwise one invocation per
// 4 weights (quant_decode4, the GEMM's). Both exist so that the test suite can hold each
// decoder to the CPU reference bit for bit.
//
//   specialization constants: 0 workgroup size, 1 FORMAT (quant.glsl's FMT_*), 2 PIECES,
//     3 PB
//   set 0: 0 the block bodies (quant.glsl's device layout), 1 the d values (any buffer for
//     Q4_K, Q5_K), 2 y (f32)
//   push constants: number of blocks, dlo (block b's d is the (dlo + b)th half of binding 1)
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0) in;
layout(constant_id = 1) const uint FORMAT = 0;
layout(constant_id = 2) const bool PIECES = true;
layout(constant_id = 3) const uint PB = 16;

layout(std430, set = 0, binding = 0) readonly buffer BufQ { uint wq[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufQ2 { uvec2 wq2[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufQ4 { uvec4 wq4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufD { uint wd[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufY { vec4 y4[]; };

layout(push_constant) uniform Push {
    uint blocks;
    uint dlo;
} pc;

#include "grid_loop.glsl"
#include "quant.glsl"

void main() {
    const uint stride = grid_stride();
    const uint per_block = PIECES ? PPB : QK / 4u;
    const uint units = pc.blocks * per_block;
    uint u = gl_GlobalInvocationID.x;
    if (u >= units) {
        return;
    }
    for (;;) {
        const uint b = u / per_block, j = u % per_block;
        if (PIECES) {
            uint r[RP];
            piece_load(b, pc.dlo + b, j, r);
            [[unroll]] for (uint g = 0u; g < PIECE_GROUPS; g++) {
                y4[(b * QK + piece_pos(j, g)) / 4u] = piece_values(r, j, g);
            }
        } else {
            y4[u] = quant_decode4(b, pc.dlo + b, 4u * j);
        }
        if (!grid_next(u, units, stride)) {
            break;
        }
    }
}
