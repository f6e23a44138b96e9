/* Device memory from C: the first steps of every runtime guide, on npurt's simulated NPU.
 * H2D, D2D and D2H copies, a memset, page-locked host memory with an asynchronous copy, and
 * what a mistake looks like (an oversized copy: an error code and a message, no crash). */
#include "acl/acl.h"
#include <stdio.h>
#include <string.h>

#define CHECK(call) do { aclError e_ = (call); if (e_ != ACL_SUCCESS) { \
    fprintf(stderr, "%s failed: %d (%s)\n", #call, e_, aclGetRecentErrMsg()); return 1; } } while (0)

int main(void)
{
    enum { N = 1024 };
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    printf("device 0 is a simulated %s\n", aclrtGetSocName());

    float host[N], back[N];
    for (int i = 0; i < N; i++) host[i] = (float)i;
    void *a = NULL, *b = NULL;
    CHECK(aclrtMalloc(&a, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&b, sizeof host, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(a, sizeof host, host, sizeof host, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(b, sizeof host, a, sizeof host, ACL_MEMCPY_DEVICE_TO_DEVICE));
    CHECK(aclrtMemcpy(back, sizeof back, b, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("round trip H2D -> D2D -> D2H: %s\n", memcmp(host, back, sizeof host) == 0 ? "equal" : "DIFFERENT");

    /* asynchronous copies need page-locked host memory to overlap with other work */
    aclrtStream stream;
    CHECK(aclrtCreateStream(&stream));
    float *pinned = NULL;
    CHECK(aclrtMallocHost((void **)&pinned, sizeof host));
    CHECK(aclrtMemsetAsync(b, sizeof host, 0, sizeof host, stream));
    CHECK(aclrtMemcpyAsync(pinned, sizeof host, b, sizeof host, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    CHECK(aclrtSynchronizeStream(stream));   /* the copy is done only now */
    printf("after memset + async copy back: pinned[7] = %.1f\n", pinned[7]);

    size_t freeMem = 0, total = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &freeMem, &total));
    printf("device memory: %zu MiB free of %zu MiB\n", freeMem >> 20, total >> 20);

    aclError e = aclrtMemcpy(back, 16, a, 64, ACL_MEMCPY_DEVICE_TO_HOST);
    printf("a copy of 64 bytes into 16: error %d: %s\n", e, aclGetRecentErrMsg());

    CHECK(aclrtFreeHost(pinned));
    CHECK(aclrtFree(a));
    CHECK(aclrtFree(b));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    printf("OK\n");
    return 0;
}
