# Script mode: writes the ABI baseline of the shared library - the libabigail XML (abidw) of
# the exported functions and of the types the public header declares, nothing else, and of
# the stable part only: what the header's MOTIFCL_EXPERIMENTAL section declares (exported
# all the same) is left out by a suppression specification generated from that section
# (abi-experimental.cmake), so the baseline promises nothing about it.
#
# What it proves / guarantees:
#  - the library carries DWARF (abidw reads types from it; without debug info a dump holds
#    only symbol names and every later comparison would silently pass): the build type must
#    be RelWithDebInfo or Debug;
#  - every exported function got a declaration with types in the dump;
#  - the dump is independent of where the tree was checked out or built: no corpus path, no
#    compilation directory, source locations as file name and line only, no DT_NEEDED list
#    (which depends on the toolchain and on sanitizer builds, and which abidiff does not
#    compare anyway). Building twice from different directories gives byte-identical files.
#    Locations are kept on purpose: abidiff --headers-dir2 (used by abi-check.cmake) filters
#    out every change of a baseline type that has no location, so a --no-show-locs baseline
#    would hide struct and enum changes (abi-check.cmake refuses such a baseline). Line
#    numbers are not compared: moving a declaration does not fail the gate;
#  - the dump's functions are exactly the header's stable MCL_API functions: none of the
#    experimental section, none missing.
#
#   cmake -DABIDW=<abidw> -DLIBRARY=<libmotifcl.so.X.Y.Z> -DHEADERS=<repo>/include
#         -DOUT=<repo>/abi/libmotifcl.so.<major>.abi -P abi-dump.cmake
# Normally run as `cmake --build <build> --target abi-baseline`.
cmake_minimum_required(VERSION 3.25...4.1)

foreach(var ABIDW LIBRARY HEADERS OUT)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "abi-dump.cmake: -D${var}=... is required "
                        "(usage: cmake -DABIDW= -DLIBRARY= -DHEADERS= -DOUT= -P abi-dump.cmake)")
  endif()
endforeach()
if(NOT EXISTS "${LIBRARY}")
  message(FATAL_ERROR "abi-dump.cmake: the library ${LIBRARY} does not exist; build it first")
endif()
if(NOT EXISTS "${HEADERS}/motifcl.h")
  message(FATAL_ERROR "abi-dump.cmake: ${HEADERS} does not contain motifcl.h")
endif()

# abidw needs DWARF. A stripped or Release library still has its symbol table, so abidw
# would "succeed" with a dump of names only: refuse that here.
file(STRINGS "${LIBRARY}" debug_sections REGEX "^\\.z?debug_info$")
if(NOT debug_sections)
  message(FATAL_ERROR
    "abi-dump.cmake: ${LIBRARY} has no debug information (.debug_info), so abidw cannot "
    "see its types. Configure the build with -DCMAKE_BUILD_TYPE=RelWithDebInfo (or Debug) "
    "and do not strip it.")
endif()

# Stable, location-free output restricted to the public header:
#   --headers-dir + --drop-private-types  keep only types declared under HEADERS
#   --exported-interfaces-only            only what the ELF symbol table exports
#   --no-corpus-path --no-comp-dir-path   no path of the library or of the build directory
#   --short-locs                          locations and translation units by base name
#   --no-elf-needed                       no DT_NEEDED list (toolchain/sanitizer dependent)
include("${CMAKE_CURRENT_LIST_DIR}/abi-experimental.cmake")
get_filename_component(lib_dir "${LIBRARY}" DIRECTORY)
set(suppressions "${lib_dir}/abi-experimental.supp")
motifcl_write_experimental_suppressions("${HEADERS}/motifcl.h" "${suppressions}")
motifcl_api_sections("${HEADERS}/motifcl.h" api)

set(tmp "${OUT}.tmp")
get_filename_component(out_dir "${OUT}" DIRECTORY)
file(MAKE_DIRECTORY "${out_dir}")
file(REMOVE "${tmp}")
execute_process(
  COMMAND "${ABIDW}"
          --headers-dir "${HEADERS}" --drop-private-types --exported-interfaces-only
          --no-corpus-path --no-comp-dir-path --short-locs --no-elf-needed
          --suppressions "${suppressions}" --out-file "${tmp}" "${LIBRARY}"
  RESULT_VARIABLE rc
  OUTPUT_VARIABLE out
  ERROR_VARIABLE out)
