# Negative control for the SPIR-V drift gate (cmake/spirv.cmake MODE=check):
# proves on copies of the tree that the check passes when it should and fails,
# naming the module, when it should.
#
#   cmake -DSOURCE_DIR=<repo> -DGLSLANG=<glslangValidator> -DSPIRV_VAL=<spirv-val>
#         -DWORK_DIR=<scratch dir> -P cmake/spirv-drift-selftest.cmake
#
# Uses only <WORK_DIR>/spirv-drift-selftest/ (emptied first). Cases (a) and (a2)
# copy shaders/, spirv/ and cmake/ of SOURCE_DIR whole; the tampering cases (b)
# to (h) copy a small tree instead: cmake/, every shaders/*.glsl, the first
# three modules by name and a manifest that regen writes for them (checked to
# leave their .spv bytes alone), so that each case compiles three modules, not
# all of them. Each case changes its copy and runs
# `${CMAKE_COMMAND} -DMODE=check ... -P <copy>/cmake/spirv.cmake`:
#   (a) untouched copy                       -> passes ("all match"); this also
#       proves the bytes do not depend on where the tree lives
#   (a2) regen on an untouched copy          -> passes, changes no byte
#   (b) one shader's code changed            -> fails, "spirv/<m>.spv is stale"
#   (b2) regen on that copy, then check      -> passes again
#   (c) one .spv deleted                     -> fails, "spirv/<m>.spv is missing"
#   (d) -DPINNED_GLSLANG_VERSION=<wrong>     -> fails with pinned/found versions
#   (e) one byte flipped mid-.spv            -> fails naming spirv/<m>.spv
#   (e2) spirv-embed on that copy            -> fails naming <m>.spv
#   (f) a .spv without a source              -> fails, "has no source"
#   (g) manifest.json hash hand-edited       -> fails naming manifest.json
#   (h) spirv-embed on the untouched copies  -> succeeds
# FATAL_ERROR if any expectation is not met; prints every case and a closing
# "spirv-drift-selftest: N passed, M failed" line.

cmake_minimum_required(VERSION 3.24)

if(NOT DEFINED SOURCE_DIR OR SOURCE_DIR STREQUAL "")
  message(FATAL_ERROR " spirv-drift-selftest: pass -DSOURCE_DIR=<repository root>")
endif()
get_filename_component(SOURCE_DIR "${SOURCE_DIR}" ABSOLUTE)
if(NOT DEFINED WORK_DIR OR WORK_DIR STREQUAL "")
  message(FATAL_ERROR " spirv-drift-selftest: pass -DWORK_DIR=<scratch folder>")
endif()
get_filename_component(WORK_DIR "${WORK_DIR}" ABSOLUTE)
if(NOT DEFINED GLSLANG OR GLSLANG STREQUAL "")
  find_program(GLSLANG NAMES glslangValidator)
endif()
if(NOT DEFINED SPIRV_VAL OR SPIRV_VAL STREQUAL "")
  find_program(SPIRV_VAL NAMES spirv-val)
endif()
foreach(tool GLSLANG SPIRV_VAL)
  if(NOT ${tool} OR NOT EXISTS "${${tool}}")
    message(FATAL_ERROR " spirv-drift-selftest: ${tool} not found (\"${${tool}}\"); pass -D${tool}=<path>")
  endif()
endforeach()

set(st "${WORK_DIR}/spirv-drift-selftest")
file(REMOVE_RECURSE "${st}")
file(MAKE_DIRECTORY "${st}")

# The module the cases tamper with: the first shader by name.
file(GLOB comps LIST_DIRECTORIES false "${SOURCE_DIR}/shaders/*.comp")
list(SORT comps)
if(NOT comps)
  message(FATAL_ERROR " spirv-drift-selftest: no shaders/*.comp in ${SOURCE_DIR}")
endif()
list(GET comps 0 first_comp)
get_filename_component(mod "${first_comp}" NAME_WE)
list(LENGTH comps n_modules)

