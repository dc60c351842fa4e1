# The kernels only motifcl-bench and the test suites use are not shipped: the shared library
# holds none of their modules, while the internal library the tools link holds each of them
# (the control: the same search finds them there, so it could find them in the shipped one).
#   cmake -DSHIPPED=<libmotifcl.so> -DINTERNAL=<libmotifcl_internal.a> -DKERNELS=<a,b,...>
#         -P tool-kernels.cmake
string(REPLACE "," ";" kernels "${KERNELS}")
foreach(k IN LISTS kernels)
  file(STRINGS "${SHIPPED}" in_shipped REGEX "^${k}$")
  file(STRINGS "${INTERNAL}" in_internal REGEX "^${k}$")
  if(in_shipped)
    message(FATAL_ERROR "the shipped library ${SHIPPED} holds the tool kernel ${k}")
  endif()
  if(NOT in_internal)
    message(FATAL_ERROR "control: the search did not find ${k} in ${INTERNAL}")
  endif()
  message(STATUS "${k}: in the tools' library only")
endforeach()
# And the library's own kernels are found in it by the same search.
file(STRINGS "${SHIPPED}" own REGEX "^gemv_q$")
if(NOT own)
  message(FATAL_ERROR "control: the search did not find the library's own gemv_q in ${SHIPPED}")
endif()
