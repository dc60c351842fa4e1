# Included by abi-dump.cmake, abi-check.cmake and tests/experimental-hidden.cmake: what the
# MOTIFCL_EXPERIMENTAL section of motifcl.h declares, read from the header itself, and the
# libabigail suppression specification that keeps exactly that out of the ABI baseline and
# out of the gate's comparison.
#
# The section is the text between the line `#ifdef MOTIFCL_EXPERIMENTAL` and the line
# `#endif /* MOTIFCL_EXPERIMENTAL */`: one of each, in that order, with no other
# preprocessor conditional inside (so that the text between them is exactly what the macro
# hides). Anything else stops the caller with an error rather than guessing.

# Removes /* */ and // comments from the variable named `var`.
macro(_motifcl_strip_comments var)
  string(REGEX REPLACE "/\\*([^*]|\\*+[^*/])*\\*+/" " " ${var} "${${var}}")
  string(REGEX REPLACE "//[^\n]*" " " ${var} "${${var}}")
endmacro()

# The MCL_API function names declared in `text` (comments already removed).
function(_motifcl_api_functions text out)
  string(REGEX MATCHALL "MCL_API[ \t\r\n]+[^;{}()#]*[ *](mcl_[A-Za-z0-9_]+)[ \t\r\n]*\\("
         decls "${text}")
  set(names "")
  foreach(decl IN LISTS decls)
    string(REGEX MATCH "(mcl_[A-Za-z0-9_]+)[ \t\r\n]*\\($" fn "${decl}")
    list(APPEND names "${CMAKE_MATCH_1}")
  endforeach()
  list(REMOVE_DUPLICATES names)
  list(SORT names)
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# The mcl_ type names declared in `text`: struct/enum/union tags and typedef names.
function(_motifcl_type_names text out)
  set(names "")
  # A semicolon would split CMake's lists: stand `@` (which C never uses) for it.
  string(REPLACE ";" "@" text "${text}")
  string(REGEX MATCHALL "(struct|enum|union)[ \t\r\n]+mcl_[A-Za-z0-9_]+" tags "${text}")
  foreach(tag IN LISTS tags)
    string(REGEX REPLACE "^(struct|enum|union)[ \t\r\n]+" "" tag "${tag}")
    list(APPEND names "${tag}")
  endforeach()
  # `} name;` closes a typedef'd definition; `typedef ... name;` declares an alias.
  string(REGEX MATCHALL "}[ \t\r\n]*mcl_[A-Za-z0-9_]+[ \t\r\n]*@" closers "${text}")
  string(REGEX MATCHALL "typedef[^@{}]*[ *]mcl_[A-Za-z0-9_]+[ \t\r\n]*@" aliases "${text}")
  foreach(decl IN LISTS closers aliases)
    string(REGEX MATCH "(mcl_[A-Za-z0-9_]+)[ \t\r\n]*@$" name "${decl}")
    list(APPEND names "${CMAKE_MATCH_1}")
  endforeach()
  list(REMOVE_DUPLICATES names)
  list(SORT names)
  set(${out} "${names}" PARENT_SCOPE)
endfunction()