execute_process(COMMAND "${GLSLANG}" --version OUTPUT_VARIABLE vout RESULT_VARIABLE rc)
string(REGEX MATCH "^Glslang Version: ([^\r\n]*)" _ "${vout}")
set(found_version "${CMAKE_MATCH_1}")
if(NOT rc EQUAL 0 OR found_version STREQUAL "")
  message(FATAL_ERROR " spirv-drift-selftest: cannot read the version of ${GLSLANG}")
endif()

set(n_pass 0)
set(n_fail 0)
set(failures "")

# Copy shaders/, spirv/, cmake/ into ${st}/<case>/ and return the folder.
function(st_copy case out_var)
  set(dir "${st}/${case}")
  file(MAKE_DIRECTORY "${dir}")
  foreach(sub shaders spirv cmake)
    file(COPY "${SOURCE_DIR}/${sub}" DESTINATION "${dir}")
  endforeach()
  set(${out_var} "${dir}" PARENT_SCOPE)
endfunction()

# Copy the small tree (${small}, made below) into ${st}/<case>/.
function(st_copy_small case out_var)
  set(dir "${st}/${case}")
  file(MAKE_DIRECTORY "${dir}")
  foreach(sub shaders spirv cmake)
    file(COPY "${small}/${sub}" DESTINATION "${dir}")
  endforeach()
  set(${out_var} "${dir}" PARENT_SCOPE)
endfunction()

# Run spirv.cmake in <dir>; returns exit code and merged stdout+stderr.
function(st_run_spirv dir mode rc_var out_var)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -DMODE=${mode} "-DSOURCE_DIR=${dir}"
            "-DGLSLANG=${GLSLANG}" "-DSPIRV_VAL=${SPIRV_VAL}" "-DWORK_DIR=${dir}-work"
            ${ARGN} -P "${dir}/cmake/spirv.cmake"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(${rc_var} "${rc}" PARENT_SCOPE)
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

function(st_run_embed dir rc_var out_var)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" "-DSPIRV_DIR=${dir}/spirv"
            "-DOUT_C=${dir}-embed/mcl_spirv.c" "-DOUT_H=${dir}-embed/mcl_spirv.h"
            -P "${dir}/cmake/spirv-embed.cmake"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(${rc_var} "${rc}" PARENT_SCOPE)
  set(${out_var} "${out}" PARENT_SCOPE)
endfunction()

# Record one expectation. want: "pass" or "fail"; ARGN: strings that must all
# appear in the output (no semicolons in them).
function(st_expect label want rc out)
  set(ok TRUE)
  set(why "")
  if(want STREQUAL "pass" AND NOT rc EQUAL 0)
    set(ok FALSE)
    set(why "expected success, got exit code ${rc}")
  elseif(want STREQUAL "fail" AND rc EQUAL 0)
    set(ok FALSE)
    set(why "expected failure, got exit code 0")
  endif()
  foreach(needle IN LISTS ARGN)
    string(FIND "${out}" "${needle}" at)
    if(at EQUAL -1)
      set(ok FALSE)
      string(APPEND why "; output lacks \"${needle}\"")
    endif()
  endforeach()
  string(REGEX REPLACE "^; " "" why "${why}")
  if(ok)
    message(STATUS "ok    ${label}")
    math(EXPR n "${n_pass} + 1")
    set(n_pass ${n} PARENT_SCOPE)
  else()
    message(STATUS "FAIL  ${label}: ${why}")
    string(REPLACE "\n" "\n    | " shown "${out}")
    message(STATUS "    | ${shown}")
    math(EXPR n "${n_fail} + 1")
    set(n_fail ${n} PARENT_SCOPE)
    set(failures "${failures}\n  ${label}: ${why}" PARENT_SCOPE)
  endif()
endfunction()

# file:// URL for an absolute path (for file(DOWNLOAD ... RANGE_*)).
function(st_file_url path out_var)
  string(REPLACE "%" "%25" p "${path}")
  string(REPLACE " " "%20" p "${p}")
  string(REPLACE "#" "%23" p "${p}")
  string(REPLACE "?" "%3F" p "${p}")
  if(p MATCHES "^/")
    set(${out_var} "file://${p}" PARENT_SCOPE)
  else()
    set(${out_var} "file:///${p}" PARENT_SCOPE)
  endif()
