# Embed the checked-in SPIR-V modules into C source (build step; needs no
# shader compiler).
#
#   cmake -DSPIRV_DIR=<repo>/spirv -DOUT_C=<build>/mcl_spirv.c
#         [-DOUT_H=<build>/mcl_spirv.h] [-DMANIFEST=<spirv>/manifest.json]
#         [-DTABLE=<symbol>] [-DEXCLUDE=<a,b,...>] [-DONLY=<a,b,...>]
#         [-DSTAMP=<file>] -P cmake/spirv-embed.cmake
#
# For every SPIRV_DIR/*.spv (sorted by name) it checks:
#   - the module name is a lower-case C identifier ([a-z][a-z0-9_]*),
#   - the size is a non-zero multiple of 4 and the first word is the SPIR-V
#     magic 0x07230203 stored little-endian,
#   - sha256 and size agree with spirv/manifest.json, and the manifest lists
#     exactly these modules (a hand-edited or unregenerated .spv must not build),
# and FATAL_ERRORs naming the file otherwise. It writes
#   OUT_H: enum mcl_kernel_id { MCL_KERNEL_<NAME>..., MCL_KERNEL_COUNT },
#          struct mcl_spirv_module, and the two tables: mcl_spirv_modules (the
#          library's kernels) and mcl_spirv_tool_modules (the kernels only the
#          tools and tests use: benchmark and test-pattern kernels)
#   OUT_C: one static const uint32_t array per embedded module and the table
#          TABLE (default mcl_spirv_modules) over every id, a module left out
#          by EXCLUDE or ONLY (comma-separated module names) having no
#          name and no words; it #includes OUT_H by file name, so OUT_H's
#          folder must be on the include path.
# Each output is rewritten only when its content changes (builds stay
# incremental). STAMP, if given, is touched on every successful run (for
# generators that want an output that is always newer than the inputs).

cmake_minimum_required(VERSION 3.21)

foreach(v SPIRV_DIR OUT_C)
  if(NOT DEFINED ${v} OR "${${v}}" STREQUAL "")
    message(FATAL_ERROR " spirv-embed: pass -D${v}=... (usage: cmake -DSPIRV_DIR=<spirv> -DOUT_C=<file.c> -DOUT_H=<file.h> -P spirv-embed.cmake)")
  endif()
endforeach()
get_filename_component(SPIRV_DIR "${SPIRV_DIR}" ABSOLUTE)
get_filename_component(OUT_C "${OUT_C}" ABSOLUTE)
# Lists arrive comma-separated (a semicolon does not survive a build tool's command line).
foreach(v EXCLUDE ONLY)
  if(DEFINED ${v})
    string(REPLACE "," ";" ${v} "${${v}}")
  endif()
endforeach()
if(NOT DEFINED TABLE OR TABLE STREQUAL "")
  set(TABLE mcl_spirv_modules)
endif()
if(NOT DEFINED OUT_H OR OUT_H STREQUAL "")
  set(OUT_H "")
  set(h_name "spirv_modules.h")
else()
  get_filename_component(OUT_H "${OUT_H}" ABSOLUTE)
  get_filename_component(h_name "${OUT_H}" NAME)
endif()
if(NOT DEFINED MANIFEST OR MANIFEST STREQUAL "")
  set(MANIFEST "${SPIRV_DIR}/manifest.json")
endif()

function(embed_fail text)
  string(REPLACE "\n" "\n " text "${text}")
  message(FATAL_ERROR " spirv-embed: ${text}")
endfunction()

# ---------------------------------------------------------------- inputs
file(GLOB spv_files LIST_DIRECTORIES false "${SPIRV_DIR}/*.spv")
list(SORT spv_files)
if(NOT spv_files)
  embed_fail("no *.spv files in ${SPIRV_DIR}")
endif()

if(NOT EXISTS "${MANIFEST}")
  embed_fail("${MANIFEST} is missing; the .spv files cannot be verified (run spirv-regen)")
