/* CPU reference implementations that the device suites compare against. Written for
 * clarity, not speed: a reference must be obviously right. */
#ifndef MCL_TEST_REF_H
#define MCL_TEST_REF_H

#include <stddef.h>

/* y[i] = a[i] + b[i] */
void ref_add_f32(const float *a, const float *b, float *y, size_t n);

#endif
