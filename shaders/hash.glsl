// The 32-bit integer hash that MotifCL uses wherever a GPU and a CPU reference must agree bit
// for bit (MEMORY_NATIVE.md): x ^= x >> 16; x *= 0x7feb352d; x ^= x >> 15; x *= 0x846ca68b;
// x ^= x >> 16. tests/ref has the same function in C.
uint mcl_hash(uint x) {
    x ^= x >> 16;
    x *= 0x7feb352du;
    x ^= x >> 15;
    x *= 0x846ca68bu;
    x ^= x >> 16;
    return x;
}
