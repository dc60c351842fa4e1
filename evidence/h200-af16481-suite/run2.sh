# The same machine and build folder right after run.sh (its ctest had run out of time with
# test_allocator and test_allocator.polaris not finished): those two, strict, sync validation.
cd /tmp/b && mkdir -p $OUT/t2 && MOTIFCL_VALIDATION=sync MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 MOTIFCL_WITNESS_DIR=$OUT/t2 timeout 85 ctest -j4 -R "test_allocator" --output-on-failure > $OUT/t2/ctest.log 2>&1; echo "exit $?"; tail -8 $OUT/t2/ctest.log
