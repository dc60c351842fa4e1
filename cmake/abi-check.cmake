# Script mode: the ABI gate. Compares the committed baseline (abi/libmotifcl.so.<major>.abi,
# written by abi-dump.cmake) with the shared library just built, counting only the public
# stable ABI: exported functions and the types of the public header, less what its
# MOTIFCL_EXPERIMENTAL section declares. That section is read from the header under test and
# turned into a libabigail suppression specification (abi-experimental.cmake) that drops
# those functions and types from both sides of every comparison: a change there passes, a
# change anywhere else is judged as below.
#
# What it proves: the library that would ship has exactly the ABI recorded in abi/.
#  - incompatible change -> fails: undo it, or bump the major version and regenerate the
#    baseline. Incompatible is abidiff's bit 8 (a removed function or variable, a changed
#    SONAME) and also any change abidiff calls harmful (a changed struct layout, parameter or
#    return type, enumerator value): libabigail 2.x sets only bit 4 for those, yet they break
#    existing callers just as surely;
#  - compatible change only (added functions or variables, or changes abidiff classes as
#    harmless, such as an enumerator appended to an enum) -> fails too, asking for the
#    baseline to be regenerated and committed, so that the baseline always equals what ships;
#  - no change -> passes.
# Every exported stable function counts, whether its types come from motifcl.h or from
# system headers (a parameter changed from uint32_t to uint64_t is incompatible).
# A function or type of the baseline that the header now declares experimental fails the
# gate: moving stable API into the experimental section would otherwise hide its removal.
# It refuses a library without debug information (abidiff would then compare symbol names
# only and miss every type change), a baseline without source locations (abidiff's
# --headers-dir2 filter would then hide every type change) and a baseline written for another
# architecture.
#
#   cmake -DABIDIFF=<abidiff> -DBASELINE=<abi/libmotifcl.so.N.abi>
#         -DLIBRARY=<libmotifcl.so.X.Y.Z> -DHEADERS=<repo>/include -P abi-check.cmake
# abidiff's exit status is a bit set: 1 error, 2 usage error, 4 ABI change, 8 incompatible.
cmake_minimum_required(VERSION 3.25...4.1)

foreach(var ABIDIFF BASELINE LIBRARY HEADERS)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "abi-check.cmake: -D${var}=... is required (usage: cmake -DABIDIFF= "
                        "-DBASELINE= -DLIBRARY= -DHEADERS= -P abi-check.cmake)")
  endif()
endforeach()

# The build directory is the one holding the library (the motifcl target is defined at the
# top level); used only to print the exact command to run.
get_filename_component(build_dir "${LIBRARY}" DIRECTORY)
set(regen "cmake --build ${build_dir} --target abi-baseline")

if(NOT EXISTS "${BASELINE}")
  message(FATAL_ERROR
    "abi-check: no ABI baseline at ${BASELINE}.\n"
    "Create it from a RelWithDebInfo (or Debug) build with\n"
    "    ${regen}\n"
    "then review and commit abi/ (see abi/README.md). A new major version needs a new "
    "baseline file, named after the new SONAME.")
endif()
if(NOT EXISTS "${LIBRARY}")
  message(FATAL_ERROR "abi-check: the library ${LIBRARY} does not exist; build it first")
endif()
if(NOT EXISTS "${HEADERS}/motifcl.h")
  message(FATAL_ERROR "abi-check: ${HEADERS} does not contain motifcl.h")
endif()

# Without DWARF, abidiff silently compares the symbol tables only: a changed struct or a
# changed parameter type would pass. Refuse that.
file(STRINGS "${LIBRARY}" debug_sections REGEX "^\\.z?debug_info$")
if(NOT debug_sections)
  message(FATAL_ERROR
    "abi-check: ${LIBRARY} has no debug information (.debug_info), so the ABI of its types "
    "cannot be checked. Configure with -DCMAKE_BUILD_TYPE=RelWithDebInfo (or Debug).")
