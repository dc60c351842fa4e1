#version 450
// bench_peak_f32: an arithmetic reference of motifcl-bench, as bench_stream_f32 is the memory
// one: CHAINS independent chains of FP32 fused multiply-adds per invocation, acc = fma(acc,
// x, y) (2 FLOP each), in registers, and one store per invocation at the end. Each step's
// operand is the chain's own result, so nothing can be hoisted out of the loop; x and y come
// from push constants, so nothing can be folded. (bench_peak_dot.comp is the same with 8-bit
// dot products.)
//   specialization constants: 0 workgroup size
//   set 0: 0 out (one word per invocation)
//   push constants: trips of the loop, x and y (float bits), unused
#extension GL_EXT_control_flow_attributes : enable

layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) writeonly buffer BufOut { uint result[]; };

layout(push_constant) uniform Push {
    uint iterations;
    uint x, y, w;
} pc;

const uint CHAINS = 16u;
// Steps of every chain per trip of the loop: 64 operations a trip keep the loop's own
// instructions (a counter, a compare, a branch) to a few percent of the issue slots.
const uint STEPS = 4u;

void main() {
    const uint id = gl_GlobalInvocationID.x;
    const float x = uintBitsToFloat(pc.x), y = uintBitsToFloat(pc.y);
    float acc[CHAINS];
    [[unroll]] for (uint c = 0u; c < CHAINS; c++) {
        acc[c] = float(id + c);
    }
    for (uint i = 0u; i < pc.iterations; i++) {
        [[unroll]] for (uint r = 0u; r < STEPS; r++) {
            [[unroll]] for (uint c = 0u; c < CHAINS; c++) {
                acc[c] = fma(acc[c], x, y);
            }
        }
    }
    float s = 0.0;
    [[unroll]] for (uint c = 0u; c < CHAINS; c++) {
        s += acc[c];
    }
    result[id] = floatBitsToUint(s);
}