endif()
file(READ "${MANIFEST}" mj)
string(JSON n_manifest ERROR_VARIABLE jerr LENGTH "${mj}" modules)
if(jerr)
  embed_fail("${MANIFEST}: cannot read the modules array: ${jerr}")
endif()
set(manifest_names "")
if(n_manifest GREATER 0)
  math(EXPR last "${n_manifest} - 1")
  foreach(i RANGE ${last})
    string(JSON mn ERROR_VARIABLE e1 GET "${mj}" modules ${i} name)
    string(JSON msha ERROR_VARIABLE e2 GET "${mj}" modules ${i} spv_sha256)
    string(JSON msize ERROR_VARIABLE e3 GET "${mj}" modules ${i} size)
    if(e1 OR e2 OR e3)
      embed_fail("${MANIFEST}: modules[${i}] lacks name, spv_sha256 or size")
    endif()
    list(APPEND manifest_names "${mn}")
    set(MANIFEST_SHA_${mn} "${msha}")
    set(MANIFEST_SIZE_${mn} "${msize}")
  endforeach()
endif()

set(names "")
foreach(f IN LISTS spv_files)
  get_filename_component(n "${f}" NAME)
  string(REGEX REPLACE "\\.spv$" "" n "${n}")
  if(NOT n MATCHES "^[a-z][a-z0-9_]*$")
    embed_fail("${f}: module names must be lower-case C identifiers ([a-z][a-z0-9_]*)")
  endif()
  list(APPEND names "${n}")
endforeach()

foreach(mn IN LISTS manifest_names)
  if(NOT mn IN_LIST names)
    embed_fail("${MANIFEST} lists module \"${mn}\" but ${SPIRV_DIR}/${mn}.spv does not exist (run spirv-regen)")
  endif()
endforeach()

# ---------------------------------------------------------------- modules
set(c_arrays "")
set(c_table "")
set(h_enum "")
list(LENGTH names n_modules)
set(idx 0)
string(REPEAT "." 96 line96)
foreach(n IN LISTS names)
  set(f "${SPIRV_DIR}/${n}.spv")
  file(SIZE "${f}" size)
  math(EXPR rem "${size} % 4")
  if(size LESS 20 OR NOT rem EQUAL 0)
    embed_fail("${f}: ${size} bytes; a SPIR-V module is a whole number of 4-byte words, at least 5 (the header)")
  endif()
  file(READ "${f}" hex HEX)
  string(SUBSTRING "${hex}" 0 8 magic)
  string(TOLOWER "${magic}" magic)
  if(NOT magic STREQUAL "03022307")
    embed_fail("${f}: does not begin with the SPIR-V magic 0x07230203 stored little-endian (first bytes: ${magic})")
  endif()
  if(NOT n IN_LIST manifest_names)
    embed_fail("${f}: not listed in ${MANIFEST} (run spirv-regen)")
  endif()
  file(SHA256 "${f}" sha)
  if(NOT sha STREQUAL MANIFEST_SHA_${n} OR NOT size STREQUAL MANIFEST_SIZE_${n})
    embed_fail("${f}: sha256 ${sha} (${size} bytes) disagrees with ${MANIFEST} (${MANIFEST_SHA_${n}}, ${MANIFEST_SIZE_${n}} bytes); a .spv must come from spirv-regen, not be edited by hand")
  endif()

  # bytes b0 b1 b2 b3 (file order, little-endian) -> 0xb3b2b1b0u
  string(TOLOWER "${hex}" hex)
  string(REGEX REPLACE "(..)(..)(..)(..)" "0x\\4\\3\\2\\1u," words "${hex}")
  math(EXPR n_words "${size} / 4")
  # 8 words (8 * 12 characters) per line, ", " between words, no final comma
  string(REGEX REPLACE "(${line96})" "\\1\n" body "${words}")
  string(REPLACE "u," "u, " body "${body}")
  string(REPLACE ", \n" ",\n    " body "${body}")
  string(STRIP "${body}" body)
  string(REGEX REPLACE ",$" "" body "${body}")
  set(body "    ${body}\n")

  string(TOUPPER "${n}" N)
  math(EXPR idx_next "${idx} + 1")
  if(idx_next LESS n_modules)
    set(sep ",")
  else()
    set(sep "")
  endif()
  set(embedded TRUE)
  if((DEFINED EXCLUDE AND n IN_LIST EXCLUDE) OR (DEFINED ONLY AND NOT ONLY STREQUAL "" AND NOT n IN_LIST ONLY))
    set(embedded FALSE)
  endif()
  if(embedded)
    string(APPEND c_arrays "/* spirv/${n}.spv: ${size} bytes, sha256 ${sha} */\n")
    string(APPEND c_arrays "static const uint32_t mcl_spirv_words_${n}[${n_words}] = {\n${body}};\n\n")
    string(APPEND c_table "    [MCL_KERNEL_${N}] = { \"${n}\", mcl_spirv_words_${n}, ${n_words}u }${sep}\n")
  else()
    string(APPEND c_table "    [MCL_KERNEL_${N}] = { NULL, NULL, 0u }${sep}\n")
  endif()
  string(APPEND h_enum "    MCL_KERNEL_${N} = ${idx},\n")
  set(idx ${idx_next})