endif()
file(STRINGS "${BASELINE}" located REGEX "filepath='motifcl\\.h'" LIMIT_COUNT 1)
if(NOT located)
  message(FATAL_ERROR
    "abi-check: the baseline ${BASELINE} has no source locations (or no type of motifcl.h); "
    "abidiff would ignore every type change against it. Regenerate it with\n    ${regen}")
endif()

# The experimental section, dropped from the comparison. The baseline was dumped without it
# (abi-dump.cmake); what it holds is stable and may not be declared experimental now.
include("${CMAKE_CURRENT_LIST_DIR}/abi-experimental.cmake")
set(suppressions "${build_dir}/abi-experimental.supp")
motifcl_write_experimental_suppressions("${HEADERS}/motifcl.h" "${suppressions}")
motifcl_api_sections("${HEADERS}/motifcl.h" api)
file(READ "${BASELINE}" baseline_xml)
set(demoted "")
foreach(fn IN LISTS api_EXPERIMENTAL_FUNCTIONS)
  if(baseline_xml MATCHES "<elf-symbol name='${fn}'")
    list(APPEND demoted "function ${fn}")
  endif()
endforeach()
foreach(type IN LISTS api_EXPERIMENTAL_TYPES)
  if(baseline_xml MATCHES " name='${type}'")
    list(APPEND demoted "type ${type}")
  endif()
endforeach()
if(demoted)
  list(JOIN demoted ", " demoted)
  message(FATAL_ERROR
    "abi-check: incompatible ABI change against ${BASELINE}: ${demoted} is stable in the "
    "baseline but declared in the MOTIFCL_EXPERIMENTAL section of ${HEADERS}/motifcl.h. "
    "Stable API cannot become experimental within a major version: move it back, or bump "
    "MOTIFCL_VERSION_MAJOR and regenerate the baseline with\n    ${regen}\n(If the baseline "
    "was written without leaving the experimental section out, regenerate it the same way.)")
endif()

# The baseline side is already restricted to the public header (abi-dump.cmake).
# --no-default-suppression: the verdict must not depend on suppression files of the machine
# or of the user (~/.abignore); the only suppressions are those of the experimental section,
# generated above from the header. Two views of the new side are compared:
#  - restricted to the public header with --headers-dir2, like the baseline. But abidiff then
#    also filters every change whose type is declared outside that directory, and the
#    fixed-width typedefs live in system headers: a parameter changed from uint32_t to
#    uint64_t is silently dropped (tested with libabigail 2.2);
#  - unrestricted: nothing is filtered by location. Private structs (mcl_context's layout)
#    are declaration-only in the baseline, so at most they show up as harmless
#    "declaration-only -> defined" changes, which the harmful-only report leaves out.
# A harmful change in either view counts. Harmless changes are looked for in the restricted
# view only (the unrestricted one always has the declaration-only ones).
set(common_args --no-default-suppression --drop-private-types --exported-interfaces-only
                --suppressions "${suppressions}")
set(public_args ${common_args} --headers-dir2 "${HEADERS}")

# run_abidiff(<abidiff options...>): sets rc and report; stops on a tool error.
macro(run_abidiff)
  execute_process(
    COMMAND "${ABIDIFF}" ${ARGN} "${BASELINE}" "${LIBRARY}"
    RESULT_VARIABLE rc
    OUTPUT_VARIABLE report
    ERROR_VARIABLE report)
  if(NOT rc MATCHES "^[0-9]+$")
    message(FATAL_ERROR "abi-check: could not run ${ABIDIFF}: ${rc}\n${report}")
  endif()
  math(EXPR bit_error "${rc} & 3")
  if(bit_error)
    message(FATAL_ERROR "abi-check: abidiff failed (exit ${rc}: bit 1 = error, "
                        "bit 2 = usage error), so there is no ABI verdict:\n${report}")
  endif()
  if(report MATCHES "architecture changed")
    message(FATAL_ERROR
      "abi-check: the baseline ${BASELINE} was written for another architecture than "
      "${LIBRARY}; an ABI baseline is per architecture. Run the gate on the baseline's "
      "architecture (or add a baseline for this one).\n${report}")
  endif()