endfunction()

# Flip one bit of one byte near the middle of <file>, in place. CMake cannot
# write NUL bytes from a string, so the file is reassembled from byte ranges of
# itself (file(DOWNLOAD file://... RANGE_START/RANGE_END)) around a one-byte
# file, with `cmake -E cat`; the result is verified byte for byte.
function(st_flip_byte file tmpdir desc_var)
  file(SIZE "${file}" size)
  file(READ "${file}" hex HEX)
  math(EXPR k "${size} / 2")
  set(found FALSE)
  while(k LESS size)
    math(EXPR hpos "${k} * 2")
    string(SUBSTRING "${hex}" ${hpos} 2 byte)
    math(EXPR v "0x${byte}")
    # writable replacement: v ^ 1 must not be NUL, LF or CR
    if(v LESS 32 AND NOT v EQUAL 1 AND NOT v EQUAL 11 AND NOT v EQUAL 12)
      set(found TRUE)
      break()
    endif()
    math(EXPR k "${k} + 1")
  endwhile()
  if(NOT found)
    message(FATAL_ERROR " spirv-drift-selftest: no byte to flip in ${file}")
  endif()
  math(EXPR nv "${v} ^ 1")
  math(EXPR last "${size} - 1")
  math(EXPR before "${k} - 1")
  math(EXPR after "${k} + 1")
  file(MAKE_DIRECTORY "${tmpdir}")
  file(COPY_FILE "${file}" "${tmpdir}/orig.bin")
  st_file_url("${tmpdir}/orig.bin" url)
  file(DOWNLOAD "${url}" "${tmpdir}/head.bin" RANGE_START 0 RANGE_END ${before} STATUS s1)
  file(DOWNLOAD "${url}" "${tmpdir}/tail.bin" RANGE_START ${after} RANGE_END ${last} STATUS s2)
  string(ASCII ${nv} ch)
  file(WRITE "${tmpdir}/byte.bin" "${ch}")
  execute_process(COMMAND "${CMAKE_COMMAND}" -E cat "${tmpdir}/head.bin" "${tmpdir}/byte.bin" "${tmpdir}/tail.bin"
    OUTPUT_FILE "${tmpdir}/flipped.bin" RESULT_VARIABLE rc)
  # verify: same size, only byte k differs, and it is nv
  if(EXISTS "${tmpdir}/flipped.bin")
    file(READ "${tmpdir}/flipped.bin" newhex HEX)
  else()
    set(newhex "")
  endif()
  math(EXPR hpos "${k} * 2")
  math(EXPR hrest "${hpos} + 2")
  string(SUBSTRING "${hex}" 0 ${hpos} h1)
  string(SUBSTRING "${hex}" ${hrest} -1 h3)
  if(nv LESS 16)
    set(nb "0")
  else()
    set(nb "")
  endif()
  math(EXPR nvhex "${nv}" OUTPUT_FORMAT HEXADECIMAL)
  string(REGEX REPLACE "^0x" "" nvhex "${nvhex}")
  string(TOLOWER "${h1}${nb}${nvhex}${h3}" want)
  if(NOT rc EQUAL 0 OR NOT newhex STREQUAL want)
    message(FATAL_ERROR " spirv-drift-selftest: could not build the byte-flipped copy of ${file} (download: ${s1} / ${s2}, cat: ${rc}); the self-test itself is broken, not the gate")
  endif()
  file(COPY_FILE "${tmpdir}/flipped.bin" "${file}")
  set(${desc_var} "byte ${k} of ${size}: 0x${byte} -> 0x${nb}${nvhex}" PARENT_SCOPE)
endfunction()

set(regen_hint "cmake --build <build> --target spirv-regen")
message(STATUS "spirv-drift-selftest: ${n_modules} module(s) in ${SOURCE_DIR}; tampering with ${mod} (shaders/${mod}.comp, spirv/${mod}.spv); glslang ${found_version}")

# (a) untouched copy passes
st_copy(a dir_a)
st_run_spirv("${dir_a}" check rc out)
st_expect("(a) untouched copy at ${dir_a}: check passes" pass "${rc}" "${out}"
  "spirv-check: ${n_modules} modules, all match")

