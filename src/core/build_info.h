/* Facts baked in at build time by cmake/build-info.cmake. */
#ifndef MCL_CORE_BUILD_INFO_H
#define MCL_CORE_BUILD_INFO_H

extern const char mcl_build_commit[];

#endif
