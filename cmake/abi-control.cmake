# Negative control of the ABI gate (run as the ctest test gate_abi_control): shows that the
# very check gate_abi runs (abi-check.cmake against the committed baseline) FAILS with the
# incompatible verdict for four deliberately broken libraries, fails with the compatible
# verdict for a compatible change, and PASSES for the same copy unmodified and for two
# changes confined to the header's MOTIFCL_EXPERIMENTAL section. Without it a gate
# that can never fail would look green. It caught three such holes while the gate was
# written: a baseline without source locations hid every type change from abidiff
# --headers-dir2; abidiff 2.x does not set its incompatible bit (8) for a changed struct
# layout; and --headers-dir2 drops changes of system typedefs (uint32_t -> uint64_t).
#
# Method (one configure, one full build, seven incremental rebuilds; about a minute on 2
# cores):
#  1. copy the library's sources (CMakeLists.txt, cmake/, include/, src/, spirv/, shaders/;
#     not tests/, examples/, tools/) into WORK_DIR/src and configure them once in
#     WORK_DIR/build (RelWithDebInfo, tests/tools/examples off, the project's C compiler);
#  2. positive control: build the unmodified copy and require abi-check to pass. This proves
#     that the copy, its build directory and its configuration are not by themselves an ABI
#     difference, so the failures below can only come from the mutations. (The main build's
#     library is not reused for this: it may differ in options, and the mutants are built
#     here, so the fair comparison is a copy built here. Its cost is one build; the mutants
#     then only recompile what includes motifcl.h.)
#  3. mutant (a): remove MCL_API from the declaration of mcl_finish, so the symbol is no
#     longer exported (a removed function);
#  4. mutant (b): insert a uint32_t after `size` in mcl_device_info, a struct the API takes by
#     pointer (every later field moves);
#  5. mutant (c): widen the second parameter of mcl_tensor_dim from uint32_t to uint64_t (in
#     the header and in its definition): a type from a system header, which abidiff
#     --headers-dir2 alone filters out;
#  6. mutant (d), the other verdict: append an enumerator to mcl_status, a compatible change
#     (libabigail calls it harmless); abi-check must fail asking to regenerate the baseline,
#     and must not call it incompatible;
#  7. mutant (e), the experimental part: widen the second parameter of mcl_gpt_param (in the
#     header's experimental section and in its definition) from uint32_t to uint64_t, the
#     change (c) makes to a stable function: abi-check must PASS, while abidiff between the
#     unmodified and this library with no suppression at all must report mcl_gpt_param (so
#     the pass comes from ignoring the experimental part, not from a change nobody sees);
#  8. mutant (f), likewise: insert a field after `size` in the experimental mcl_gpt_desc, the
#     change (b) makes to a stable struct: abi-check must PASS, abidiff alone report it;
#  9. mutant (g): move the declaration of mcl_finish into the experimental section (still
#     exported): abi-check must fail as incompatible, naming mcl_finish as stable in the
#     baseline, so that the section cannot be used to hide the removal of stable API.
#     For each mutant the header is rewritten from the pristine one, only the motifcl target
#     is rebuilt, the library must have changed (else the rebuild missed the mutation), and
#     abi-check (reading the mutated header, as the gate reads the header the library was
#     built from) must give the expected verdict and name the mutated entity.
# Each mutation is a checked string(REGEX REPLACE): if its pattern no longer matches the
# header, the control fails instead of silently testing nothing.
#
#   cmake -DABIDIFF=<abidiff> -DBASELINE=<abi/libmotifcl.so.N.abi> -DSOURCE_DIR=<repo>
#         -DWORK_DIR=<scratch dir> -DC_COMPILER=<cc> [-DABIDW=<abidw>] -P abi-control.cmake
# (ABIDW is accepted but not needed: the control only runs the check, which uses abidiff.)
cmake_minimum_required(VERSION 3.25...4.1)

foreach(var ABIDIFF BASELINE SOURCE_DIR WORK_DIR C_COMPILER)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "abi-control.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT EXISTS "${BASELINE}")
  message(FATAL_ERROR "abi-control: no baseline at ${BASELINE}; create it first with "
                      "`cmake --build <build> --target abi-baseline` (see abi/README.md)")
endif()