endmacro()

# classify(<prefix>): from rc and report, sets <prefix>_verdict ("", compatible or
# incompatible), <prefix>_reason and <prefix>_report.
macro(classify prefix)
  math(EXPR bit_change "${rc} & 4")
  math(EXPR bit_incompatible "${rc} & 8")
  set(${prefix}_verdict "")
  set(${prefix}_reason "")
  set(${prefix}_report "${report}")
  if(bit_incompatible)
    set(${prefix}_verdict incompatible)
    set(${prefix}_reason "abidiff exit ${rc}: bit 8, a removed symbol or a changed SONAME")
  elseif(bit_change)
    # Bit 4 alone covers both additions and harmful type changes: tell them apart with the
    # summary lines ("Functions changes summary: 0 Removed, 1 Changed, 0 Added function").
    string(REGEX MATCHALL "[^\n]*changes summary:[^\n]*" summaries "${report}")
    set(removed_or_changed 0)
    foreach(line IN LISTS summaries)
      if(line MATCHES "(^|[^0-9])[1-9][0-9]* (Removed|Changed)")
        set(removed_or_changed 1)
      endif()
    endforeach()
    if(NOT summaries)
      set(${prefix}_verdict incompatible)
      set(${prefix}_reason "abidiff exit ${rc}, and its report could not be classified")
    elseif(removed_or_changed)
      set(${prefix}_verdict incompatible)
      string(CONCAT ${prefix}_reason "abidiff exit ${rc}: bit 4 with changed or removed "
             "interfaces - a harmful type change (layout, size, parameter or return type, "
             "enumerator value)")
    else()
      set(${prefix}_verdict compatible)
      set(${prefix}_reason "abidiff exit ${rc}: additions only")
    endif()
  endif()
endmacro()

run_abidiff(${public_args})
classify(public)
run_abidiff(${common_args})
classify(full)
set(verdict "")
foreach(view public full)
  if(${view}_verdict STREQUAL "incompatible" AND NOT verdict STREQUAL "incompatible")
    set(verdict incompatible)
    set(reason "${${view}_reason}")
    set(report "${${view}_report}")
  elseif(${view}_verdict STREQUAL "compatible" AND verdict STREQUAL "")
    set(verdict compatible)
    set(reason "${${view}_reason}")
    set(report "${${view}_report}")
  endif()
endforeach()
if(verdict STREQUAL "")
  # Harmless changes too (an enumerator appended, ...): compatible, but the baseline must
  # still be brought up to date.
  run_abidiff(${public_args} --harmless)
  math(EXPR bit_change "${rc} & 12")
  if(bit_change)
    set(verdict compatible)
    set(reason "abidiff --harmless exit ${rc}: only changes abidiff classes as harmless")
  endif()
endif()

if(verdict STREQUAL "incompatible")
  message(FATAL_ERROR
    "abi-check: incompatible ABI change against ${BASELINE} (${reason}): programs built "
    "against the baseline would break. Either undo the change, or bump MOTIFCL_VERSION_MAJOR "
    "in include/motifcl.h (the SONAME follows) and regenerate the baseline with\n"
    "    ${regen}\n"
    "(Only if the change is compatible by design, e.g. a field taken out of a `reserved` "
    "array of a size-versioned descriptor, regenerate without a major bump and say why in "
    "the commit.)\nabidiff report:\n${report}")
elseif(verdict STREQUAL "compatible")
  message(FATAL_ERROR
    "abi-check: compatible change against ${BASELINE} (${reason}); existing programs keep "
    "working. The baseline must equal the shipped ABI: regenerate the baseline with\n"
    "    ${regen}\n"
    "and commit abi/ together with the change.\nabidiff report:\n${report}")
endif()
list(LENGTH api_EXPERIMENTAL_FUNCTIONS n_experimental)
message(STATUS "abi-check: ${LIBRARY} matches ${BASELINE}: no ABI change (the "
               "${n_experimental} experimental functions not compared)")