endforeach()

string(MAKE_C_IDENTIFIER "${h_name}" guard)
string(TOUPPER "MCL_GENERATED_${guard}" guard)

set(h "/* Generated by cmake/spirv-embed.cmake from the spirv/ modules. Do not edit. */\n")
string(APPEND h "#ifndef ${guard}\n#define ${guard}\n\n")
string(APPEND h "#include <stddef.h>\n#include <stdint.h>\n\n")
string(APPEND h "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n")
string(APPEND h "/* One id per spirv/<name>.spv, sorted by name. */\n")
string(APPEND h "typedef enum mcl_kernel_id {\n${h_enum}    MCL_KERNEL_COUNT = ${n_modules}\n} mcl_kernel_id;\n\n")
string(APPEND h "typedef struct mcl_spirv_module {\n")
string(APPEND h "    const char *name;        /* module name, e.g. \"add_f32\" */\n")
string(APPEND h "    const uint32_t *words;   /* SPIR-V words, host order */\n")
string(APPEND h "    size_t word_count;       /* bytes = 4 * word_count */\n")
string(APPEND h "} mcl_spirv_module;\n\n")
string(APPEND h "/* The library's kernels; a tool's kernel has no name and no words here. */\n")
string(APPEND h "extern const mcl_spirv_module mcl_spirv_modules[MCL_KERNEL_COUNT];\n")
string(APPEND h "/* The kernels only the tools and tests use (linked into them, not shipped). */\n")
string(APPEND h "extern const mcl_spirv_module mcl_spirv_tool_modules[MCL_KERNEL_COUNT];\n\n")
string(APPEND h "#ifdef __cplusplus\n}\n#endif\n\n#endif /* ${guard} */\n")

set(c "/* Generated by cmake/spirv-embed.cmake from the spirv/ modules. Do not edit. */\n")
string(APPEND c "#include \"${h_name}\"\n\n")
string(APPEND c "${c_arrays}")
string(APPEND c "const mcl_spirv_module ${TABLE}[MCL_KERNEL_COUNT] = {\n${c_table}};\n")

# ---------------------------------------------------------------- write
function(write_if_changed path content)
  if(EXISTS "${path}")
    file(READ "${path}" old)
    if(old STREQUAL content)
      return()
    endif()
  endif()
  file(WRITE "${path}" "${content}")
  message(STATUS "spirv-embed: wrote ${path}")
endfunction()

if(OUT_H)
  write_if_changed("${OUT_H}" "${h}")
endif()
write_if_changed("${OUT_C}" "${c}")
if(DEFINED STAMP AND NOT STAMP STREQUAL "")
  file(TOUCH "${STAMP}")
endif()