set(copy "${WORK_DIR}/src")
set(build "${WORK_DIR}/build")
set(check_script "${SOURCE_DIR}/cmake/abi-check.cmake")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${copy}")

# --- 1. copy and configure -------------------------------------------------------------
foreach(item IN ITEMS CMakeLists.txt cmake include src spirv shaders tools/support)
  get_filename_component(parent "${copy}/${item}" DIRECTORY)
  if(EXISTS "${SOURCE_DIR}/${item}")
    file(COPY "${SOURCE_DIR}/${item}" DESTINATION "${parent}")
  elseif(item MATCHES "^(CMakeLists.txt|include|src|tools/support)$")
    message(FATAL_ERROR "abi-control: ${SOURCE_DIR}/${item} is missing")
  endif()
endforeach()

set(generator_args "")
if(NOT DEFINED ENV{CMAKE_GENERATOR})
  find_program(NINJA_PROGRAM NAMES ninja ninja-build)
  if(NINJA_PROGRAM)
    set(generator_args -G Ninja)
  endif()
endif()
cmake_host_system_information(RESULT jobs QUERY NUMBER_OF_LOGICAL_CORES)
if(NOT jobs GREATER 0)
  set(jobs 2)
endif()

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "abi-control: ${what} failed (exit ${rc}):\n${out}")
  endif()
endfunction()

string(TIMESTAMP t0 "%s")
run_step("configuring the copy"
  "${CMAKE_COMMAND}" -S "${copy}" -B "${build}" ${generator_args}
  -DCMAKE_BUILD_TYPE=RelWithDebInfo "-DCMAKE_C_COMPILER=${C_COMPILER}"
  -DMOTIFCL_BUILD_TESTS=OFF -DMOTIFCL_BUILD_TOOLS=OFF -DMOTIFCL_BUILD_EXAMPLES=OFF
  -DMOTIFCL_WERROR=OFF -DMOTIFCL_SANITIZE=OFF)

set(header "${copy}/include/motifcl.h")
file(READ "${header}" pristine)

# Builds the motifcl target of the copy; returns the path of the library and its hash.
function(build_library out_lib out_hash)
  run_step("building the copy's motifcl target"
    "${CMAKE_COMMAND}" --build "${build}" --target motifcl --config RelWithDebInfo
    --parallel ${jobs})
  # Single-config generators put it at the top; multi-config ones in a per-config folder.
  file(GLOB lib "${build}/libmotifcl.so" "${build}/RelWithDebInfo/libmotifcl.so")
  list(LENGTH lib n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "abi-control: the copy's build produced no ${build}/libmotifcl.so")
  endif()
  file(SHA256 "${lib}" hash)
  set(${out_lib} "${lib}" PARENT_SCOPE)
  set(${out_hash} "${hash}" PARENT_SCOPE)
endfunction()

# Runs exactly the gate's check; returns its exit code and output.
function(run_check lib out_rc out_text)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" "-DABIDIFF=${ABIDIFF}" "-DBASELINE=${BASELINE}"
            "-DLIBRARY=${lib}" "-DHEADERS=${copy}/include" -P "${check_script}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE text)
  set(${out_rc} "${rc}" PARENT_SCOPE)
  set(${out_text} "${text}" PARENT_SCOPE)
endfunction()

# --- 2. positive control: the unmodified copy passes -----------------------------------
build_library(lib pristine_hash)
file(REAL_PATH "${lib}" pristine_real)
set(pristine_copy "${WORK_DIR}/libmotifcl-unmodified.so")
file(COPY_FILE "${pristine_real}" "${pristine_copy}")
run_check("${lib}" rc text)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR
    "abi-control: the UNMODIFIED copy already fails the ABI check, so the negative controls "
    "below would prove nothing. Either the baseline is stale (run gate_abi) or building in "
    "another directory changes the ABI dump:\n${text}")
endif()
message(STATUS "abi-control: unmodified copy passes the check (positive control)")

