# Negative control for strict mode: run a device test with no Vulkan driver visible (the
# loader's driver list points at an empty file). Not strict -> it must skip (exit 77).
# Strict -> it must fail (neither 0 nor 77). Anything else means the gate cannot fail.
#   cmake -DTEST_EXE=<device test> -DWORK_DIR=<dir> -P strict-control.cmake
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}/witness")
file(WRITE "${WORK_DIR}/empty.json" "")
set(no_driver
  "VK_ICD_FILENAMES=${WORK_DIR}/empty.json"
  "VK_DRIVER_FILES=${WORK_DIR}/empty.json"
  "MOTIFCL_WITNESS_DIR=${WORK_DIR}/witness")

execute_process(
  COMMAND "${CMAKE_COMMAND}" -E env ${no_driver} MOTIFCL_REQUIRE_VULKAN_COMPUTE=0 "${TEST_EXE}"
  RESULT_VARIABLE relaxed OUTPUT_VARIABLE relaxed_out ERROR_VARIABLE relaxed_out)
execute_process(
  COMMAND "${CMAKE_COMMAND}" -E env ${no_driver} MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 "${TEST_EXE}"
  RESULT_VARIABLE strict OUTPUT_VARIABLE strict_out ERROR_VARIABLE strict_out)

message(STATUS "not strict, no driver: exit ${relaxed}\n${relaxed_out}")
message(STATUS "strict, no driver: exit ${strict}\n${strict_out}")
if(NOT relaxed EQUAL 77)
  message(FATAL_ERROR "without strict mode and without a driver the device test must skip "
                      "(exit 77), it exited ${relaxed}")
endif()
if(strict EQUAL 0 OR strict EQUAL 77)
  message(FATAL_ERROR "in strict mode without a driver the device test must fail, "
                      "it exited ${strict}")
endif()
if(NOT strict_out MATCHES "strict mode")
  message(FATAL_ERROR "the strict-mode failure must say why")
endif()
file(GLOB witness "${WORK_DIR}/witness/*.json")
if(NOT witness)
  message(FATAL_ERROR "the failed strict run wrote no witness")
endif()
file(READ "${witness}" text)
if(NOT text MATCHES "\"result\": \"failed\"")
  message(FATAL_ERROR "the strict run's witness does not record the failure")
endif()
message(STATUS "strict-mode control: skip without strict, fail with strict - as required")
