# Script mode, the gate_consumer test: MotifCL packaged and consumed the way users consume it.
#
# What it proves:
#  1. `cmake --install` of the build tree into an empty prefix gives a complete tree: the
#     shared library with SONAME libmotifcl.so.<major> (and its links), the static library,
#     include/motifcl.h (identical to the source), MotifCLConfig.cmake,
#     MotifCLConfigVersion.cmake, MotifCLTargets.cmake and pkgconfig/motifcl.pc; the
#     installed tools (motifcl-info, motifcl-run) start from the prefix without
#     LD_LIBRARY_PATH;
#  2. the shared library exports exactly the functions the header marks MCL_API, all named
#     mcl_* (no volk / vk* / internal symbol leaks);
#  3. motifcl.pc describes the prefix it was installed to (include and lib directories,
#     version), so that pkg-config users of a relocated install get the right flags;
#  4. examples/consumer builds against the prefix with find_package(MotifCL <major>.0) - C,
#     C++17, the static library and consumer_experimental (C with MOTIFCL_EXPERIMENTAL) - and
#     with pkg-config - C, C++17 and consumer_experimental - with -Wall -Wextra -Wpedantic
#     -Werror and the header not treated as a system header (so it is C++-clean); the shared
#     programs need libmotifcl.so.<major>, the static one does not;
#  4b. the experimental section is opt-in: consumer_experimental.c compiled against the
#     installed header WITHOUT MOTIFCL_EXPERIMENTAL (C11, -Werror=implicit-function-declaration)
#     must fail to compile, the compiler naming an mcl_gpt_* declaration it lacks (the
#     builds in 4 are its positive control);
#  5. negative control: find_package(MotifCL <major + 1>.0) - another major version - must
#     fail because the installed version file rejects it, not because the package is missing;
#  6. every program runs (LD_LIBRARY_PATH = the prefix's lib directory): version of library
#     and header agree, an add on the GPU is correct.
# A program that exits 77 found no Vulkan compute device: that part is reported as skipped
# and the test still passes (steps 1-5 are the point), unless MOTIFCL_REQUIRE_VULKAN_COMPUTE=1,
# where it is a failure. (`cmake -P` can only exit 0 or 1, so ctest cannot see a skip code.)
#
#   cmake -DBUILD_DIR=<MotifCL build> -DSOURCE_DIR=<repo> -DWORK_DIR=<scratch dir>
#         -DGENERATOR=<CMake generator of the consumer builds> -P examples/consumer/run.cmake
cmake_minimum_required(VERSION 3.25...4.1)

foreach(var BUILD_DIR SOURCE_DIR WORK_DIR)
  if(NOT DEFINED ${var} OR "${${var}}" STREQUAL "")
    message(FATAL_ERROR "run.cmake: -D${var}=... is required (usage: cmake -DBUILD_DIR= "
                        "-DSOURCE_DIR= -DWORK_DIR= [-DGENERATOR=] -P run.cmake)")
  endif()
endforeach()
if(NOT EXISTS "${BUILD_DIR}/CMakeCache.txt")
  message(FATAL_ERROR "run.cmake: ${BUILD_DIR} is not a configured MotifCL build tree")
endif()
set(strict OFF)
if("$ENV{MOTIFCL_REQUIRE_VULKAN_COMPUTE}" STREQUAL "1")
  set(strict ON)
endif()

# Facts of the build under test.
load_cache("${BUILD_DIR}" READ_WITH_PREFIX main_
  CMAKE_GENERATOR CMAKE_C_COMPILER CMAKE_MAKE_PROGRAM CMAKE_NM CMAKE_READELF CMAKE_OBJDUMP
  CMAKE_INSTALL_INCLUDEDIR MOTIFCL_SANITIZE)
# Binutils: those the build found, else from PATH.
foreach(tool nm readelf objdump)
  string(TOUPPER "${tool}" TOOL)
  set(${tool} "${main_CMAKE_${TOOL}}")
  if(NOT ${tool} OR NOT EXISTS "${${tool}}")
    find_program(${TOOL}_PROGRAM NAMES ${tool})
    set(${tool} "${${TOOL}_PROGRAM}")
  endif()
endforeach()
if(NOT nm)
  message(FATAL_ERROR "run.cmake: nm not found (binutils)")
