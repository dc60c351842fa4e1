/* Tests for mcl_pipeline_cache_check (src/vk/pipeline_cache.c) on byte buffers, no device:
 * a file that the cache would write passes, and each way a file can be cut short, damaged or
 * come from elsewhere is refused with its own reason. */
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <setjmp.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "vk/private.h"

#define VK_HEADER 32
#define PAYLOAD 200    /* driver bytes after its header, as a driver with real data has */

static const mcl_pipeline_cache_expect want = {
    .vendor_id = 0x1002,
    .device_id = 0x67df,
    .driver_version = 0x00800123,
    .uuid = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
};

static void put32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

/* A file as the cache writes it for `want`: MotifCL's header, then the driver's data (the
 * Vulkan header, then PAYLOAD bytes). Returns its size. */
static size_t good_file(uint8_t *file)
{
    uint8_t *d = file + MCL_PIPELINE_CACHE_HEADER;
    put32(d, VK_HEADER);
    put32(d + 4, VK_PIPELINE_CACHE_HEADER_VERSION_ONE);
    put32(d + 8, want.vendor_id);
    put32(d + 12, want.device_id);
    memcpy(d + 16, want.uuid, VK_UUID_SIZE);
    for (int i = 0; i < PAYLOAD; i++)
        d[VK_HEADER + i] = (uint8_t)(i * 37 + 11);
    mcl_pipeline_cache_header(file, want.driver_version, d, VK_HEADER + PAYLOAD);
    return MCL_PIPELINE_CACHE_HEADER + VK_HEADER + PAYLOAD;
}

/* Recompute MotifCL's header after changing the driver's data, so that a check behind the
 * checksum is reached (a file made for another device is whole, not damaged). */
static void reseal(uint8_t *file, size_t size)
{
    mcl_pipeline_cache_header(file, want.driver_version, file + MCL_PIPELINE_CACHE_HEADER,
                              size - MCL_PIPELINE_CACHE_HEADER);
}

static const char *check(const uint8_t *file, size_t size)
{
    const void *data = NULL;
    size_t data_size = 0;
    return mcl_pipeline_cache_check(file, size, &want, &data, &data_size);
}

static void expect_reason(const uint8_t *file, size_t size, const char *part)
{
    const char *why = check(file, size);
    if (!why)
        fail_msg("accepted; expected a reason containing \"%s\"", part);
    if (!strstr(why, part))
        fail_msg("reason \"%s\" does not contain \"%s\"", why, part);
}

/* Control: what the cache writes is accepted, and the driver's part is what follows
 * MotifCL's header, whole. Every refusal below would be meaningless if this failed. */
static void written_file_is_accepted(void **state)
{
    (void)state;
    uint8_t file[512];
    size_t size = good_file(file);
    const void *data = NULL;
    size_t data_size = 0;
    assert_null(mcl_pipeline_cache_check(file, size, &want, &data, &data_size));
    assert_ptr_equal(data, file + MCL_PIPELINE_CACHE_HEADER);
    assert_int_equal(data_size, VK_HEADER + PAYLOAD);
    /* A driver header longer than 32 bytes (allowed: headerSize) is accepted too. */
    put32(file + MCL_PIPELINE_CACHE_HEADER, VK_HEADER + 16);
    reseal(file, size);
    assert_null(check(file, size));
}

/* Every length short of the whole file is refused, and never read past (the sanitizer
 * builds would see a read beyond each malloc'd copy). */
static void truncated_files_are_refused(void **state)
{
    (void)state;
    uint8_t file[512];
    size_t size = good_file(file);
    for (size_t n = 0; n < size; n++) {
        uint8_t *copy = malloc(n ? n : 1);
        assert_non_null(copy);
        memcpy(copy, file, n);
        assert_non_null(check(copy, n));
        free(copy);
    }
    expect_reason(file, MCL_PIPELINE_CACHE_HEADER - 1, "truncated");
    expect_reason(file, size - 1, "truncated");
    /* A header that promises only what is there but too little for the Vulkan header. */
    mcl_pipeline_cache_header(file, want.driver_version, file + MCL_PIPELINE_CACHE_HEADER, 8);
    expect_reason(file, MCL_PIPELINE_CACHE_HEADER + 8, "shorter than the Vulkan cache header");
}

static void damaged_files_are_refused(void **state)
{
    (void)state;
    uint8_t file[512];
    size_t size = good_file(file);
    /* Any one flipped bit of the data, the Vulkan header's included, is refused. */
    for (size_t i = MCL_PIPELINE_CACHE_HEADER; i < size; i++) {
        file[i] ^= 0x10;
        assert_non_null(check(file, size));
        file[i] ^= 0x10;
    }
    file[size - 1] ^= 1;
    expect_reason(file, size, "checksum");
    file[size - 1] ^= 1;
    file[24] ^= 1;    /* the stored checksum itself */
    expect_reason(file, size, "checksum");
    file[24] ^= 1;
    file[0] = 'X';
    expect_reason(file, size, "magic");
    size = good_file(file);
    put32(file + 8, 2);
    expect_reason(file, size, "version of the file format");
    size = good_file(file);
    file[size] = 0;
    expect_reason(file, size + 1, "truncated or extended");
}

/* Files from another device or driver: whole (the checksum holds), refused for what they
 * are. */
static void other_devices_and_drivers_are_refused(void **state)
{
    (void)state;
    uint8_t file[512];
    uint8_t *d = file + MCL_PIPELINE_CACHE_HEADER;
    size_t size = good_file(file);
    put32(file + 12, want.driver_version + 1);
    expect_reason(file, size, "another driver version");

    size = good_file(file);
    put32(d + 12, want.device_id ^ 1);
    reseal(file, size);
    expect_reason(file, size, "another device");

    size = good_file(file);
    put32(d + 8, 0x10de);
    reseal(file, size);
    expect_reason(file, size, "another device");

    size = good_file(file);
    d[16 + VK_UUID_SIZE - 1] ^= 0x80;
    reseal(file, size);
    expect_reason(file, size, "pipelineCacheUUID");

    size = good_file(file);
    put32(d + 4, 2);
    reseal(file, size);
    expect_reason(file, size, "headerVersion");

    size = good_file(file);
    put32(d, 16);
    reseal(file, size);
    expect_reason(file, size, "headerSize");
    put32(d, (uint32_t)(size - MCL_PIPELINE_CACHE_HEADER + 1));
    reseal(file, size);
    expect_reason(file, size, "headerSize");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(written_file_is_accepted),
        cmocka_unit_test(truncated_files_are_refused),
        cmocka_unit_test(damaged_files_are_refused),
        cmocka_unit_test(other_devices_and_drivers_are_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