# (a2) regen on an untouched copy changes nothing
st_copy(a2 dir_a2)
st_run_spirv("${dir_a2}" regen rc out)
set(same TRUE)
file(GLOB orig_files "${SOURCE_DIR}/spirv/*")
file(GLOB new_files "${dir_a2}/spirv/*")
list(LENGTH orig_files n1)
list(LENGTH new_files n2)
if(NOT n1 EQUAL n2)
  set(same FALSE)
endif()
foreach(f IN LISTS orig_files)
  get_filename_component(fn "${f}" NAME)
  if(NOT EXISTS "${dir_a2}/spirv/${fn}")
    set(same FALSE)
    continue()
  endif()
  file(SHA256 "${f}" h1)
  file(SHA256 "${dir_a2}/spirv/${fn}" h2)
  if(NOT h1 STREQUAL h2)
    set(same FALSE)
    string(APPEND out "\n(self-test) spirv/${fn} changed")
  endif()
endforeach()
if(NOT same)
  set(rc 1)
endif()
st_expect("(a2) regen on an untouched copy: succeeds and changes no byte of spirv/" pass "${rc}" "${out}"
  "0 updated, 0 removed, manifest unchanged")

# The small tree the remaining cases start from.
set(small "${st}/small")
list(SUBLIST comps 0 3 small_comps)
list(LENGTH small_comps n_small)
file(MAKE_DIRECTORY "${small}/shaders" "${small}/spirv")
file(COPY "${SOURCE_DIR}/cmake" DESTINATION "${small}")
file(GLOB incs LIST_DIRECTORIES false "${SOURCE_DIR}/shaders/*.glsl")
foreach(f IN LISTS incs small_comps)
  file(COPY "${f}" DESTINATION "${small}/shaders")
endforeach()
set(small_names "")
foreach(f IN LISTS small_comps)
  get_filename_component(n "${f}" NAME_WE)
  list(APPEND small_names "${n}")
  file(COPY "${SOURCE_DIR}/spirv/${n}.spv" DESTINATION "${small}/spirv")
endforeach()
st_run_spirv("${small}" regen rc out)
foreach(n IN LISTS small_names)
  file(SHA256 "${SOURCE_DIR}/spirv/${n}.spv" h1)
  file(SHA256 "${small}/spirv/${n}.spv" h2)
  if(NOT h1 STREQUAL h2)
    set(rc 1)
  endif()
endforeach()
if(NOT rc EQUAL 0 OR NOT out MATCHES "${n_small} modules, 0 updated, 0 removed, manifest written")
  message(FATAL_ERROR " spirv-drift-selftest: the small tree (${small_names}) could not be "
    "made: regen gave exit code ${rc} or changed a module; the self-test itself is broken, not "
    "the gate:\n${out}")
endif()
message(STATUS "spirv-drift-selftest: cases (b) to (h) use a tree of ${n_small} modules (${small_names})")

# (b) a shader whose code changed: main() becomes a helper called from a new
# main(), which always adds a function to the module.
st_copy_small(b dir_b)
file(READ "${dir_b}/shaders/${mod}.comp" src)
string(REGEX REPLACE "void[ \t]+main[ \t]*\\([ \t]*\\)" "void mcl_drift_selftest_body()" src2 "${src}")
if(src2 STREQUAL src)
  message(FATAL_ERROR " spirv-drift-selftest: cannot find `void main()` in shaders/${mod}.comp to modify")
endif()
file(WRITE "${dir_b}/shaders/${mod}.comp" "${src2}\nvoid main() { mcl_drift_selftest_body(); }\n")
st_run_spirv("${dir_b}" check rc out)
st_expect("(b) shaders/${mod}.comp code changed: check fails naming spirv/${mod}.spv" fail "${rc}" "${out}"
  "spirv/${mod}.spv is stale: recompiling shaders/${mod}.comp gives different bytes" "run `${regen_hint}`")

# (b2) regen repairs it
st_run_spirv("${dir_b}" regen rc out)
if(rc EQUAL 0)
  st_run_spirv("${dir_b}" check rc out)
