cd "$(git rev-parse --show-toplevel)"
names="MCL_DTYPE_Q8_0 MCL_DTYPE_Q4_0 MCL_DTYPE_Q4_K MCL_DTYPE_Q5_K MCL_DTYPE_Q6_K"
for K in 0 1 2 3 4; do
  n=$(echo $names | cut -d' ' -f$((K+1)))
  cp /tmp/toq.orig tests/test_ops_quant.c
  sed -i "71,72c static const mcl_dtype all_formats[] = {$n};" tests/test_ops_quant.c
  cp lab/v$K/spirv/* spirv/
  ninja -C build test_ops_quant > /tmp/lc$K.build 2>&1 || { echo build fail $K; tail /tmp/lc$K.build; }
  MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 timeout 600 build/tests/test_ops_quant > lab/lcb$K.txt 2>&1
  echo "K=$K rc=$? failed: $(grep '\[  FAILED  \]' lab/lcb$K.txt | tr '\n' ' ') errors: $(grep ERROR: lab/lcb$K.txt | head -3 | tr '\n' ' ')"
done
cp /tmp/toq.orig tests/test_ops_quant.c
git checkout spirv/
ninja -C build > /dev/null
git status --short
