// consumer.cpp: the C++17 counterpart of consumer.c. It includes <motifcl.h> first and is
// compiled with -Wall -Wextra -Wpedantic -Werror, the header's directory NOT treated as a
// system directory, so any C-only construct in the header (missing extern "C", designated
// initialisers, implicit void* conversions in macros, ...) fails the build.
// Exit status: 0 pass, 1 failure, 77 no Vulkan compute device (1 instead when the
// environment variable MOTIFCL_REQUIRE_VULKAN_COMPUTE is 1).
#include <motifcl.h>

#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <string>

#define STR_(x) #x
#define STR(x) STR_(x)

namespace {

struct ContextDeleter {
    void operator()(mcl_context *ctx) const { mcl_context_destroy(ctx); }
};
struct TensorDeleter {
    void operator()(mcl_tensor *t) const { mcl_tensor_destroy(t); }
};
using Context = std::unique_ptr<mcl_context, ContextDeleter>;
using Tensor = std::unique_ptr<mcl_tensor, TensorDeleter>;

void check(mcl_status status, const char *what)
{
    if (status != MCL_SUCCESS)
        throw std::runtime_error(std::string(what) + " failed: " + mcl_status_string(status));
}

Tensor make_tensor(mcl_context *ctx, std::int64_t n)
{
    const std::int64_t shape[1] = {n};
    mcl_tensor *t = nullptr;
    check(mcl_tensor_create(ctx, MCL_DTYPE_F32, 1, shape, &t), "mcl_tensor_create");
    return Tensor(t);
}

} // namespace

int main()
{
    const std::string header_version = STR(MOTIFCL_VERSION_MAJOR) "." STR(
        MOTIFCL_VERSION_MINOR) "." STR(MOTIFCL_VERSION_PATCH);
    std::printf("consumer.cpp: MotifCL library %s, header %s\n", mcl_version_string(),
                header_version.c_str());
    if (header_version != mcl_version_string() || mcl_version() != MOTIFCL_VERSION_NUMBER) {
        std::fprintf(stderr, "consumer.cpp: the library does not match the header\n");
        return 1;
    }

    mcl_context_desc desc{};
    desc.size = sizeof desc;
    desc.device_index = -1;
    desc.flags = 0;
    mcl_context *raw = nullptr;
    const mcl_status status = mcl_context_create(&desc, &raw);
    if (status == MCL_ERROR_VULKAN_UNAVAILABLE || status == MCL_ERROR_NO_DEVICE) {
        const char *strict = std::getenv("MOTIFCL_REQUIRE_VULKAN_COMPUTE");
        if (strict && std::strcmp(strict, "1") == 0) {
            std::fprintf(stderr, "consumer.cpp: no Vulkan compute device (%s) and "
                                 "MOTIFCL_REQUIRE_VULKAN_COMPUTE=1: failing\n",
                         mcl_status_string(status));
            return 1;
        }
        std::printf("consumer.cpp: no Vulkan compute device (%s): skipped\n",
                    mcl_status_string(status));
        return 77;
    }
    if (status != MCL_SUCCESS) {
        std::fprintf(stderr, "consumer.cpp: mcl_context_create failed: %s\n",
                     mcl_status_string(status));
        return 1;
    }
    const Context ctx(raw);

    try {
        mcl_device_info info{};
        info.size = sizeof info;
        check(mcl_context_device_info(ctx.get(), &info), "mcl_context_device_info");
        std::printf("consumer.cpp: device %s (%s)\n", info.name,
                    mcl_device_type_name(info.device_type));

        constexpr std::size_t n = 5;
        const std::array<float, n> a{{1.5f, -2.0f, 0.0f, 1024.0f, 3.0f}};
        const std::array<float, n> b{{0.5f, 2.0f, -1.0f, 1.0f, 0.25f}};
        std::array<float, n> y{};
        const Tensor ta = make_tensor(ctx.get(), n);
        const Tensor tb = make_tensor(ctx.get(), n);
        const Tensor ty = make_tensor(ctx.get(), n);
        check(mcl_tensor_upload(ta.get(), 0, a.data(), sizeof a), "mcl_tensor_upload");
        check(mcl_tensor_upload(tb.get(), 0, b.data(), sizeof b), "mcl_tensor_upload");
        check(mcl_add(ctx.get(), ta.get(), tb.get(), ty.get()), "mcl_add");
        check(mcl_tensor_download(ty.get(), 0, y.data(), sizeof y), "mcl_tensor_download");
        int mismatches = 0;
        for (std::size_t i = 0; i < n; i++) {
            if (y[i] != a[i] + b[i]) {
                std::fprintf(stderr, "consumer.cpp: y[%zu] = %g, expected %g\n", i,
                             static_cast<double>(y[i]), static_cast<double>(a[i] + b[i]));
                mismatches++;
            }
        }
        std::printf("consumer.cpp: add over %zu elements: %s\n", n, mismatches ? "FAIL" : "ok");
        return mismatches ? 1 : 0;
    } catch (const std::exception &e) {
        std::fprintf(stderr, "consumer.cpp: %s\n", e.what());
        return 1;
    }
}