endif()
if(NOT readelf AND NOT objdump)
  message(FATAL_ERROR "run.cmake: neither readelf nor objdump found (binutils)")
endif()
set(includedir_rel "${main_CMAKE_INSTALL_INCLUDEDIR}")
if(includedir_rel STREQUAL "")
  set(includedir_rel include)
endif()

# The version the header announces.
foreach(part MAJOR MINOR PATCH)
  file(STRINGS "${SOURCE_DIR}/include/motifcl.h" line
       REGEX "^#define MOTIFCL_VERSION_${part} [0-9]+$")
  string(REGEX REPLACE "^#define MOTIFCL_VERSION_${part} " "" v_${part} "${line}")
endforeach()
set(version "${v_MAJOR}.${v_MINOR}.${v_PATCH}")
if(NOT version MATCHES "^[0-9]+\\.[0-9]+\\.[0-9]+$")
  message(FATAL_ERROR "run.cmake: could not read the version from include/motifcl.h")
endif()

set(prefix "${WORK_DIR}/prefix")
file(REMOVE_RECURSE "${WORK_DIR}")
file(MAKE_DIRECTORY "${WORK_DIR}")

# Runs a command; fails the test with its output unless it exits 0.
function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "run.cmake: ${what} failed (exit ${rc}):\n${out}")
  endif()
  set(step_output "${out}" PARENT_SCOPE)
endfunction()

function(require_file path what)
  if(NOT EXISTS "${path}")
    message(FATAL_ERROR "run.cmake: the installed tree lacks ${what}: ${path}")
  endif()
endfunction()

# --- 1. install and inspect the tree ------------------------------------------------------
run_step("cmake --install ${BUILD_DIR} --prefix ${prefix}"
  "${CMAKE_COMMAND}" --install "${BUILD_DIR}" --prefix "${prefix}")

# GNUInstallDirs picks lib, lib64 or lib/<multiarch>: find the one that holds the package.
file(GLOB config_files "${prefix}/*/cmake/MotifCL/MotifCLConfig.cmake"
                       "${prefix}/*/*/cmake/MotifCL/MotifCLConfig.cmake")
list(LENGTH config_files n)
if(NOT n EQUAL 1)
  message(FATAL_ERROR "run.cmake: expected one <libdir>/cmake/MotifCL/MotifCLConfig.cmake "
                      "under ${prefix}, found ${n}: ${config_files}")
endif()
get_filename_component(config_dir "${config_files}" DIRECTORY)
get_filename_component(libdir "${config_dir}/../.." ABSOLUTE)
set(includedir "${prefix}/${includedir_rel}")
set(soname "libmotifcl.so.${v_MAJOR}")

require_file("${libdir}/libmotifcl.so.${version}" "the shared library")
require_file("${libdir}/${soname}" "the SONAME link")
require_file("${libdir}/libmotifcl.so" "the development link")
require_file("${libdir}/libmotifcl.a" "the static library")
require_file("${includedir}/motifcl.h" "the public header")
require_file("${config_dir}/MotifCLConfig.cmake" "the package configuration")
require_file("${config_dir}/MotifCLConfigVersion.cmake" "the package version file")
require_file("${config_dir}/MotifCLTargets.cmake" "the exported targets")
require_file("${libdir}/pkgconfig/motifcl.pc" "the pkg-config file")
# The installed tools start from this prefix with nothing in the environment: their runpath
# finds the library from where they are ($ORIGIN-relative), wherever the prefix is.
file(GLOB tools "${prefix}/*/motifcl-info" "${prefix}/*/motifcl-run")
foreach(tool IN LISTS tools)
  run_step("${tool} --help, from the prefix, without LD_LIBRARY_PATH"
    "${CMAKE_COMMAND}" -E env --unset=LD_LIBRARY_PATH "${tool}" --help)
endforeach()
file(SHA256 "${includedir}/motifcl.h" installed_hash)
file(SHA256 "${SOURCE_DIR}/include/motifcl.h" source_hash)
if(NOT installed_hash STREQUAL source_hash)
  message(FATAL_ERROR "run.cmake: the installed motifcl.h differs from include/motifcl.h "
                      "(is the build tree ${BUILD_DIR} out of date?)")
endif()

# SONAME of the installed shared library.
if(readelf)
  run_step("readelf -d" "${readelf}" -d "${libdir}/${soname}")
  set(soname_regex "\\(SONAME\\)[^\n]*\\[([^]\n]*)\\]")
