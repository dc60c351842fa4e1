#version 450
// gemv_q_dot_norm: the integer-dot GEMV (gemv_q_dot.glsl) whose product is added to the
// residual stream x, and whose last workgroup then runs the RMSNorm of x and quantizes it for
// the next integer-dot products (gemv_q.glsl, "Norm epilogue"): a decode step's residual add,
// norm and quantization without a dispatch of their own.
//
//   set 0: 0 quantized a, 1 W bodies, 2 W's d values, 3 bias, 4 the norm's weight [N],
//     5 x [M, N] (read and written), 6 a counter (one uint, 0 between dispatches),
//     7 the normed x [M, N], 8 its quantization (q8_1.glsl's layout, M * N / 32 blocks)
//   push constants: gemv_q_dot's, then the norm's eps
#extension GL_GOOGLE_include_directive : require

#define GEMV_NORM
#include "gemv_q_dot.glsl"