# motifcl_api_sections(<header> <prefix>) sets, from motifcl.h:
#   <prefix>_EXPERIMENTAL_FUNCTIONS  MCL_API functions inside the experimental section
#   <prefix>_EXPERIMENTAL_TYPES      types declared inside it
#   <prefix>_EXPERIMENTAL_MACROS     MCL_ macros defined inside it
#   <prefix>_STABLE_FUNCTIONS        MCL_API functions outside it
# Without a section the experimental lists are empty.
function(motifcl_api_sections header prefix)
  if(NOT EXISTS "${header}")
    message(FATAL_ERROR "abi-experimental.cmake: ${header} does not exist")
  endif()
  file(READ "${header}" text)
  set(open_marker "\n#ifdef MOTIFCL_EXPERIMENTAL\n")
  set(close_marker "\n#endif /* MOTIFCL_EXPERIMENTAL */\n")
  string(FIND "${text}" "${open_marker}" open_at)
  string(FIND "${text}" "${open_marker}" open_last REVERSE)
  string(FIND "${text}" "${close_marker}" close_at)
  string(FIND "${text}" "${close_marker}" close_last REVERSE)
  set(experimental "")
  set(stable "${text}")
  if(open_at EQUAL -1 AND close_at EQUAL -1)
    # No experimental section.
  elseif(open_at EQUAL -1 OR close_at EQUAL -1 OR NOT open_at EQUAL open_last OR
         NOT close_at EQUAL close_last OR close_at LESS open_at)
    message(FATAL_ERROR
      "abi-experimental.cmake: ${header} must hold exactly one line `#ifdef "
      "MOTIFCL_EXPERIMENTAL` and, after it, exactly one line `#endif /* MOTIFCL_EXPERIMENTAL "
      "*/` around the experimental section")
  else()
    string(LENGTH "${open_marker}" open_length)
    string(LENGTH "${close_marker}" close_length)
    math(EXPR body_at "${open_at} + ${open_length}")
    math(EXPR body_length "${close_at} - ${body_at}")
    math(EXPR after_at "${close_at} + ${close_length}")
    string(SUBSTRING "${text}" ${body_at} ${body_length} experimental)
    string(SUBSTRING "${text}" 0 ${open_at} before)
    string(SUBSTRING "${text}" ${after_at} -1 after)
    set(stable "${before}\n${after}")
    if(experimental MATCHES "\n[ \t]*#[ \t]*(if|ifdef|ifndef|elif|else|endif)")
      message(FATAL_ERROR
        "abi-experimental.cmake: the MOTIFCL_EXPERIMENTAL section of ${header} holds a "
        "preprocessor conditional; keep it flat so that the section is exactly what the "
        "macro hides")
    endif()
  endif()
  _motifcl_strip_comments(experimental)
  _motifcl_strip_comments(stable)
  _motifcl_api_functions("${experimental}" exp_functions)
  _motifcl_type_names("${experimental}" exp_types)
  string(REGEX MATCHALL "#[ \t]*define[ \t]+MCL_[A-Za-z0-9_]+" exp_macros "${experimental}")
  list(TRANSFORM exp_macros REPLACE "^#[ \t]*define[ \t]+" "")
  _motifcl_api_functions("${stable}" stable_functions)
  # Dropping an experimental type from the comparison must not hide a stable interface.
  foreach(type IN LISTS exp_types)
    if(stable MATCHES "(^|[^A-Za-z0-9_])${type}([^A-Za-z0-9_]|$)")
      message(FATAL_ERROR
        "abi-experimental.cmake: ${type} is declared in the MOTIFCL_EXPERIMENTAL section of "
        "${header} but used outside it; a stable declaration may use stable types only")
    endif()
  endforeach()
  set(${prefix}_EXPERIMENTAL_FUNCTIONS "${exp_functions}" PARENT_SCOPE)
  set(${prefix}_EXPERIMENTAL_TYPES "${exp_types}" PARENT_SCOPE)
  set(${prefix}_EXPERIMENTAL_MACROS "${exp_macros}" PARENT_SCOPE)
  set(${prefix}_STABLE_FUNCTIONS "${stable_functions}" PARENT_SCOPE)
endfunction()

# motifcl_write_experimental_suppressions(<header> <file>): writes the libabigail suppression
# specification of the experimental section to <file>. `drop = yes` removes the matched
# functions (with their ELF symbols) and types from the corpus read, so abidw leaves them out
# of a dump and abidiff out of both sides of a comparison. Names are matched whole.
function(motifcl_write_experimental_suppressions header file)
  motifcl_api_sections("${header}" api)
  string(CONCAT spec
    "# Generated by cmake/abi-experimental.cmake from the MOTIFCL_EXPERIMENTAL section\n"
    "# of ${header}: the experimental API, which the ABI baseline leaves out.\n")
  if(api_EXPERIMENTAL_FUNCTIONS)
    list(JOIN api_EXPERIMENTAL_FUNCTIONS "|" alternatives)
    string(APPEND spec "[suppress_function]\n  symbol_name_regexp = ^(${alternatives})$\n"
                       "  drop = yes\n")
  endif()
  if(api_EXPERIMENTAL_TYPES)
    list(JOIN api_EXPERIMENTAL_TYPES "|" alternatives)
    string(APPEND spec "[suppress_type]\n  name_regexp = ^(${alternatives})$\n  drop = yes\n")
  endif()
  file(WRITE "${file}" "${spec}")
endfunction()
