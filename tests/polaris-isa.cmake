# The RX 580's compiler on the RX 580's kernels, with no RX 580: Mesa's RADV compiles for a
# Polaris GPU without the hardware (RADV_FORCE_FAMILY=polaris10 makes a "null" device that
# compiles and cannot run). Every variant in tests/data/polaris-kernels.txt (what the polaris
# profile chooses: scripts/polaris-kernels.sh) must compile without spilling registers.
# Negative control: a variant far past the register file (8 rows of x, 8 rows of W, 4 pieces
# in flight, Q6_K) must be reported as spilling and fail the tool.
# The gate exists where RADV is installed (tests/CMakeLists.txt).
#   cmake -DISA=<motifcl-isa> -DRADV_ICD=<radeon_icd json> -DLIST=<list> -DWORK_DIR=<dir>
#         -P polaris-isa.cmake
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")
set(radv_env "VK_ICD_FILENAMES=${RADV_ICD}" "VK_DRIVER_FILES=${RADV_ICD}"
    RADV_FORCE_FAMILY=polaris10 MOTIFCL_DEVICE_PROFILE=)
set(witness_dir "$ENV{MOTIFCL_WITNESS_DIR}")
if(NOT witness_dir)
  set(witness_dir "${WORK_DIR}")
endif()

execute_process(
  COMMAND "${CMAKE_COMMAND}" -E env ${radv_env} "${ISA}" --device polaris
          --witness-dir "${witness_dir}" "${LIST}"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message(STATUS "exit ${rc}\n${out}")
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "a polaris kernel variant failed to compile or spilled (above)")
endif()
if(NOT out MATCHES "POLARIS10" OR NOT out MATCHES "all compiled without spills")
  message(FATAL_ERROR "the compile check did not run on RADV's Polaris device")
endif()

file(WRITE "${WORK_DIR}/control.txt" "kernel gemv_q [x=64,4,8,8,2,4,16,0]\n")
execute_process(
  COMMAND "${CMAKE_COMMAND}" -E env ${radv_env} "${ISA}" --device polaris
          "${WORK_DIR}/control.txt"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
message(STATUS "control: exit ${rc}\n${out}")
if(NOT rc EQUAL 1 OR NOT out MATCHES "spills")
  message(FATAL_ERROR "the control variant must be reported as spilling (exit 1)")
endif()
