// Native kernels, kernel binaries and launches from C: prints one line per check and
// "kernel_checks: ok" when every check held. Argument 1: a Python kernel file to load.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "acl/acl.h"

uint32_t launch_iadd(uint32_t blocks, void *stream, int32_t *x, int32_t *y, int32_t *z, uint32_t n);
uint32_t launch_trapping(void *stream);
// the kernel itself, compiled into the program's kernel library (for aclrtLaunchKernelWithArgsArray)
extern "C" void iadd(const int32_t *x, const int32_t *y, int32_t *z, uint32_t n);

#define CHECK(call)                                                                                      \
    do {                                                                                                 \
        int ret_ = static_cast<int>(call);                                                               \
        if (ret_ != 0) {                                                                                 \
            std::printf("line %d: %s failed: %d (%s)\n", __LINE__, #call, ret_, aclGetRecentErrMsg());    \
            return 1;                                                                                    \
        }                                                                                                \
    } while (0)
#define EXPECT(cond, ...)                                \
    do {                                                 \
        if (!(cond)) {                                   \
            std::printf("line %d: %s: ", __LINE__, #cond); \
            std::printf(__VA_ARGS__);                    \
            std::printf("\n");                           \
            return 1;                                    \
        }                                                \
    } while (0)

static int g_exception_code = 0;
static void *g_exception_args = nullptr;
static uint32_t g_exception_args_len = 0;
static aclrtFuncHandle g_exception_func = nullptr;
static int g_args_ret = -2, g_func_ret = -2;
static void OnException(aclrtExceptionInfo *info)
{
    g_exception_code = static_cast<int>(aclrtGetErrorCodeFromExceptionInfo(info));
    g_args_ret = aclrtGetArgsFromExceptionInfo(info, &g_exception_args, &g_exception_args_len);
    g_func_ret = aclrtGetFuncHandleFromExceptionInfo(info, &g_exception_func);
}
static int g_binary_callbacks = 0;
static void *g_binary_user_data = nullptr;
static void OnBinaryException(aclrtExceptionInfo *info, void *userData)
{
    (void)info;
    ++g_binary_callbacks;
    g_binary_user_data = userData;
}

static int expect_sum(const char *what, int32_t *dz, const std::vector<int32_t> &x, const std::vector<int32_t> &y,
                      int factor = 1)
{
    std::vector<int32_t> z(x.size());
    CHECK(aclrtMemcpy(z.data(), z.size() * 4, dz, z.size() * 4, ACL_MEMCPY_DEVICE_TO_HOST));
    for (size_t i = 0; i < z.size(); ++i) EXPECT(z[i] == (x[i] + y[i]) * factor, "%s: z[%zu] = %d", what, i, z[i]);
    std::printf("%s: ok\n", what);
    return 0;
}

int main(int argc, char **argv)
{
    const uint32_t n = 1024;
    const size_t bytes = n * 4;
    std::vector<int32_t> x(n), y(n);
    for (uint32_t i = 0; i < n; ++i) {
        x[i] = static_cast<int32_t>(i);
        y[i] = 3 * static_cast<int32_t>(i) + 1;
    }
    CHECK(aclInit(nullptr));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream = nullptr;
    CHECK(aclrtCreateStream(&stream));
    int32_t *dx, *dy, *dz;
    CHECK(aclrtMalloc(reinterpret_cast<void **>(&dx), bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(reinterpret_cast<void **>(&dy), bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(reinterpret_cast<void **>(&dz), bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(dx, bytes, x.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(dy, bytes, y.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));

    // <<<>>> on 4 blocks, then stream-ordered free of an input: the queued kernel still reads it
    int32_t *tmp;
    CHECK(aclrtMalloc(reinterpret_cast<void **>(&tmp), bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(tmp, bytes, y.data(), bytes, ACL_MEMCPY_HOST_TO_DEVICE));
    uint32_t task_before = 0, task_after = 0;
    CHECK(aclrtMemsetAsync(dz, bytes, 0, bytes, stream));
    CHECK(aclrtGetThreadLastTaskId(&task_before));
    CHECK(launch_iadd(4, stream, dx, tmp, dz, n));
    CHECK(aclrtGetThreadLastTaskId(&task_after));
    EXPECT(task_after == task_before + 1, "<<<>>> launch: task id %u after the memset's %u", task_after, task_before);
    std::printf("task ids: memset %u, <<<>>> launch %u\n", task_before, task_after);
    CHECK(aclrtFree(tmp));
    CHECK(aclrtSynchronizeStream(stream));
    if (expect_sum("<<<>>> launch with a stream-ordered free", dz, x, y)) return 1;

    // hicann/runtime's 5_d2d_sync_memory_copy: a synchronous D2D copy of what a kernel just
    // launched on a stream writes, with no synchronize between them. The hardware's kernel is
    // done before the driver copy reads; npurt's copy waits (bounded) for the runnable writer
    int32_t *dw;
    CHECK(aclrtMalloc(reinterpret_cast<void **>(&dw), bytes, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemset(dz, bytes, 0, bytes));
    CHECK(launch_iadd(4, stream, dx, dy, dz, n));
    CHECK(aclrtMemcpy(dw, bytes, dz, bytes, ACL_MEMCPY_DEVICE_TO_DEVICE));
    if (expect_sum("a synchronous D2D copy of a kernel's output in flight", dw, x, y)) return 1;
    CHECK(aclrtSynchronizeStream(stream));
    CHECK(aclrtFree(dw));

    // a <<<>>> launch with a freed pointer is refused at the launch
    EXPECT(launch_iadd(1, stream, dx, tmp, dz, n) == ACL_ERROR_INVALID_PARAM, "freed pointer accepted");
    std::printf("freed pointer refused: %s\n", aclGetRecentErrMsg());

    // the kernel binary
    aclrtBinHandle bin = nullptr;
    EXPECT(aclrtBinaryLoadFromFile("/nonexistent/kernels.o", nullptr, &bin) == ACL_ERROR_INVALID_FILE, "no file");
    CHECK(aclrtBinaryLoadFromFile(KERNEL_BINARY, nullptr, &bin));
    aclrtFuncHandle iadd_fn = nullptr, iscale = nullptr, spin = nullptr;
    EXPECT(aclrtBinaryGetFunction(bin, "no_such_kernel", &iadd_fn) == ACL_ERROR_KERNEL_NOT_FOUND, "unknown kernel");
    CHECK(aclrtBinaryGetFunction(bin, "iadd", &iadd_fn));
    CHECK(aclrtBinaryGetFunction(bin, "iscale", &iscale));
    CHECK(aclrtBinaryGetFunction(bin, "spin", &spin));
    char name[64] = {0};
    CHECK(aclrtGetFunctionName(iadd_fn, sizeof(name), name));
    EXPECT(std::strcmp(name, "iadd") == 0, "name %s", name);
    aclrtBinHandle owner = nullptr;
    CHECK(aclrtFunctionGetBinary(iadd_fn, &owner));
    EXPECT(owner == bin, "aclrtFunctionGetBinary gave another binary");

    // aclrtLaunchKernel: the packed arguments (8 bytes each) in device memory
    struct {
        uint64_t x, y, z, n;
    } packed = {reinterpret_cast<uintptr_t>(dx), reinterpret_cast<uintptr_t>(dy), reinterpret_cast<uintptr_t>(dz), n};
    void *dargs;
    CHECK(aclrtMalloc(&dargs, sizeof(packed), ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(dargs, sizeof(packed), &packed, sizeof(packed), ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemset(dz, bytes, 0, bytes));
    CHECK(aclrtGetThreadLastTaskId(&task_before));
    CHECK(aclrtLaunchKernel(iadd_fn, 2, dargs, sizeof(packed), stream));
    CHECK(aclrtGetThreadLastTaskId(&task_after));
    EXPECT(task_after == task_before + 1, "aclrtLaunchKernel: task id %u after the memset's %u", task_after, task_before);
    CHECK(aclrtSynchronizeStream(stream));
    if (expect_sum("aclrtLaunchKernel (device args)", dz, x, y)) return 1;
    EXPECT(aclrtLaunchKernel(iadd_fn, 2, dargs, sizeof(packed) - 8, stream) == ACL_ERROR_INVALID_PARAM, "args size");

    // a captured aclrtLaunchKernelV2: its attributes, GetParams, SetParams with host args
    {
        aclrtStream cs = nullptr;
        CHECK(aclrtCreateStream(&cs));
        aclrtLaunchKernelAttr attr[1];
        attr[0].id = ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE;
        attr[0].value.schemMode = 1;
        aclrtLaunchKernelCfg cfg = {attr, 1};
        CHECK(aclmdlRICaptureBegin(cs, ACL_MODEL_RI_CAPTURE_MODE_GLOBAL));
        CHECK(aclrtLaunchKernelV2(iadd_fn, 2, dargs, sizeof(packed), &cfg, cs));
        aclmdlRI ri = nullptr;
        CHECK(aclmdlRICaptureEnd(cs, &ri));
        aclrtStream ms[1];
        uint32_t ns = 1, nt = 1;
        CHECK(aclmdlRIGetStreams(ri, ms, &ns));
        aclmdlRITask kt = nullptr;
        CHECK(aclmdlRIGetTasksByStream(ms[0], &kt, &nt));
        aclrtLaunchKernelAttrValue v;
        CHECK(aclmdlRIKernelTaskGetAttribute(kt, ACL_RT_LAUNCH_KERNEL_ATTR_SCHEM_MODE, &v));
        EXPECT(v.schemMode == 1, "schemMode %u", v.schemMode);
        int e = aclmdlRIKernelTaskGetAttribute(kt, ACL_RT_LAUNCH_KERNEL_ATTR_BLOCKDIM_OFFSET, &v);
        EXPECT(e == ACL_ERROR_RT_PARAM_INVALID, "BLOCKDIM_OFFSET: %d", e);
        e = aclmdlRIKernelTaskGetAttribute(kt, ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT, nullptr);
        EXPECT(e == ACL_ERROR_INVALID_PARAM, "NULL attrValue: %d", e);
        aclmdlRITaskParams tp;
        CHECK(aclmdlRITaskGetParams(kt, &tp));
        EXPECT(tp.kernelTaskParams.funcHandle == iadd_fn && tp.kernelTaskParams.argsSize == sizeof(packed) &&
                   tp.kernelTaskParams.numBlocks == 2 && tp.kernelTaskParams.args == dargs,
               "GetParams: argsSize %zu numBlocks %u", tp.kernelTaskParams.argsSize, tp.kernelTaskParams.numBlocks);
        auto doubled = packed;  // z = x + x, from host memory copied at the call
        doubled.y = packed.x;
        tp.kernelTaskParams.args = &doubled;
        tp.kernelTaskParams.isHostArgs = 1;
        tp.kernelTaskParams.numBlocks = 4;
        tp.taskGrp = reinterpret_cast<aclrtTaskGrp>(&tp);
        e = aclmdlRITaskSetParams(kt, &tp);
        EXPECT(e == ACL_ERROR_RT_PARAM_INVALID, "a task group: %d", e);
        tp.taskGrp = nullptr;
        tp.kernelTaskParams.argsSize = 0;
        e = aclmdlRITaskSetParams(kt, &tp);
        EXPECT(e == ACL_ERROR_RT_PARAM_INVALID, "argsSize 0: %d", e);
        tp.kernelTaskParams.argsSize = sizeof(doubled);
        CHECK(aclmdlRITaskSetParams(kt, &tp));
        doubled.x = 0;  // copied already
        CHECK(aclmdlRIUpdate(ri));
        CHECK(aclrtMemset(dz, bytes, 0, bytes));
        CHECK(aclmdlRIExecuteAsync(ri, cs));
        CHECK(aclrtSynchronizeStream(cs));
        if (expect_sum("a captured kernel task with new host args (aclmdlRITaskSetParams)", dz, x, x)) return 1;
        CHECK(aclmdlRIDestroy(ri));
        CHECK(aclrtDestroyStream(cs));
    }
    // aclrtLaunchKernelWithArgsArray: one host pointer per argument; by handle, then by the
    // kernel's own address (npurt met it at the <<<>>> launch above)
    void *array_args[4] = {&dx, &dy, &dz, const_cast<uint32_t *>(&n)};
    CHECK(aclrtMemset(dz, bytes, 0, bytes));
    CHECK(aclrtLaunchKernelWithArgsArray(iadd_fn, 2, stream, nullptr, array_args));
    CHECK(aclrtSynchronizeStream(stream));
    if (expect_sum("aclrtLaunchKernelWithArgsArray (handle)", dz, x, y)) return 1;
    CHECK(aclrtMemset(dz, bytes, 0, bytes));
    CHECK(aclrtLaunchKernelWithArgsArray(reinterpret_cast<void *>(&iadd), 2, stream, nullptr, array_args));
    CHECK(aclrtSynchronizeStream(stream));
    if (expect_sum("aclrtLaunchKernelWithArgsArray (kernel address)", dz, x, y)) return 1;

    // aclrtLaunchKernelV2: device args and a launch config (a block offset of 0, prefetch on)
    aclrtLaunchKernelAttr v2attr;
    v2attr.id = ACL_RT_LAUNCH_KERNEL_ATTR_BLOCK_TASK_PREFETCH;
    v2attr.value.isBlockTaskPrefetch = 1;
    aclrtLaunchKernelCfg v2cfg = {&v2attr, 1};
    CHECK(aclrtMemset(dz, bytes, 0, bytes));
    CHECK(aclrtLaunchKernelV2(iadd_fn, 4, dargs, sizeof(packed), &v2cfg, stream));
    CHECK(aclrtSynchronizeStream(stream));
    if (expect_sum("aclrtLaunchKernelV2 (device args, config)", dz, x, y)) return 1;

    // aclrtLaunchKernelWithHostArgs with placeholders: n and scale copied to the device at the launch
    struct {
        uint64_t z, n, scale;
        int32_t n_value, scale_value;
    } host_args = {reinterpret_cast<uintptr_t>(dz), 0, 0, static_cast<int32_t>(n), 2};
    aclrtPlaceHolderInfo holders[2] = {{8, 24}, {16, 28}};
    CHECK(aclrtLaunchKernelWithHostArgs(iscale, 1, stream, nullptr, &host_args, sizeof(host_args), holders, 2));
    CHECK(aclrtSynchronizeStream(stream));
    if (expect_sum("aclrtLaunchKernelWithHostArgs (placeholders)", dz, x, y, 2)) return 1;

    // the kernel-args API and a launch config: a timeout of 1 us for a kernel that runs longer
    aclrtArgsHandle args = nullptr;
    aclrtParamHandle param = nullptr;
    uint64_t loops = 20000000;
    CHECK(aclrtKernelArgsInit(spin, &args));
    CHECK(aclrtKernelArgsAppend(args, &dargs, sizeof(void *), &param));
    CHECK(aclrtKernelArgsAppend(args, &loops, sizeof(loops), &param));
    CHECK(aclrtKernelArgsFinalize(args));
    aclrtLaunchKernelAttr attr;
    attr.id = ACL_RT_LAUNCH_KERNEL_ATTR_TIMEOUT_US;
    attr.value.timeoutUs.timeoutLow = 1;
    attr.value.timeoutUs.timeoutHigh = 0;
    aclrtLaunchKernelCfg cfg = {&attr, 1};
    aclrtStream s2 = nullptr;
    CHECK(aclrtCreateStream(&s2));
    CHECK(aclrtLaunchKernelWithConfig(spin, 1, s2, &cfg, args, nullptr));
    aclError timeout = aclrtSynchronizeStream(s2);
    EXPECT(timeout == ACL_ERROR_RT_AICORE_TIMEOUT, "timeout gave %d", static_cast<int>(timeout));
    std::printf("timeout: %d\n", static_cast<int>(timeout));
    CHECK(aclrtDestroyStreamForce(s2));

    // a trap: the launch is accepted, the failure surfaces at the synchronize, the callback sees it
    CHECK(aclrtSetExceptionInfoCallback(OnException));
    aclrtStream s3 = nullptr;
    CHECK(aclrtCreateStream(&s3));
    CHECK(launch_trapping(s3));
    aclError trap = aclrtSynchronizeStream(s3);
    EXPECT(trap == ACL_ERROR_RT_VECTOR_CORE_EXCEPTION, "trap gave %d", static_cast<int>(trap));
    EXPECT(g_exception_code == ACL_ERROR_RT_VECTOR_CORE_EXCEPTION, "callback saw %d", g_exception_code);
    std::printf("trap: %d, exception callback: %d\n", static_cast<int>(trap), g_exception_code);
    // the exception info of a <<<>>> launch: its kernel (a handle npurt makes for it), no arguments
    char trapped[64] = {0};
    EXPECT(g_func_ret == 0 && g_exception_func != nullptr, "aclrtGetFuncHandleFromExceptionInfo gave %d", g_func_ret);
    CHECK(aclrtGetFunctionName(g_exception_func, sizeof(trapped), trapped));
    EXPECT(std::strcmp(trapped, "trapping") == 0, "the exception's kernel is %s", trapped);
    EXPECT(g_args_ret == 0 && g_exception_args == nullptr && g_exception_args_len == 0,
           "a kernel without parameters: args %d %p %u", g_args_ret, g_exception_args, g_exception_args_len);
    // a kernel of a binary: its function handle, its packed arguments in device memory, the
    // binary's own exception callback with its user data
    aclrtFuncHandle trap_if_fn = nullptr;
    CHECK(aclrtBinaryGetFunction(bin, "trap_if", &trap_if_fn));
    int marker = 0;
    CHECK(aclrtBinarySetExceptionCallback(bin, OnBinaryException, &marker));
    int32_t seven = 7;
    CHECK(aclrtMemcpy(dz, 4, &seven, 4, ACL_MEMCPY_HOST_TO_DEVICE));
    struct {
        uint64_t flag, code;
    } trap_args = {reinterpret_cast<uintptr_t>(dz), 7};
    CHECK(aclrtLaunchKernelWithHostArgs(trap_if_fn, 2, s3, nullptr, &trap_args, sizeof(trap_args), nullptr, 0));
    trap = aclrtSynchronizeStream(s3);
    EXPECT(trap == ACL_ERROR_RT_VECTOR_CORE_EXCEPTION, "trap_if gave %d", static_cast<int>(trap));
    EXPECT(g_func_ret == 0 && g_exception_func == trap_if_fn, "the exception's function handle is not trap_if's");
    EXPECT(g_args_ret == 0 && g_exception_args_len == sizeof(trap_args), "args: %d, %u bytes", g_args_ret,
           g_exception_args_len);
    uint64_t seen[2] = {0, 0};
    CHECK(aclrtMemcpy(seen, sizeof(seen), g_exception_args, sizeof(seen), ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT(seen[0] == trap_args.flag && seen[1] == 7, "the exception's args hold 0x%llx %llu",
           static_cast<unsigned long long>(seen[0]), static_cast<unsigned long long>(seen[1]));
    EXPECT(g_binary_callbacks == 1 && g_binary_user_data == &marker, "binary callback: %d calls", g_binary_callbacks);
    std::printf("exception info: kernel trap_if, %u bytes of arguments, binary callback called\n",
                g_exception_args_len);
    void *no_args = nullptr;
    uint32_t no_len = 0;
    EXPECT(aclrtGetArgsFromExceptionInfo(nullptr, &no_args, &no_len) != ACL_SUCCESS, "a NULL info gave success");
    CHECK(aclrtDestroyStreamForce(s3));

    // a Python kernel file stays loadable from C
    if (argc > 1) {
        aclrtBinHandle pybin = nullptr;
        aclrtFuncHandle pyadd = nullptr;
        CHECK(aclrtBinaryLoadFromFile(argv[1], nullptr, &pybin));
        CHECK(aclrtBinaryGetFunction(pybin, "pyadd", &pyadd));
        struct {
            uint64_t z, x, y, n;
        } pyargs = {reinterpret_cast<uintptr_t>(dz), reinterpret_cast<uintptr_t>(dx), reinterpret_cast<uintptr_t>(dy),
                    n};
        CHECK(aclrtLaunchKernelWithHostArgs(pyadd, 2, stream, nullptr, &pyargs, sizeof(pyargs), nullptr, 0));
        CHECK(aclrtSynchronizeStream(stream));
        if (expect_sum("a Python kernel file from C", dz, x, y)) return 1;

        // resource limits confine a launch's blocks to that many cores; GetBlockNum stays 8
        aclrtFuncHandle where = nullptr;
        CHECK(aclrtBinaryGetFunction(pybin, "where_blocks_run", &where));
        uint64_t where_args = reinterpret_cast<uintptr_t>(dz);
        auto cores_used = [&](aclrtStream s, int32_t *distinct) -> int {
            CHECK(aclrtLaunchKernelWithHostArgs(where, 8, s, nullptr, &where_args, sizeof(where_args), nullptr, 0));
            CHECK(aclrtSynchronizeStream(s));
            int32_t seen[8];
            CHECK(aclrtMemcpy(seen, sizeof(seen), dz, sizeof(seen), ACL_MEMCPY_DEVICE_TO_HOST));
            bool core[64] = {false};
            *distinct = 0;
            for (int32_t v : seen) {
                EXPECT(v % 1000 == 8 && v / 1000 < 64, "a block saw %d", v);
                if (!core[v / 1000]) ++*distinct;
                core[v / 1000] = true;
            }
            return 0;
        };
        int32_t unlimited = 0, device_limited = 0, stream_limited = 0;
        if (cores_used(stream, &unlimited)) return 1;
        CHECK(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, 1));
        uint32_t limit = 0;
        CHECK(aclrtGetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, &limit));
        EXPECT(limit == 1, "device limit %u", limit);
        if (cores_used(stream, &device_limited)) return 1;
        CHECK(aclrtResetDeviceResLimit(0));
        CHECK(aclrtSetStreamResLimit(stream, ACL_RT_DEV_RES_CUBE_CORE, 1));
        if (cores_used(stream, &stream_limited)) return 1;
        CHECK(aclrtResetStreamResLimit(stream));
        EXPECT(device_limited == 1 && stream_limited == 1, "limited launches used %d and %d cores", device_limited,
               stream_limited);
        EXPECT(aclrtSetDeviceResLimit(0, ACL_RT_DEV_RES_CUBE_CORE, 100000) == ACL_ERROR_INVALID_PARAM,
               "a limit above the cores was accepted");
        std::printf("resource limits: %d cores unlimited, 1 under a device limit of 1, 1 under a stream limit of 1\n",
                    unlimited);
        CHECK(aclrtBinaryUnLoad(pybin));
    }

    CHECK(aclrtBinaryUnLoad(bin));
    CHECK(aclrtFree(dargs));
    CHECK(aclrtFree(dx));
    CHECK(aclrtFree(dy));
    CHECK(aclrtFree(dz));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    std::printf("kernel_checks: ok\n");
    return 0;
}
