#version 450
// mean_reduce_f32: out[0] = sum(loss[r] for valid rows) / count(valid rows), or 0 when no row
// is valid (a batch of padding gives 0, not NaN). The second dispatch of mcl_cross_entropy.
// One workgroup; each invocation sums its strided rows with Kahan compensation (`precise`
// stops a driver from reassociating the correction away), then a shared-memory tree adds the
// partials in a fixed order: the result is the same on every run.
//
//   workgroup size : specialization constant 0, a power of 2
//   set 0 binding 0: rows (readonly  float[], [2, N]: loss, then valid as 1.0 / 0.0)
//   set 0 binding 1: out  (writeonly float[], [1])
//   push constants : { uint rows; }
layout(local_size_x_id = 0, local_size_x = 256) in;

layout(std430, set = 0, binding = 0) readonly buffer BufRows { float row_in[]; };
layout(std430, set = 0, binding = 1) writeonly buffer BufOut { float dst[]; };

layout(push_constant) uniform Push { uint rows; } pc;

const uint WG = gl_WorkGroupSize.x;

shared float red_sum[WG];
shared uint red_count[WG];

void main() {
    const uint tid = gl_LocalInvocationID.x;
    precise float sum = 0.0;
    precise float carry = 0.0;
    uint count = 0u;
    for (uint r = tid; r < pc.rows; r += WG) {
        if (row_in[pc.rows + r] != 0.0) {
            precise float y = row_in[r] - carry;
            precise float next = sum + y;
            carry = (next - sum) - y;
            sum = next;
            count++;
        }
    }
    red_sum[tid] = sum;
    red_count[tid] = count;
    barrier();
    for (uint width = WG / 2u; width > 0u; width /= 2u) {
        if (tid < width) {
            red_sum[tid] += red_sum[tid + width];
            red_count[tid] += red_count[tid + width];
        }
        barrier();
    }
    if (tid == 0u) {
        dst[0] = red_count[0] > 0u ? red_sum[0] / float(red_count[0]) : 0.0;
    }
}
