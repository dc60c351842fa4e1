# train_chars reads its options whole: a value that is not a number, has trailing text or is
# out of range, a missing value and an unknown option each end the program with exit status
# 1 and a line "train_chars: --option ..." that names it, before any file or device is
# touched.
# Control: valid options go past the parsing (they fail on the missing --data file instead).
#   cmake -DEXE=<train_chars> -P example-options.cmake
set(missing "${CMAKE_CURRENT_BINARY_DIR}/no-such-file.txt")
set(bad_runs
  "--steps:abc"  "--steps"
  "--steps:3x"   "--steps"
  "--steps:-1"   "--steps"
  "--steps:99999999999" "--steps"
  "--lr:abc"     "--lr"
  "--lr:nan"     "--lr"
  "--lr:1e-3x"   "--lr"
  "--batch:0"    "--batch"
  "--seed:-1"    "--seed"
  "--temperature:0" "--temperature"
  "--bogus:1"    "--bogus"
  "--reversible=x"  "--reversible"
  "--reversible=-1" "--reversible"
  "--reversible=4x" "--reversible"
  "--reversible:--load:m.bin" "--reversible"
  "--counter=x"     "--counter"
  "--counter=0"     "--counter"
  "--counter=12"    "--counter"
  "--counter:--dim:24" "--counter"
  "--counter:--load:m.bin" "--counter"
  "--counter-lr:abc" "--counter-lr"
  "--counter-lr:-1" "--counter-lr"
  "--steps"      "--steps")
list(LENGTH bad_runs n)
math(EXPR last "${n} - 1")
set(failures 0)
foreach(i RANGE 0 ${last} 2)
  math(EXPR j "${i} + 1")
  list(GET bad_runs ${i} args)
  list(GET bad_runs ${j} option)
  string(REPLACE ":" ";" args "${args}")
  execute_process(COMMAND "${EXE}" --data "${missing}" ${args}
                  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  # The error line, not the usage that may follow it, names the option.
  string(REGEX MATCH "(^|\n)train_chars: ${option}[ :]" named "${err}")
  string(FIND "${err}" "cannot open" opened)
  if(NOT rc EQUAL 1 OR NOT named OR NOT opened EQUAL -1)
    message(SEND_ERROR "train_chars ${args}: exit ${rc}, stderr does not name ${option} "
                       "before anything else:\n${err}")
    math(EXPR failures "${failures} + 1")
  endif()
endforeach()

execute_process(COMMAND "${EXE}" --data "${missing}" --steps 3 --lr 1e-3 --seed 7
                        --temperature 0.5 --min-drop 0.1 --reversible=4 --counter=5
                        --counter-lr 1e-3
                RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
string(FIND "${err}" "cannot open" opened)
if(NOT rc EQUAL 1 OR opened EQUAL -1)
  message(SEND_ERROR "control: valid options were not accepted (exit ${rc}):\n${err}")
  math(EXPR failures "${failures} + 1")
endif()
if(failures GREATER 0)
  message(FATAL_ERROR "${failures} option check(s) failed")
endif()
message(STATUS "train_chars: every malformed option refused by name; the control passed")