# --- 3.-9. mutants ------------------------------------------------------------------------
# mutate(<name> <verdict the check must give, or "passes"> <entity its report must name>
#        <header regex> <header replacement> [<source regex> <source replacement>])
# The source pair, when given, is applied to the one .c file under src/ that it matches (the
# definition that must change along with the declaration). Files are restored afterwards.
function(mutate name verdict entity regex replacement)
  string(REGEX REPLACE "${regex}" "${replacement}" mutated "${pristine}")
  if(mutated STREQUAL pristine)
    message(FATAL_ERROR
      "abi-control: mutation '${name}' found nothing to change in include/motifcl.h "
      "(pattern: ${regex}). The header changed shape: update the pattern in "
      "cmake/abi-control.cmake so that the control still tests something.")
  endif()
  set(source "")
  if(ARGC GREATER 6)
    set(src_regex "${ARGV5}")
    set(src_replacement "${ARGV6}")
    file(GLOB_RECURSE candidates "${copy}/src/*.c")
    foreach(candidate IN LISTS candidates)
      file(READ "${candidate}" text)
      string(REGEX REPLACE "${src_regex}" "${src_replacement}" changed "${text}")
      if(NOT changed STREQUAL text)
        list(APPEND source "${candidate}")
        set(source_pristine "${text}")
        set(source_mutated "${changed}")
      endif()
    endforeach()
    list(LENGTH source n)
    if(NOT n EQUAL 1)
      message(FATAL_ERROR
        "abi-control: mutation '${name}' must change exactly one file under src/, it matches "
        "${n} (pattern: ${src_regex}). Update the pattern in cmake/abi-control.cmake.")
    endif()
    file(WRITE "${source}" "${source_mutated}")
  endif()
  file(WRITE "${header}" "${mutated}")
  build_library(mutant_lib mutant_hash)
  if(mutant_hash STREQUAL pristine_hash)
    message(FATAL_ERROR "abi-control: mutation '${name}': the rebuilt library is identical "
                        "to the unmodified one; the rebuild did not pick up the mutation")
  endif()
  # The check reads the header the library was built from, as the gate does (which part is
  # experimental is the header's to say).
  run_check("${mutant_lib}" rc text)
  file(WRITE "${header}" "${pristine}")
  if(source)
    file(WRITE "${source}" "${source_pristine}")
  endif()
  string(REGEX REPLACE "\n" "\n    | " quoted "${text}")
  if(verdict STREQUAL "passes")
    # An experimental change: the gate must let it through, and it must be a real ABI change
    # (abidiff between the unmodified and the mutant library, with no suppression at all,
    # names it), so the pass comes from the suppression and not from a change nobody sees.
    if(NOT rc EQUAL 0)
      message(FATAL_ERROR "abi-control: mutation '${name}' changes only the experimental "
                          "section, yet the ABI check FAILED:\n    | ${quoted}")
    endif()
    execute_process(
      COMMAND "${ABIDIFF}" --no-default-suppression --drop-private-types
              --exported-interfaces-only "${pristine_copy}" "${mutant_lib}"
      RESULT_VARIABLE raw_rc OUTPUT_VARIABLE raw ERROR_VARIABLE raw)
    string(REGEX REPLACE "\n" "\n    | " raw_quoted "${raw}")
    if(NOT raw_rc MATCHES "^[0-9]+$" OR raw_rc EQUAL 0 OR NOT raw MATCHES "${entity}")
      message(FATAL_ERROR "abi-control: mutation '${name}' passed the check, but abidiff "
                          "without suppressions does not report ${entity} either (exit "
                          "${raw_rc}): the control proves nothing.\n    | ${raw_quoted}")
    endif()
    message(STATUS "abi-control: mutation '${name}' passes the check, as required, while "
                   "abidiff without the experimental suppressions reports it (exit "
                   "${raw_rc}):\n    | ${raw_quoted}")
    return()
  endif()
  if(rc EQUAL 0)
    message(FATAL_ERROR "abi-control: mutation '${name}' PASSED the ABI check: the gate "
                        "cannot detect it.\n    | ${quoted}")
  endif()
  if(NOT text MATCHES "${verdict}")
    message(FATAL_ERROR "abi-control: mutation '${name}' failed the check, but without the "
                        "verdict '${verdict}':\n    | ${quoted}")
  endif()
  if(verdict STREQUAL "compatible change" AND text MATCHES "incompatible ABI change")
    message(FATAL_ERROR "abi-control: mutation '${name}' is compatible, but the check "
                        "called it incompatible:\n    | ${quoted}")
  endif()
  if(NOT text MATCHES "${entity}")
    message(FATAL_ERROR "abi-control: mutation '${name}' failed the check, but the report "
                        "does not name '${entity}': it failed for another reason:"
                        "\n    | ${quoted}")
  endif()
  message(STATUS "abi-control: mutation '${name}' is rejected with '${verdict}', as "
                 "required. The check said:\n    | ${quoted}")