else()
  run_step("objdump -p" "${objdump}" -p "${libdir}/${soname}")
  set(soname_regex "SONAME[ \t]+([^ \t\n]+)")
endif()
if(NOT step_output MATCHES "${soname_regex}")
  message(FATAL_ERROR "run.cmake: ${libdir}/${soname} has no SONAME:\n${step_output}")
endif()
if(NOT CMAKE_MATCH_1 STREQUAL soname)
  message(FATAL_ERROR "run.cmake: the SONAME is '${CMAKE_MATCH_1}', expected '${soname}'")
endif()
message(STATUS "installed tree complete in ${prefix} (libdir ${libdir}), SONAME ${soname}")

# --- 2. exported symbols --------------------------------------------------------------------
run_step("nm -D --defined-only" "${nm}" -D --defined-only "${libdir}/${soname}")
string(REPLACE "\n" ";" nm_lines "${step_output}")
set(exported "")
set(leaks "")
foreach(line IN LISTS nm_lines)
  if(NOT line MATCHES "^[0-9a-fA-F]* *([A-Za-z]) ([^ @]+)")
    continue()
  endif()
  set(type "${CMAKE_MATCH_1}")
  set(name "${CMAKE_MATCH_2}")
  if(name MATCHES "^mcl_")
    list(APPEND exported "${name}")
  elseif(name MATCHES "^(_init|_fini|_edata|_end|__bss_start)$" AND NOT type MATCHES "^[TtWwi]$")
    # Linker-defined markers that old binutils put in .dynsym; not ours.
  else()
    list(APPEND leaks "${type} ${name}")
  endif()
endforeach()
if(leaks)
  list(JOIN leaks "\n  " leak_text)
  message(FATAL_ERROR "run.cmake: the shared library exports symbols outside the mcl_ "
                      "namespace (volk, Vulkan or internal symbols must stay hidden):\n"
                      "  ${leak_text}")
endif()
# ... and exactly the functions the header declares MCL_API.
file(READ "${includedir}/motifcl.h" header_text)
string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" " " header_text "${header_text}")
string(REGEX REPLACE "//[^\n]*" " " header_text "${header_text}")
string(REGEX MATCHALL "MCL_API[ \t\r\n]+[^;{}()#]*[ *](mcl_[A-Za-z0-9_]+)[ \t\r\n]*\\("
       decls "${header_text}")
set(declared "")
foreach(decl IN LISTS decls)
  string(REGEX MATCH "mcl_[A-Za-z0-9_]+[ \t\r\n]*\\($" fn "${decl}")
  string(REGEX REPLACE "[ \t\r\n]*\\($" "" fn "${fn}")
  list(APPEND declared "${fn}")
endforeach()
list(SORT declared)
list(REMOVE_DUPLICATES declared)
list(SORT exported)
list(REMOVE_DUPLICATES exported)
if(NOT declared)
  message(FATAL_ERROR "run.cmake: found no MCL_API declaration in ${includedir}/motifcl.h")
endif()
if(NOT exported)
  message(FATAL_ERROR "run.cmake: the shared library exports no mcl_ function")
endif()
set(not_exported ${declared})
list(REMOVE_ITEM not_exported ${exported})
set(not_declared ${exported})
list(REMOVE_ITEM not_declared ${declared})
if(not_exported OR not_declared)
  list(JOIN not_exported ", " not_exported)
  list(JOIN not_declared ", " not_declared)
  message(FATAL_ERROR "run.cmake: exported symbols and MCL_API declarations differ.\n"
                      "  declared but not exported: ${not_exported}\n"
                      "  exported but not declared: ${not_declared}")
endif()
list(LENGTH exported n_exported)
message(STATUS "the shared library exports exactly the ${n_exported} MCL_API functions "
               "(the experimental section's included)")

# ... and the static archive defines no global symbol outside mcl_ either: its hidden symbols
# (volk's vk* pointers among them) must be local, or a program with its own Vulkan loader
# links against the wrong vkCreateInstance.
run_step("nm -g --defined-only (static)" "${nm}" -g --defined-only "${libdir}/libmotifcl.a")
string(REPLACE "\n" ";" nm_lines "${step_output}")
set(static_leaks "")
foreach(line IN LISTS nm_lines)
  if(line MATCHES "^[0-9a-fA-F]+ +[A-Za-z] ([^ ]+)$" AND NOT CMAKE_MATCH_1 MATCHES "^mcl_")
    list(APPEND static_leaks "${CMAKE_MATCH_1}")
  endif()
