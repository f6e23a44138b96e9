// Four C threads at once, each with its own device binding and stream, copying through
// device memory; the current device is per thread.
#include "check.h"
#include <thread>
#include <vector>

int main()
{
    CHECK(aclInit(nullptr));
    uint32_t count = 0;
    CHECK(aclrtGetDeviceCount(&count));
    std::vector<std::thread> threads;
    std::vector<int> ok(4, 0);
    for (int t = 0; t < 4; t++) {
        threads.emplace_back([t, count, &ok] {
            int32_t dev = static_cast<int32_t>(t % count);
            CHECK(aclrtSetDevice(dev));
            aclrtStream s;
            CHECK(aclrtCreateStream(&s));
            int32_t got = -1;
            enum { N = 4096 };
            std::vector<unsigned char> in(N, (unsigned char)(t + 1)), out(N, 0);
            void *d = nullptr;
            for (int i = 0; i < 20; i++) {
                CHECK(aclrtGetDevice(&got));
                EXPECT(got == dev);
                CHECK(aclrtMalloc(&d, N, ACL_MEM_MALLOC_HUGE_FIRST));
                CHECK(aclrtMemcpy(d, N, in.data(), N, ACL_MEMCPY_HOST_TO_DEVICE));
                CHECK(aclrtMemcpyAsync(out.data(), N, d, N, ACL_MEMCPY_DEVICE_TO_HOST, s));
                CHECK(aclrtSynchronizeStream(s));
                CHECK(aclrtFree(d));
            }
            ok[t] = out[N - 1] == (unsigned char)(t + 1);
            CHECK(aclrtDestroyStream(s));
            CHECK(aclrtResetDevice(dev));
        });
    }
    for (auto &th : threads) th.join();
    for (int t = 0; t < 4; t++) EXPECT(ok[t]);
    CHECK(aclFinalize());
    printf("threads: ok\n");
    return 0;
}
