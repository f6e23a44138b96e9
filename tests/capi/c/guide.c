/* The runtime guide's snippets as one program: devices, memory across cards, multi-stream
 * overlap with events, and the classic pitfalls done right. `guide racy` instead shares a
 * buffer between two streams without an event (the second pitfall), for the sanitizer. */
#include "check.h"

enum { N = 1 << 18 };

static int racy(void)
{
    aclrtStream a, b;
    void *buf = NULL, *copy = NULL;
    CHECK(aclrtCreateStream(&a));
    CHECK(aclrtCreateStream(&b));
    CHECK(aclrtMalloc(&buf, N, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&copy, N, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemsetAsync(buf, N, 1, N, a));                                  /* writes buf on a */
    CHECK(aclrtMemcpyAsync(copy, N, buf, N, ACL_MEMCPY_DEVICE_TO_DEVICE, b));  /* reads it on b: no event */
    CHECK(aclrtSynchronizeDevice());
    CHECK(aclrtFree(buf));
    CHECK(aclrtFree(copy));
    CHECK(aclrtDestroyStream(a));
    CHECK(aclrtDestroyStream(b));
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(aclInit(NULL));
    uint32_t count = 0;
    CHECK(aclrtGetDeviceCount(&count));
    EXPECT(count >= 1);
    CHECK(aclrtSetDevice(0));
    if (argc > 1 && strcmp(argv[1], "racy") == 0) {
        int r = racy();
        CHECK(aclrtResetDevice(0));
        CHECK(aclFinalize());
        return r;
    }

    /* memory across cards: device 0 -> device 1 with peer access, when there are two */
    static unsigned char host[N], back[N];
    for (int i = 0; i < N; i++) host[i] = (unsigned char)(i % 251);
    void *d0 = NULL;
    CHECK(aclrtMalloc(&d0, N, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(d0, N, host, N, ACL_MEMCPY_HOST_TO_DEVICE));
    if (count >= 2) {
        int32_t can = 0;
        CHECK(aclrtDeviceCanAccessPeer(&can, 0, 1));
        EXPECT(can == 1);
        CHECK(aclrtDeviceEnablePeerAccess(1, 0));
        CHECK(aclrtSetDevice(1));
        CHECK(aclrtDeviceEnablePeerAccess(0, 0));
        void *d1 = NULL;
        CHECK(aclrtMalloc(&d1, N, ACL_MEM_MALLOC_HUGE_FIRST));
        CHECK(aclrtMemcpy(d1, N, d0, N, ACL_MEMCPY_DEVICE_TO_DEVICE));   /* across cards */
        CHECK(aclrtMemcpy(back, N, d1, N, ACL_MEMCPY_DEVICE_TO_HOST));
        EXPECT(memcmp(host, back, N) == 0);
        CHECK(aclrtFree(d1));
        CHECK(aclrtResetDevice(1));
        CHECK(aclrtSetDevice(0));
        printf("copied across cards\n");
    }

    /* multi-stream overlap: each stream copies its half in and out; events order the halves */
    aclrtStream s[2];
    aclrtEvent done[2];
    unsigned char *pinned = NULL;
    void *dev = NULL;
    CHECK(aclrtMallocHost((void **)&pinned, N));
    CHECK(aclrtMalloc(&dev, N, ACL_MEM_MALLOC_HUGE_FIRST));
    memcpy(pinned, host, N);
    for (int i = 0; i < 2; i++) {
        CHECK(aclrtCreateStream(&s[i]));
        CHECK(aclrtCreateEvent(&done[i]));
        size_t off = (size_t)i * (N / 2);
        CHECK(aclrtMemcpyAsync((char *)dev + off, N / 2, pinned + off, N / 2, ACL_MEMCPY_HOST_TO_DEVICE, s[i]));
        CHECK(aclrtMemsetAsync((char *)dev + off, N / 2, i + 7, 16, s[i]));
        CHECK(aclrtRecordEvent(done[i], s[i]));
    }
    CHECK(aclrtStreamWaitEvent(s[0], done[1]));   /* stream 0 reads stream 1's half only after it */
    CHECK(aclrtMemcpyAsync(pinned, N, dev, N, ACL_MEMCPY_DEVICE_TO_HOST, s[0]));
    /* the third pitfall: the host must synchronize before it reads what an async copy writes */
    CHECK(aclrtSynchronizeStream(s[0]));
    EXPECT(pinned[0] == 7 && pinned[N / 2] == 8 && pinned[20] == host[20] && pinned[N - 1] == host[N - 1]);
    printf("two streams overlapped, ordered by events\n");

    for (int i = 0; i < 2; i++) {
        CHECK(aclrtDestroyEvent(done[i]));
        CHECK(aclrtDestroyStream(s[i]));
    }
    CHECK(aclrtFreeHost(pinned));
    CHECK(aclrtFree(dev));
    CHECK(aclrtFree(d0));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    printf("guide: ok\n");
    return 0;
}
