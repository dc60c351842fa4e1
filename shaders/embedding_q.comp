#version 450
// embedding_q: out[r, :] = row ids[r] of a block-quantised table [V, D], dequantized exactly
// as the CPU reference does it (quant.glsl says why exactness is possible); an id outside
// [0, V) gives a row of zeros. One invocation per 4 output weights (quant_decode4).
//
// A table larger than one binding is bound in row ranges, one dispatch each: this dispatch's
// bindings hold table rows [r0, r0 + part_rows), and it writes only the output rows whose id
// lies there. The one dispatch with `zeros` set also writes the rows of ids outside [0, V).
// So every output row is written by exactly one dispatch, and the dispatches write disjoint
// rows. An id is checked before the table is indexed: a bad id never reads outside the table.
//
//   specialization constants: 0 workgroup size, 1 FORMAT (quant.glsl's FMT_*)
//   set 0: 0 the block bodies of rows [r0, r0 + part_rows) (quant.glsl's device layout),
//     1 their d values (any buffer for Q4_K, Q5_K), 2 ids (int, [rows]), 3 out (f32,
//     [rows, D])
//   push constants: units = rows * D / 4, dim4 = D / 4, vocab = V, r0, part_rows, dlo (the
//     part's block b has its d at the (dlo + b)th half of binding 1), zeros (non-zero: write
//     the rows of bad ids)
#extension GL_EXT_control_flow_attributes : enable
#extension GL_GOOGLE_include_directive : require

layout(local_size_x_id = 0, local_size_x = 256) in;
layout(constant_id = 1) const uint FORMAT = 0;
// quant.glsl's piece decoders (unused here) need a piece size to compile.
const uint PB = 16u;

layout(std430, set = 0, binding = 0) readonly buffer BufQ { uint wq[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufQ2 { uvec2 wq2[]; };
layout(std430, set = 0, binding = 0) readonly buffer BufQ4 { uvec4 wq4[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufD { uint wd[]; };
layout(std430, set = 0, binding = 2) readonly buffer BufIds { int ids[]; };
layout(std430, set = 0, binding = 3) writeonly buffer BufOut { vec4 y4[]; };

layout(push_constant) uniform Push {
    uint units;
    uint dim4;
    uint vocab;
    uint r0;
    uint part_rows;
    uint dlo;
    uint zeros;
} pc;

// After the layout: grid_loop.glsl reads gl_WorkGroupSize.
#include "grid_loop.glsl"
#include "quant.glsl"

void main() {
    const uint stride = grid_stride();
    const uint groups_per_block = QK / 4u;
    for (uint u = gl_GlobalInvocationID.x; u < pc.units;) {
        const uint row = u / pc.dim4;
        const uint g = u - row * pc.dim4;  // the group of 4 weights in the row
        const int id = ids[row];
        // Compared as int first: a negative id must not become a large uint in range.
        const bool valid = id >= 0 && uint(id) < pc.vocab;
        // An id below r0 wraps to a large value and fails the comparison.
        const uint local = uint(id) - pc.r0;
        if (valid && local < pc.part_rows) {
            const uint blk = local * (pc.dim4 / groups_per_block) + g / groups_per_block;
            y4[u] = quant_decode4(blk, pc.dlo + blk, 4u * (g % groups_per_block));
        } else if (!valid && pc.zeros != 0u) {
            y4[u] = vec4(0.0);
        }
        if (!grid_next(u, pc.units, stride)) {
            break;
        }
    }
}