endforeach()
if(static_leaks)
  list(LENGTH static_leaks leak_count)
  list(SUBLIST static_leaks 0 10 leak_head)
  list(JOIN leak_head " " leak_text)
  message(FATAL_ERROR "run.cmake: libmotifcl.a defines ${leak_count} global symbols outside "
                      "mcl_, e.g. ${leak_text}")
endif()
message(STATUS "libmotifcl.a: every global symbol is in the mcl_ namespace")

# --- 3. the pkg-config file describes this prefix ---------------------------------------------
find_program(PKG_CONFIG_EXECUTABLE NAMES pkg-config pkgconf)
if(NOT PKG_CONFIG_EXECUTABLE)
  message(FATAL_ERROR "run.cmake: pkg-config not found (Debian: pkgconf)")
endif()
set(pc_env "PKG_CONFIG_PATH=${libdir}/pkgconfig")
foreach(pair "modversion;--modversion" "includedir;--variable=includedir"
             "libdir;--variable=libdir")
  list(GET pair 0 key)
  list(GET pair 1 option)
  run_step("pkg-config ${option} motifcl"
    "${CMAKE_COMMAND}" -E env "${pc_env}" "${PKG_CONFIG_EXECUTABLE}" "${option}" motifcl)
  string(STRIP "${step_output}" pc_${key})
endforeach()
if(NOT pc_modversion STREQUAL version)
  message(FATAL_ERROR "run.cmake: motifcl.pc says version ${pc_modversion}, the header ${version}")
endif()
file(REAL_PATH "${includedir}" real_includedir)
file(REAL_PATH "${libdir}" real_libdir)
set(pc_wrong "")
foreach(pair "includedir;${real_includedir}" "libdir;${real_libdir}")
  list(GET pair 0 key)
  list(GET pair 1 want)
  set(got "${pc_${key}}")
  if(EXISTS "${got}")
    file(REAL_PATH "${got}" got)
  endif()
  if(NOT got STREQUAL want)
    string(APPEND pc_wrong "\n  ${key}=${pc_${key}} (installed in ${want})")
  endif()
endforeach()
if(pc_wrong)
  file(READ "${libdir}/pkgconfig/motifcl.pc" pc_text)
  message(FATAL_ERROR
    "run.cmake: the installed motifcl.pc does not describe the prefix it was installed to "
    "(${prefix}):${pc_wrong}\nIt bakes in the configure-time CMAKE_INSTALL_PREFIX, so "
    "`cmake --install --prefix <dir>` (or any relocated install) gives pkg-config users "
    "wrong -I/-L flags. Make the .pc relocatable, e.g. prefix=\${pcfiledir}/<relative path "
    "to the prefix> with libdir=\${prefix}/<CMAKE_INSTALL_LIBDIR> and "
    "includedir=\${prefix}/<CMAKE_INSTALL_INCLUDEDIR> (cmake/motifcl.pc.in).\n"
    "motifcl.pc:\n${pc_text}")
endif()
message(STATUS "motifcl.pc: version ${pc_modversion}, includedir and libdir in the prefix")

# --- 4. build the consumer both ways ----------------------------------------------------------
set(consumer_src "${SOURCE_DIR}/examples/consumer")
set(configure_args "")
if(DEFINED GENERATOR AND NOT GENERATOR STREQUAL "")
  list(APPEND configure_args -G "${GENERATOR}")
  # The build tool the MotifCL build found, when the consumer uses the same generator.
  if(GENERATOR STREQUAL main_CMAKE_GENERATOR AND main_CMAKE_MAKE_PROGRAM)
    list(APPEND configure_args "-DCMAKE_MAKE_PROGRAM=${main_CMAKE_MAKE_PROGRAM}")
  endif()
endif()
if(main_CMAKE_C_COMPILER)
  list(APPEND configure_args "-DCMAKE_C_COMPILER=${main_CMAKE_C_COMPILER}")