endfunction()

set(ws "[ \t\r\n]")
# (a) mcl_finish is no longer exported: a function removed from the ABI (abidiff bit 8).
mutate("unexport mcl_finish" "incompatible ABI change" "mcl_finish"
  "MCL_API(${ws}+mcl_status${ws}+mcl_finish${ws}*\\()" "\\1")
# (b) a field inserted in the middle of a struct passed by pointer: its layout changes
# (abidiff 2.x sets only bit 4 for this; the check must still call it incompatible).
mutate("insert a field in mcl_device_info" "incompatible ABI change" "abi_control_inserted"
  "(typedef struct mcl_device_info${ws}*{[^}]*size_t${ws}+size;)"
  "\\1 uint32_t abi_control_inserted;")
# (c) a parameter widened from uint32_t to uint64_t, declaration and definition alike: the
# typedefs come from system headers, which abidiff --headers-dir2 alone would not see.
mutate("widen a parameter of mcl_tensor_dim" "incompatible ABI change" "mcl_tensor_dim"
  "(MCL_API${ws}+int64_t${ws}+mcl_tensor_dim${ws}*\\([^,)]*,${ws}*)uint32_t" "\\1uint64_t"
  "(int64_t${ws}+mcl_tensor_dim${ws}*\\([^,)]*,${ws}*)uint32_t" "\\1uint64_t")
# (d) an enumerator appended to mcl_status: compatible, but the baseline must follow.
mutate("append an enumerator to mcl_status" "compatible change" "MCL_ABI_CONTROL_APPENDED"
  "(typedef enum mcl_status${ws}*{[^}]*[0-9]),?(${ws}*}${ws}*mcl_status;)"
  "\\1,\n    MCL_ABI_CONTROL_APPENDED = 999\\2")

# (e) the stable part's gate ignores the experimental part: a parameter of the experimental
# mcl_gpt_param widened from uint32_t to uint64_t (declaration and definition) - the change
# that (c) shows is incompatible for a stable function - passes.
mutate("widen a parameter of the experimental mcl_gpt_param" "passes" "mcl_gpt_param"
  "(MCL_API${ws}+mcl_status${ws}+mcl_gpt_param${ws}*\\([^,)]*,${ws}*)uint32_t" "\\1uint64_t"
  "(mcl_status${ws}+mcl_gpt_param${ws}*\\([^,)]*,${ws}*)uint32_t" "\\1uint64_t")
# (f) likewise a field inserted into the experimental mcl_gpt_desc - the change that (b)
# shows is incompatible for a stable struct - passes.
mutate("insert a field in the experimental mcl_gpt_desc" "passes" "mcl_gpt_desc"
  "(typedef struct mcl_gpt_desc${ws}*{[^}]*size_t${ws}+size;)"
  "\\1 uint32_t abi_control_inserted;")
# (g) but the experimental section is no hiding place for stable API: mcl_finish moved from
# the stable part into it (still exported, now outside the promise) is incompatible. (The
# line left behind keeps the declarations after it on new lines, so the rebuilt library's
# debug information shows that the mutated header was compiled.)
# (CMake wraps the check's message at spaces: `sep` matches a space or a line break.)
set(sep "[ \n|]+")
set(demoted_report "function${sep}mcl_finish${sep}is${sep}stable${sep}in${sep}the${sep}baseline")
set(finish_decl "MCL_API${ws}+mcl_status${ws}+mcl_finish${ws}*\\([^)]*\\)${ws}*;")
set(section_end "\n#endif /\\* MOTIFCL_EXPERIMENTAL \\*/")
mutate("move mcl_finish into the experimental section" "incompatible ABI change"
  "${demoted_report}" "(${finish_decl})(.*)(${section_end})" "\n\\2\\1\\3")

string(TIMESTAMP t1 "%s")
math(EXPR seconds "${t1} - ${t0}")
message(STATUS "abi-control: the ABI gate passes the unmodified library, rejects the four "
               "incompatible mutants as incompatible and the compatible one as compatible, "
               "and passes the two changes of the experimental section (${seconds} s)")
