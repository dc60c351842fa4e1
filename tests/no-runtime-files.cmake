# The library reads no file of its own at run time: its SPIR-V is compiled in. Runs a program
# under strace and fails if any file it opened successfully is a shader (.spv, .comp, .glsl)
# or lies in the source tree. Negative control first: the same check on `cmake -E cat` of a
# checked-in .spv must catch that open, or the check could not fail.
#   cmake -DSTRACE=<strace> -DPROGRAM=<exe> -DSOURCE_DIR=<repo> -DBINARY_DIR=<build>
#         -DWORK_DIR=<dir> -P ...
file(MAKE_DIRECTORY "${WORK_DIR}")

function(opened_files out_var log)
  file(STRINGS "${log}" lines REGEX "open")
  set(found "")
  foreach(line IN LISTS lines)
    # Successful opens only: failed ones end in "= -1 ENOENT (...)". (The failure test comes
    # first: a second MATCHES in one if() would reset CMAKE_MATCH_1.)
    if(line MATCHES "= -1 ")
      continue()
    endif()
    if(line MATCHES "\"([^\"]+)\"")
      list(APPEND found "${CMAKE_MATCH_1}")
    endif()
  endforeach()
  set(${out_var} "${found}" PARENT_SCOPE)
endfunction()

function(offending out_var files)
  set(bad "")
  foreach(f IN LISTS files)
    # The build tree may lie inside the source tree: the library itself is loaded from there.
    string(FIND "${f}" "${SOURCE_DIR}/" in_source)
    string(FIND "${f}" "${BINARY_DIR}/" in_build)
    if(f MATCHES "\\.(spv|comp|glsl)$" OR (in_source EQUAL 0 AND NOT in_build EQUAL 0))
      list(APPEND bad "${f}")
    endif()
  endforeach()
  set(${out_var} "${bad}" PARENT_SCOPE)
endfunction()

file(GLOB spv "${SOURCE_DIR}/spirv/*.spv")
list(GET spv 0 one_spv)
execute_process(COMMAND "${STRACE}" -f -e trace=open,openat -o "${WORK_DIR}/control.log"
                        "${CMAKE_COMMAND}" -E cat "${one_spv}"
                OUTPUT_QUIET ERROR_QUIET RESULT_VARIABLE rc)
opened_files(files "${WORK_DIR}/control.log")
offending(bad "${files}")
if(NOT bad)
  message(FATAL_ERROR "negative control: reading ${one_spv} was not detected (strace rc ${rc})")
endif()

execute_process(COMMAND "${STRACE}" -f -e trace=open,openat -o "${WORK_DIR}/program.log"
                        "${PROGRAM}"
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${PROGRAM} failed under strace (exit ${rc}):\n${out}")
endif()
opened_files(files "${WORK_DIR}/program.log")
offending(bad "${files}")
list(LENGTH files count)
if(bad)
  list(JOIN bad "\n  " text)
  message(FATAL_ERROR "the program opened files of the library at run time:\n  ${text}")
endif()
message(STATUS "${count} files opened, none a shader or in the source tree")