endif()
# Only this prefix may provide MotifCL: no package registry, no stale system install.
list(APPEND configure_args -DCMAKE_FIND_USE_PACKAGE_REGISTRY=OFF
                           -DCMAKE_FIND_USE_SYSTEM_PACKAGE_REGISTRY=OFF)
if(main_MOTIFCL_SANITIZE)
  # A sanitized libmotifcl needs its runtime loaded first: build the consumers the same way.
  set(san -fsanitize=address,undefined)
  list(APPEND configure_args "-DCMAKE_C_FLAGS=${san}" "-DCMAKE_CXX_FLAGS=${san}"
                             "-DCMAKE_EXE_LINKER_FLAGS=${san}")
endif()

# configure_consumer(<dir> <env list> <extra -D args...>); sets configure_rc/_output.
function(configure_consumer dir env)
  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env ${env}
            "${CMAKE_COMMAND}" -S "${consumer_src}" -B "${dir}" ${configure_args} ${ARGN}
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
  set(configure_rc "${rc}" PARENT_SCOPE)
  set(configure_output "${out}" PARENT_SCOPE)
endfunction()

set(fp_dir "${WORK_DIR}/find-package")
configure_consumer("${fp_dir}" "" "-DCMAKE_PREFIX_PATH=${prefix}" -DCONSUMER_USE_PKGCONFIG=OFF)
if(NOT configure_rc EQUAL 0)
  message(FATAL_ERROR "run.cmake: configuring the consumer with find_package(MotifCL) "
                      "failed:\n${configure_output}")
endif()
load_cache("${fp_dir}" READ_WITH_PREFIX fp_ MotifCL_DIR)
file(REAL_PATH "${fp_MotifCL_DIR}" found_dir)
file(REAL_PATH "${config_dir}" want_dir)
if(NOT found_dir STREQUAL want_dir)
  message(FATAL_ERROR "run.cmake: find_package found MotifCL in ${fp_MotifCL_DIR}, not in "
                      "the prefix under test (${config_dir})")
endif()
run_step("building the consumer (find_package)"
  "${CMAKE_COMMAND}" --build "${fp_dir}" --config Release)
message(STATUS "consumer built with find_package(MotifCL ${v_MAJOR}.${v_MINOR}): "
               "consumer_c, consumer_cpp, consumer_static, consumer_experimental")

set(pc_dir "${WORK_DIR}/pkg-config")
configure_consumer("${pc_dir}" "${pc_env}" -DCONSUMER_USE_PKGCONFIG=ON
                   "-DPKG_CONFIG_EXECUTABLE=${PKG_CONFIG_EXECUTABLE}")
if(NOT configure_rc EQUAL 0)
  message(FATAL_ERROR "run.cmake: configuring the consumer with pkg-config failed:\n"
                      "${configure_output}")
endif()
run_step("building the consumer (pkg-config)"
  "${CMAKE_COMMAND}" -E env "${pc_env}" "${CMAKE_COMMAND}" --build "${pc_dir}" --config Release)
message(STATUS "consumer built with pkg-config: consumer_c, consumer_cpp, "
               "consumer_experimental")

# --- 4b. without MOTIFCL_EXPERIMENTAL the experimental section is not declared -------------
set(compiler "${main_CMAKE_C_COMPILER}")
if(NOT compiler)
  find_program(compiler NAMES cc gcc clang)
endif()
execute_process(
  COMMAND "${CMAKE_COMMAND}" -E env LC_ALL=C "${compiler}" -std=c11 -fsyntax-only
          -Werror=implicit-function-declaration "-I${includedir}"
          "${consumer_src}/consumer_experimental.c"
  RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out)
if(rc EQUAL 0)
  message(FATAL_ERROR "run.cmake: consumer_experimental.c COMPILED against the installed "
                      "motifcl.h without MOTIFCL_EXPERIMENTAL: the experimental section is "
                      "declared for every program")
endif()
if(NOT out MATCHES "(unknown type name|implicit declaration of function)[^\n]*mcl_gpt_")
  message(FATAL_ERROR "run.cmake: consumer_experimental.c failed to compile without "
                      "MOTIFCL_EXPERIMENTAL, but not for a missing mcl_gpt_ declaration:\n"
                      "${out}")
endif()
message(STATUS "without MOTIFCL_EXPERIMENTAL consumer_experimental.c does not compile "
               "(mcl_gpt_* undeclared), as required")

