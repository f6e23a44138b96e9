/* Stream-ordered memory pools and managed memory from C: a pool's allocation reused in stream
   order, its statistics as uint64 attributes, the maxSize refusal; managed memory the host
   writes through its pointer and a copy reads as device memory; aclrtFree frees it. */
#include "check.h"
#include "acl/acl_rt_memory_soma.h"

int main(void)
{
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream s;
    CHECK(aclrtCreateStream(&s));

    aclrtMemPoolProps props;
    memset(&props, 0, sizeof(props));
    props.allocType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    props.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    props.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    props.maxSize = 16u << 20;
    aclrtMemPool pool = NULL;
    CHECK(aclrtMemPoolCreate(&pool, &props));
    void *a = NULL, *b = NULL;
    CHECK(aclrtMemPoolMallocAsync(&a, 1000, pool, s));
    CHECK(aclrtMemsetAsync(a, 1000, 0x5A, 1000, s));
    CHECK(aclrtMemPoolFreeAsync(a, s));
    CHECK(aclrtMemPoolMallocAsync(&b, 1000, pool, s));
    EXPECT(a == b);  /* the same stream reuses it at once */
    uint64_t reserved = 0, used = 0, threshold = 1u << 20;
    CHECK(aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD, &threshold));
    CHECK(aclrtMemPoolGetAttr(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    CHECK(aclrtMemPoolGetAttr(pool, ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT, &used));
    EXPECT(reserved == 2u << 20 && used == 2u << 20);
    int opportunistic = 0;
    CHECK(aclrtMemPoolGetAttr(pool, ACL_RT_MEM_POOL_REUSE_ALLOW_OPPORTUNISTIC, &opportunistic));
    EXPECT(opportunistic == 1);
    void *big = NULL;
    printf("past maxSize: %d\n", aclrtMemPoolMallocAsync(&big, 32u << 20, pool, s));
    printf("set a read-only attribute: %d\n", aclrtMemPoolSetAttr(pool, ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT, &used));
    printf("destroy in use: %d\n", aclrtMemPoolDestroy(pool));
    CHECK(aclrtMemPoolFreeAsync(b, s));
    CHECK(aclrtSynchronizeStream(s));
    CHECK(aclrtMemPoolTrimTo(pool, 0));
    CHECK(aclrtMemPoolGetAttr(pool, ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT, &reserved));
    EXPECT(reserved == 0);
    CHECK(aclrtMemPoolDestroy(pool));

    /* managed memory */
    float *m = NULL;
    CHECK(aclrtMemAllocManaged((void **)&m, 4096, ACL_RT_MEM_ATTACH_GLOBAL));
    for (int i = 0; i < 1024; i++) m[i] = (float)i;   /* the host writes through the pointer */
    void *dev = NULL;
    CHECK(aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(dev, 4096, m, 4096, ACL_MEMCPY_DEFAULT));
    float back[1024];
    CHECK(aclrtMemcpy(back, sizeof(back), dev, 4096, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT(back[1023] == 1023.0f);
    aclrtMemManagedLocation loc = {ACL_MEM_LOCATIONTYPE_DEVICE, 0};
    CHECK(aclrtMemManagedPrefetchAsync(m, 2u << 20, loc, 0, s));
    CHECK(aclrtSynchronizeStream(s));
    int32_t last = -1;
    CHECK(aclrtMemManagedGetAttr(ACL_MEM_RANGE_ATTRIBUTE_LAST_PREFETCH_LOCATION_TYPE, m, 4, &last, sizeof(last)));
    EXPECT(last == ACL_MEM_LOCATIONTYPE_DEVICE);
    aclrtPtrAttributes attrs;
    CHECK(aclrtPointerGetAttributes(m, &attrs));
    EXPECT(attrs.location.type == ACL_MEM_LOCATION_TYPE_MANAGED);
    CHECK(aclrtMemP2PMap(dev, 4096, 0, 0));
    printf("p2p map past the allocation: %d\n", aclrtMemP2PMap(dev, 1 << 20, 0, 0));
    CHECK(aclrtFree(m));
    CHECK(aclrtFree(dev));
    CHECK(aclrtDestroyStream(s));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    printf("mempool: ok\n");
    return 0;
}
