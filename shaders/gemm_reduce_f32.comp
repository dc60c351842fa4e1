#version 450
// gemm_reduce_f32: the second step of a split-K GEMM. c[i] = sum over slices s of
// partial[s * total + i] (+ bias[i % N]), for i in [0, total), total = batches * M * N.
//   specialization constants: 0 workgroup size
//   set 0: 0 partial, 1 bias (any buffer when unused), 2 c
//   push constants: total, N, slices, has_bias
layout(local_size_x_id = 0) in;

layout(std430, set = 0, binding = 0) readonly buffer BufP { float partial[]; };
layout(std430, set = 0, binding = 1) readonly buffer BufBias { float bias[]; };
layout(std430, set = 0, binding = 2) writeonly buffer BufC { float c[]; };

layout(push_constant) uniform Push {
    uint total, N, slices, has_bias;
} pc;

void main() {
    const uint stride = gl_NumWorkGroups.x * gl_WorkGroupSize.x;
    for (uint i = gl_GlobalInvocationID.x; i < pc.total; i += stride) {
        float sum = pc.has_bias != 0u ? bias[i % pc.N] : 0.0;
        for (uint s = 0; s < pc.slices; s++) {
            sum += partial[s * pc.total + i];
        }
        c[i] = sum;
        if (stride >= pc.total - i) {
            break;
        }
    }
}
