# Script mode, the gate_experimental_hidden test: a program that does not define
# MOTIFCL_EXPERIMENTAL sees nothing of motifcl.h's experimental section, and one that does
# sees all of it. The section's contents are read from the header (abi-experimental.cmake),
# so what is checked is what the ABI gate leaves out.
#
#  1. the point: a translation unit that calls mcl_gpt_create, compiled as C11 with
#     -Werror=implicit-function-declaration and without MOTIFCL_EXPERIMENTAL, must FAIL to
#     compile, the compiler naming mcl_gpt_create;
#  2. every experimental function, type and macro is hidden: a translation unit that names
#     each of them must fail without the macro, with a diagnostic for every one;
#  3. positive controls, so that the failures above come from the macro and nothing else:
#     both translation units compile cleanly (-Wall -Wextra -Wpedantic -Werror) with
#     -DMOTIFCL_EXPERIMENTAL, and one that names every stable function compiles without it.
#
#   cmake -DC_COMPILER=<cc> -DHEADERS=<repo>/include -DSOURCE_DIR=<repo> -DWORK_DIR=<dir>
#         -P tests/experimental-hidden.cmake
cmake_minimum_required(VERSION 3.25...4.1)

foreach(var C_COMPILER HEADERS SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "experimental-hidden.cmake: -D${var}=... is required")
  endif()
endforeach()
include("${SOURCE_DIR}/cmake/abi-experimental.cmake")
motifcl_api_sections("${HEADERS}/motifcl.h" api)
if(NOT api_EXPERIMENTAL_FUNCTIONS OR NOT "mcl_gpt_create" IN_LIST api_EXPERIMENTAL_FUNCTIONS)
  message(FATAL_ERROR "experimental-hidden: the MOTIFCL_EXPERIMENTAL section of "
                      "${HEADERS}/motifcl.h declares no mcl_gpt_create: nothing to test")
endif()
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# compile(<source file> <out rc> <out text> <flags...>): C11, syntax only, ASCII messages.
function(compile source out_rc out_text)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env LC_ALL=C "${C_COMPILER}" -std=c11 -fsyntax-only
            "-I${HEADERS}" ${ARGN} "${source}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE text ERROR_VARIABLE text)
  set(${out_rc} "${rc}" PARENT_SCOPE)
  set(${out_text} "${text}" PARENT_SCOPE)
endfunction()
set(strict -Wall -Wextra -Wpedantic -Werror)

# --- 1. a call of mcl_gpt_create ------------------------------------------------------------
set(call_c "${WORK_DIR}/call_gpt_create.c")
file(WRITE "${call_c}" "#include <motifcl.h>\n\nint main(void)\n{\n"
                       "    return mcl_gpt_create(0, 0, 0, 0) != MCL_SUCCESS;\n}\n")
compile("${call_c}" rc text -Werror=implicit-function-declaration)
message(STATUS "without MOTIFCL_EXPERIMENTAL, a call of mcl_gpt_create: exit ${rc}\n${text}")
if(rc EQUAL 0)
  message(FATAL_ERROR "experimental-hidden: a translation unit calling mcl_gpt_create "
                      "COMPILED without MOTIFCL_EXPERIMENTAL: the header declares it anyway")
endif()
if(NOT text MATCHES "implicit declaration of function[^\n]*mcl_gpt_create")
  message(FATAL_ERROR "experimental-hidden: the call of mcl_gpt_create failed to compile, "
                      "but not for its missing declaration:\n${text}")
endif()
compile("${call_c}" rc text -Werror=implicit-function-declaration ${strict}
        -DMOTIFCL_EXPERIMENTAL)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "experimental-hidden: positive control: the call of mcl_gpt_create "
                      "does not compile WITH MOTIFCL_EXPERIMENTAL either:\n${text}")
endif()
message(STATUS "with MOTIFCL_EXPERIMENTAL it compiles (positive control)")

# --- 2. every name of the section -------------------------------------------------------------
set(names_c "${WORK_DIR}/experimental_names.c")
set(body "#include <motifcl.h>\n\n")
foreach(macro IN LISTS api_EXPERIMENTAL_MACROS)
  # Visible exactly when the section is.
  string(APPEND body "#if defined(MOTIFCL_EXPERIMENTAL) != defined(${macro})\n"
                     "#error \"${macro}: visible without MOTIFCL_EXPERIMENTAL or hidden "
                     "with it\"\n#endif\n")
endforeach()
set(n 0)
foreach(type IN LISTS api_EXPERIMENTAL_TYPES)
  string(APPEND body "typedef ${type} *probe_type_${n};\n")
  math(EXPR n "${n} + 1")
endforeach()
string(APPEND body "\nint main(void)\n{\n")
foreach(fn IN LISTS api_EXPERIMENTAL_FUNCTIONS)
  string(APPEND body "    (void)&${fn};\n")
endforeach()
string(APPEND body "    return 0;\n}\n")
file(WRITE "${names_c}" "${body}")
compile("${names_c}" rc text)
if(rc EQUAL 0)
  message(FATAL_ERROR "experimental-hidden: every experimental name COMPILED without "
                      "MOTIFCL_EXPERIMENTAL")
endif()
set(visible "")
foreach(name IN LISTS api_EXPERIMENTAL_FUNCTIONS api_EXPERIMENTAL_TYPES)
  if(NOT text MATCHES "[^A-Za-z0-9_]${name}[^A-Za-z0-9_][^\n]*(undeclared|unknown type name)"
     AND NOT text MATCHES "(undeclared|unknown type name)[^\n]*[^A-Za-z0-9_]${name}[^A-Za-z0-9_]")
    list(APPEND visible "${name}")
  endif()
endforeach()
if(text MATCHES "#error|visible without MOTIFCL_EXPERIMENTAL")
  list(APPEND visible "(a macro)")
endif()
if(visible)
  list(JOIN visible ", " visible)
  message(FATAL_ERROR "experimental-hidden: without MOTIFCL_EXPERIMENTAL the compiler does "
                      "not report these as undeclared: ${visible}\n${text}")
endif()
compile("${names_c}" rc text ${strict} -DMOTIFCL_EXPERIMENTAL)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "experimental-hidden: positive control: the experimental names do not "
                      "compile WITH MOTIFCL_EXPERIMENTAL:\n${text}")
endif()

# --- 3. the stable part stays visible ---------------------------------------------------------
set(stable_c "${WORK_DIR}/stable_names.c")
set(body "#include <motifcl.h>\n\nint main(void)\n{\n")
foreach(fn IN LISTS api_STABLE_FUNCTIONS)
  string(APPEND body "    (void)&${fn};\n")
endforeach()
string(APPEND body "    return 0;\n}\n")
file(WRITE "${stable_c}" "${body}")
compile("${stable_c}" rc text ${strict})
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "experimental-hidden: the stable functions do not all compile without "
                      "MOTIFCL_EXPERIMENTAL:\n${text}")
endif()

list(LENGTH api_EXPERIMENTAL_FUNCTIONS n_fn)
list(LENGTH api_EXPERIMENTAL_TYPES n_types)
list(LENGTH api_EXPERIMENTAL_MACROS n_macros)
list(LENGTH api_STABLE_FUNCTIONS n_stable)
message(STATUS "experimental-hidden: without MOTIFCL_EXPERIMENTAL the ${n_fn} experimental "
               "functions, ${n_types} types and ${n_macros} macros are undeclared (a call of "
               "mcl_gpt_create fails to compile), with it they all compile; the "
               "${n_stable} stable functions compile without it")
