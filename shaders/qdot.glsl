// qdot.glsl: 8-bit integer dot products (VK_KHR_shader_integer_dot_product) and the layout of
// activations quantized to 8 bits (quantize_q8_1.comp), for the integer-dot path of the
// quantized matmul.
//
// glslang 12 (the pinned compiler) has no GL_EXT_integer_dot_product, so the instruction is
// declared through GL_EXT_spirv_intrinsics: OpSDot (SPV_KHR_integer_dot_product, opcode
// 4450) on two 32-bit words of four signed bytes each (PackedVectorFormat4x8Bit = 0), which
// needs the capabilities DotProductInput4x8BitPacked (6018) and DotProduct (6019). A pipeline
// with them is only created where the device feature shaderIntegerDotProduct was enabled.
// Where the device accelerates it this is one instruction (dp4a on NVIDIA, v_dot4_i32_i8 on
// newer AMD). No accumulating form: OpSDotAccSat saturates, which dp4a does not do.
//
// Activations: a [rows, K] f32 is quantized per block of 32 values (block g = row * nb + b):
//   words [8g, 8g + 8)        the 32 codes, 4 per word, element 4i + byte in word i
//   word 8 * blocks + g       the scale d (float bits): value = d * code
//   word 9 * blocks + g       the sum of the 32 codes (int): Q4_0's -8 offset times it is
//                             subtracted once per block instead of once per weight
#ifndef QDOT_GLSL
#define QDOT_GLSL

#extension GL_EXT_spirv_intrinsics : require

spirv_instruction(extensions = ["SPV_KHR_integer_dot_product"], capabilities = [6018, 6019],
                  id = 4450)
int spirv_sdot4x8(uint a, uint b, spirv_literal int packed_vector_format);

// The dot product of the four signed bytes of a and b.
int sdot4x8(uint a, uint b) {
    return spirv_sdot4x8(a, b, 0);
}

// Words of quantized activations per block of 32 values: 8 of codes, 1 scale, 1 sum.
const uint ACT_WORDS_PER_BLOCK = 10u;

#endif
