/* Memory in every direction: H2D, D2D, D2H, memset, async copies with pinned host memory,
 * 2D copies, mem info, pointer attributes, host registration of malloc_host memory. */
#include "check.h"

int main(void)
{
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream stream;
    CHECK(aclrtCreateStream(&stream));
    enum { N = 256 };
    unsigned char host[N], back[N];
    for (int i = 0; i < N; i++) host[i] = (unsigned char)(i * 7);
    void *a = NULL, *b = NULL;
    CHECK(aclrtMalloc(&a, N, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&b, N, ACL_MEM_MALLOC_NORMAL_ONLY));
    CHECK(aclrtMemcpy(a, N, host, N, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(b, N, a, N, ACL_MEMCPY_DEVICE_TO_DEVICE));
    CHECK(aclrtMemcpy(back, N, b, N, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT(memcmp(host, back, N) == 0);

    CHECK(aclrtMemset(a, N, 0x5a, N));
    CHECK(aclrtMemcpy(back, N, a, N, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT(back[0] == 0x5a && back[N - 1] == 0x5a);

    void *pinned = NULL;
    CHECK(aclrtMallocHost(&pinned, N));
    memcpy(pinned, host, N);
    CHECK(aclrtMemcpyAsync(a, N, pinned, N, ACL_MEMCPY_HOST_TO_DEVICE, stream));
    CHECK(aclrtMemsetAsync(b, N, 1, N, stream));
    CHECK(aclrtMemcpyAsync(b, N, a, N / 2, ACL_MEMCPY_DEVICE_TO_DEVICE, stream));
    CHECK(aclrtMemcpyAsync(pinned, N, b, N, ACL_MEMCPY_DEVICE_TO_HOST, stream));
    CHECK(aclrtSynchronizeStream(stream));
    EXPECT(memcmp(pinned, host, N / 2) == 0 && ((unsigned char *)pinned)[N - 1] == 1);

    /* 2D: 4 rows of 8 bytes out of a 16-byte pitch */
    unsigned char rows[64];
    for (int i = 0; i < 64; i++) rows[i] = (unsigned char)i;
    CHECK(aclrtMemset(a, N, 0, N));
    CHECK(aclrtMemcpy2d(a, 8, rows, 16, 8, 4, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtMemcpy(back, N, a, 32, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT(back[0] == 0 && back[8] == 16 && back[31] == 55);

    size_t freeMem = 0, total = 0;
    CHECK(aclrtGetMemInfo(ACL_HBM_MEM, &freeMem, &total));
    EXPECT(total > 0 && freeMem <= total);

    aclrtPtrAttributes attrs;
    CHECK(aclrtPointerGetAttributes(a, &attrs));
    EXPECT(attrs.location.type == ACL_MEM_LOCATION_TYPE_DEVICE && attrs.location.id == 0);
    CHECK(aclrtPointerGetAttributes(pinned, &attrs));
    EXPECT(attrs.location.type == ACL_MEM_LOCATION_TYPE_HOST);

    /* the zero-copy sample: register malloc_host memory, get its device pointer */
    void *reg = NULL;
    CHECK(aclrtMallocHost(&reg, 4096));
    CHECK(aclrtHostRegisterV2(reg, 4096, ACL_HOST_REG_MAPPED));
    void *mapped = NULL;
    CHECK(aclrtHostGetDevicePointer(reg, &mapped, 0));
    EXPECT(mapped != NULL && mapped != reg);
    CHECK(aclrtHostUnregister(reg));
    aclError e;
    CHECK(aclrtFreeHost(reg));

    /* bad input: errors, not crashes, and messages in C terms */
    e = aclrtMemcpy(back, 16, a, 32, ACL_MEMCPY_DEVICE_TO_HOST);
    const char *msg = aclGetRecentErrMsg();
    printf("oversized copy: %d %s\n", e, msg);
    EXPECT(e != ACL_SUCCESS && strstr(msg, "aclrtMemcpy") && strstr(msg, "destMax"));
    e = aclrtMalloc(NULL, 16, ACL_MEM_MALLOC_HUGE_FIRST);
    EXPECT(e == ACL_ERROR_INVALID_PARAM);
    EXPECT(strstr(aclGetRecentErrMsg(), "devPtr") != NULL);
    e = aclrtFree((void *)0x1234);
    EXPECT(e != ACL_SUCCESS);

    CHECK(aclrtFreeHost(pinned));
    CHECK(aclrtFree(a));
    CHECK(aclrtFree(b));
    CHECK(aclrtDestroyStream(stream));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    printf("memory: ok\n");
    return 0;
}