if(NOT rc EQUAL 0)
  file(REMOVE "${tmp}")
  message(FATAL_ERROR "abi-dump.cmake: abidw failed (exit ${rc}):\n${out}")
endif()
file(READ "${tmp}" xml)

# Sanity of the dump: a corpus with the right SONAME, exported mcl_ functions, and a typed
# declaration for each of them (that is what the DWARF gives).
if(NOT xml MATCHES "<abi-corpus[^>]* soname='libmotifcl\\.so\\.[0-9]+'")
  file(REMOVE "${tmp}")
  message(FATAL_ERROR "abi-dump.cmake: the dump of ${LIBRARY} has no libmotifcl SONAME")
endif()
string(REGEX MATCHALL "<elf-symbol name='[^']*' type='func-type'" func_syms "${xml}")
string(REGEX MATCHALL "<function-decl name='[^']*'" func_decls "${xml}")
list(LENGTH func_syms n_syms)
list(LENGTH func_decls n_decls)
if(n_syms EQUAL 0)
  file(REMOVE "${tmp}")
  message(FATAL_ERROR "abi-dump.cmake: ${LIBRARY} exports no functions")
endif()
if(n_decls LESS n_syms)
  file(REMOVE "${tmp}")
  message(FATAL_ERROR
    "abi-dump.cmake: ${LIBRARY} exports ${n_syms} functions but abidw found typed "
    "declarations for only ${n_decls}: the debug information is missing or partial. Build "
    "with -DCMAKE_BUILD_TYPE=RelWithDebInfo (or Debug).")
endif()

# The dump holds the stable functions, all of them, and nothing of the experimental section.
set(dumped "")
foreach(sym IN LISTS func_syms)
  string(REGEX REPLACE "^<elf-symbol name='([^']*)'.*" "\\1" sym "${sym}")
  list(APPEND dumped "${sym}")
endforeach()
list(SORT dumped)
set(missing ${api_STABLE_FUNCTIONS})
list(REMOVE_ITEM missing ${dumped})
set(extra ${dumped})
list(REMOVE_ITEM extra ${api_STABLE_FUNCTIONS})
if(missing OR extra)
  file(REMOVE "${tmp}")
  list(JOIN missing ", " missing)
  list(JOIN extra ", " extra)
  message(FATAL_ERROR
    "abi-dump.cmake: the dump's functions are not the header's stable MCL_API functions.\n"
    "  stable but not in the dump: ${missing}\n"
    "  in the dump but not stable (experimental, or not declared): ${extra}")
endif()
foreach(type IN LISTS api_EXPERIMENTAL_TYPES)
  if(xml MATCHES "name='${type}'")
    file(REMOVE "${tmp}")
    message(FATAL_ERROR "abi-dump.cmake: the experimental type ${type} is in the dump")
  endif()
endforeach()

# abi-check.cmake relies on the public types carrying their header as location.
if(NOT xml MATCHES "filepath='motifcl\\.h'")
  file(REMOVE "${tmp}")
  message(FATAL_ERROR "abi-dump.cmake: the dump has no declaration located in motifcl.h: "
                      "either the headers are not those of the library or locations are off")
endif()

# No absolute path of this machine may leak into a file that is committed.
get_filename_component(hdr_dir "${HEADERS}" ABSOLUTE)
get_filename_component(src_dir "${hdr_dir}" DIRECTORY)
foreach(path IN ITEMS "${lib_dir}" "${src_dir}")
  string(FIND "${xml}" "${path}/" at)
  if(NOT at EQUAL -1)
    file(REMOVE "${tmp}")
    message(FATAL_ERROR "abi-dump.cmake: the dump contains the absolute path ${path}; "
                        "the baseline would depend on where it was built")
  endif()
endforeach()

file(RENAME "${tmp}" "${OUT}")
list(LENGTH api_EXPERIMENTAL_FUNCTIONS n_experimental)
message(STATUS "abi-dump: wrote ${OUT} (${n_syms} stable exported functions; the "
               "${n_experimental} experimental ones left out)")
