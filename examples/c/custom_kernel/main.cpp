// A custom kernel two ways: the <<<>>> launch of a kernel linked into the program, and the
// same kernel loaded from a kernel binary (aclrtBinaryLoadFromFile) and launched with the
// kernel-args API. Both results are checked against the host's own computation.
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"

uint32_t launch_scaled_add(uint32_t blocks, void *stream, uint8_t *x, uint8_t *y, uint8_t *z, uint32_t total,
                           uint32_t tile, float alpha);

#define CHECK(call)                                                                             \
    do {                                                                                        \
        aclError ret_ = (call);                                                                 \
        if (ret_ != ACL_SUCCESS) {                                                              \
            std::printf("%s failed: %d (%s)\n", #call, static_cast<int>(ret_), aclGetRecentErrMsg()); \
            return 1;                                                                           \
        }                                                                                       \
    } while (0)

static uint16_t to_half(float f)
{
    _Float16 h = static_cast<_Float16>(f);
    uint16_t bits;
    std::memcpy(&bits, &h, 2);
    return bits;
}

static float from_half(uint16_t bits)
{
    _Float16 h;
    std::memcpy(&h, &bits, 2);
    return static_cast<float>(h);
}

static int check(const char *what, const std::vector<uint16_t> &x, const std::vector<uint16_t> &y,
                 const std::vector<uint16_t> &z, float alpha)
{
    for (size_t i = 0; i < z.size(); ++i) {
        float expected = from_half(x[i]) + from_half(to_half(from_half(y[i]) * alpha));
        if (std::fabs(from_half(z[i]) - expected) > 1e-2f * (1 + std::fabs(expected))) {
            std::printf("%s: z[%zu] = %f, expected %f\n", what, i, from_half(z[i]), expected);
            return 1;
        }
    }
    std::printf("%s: %zu values correct\n", what, z.size());
    return 0;
}

int main()
{
    const uint32_t blocks = 8, total = 8 * 1024, tile = 256;
    const float alpha = 0.5f;
    const size_t bytes = total * sizeof(uint16_t);
    std::vector<uint16_t> x(total), y(total), z(total);
    for (uint32_t i = 0; i < total; ++i) {
        x[i] = to_half(static_cast<float>(i % 97) / 7.0f);
        y[i] = to_half(static_cast<float>(i % 31) - 15.0f);
    }

    CHECK(aclInit(nullptr));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream = nullptr;
    CHECK(aclrtCreateStream(&stream));
    void *dx = nullptr, *dy = nullptr, *dz = nullptr;
    CHECK(aclrtMalloc(&dx, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&dy, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&dz, bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(dx, bytes, x.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(dy, bytes, y.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));

    // 1. <<<>>>: the launch and the copy back are tasks of one stream, in order
    CHECK(launch_scaled_add(blocks, stream, static_cast<uint8_t *>(dx), static_cast<uint8_t *>(dy),
                            static_cast<uint8_t *>(dz), total, tile, alpha));
    CHECK(aclrtMemcpyAsync(z.data(), bytes, dz, bytes, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    CHECK(aclrtSynchronizeStream(stream));
    if (check("<<<>>> launch", x, y, z, alpha)) return 1;

    // 2. the kernel binary: load, look the kernel up, build its arguments, launch
    aclrtBinHandle bin = nullptr;
    aclrtFuncHandle func = nullptr;
    aclrtArgsHandle args = nullptr;
    CHECK(aclrtBinaryLoadFromFile(KERNEL_BINARY, nullptr, &bin));
    CHECK(aclrtBinaryGetFunction(bin, "scaled_add", &func));
    CHECK(aclrtKernelArgsInit(func, &args));
    aclrtParamHandle param = nullptr;
    CHECK(aclrtKernelArgsAppend(args, &dx, sizeof(void *), &param));
    CHECK(aclrtKernelArgsAppend(args, &dy, sizeof(void *), &param));
    CHECK(aclrtKernelArgsAppend(args, &dz, sizeof(void *), &param));
    CHECK(aclrtKernelArgsAppend(args, const_cast<uint32_t *>(&total), sizeof(total), &param));
    CHECK(aclrtKernelArgsAppend(args, const_cast<uint32_t *>(&tile), sizeof(tile), &param));
    CHECK(aclrtKernelArgsAppend(args, const_cast<float *>(&alpha), sizeof(alpha), &param));
    CHECK(aclrtKernelArgsFinalize(args));
    CHECK(aclrtMemset(dz, bytes, 0, bytes));
    CHECK(aclrtLaunchKernelWithConfig(func, blocks, stream, nullptr, args, nullptr));
    CHECK(aclrtSynchronizeStream(stream));
    CHECK(aclrtMemcpy(z.data(), bytes, dz, bytes, ACL_MEMCPY_DEVICE_TO_HOST));
    if (check("kernel binary launch", x, y, z, alpha)) return 1;

    CHECK(aclrtBinaryUnLoad(bin));
    CHECK(aclrtFree(dx));
    CHECK(aclrtFree(dy));
    CHECK(aclrtFree(dz));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    std::printf("custom_kernel: ok\n");
    return 0;
}