# --- 5. negative control: another major version is refused ------------------------------------
math(EXPR other_major "${v_MAJOR} + 1")
configure_consumer("${WORK_DIR}/wrong-major" "" "-DCMAKE_PREFIX_PATH=${prefix}"
                   -DCONSUMER_USE_PKGCONFIG=OFF "-DCONSUMER_MOTIFCL_VERSION=${other_major}.0")
if(configure_rc EQUAL 0)
  message(FATAL_ERROR "run.cmake: find_package(MotifCL ${other_major}.0) SUCCEEDED against "
                      "MotifCL ${version}: the package's version file does not enforce "
                      "SameMajorVersion.\n${configure_output}")
endif()
string(REPLACE "." "\\." version_re "${version}")
# CMake lists the config files it found but rejected, with their versions.
if(NOT configure_output MATCHES "MotifCLConfig\\.cmake" OR
   NOT configure_output MATCHES "version: ${version_re}")
  message(FATAL_ERROR "run.cmake: find_package(MotifCL ${other_major}.0) failed, but not "
                      "because the version file of the installed ${version} rejected it:\n"
                      "${configure_output}")
endif()
message(STATUS "negative control: find_package(MotifCL ${other_major}.0) is refused by the "
               "version file of MotifCL ${version}, as required")

# --- 6. run the programs ----------------------------------------------------------------------
set(ld_path "${libdir}")
if(NOT "$ENV{LD_LIBRARY_PATH}" STREQUAL "")
  string(APPEND ld_path ":$ENV{LD_LIBRARY_PATH}")
endif()
set(ran 0)
set(skipped "")
foreach(program IN ITEMS find-package/consumer_c find-package/consumer_cpp
                         find-package/consumer_static find-package/consumer_experimental
                         pkg-config/consumer_c pkg-config/consumer_cpp
                         pkg-config/consumer_experimental)
  get_filename_component(leg "${program}" DIRECTORY)
  get_filename_component(name "${program}" NAME)
  file(GLOB_RECURSE exe LIST_DIRECTORIES false "${WORK_DIR}/${leg}/${name}")
  list(FILTER exe EXCLUDE REGEX "/CMakeFiles/")
  list(LENGTH exe n)
  if(NOT n EQUAL 1)
    message(FATAL_ERROR "run.cmake: expected one built ${program}, found: ${exe}")
  endif()
  # The shared programs must load libmotifcl by its SONAME; the static one not at all.
  if(readelf)
    run_step("readelf -d ${program}" "${readelf}" -d "${exe}")
  else()
    run_step("objdump -p ${program}" "${objdump}" -p "${exe}")
  endif()
  string(FIND "${step_output}" "libmotifcl" at)
  string(FIND "${step_output}" "${soname}" at_soname)
  if(name STREQUAL "consumer_static")
    if(NOT at EQUAL -1)
      message(FATAL_ERROR "run.cmake: ${program} was linked with MotifCL::motifcl_static but "
                          "needs a shared libmotifcl:\n${step_output}")
    endif()
  elseif(at_soname EQUAL -1)
    message(FATAL_ERROR "run.cmake: ${program} does not need ${soname}:\n${step_output}")
  endif()

  execute_process(
    COMMAND "${CMAKE_COMMAND}" -E env "LD_LIBRARY_PATH=${ld_path}" "${exe}"
    RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE out TIMEOUT 300)
  message(STATUS "${program}: exit ${rc}\n${out}")
  if(rc EQUAL 0)
    math(EXPR ran "${ran} + 1")
  elseif(rc EQUAL 77 AND NOT strict)
    list(APPEND skipped "${program}")
  elseif(rc EQUAL 77)
    message(FATAL_ERROR "run.cmake: ${program} found no Vulkan compute device, and "
                        "MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 makes that a failure")
  else()
    message(FATAL_ERROR "run.cmake: ${program} failed (exit ${rc})")
  endif()
endforeach()

if(skipped)
  list(JOIN skipped ", " skipped)
  message(STATUS "gate_consumer: packaging checks PASSED; running the programs was SKIPPED "
                 "(no Vulkan compute device: ${skipped}). Set "
                 "MOTIFCL_REQUIRE_VULKAN_COMPUTE=1 to make that a failure.")
else()
  message(STATUS "gate_consumer: packaging checks passed and all ${ran} consumer programs "
                 "ran correctly")
endif()