endif()
st_expect("(b2) regen on the copy from (b), then check: passes" pass "${rc}" "${out}"
  "spirv-check: ${n_small} modules, all match")

# (c) a deleted .spv
st_copy_small(c dir_c)
file(REMOVE "${dir_c}/spirv/${mod}.spv")
st_run_spirv("${dir_c}" check rc out)
st_expect("(c) spirv/${mod}.spv deleted: check fails naming it" fail "${rc}" "${out}"
  "spirv/${mod}.spv is missing")

# (d) wrong pinned compiler version
st_copy_small(d dir_d)
set(bad_pin "0:0.0.0-drift-selftest")
st_run_spirv("${dir_d}" check rc out "-DPINNED_GLSLANG_VERSION=${bad_pin}")
st_expect("(d) pin ${bad_pin} vs installed ${found_version}: check fails with the version message" fail "${rc}" "${out}"
  "version mismatch" "pinned \"${bad_pin}\"" "found \"${found_version}\"")
st_run_spirv("${dir_d}" regen rc out "-DPINNED_GLSLANG_VERSION=${bad_pin}")
st_expect("(d) same pin: regen refuses" fail "${rc}" "${out}"
  "version mismatch" "refusing to regenerate")

# (e) one byte flipped in the middle of a .spv
st_copy_small(e dir_e)
st_flip_byte("${dir_e}/spirv/${mod}.spv" "${st}/e-flip" flip_desc)
st_run_spirv("${dir_e}" check rc out)
st_expect("(e) spirv/${mod}.spv ${flip_desc}: check fails naming it" fail "${rc}" "${out}"
  "spirv/${mod}.spv")
# (e2) and the build step refuses to embed it
st_run_embed("${dir_e}" rc out)
st_expect("(e2) same copy: spirv-embed refuses, naming ${mod}.spv" fail "${rc}" "${out}"
  "${mod}.spv" "disagrees with")

# (f) a module without a source
st_copy_small(f dir_f)
file(COPY_FILE "${dir_f}/spirv/${mod}.spv" "${dir_f}/spirv/zz_drift_selftest_orphan.spv")
st_run_spirv("${dir_f}" check rc out)
st_expect("(f) spirv/zz_drift_selftest_orphan.spv without source: check fails naming it" fail "${rc}" "${out}"
  "spirv/zz_drift_selftest_orphan.spv has no source")

# (g) manifest hash edited by hand
st_copy_small(g dir_g)
file(READ "${dir_g}/spirv/manifest.json" mj)
file(SHA256 "${dir_g}/spirv/${mod}.spv" mod_sha)
string(REPLACE "\"spv_sha256\": \"${mod_sha}\"" "\"spv_sha256\": \"0000000000000000000000000000000000000000000000000000000000000000\"" mj2 "${mj}")
if(mj2 STREQUAL mj)
  message(FATAL_ERROR " spirv-drift-selftest: spirv/manifest.json has no spv_sha256 ${mod_sha} for ${mod}")
endif()
file(WRITE "${dir_g}/spirv/manifest.json" "${mj2}")
st_run_spirv("${dir_g}" check rc out)
st_expect("(g) spirv/manifest.json spv_sha256 of ${mod} edited: check fails naming it" fail "${rc}" "${out}"
  "spirv/manifest.json: spv_sha256 of spirv/${mod}.spv")

# (h) embedding the untouched copies works
foreach(dir IN ITEMS "${dir_a}" "${small}")
  st_run_embed("${dir}" rc out)
  if(rc EQUAL 0 AND NOT EXISTS "${dir}-embed/mcl_spirv.c")
    set(rc 1)
  endif()
  st_expect("(h) untouched copy ${dir}: spirv-embed succeeds" pass "${rc}" "${out}")
endforeach()

message(STATUS "spirv-drift-selftest: scratch left in ${st}")
message("spirv-drift-selftest: ${n_pass} passed, ${n_fail} failed")
if(n_fail GREATER 0)
  message(FATAL_ERROR " spirv-drift-selftest: the drift gate did not behave as expected:${failures}")
endif()
