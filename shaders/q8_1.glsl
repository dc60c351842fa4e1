// q8_1.glsl: quantization of activations to 8 bits per block of 32 values for the
// integer-dot path (ggml's q8_1 idea; layout in qdot.glsl): d = amax * (1/127), code =
// round(x / d), ties away from zero, so that codes lie in -127..127; the block's code sum
// beside. Eight invocations per block, a vec4 each, meeting in shared memory. The reciprocal
// of d gets one Newton step so that it is the correctly rounded 1/d in all but rare cases
// (Vulkan's division is only within 2.5 ulp), which keeps the codes equal to a CPU
// reference's almost everywhere.
//
// The includer declares `layout(local_size_x_id = 0) in;` (a multiple of 8 invocations) and
// a writeonly uint buffer `act`, and calls q8_1_store from uniform control flow. A 2-D
// workgroup, or another output buffer, defines before including: Q8_LID (the invocation's
// lane, default gl_LocalInvocationID.x), Q8_LANES_ALL (the lanes, default gl_WorkGroupSize.x)
// and Q8_OUT (the buffer's array, default act).
#ifndef Q8_1_GLSL
#define Q8_1_GLSL

#extension GL_EXT_control_flow_attributes : enable

#ifndef Q8_LID
#define Q8_LID gl_LocalInvocationID.x
#endif
#ifndef Q8_LANES_ALL
#define Q8_LANES_ALL gl_WorkGroupSize.x
#endif
#ifndef Q8_OUT
#define Q8_OUT act
#endif

const uint Q8_LANES = 8u;  // invocations per block
shared float q_amax[Q8_LANES_ALL];
shared int q_sum[Q8_LANES_ALL];

// 1/127 rounded to float (0x1.020408p-7): a product with it is correctly rounded everywhere.
const float INV127 = 7.87401572e-3;

// round(v), halves away from zero, as C's roundf. v - trunc(v) is exact.
float round_away(float v) {
    float t = trunc(v);
    return abs(v - t) >= 0.5 ? t + sign(v) : t;
}

// The code word of v, values 4j .. 4j + 3 of a block (j = this invocation's lane, the block's
// eight lanes consecutive invocations), and the block's scale d in every lane; the lanes'
// code sums are left in q_sum for q8_1_block_sum. Called from uniform control flow.
uint q8_1_word(vec4 v, out float d) {
    const uint lid = Q8_LID, j = lid % Q8_LANES, first = lid - j;
    const vec4 a = abs(v);
    q_amax[lid] = max(max(a.x, a.y), max(a.z, a.w));
    barrier();
    float amax = 0.0;
    [[unroll]] for (uint k = 0u; k < Q8_LANES; k++) {
        amax = max(amax, q_amax[first + k]);
    }
    d = amax * INV127;
    float id = 0.0;
    if (d != 0.0) {
        id = 1.0 / d;
        id = fma(id, fma(-d, id, 1.0), id);
    }
    const ivec4 q = ivec4(vec4(round_away(v.x * id), round_away(v.y * id),
                               round_away(v.z * id), round_away(v.w * id)));
    q_sum[lid] = (q.x + q.y) + (q.z + q.w);
    barrier();
    return uint(q.x & 0xFF) | uint(q.y & 0xFF) << 8 | uint(q.z & 0xFF) << 16 |
           uint(q.w & 0xFF) << 24;
}

// The code sum of this invocation's block, after q8_1_word.
int q8_1_block_sum() {
    const uint first = Q8_LID - Q8_LID % Q8_LANES;
    int sum = 0;
    [[unroll]] for (uint k = 0u; k < Q8_LANES; k++) {
        sum += q_sum[first + k];
    }
    return sum;
}

// Quantize v, values 4j .. 4j + 3 of block g, into Q8_OUT of `blocks` blocks: codes at
// [8g + j], the scale at [8 blocks + g], the code sum at [9 blocks + g]. `valid` false: a lane
// past the data, which takes part in the barriers and writes nothing.
void q8_1_store(vec4 v, uint g, bool valid, uint blocks) {
    const uint j = Q8_LID % Q8_LANES;
    float d;
    const uint word = q8_1_word(v, d);
    if (valid) {
        Q8_OUT[Q8_LANES * g + j] = word;
    }
    if (j == 0u && valid) {
        Q8_OUT[8u * blocks + g] = floatBitsToUint(d);
        Q8_OUT[9u * blocks + g] = uint(q8_1_block_sum());
    }
    // No barrier here: a next call's write of q_amax comes after this call's second barrier,
    // which every read of q_amax precedes, and its write of q_sum after its own first.
}

#endif
