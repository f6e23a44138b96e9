/* Virtual memory management: reserve, create physical memory, map, use, unmap, free, release;
   a run of two physical handles mapped side by side is one copyable range; the driver's bad
   inputs; and, with "import <handle>" as arguments (the test starts a second process), the
   physical memory one process exported read in another. */
#include "check.h"
#include <unistd.h>

#define EXPECT_CODE(call, code) do { aclError e_ = (call); if (e_ != (code)) { \
    printf("FAIL %s:%d %s -> %d, expected %d\n", __FILE__, __LINE__, #call, e_, (code)); exit(1); } } while (0)

static aclrtPhysicalMemProp device_prop(void)
{
    aclrtPhysicalMemProp prop;
    memset(&prop, 0, sizeof(prop));
    prop.handleType = ACL_MEM_HANDLE_TYPE_NONE;
    prop.allocationType = ACL_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    prop.memAttr = ACL_HBM_MEM_HUGE;
    return prop;
}

static int importer(uint64_t shareable)
{
    aclrtPhysicalMemProp prop = device_prop();
    size_t g = 0;
    CHECK(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g));
    aclrtDrvMemHandle h = NULL;
    CHECK(aclrtMemImportFromShareableHandle(shareable, 0, &h));
    void *va = NULL;
    CHECK(aclrtReserveMemAddress(&va, g, 0, NULL, 0));
    CHECK(aclrtMapMem(va, g, 0, h, 0));
    int32_t first = 0;
    CHECK(aclrtMemcpy(&first, 4, va, 4, ACL_MEMCPY_DEVICE_TO_HOST));
    int32_t answer = first + 1;  /* written back: the exporter reads it through its own mapping */
    CHECK(aclrtMemcpy((char *)va + 4, 4, &answer, 4, ACL_MEMCPY_HOST_TO_DEVICE));
    CHECK(aclrtUnmapMem(va));
    CHECK(aclrtReleaseMemAddress(va));
    CHECK(aclrtFreePhysical(h));
    printf("imported value %d\n", first);
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    if (argc == 3 && strcmp(argv[1], "import") == 0)
        return importer(strtoull(argv[2], NULL, 10));
    if (argc == 3 && strcmp(argv[1], "refused") == 0) {  /* not on the allow-list */
        aclrtDrvMemHandle h = NULL;
        aclError e = aclrtMemImportFromShareableHandle(strtoull(argv[2], NULL, 10), 0, &h);
        printf("import refused: %d\n", e);
        return 0;
    }

    aclrtPhysicalMemProp prop = device_prop();
    size_t g = 0, rec = 0;
    CHECK(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM, &g));
    CHECK(aclrtMemGetAllocationGranularity(&prop, ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED, &rec));
    EXPECT(g == 2u << 20 && rec == g);

    void *va = NULL;
    CHECK(aclrtReserveMemAddress(&va, 4 * g, 0, NULL, 0));
    aclrtDrvMemHandle a = NULL, b = NULL;
    CHECK(aclrtMallocPhysical(&a, g, &prop, 0));
    CHECK(aclrtMallocPhysical(&b, g, &prop, 0));
    CHECK(aclrtMapMem(va, g, 0, a, 0));
    CHECK(aclrtMapMem((char *)va + g, g, 0, b, 0));
    aclrtMemAccessDesc desc;
    memset(&desc, 0, sizeof(desc));
    desc.flags = ACL_RT_MEM_ACCESS_FLAGS_READWRITE;
    desc.location.type = ACL_MEM_LOCATION_TYPE_DEVICE;
    desc.location.id = 0;
    CHECK(aclrtMemSetAccess(va, 2 * g, &desc, 1));
    aclrtMemLocation loc;
    uint64_t flags = 0;
    CHECK(aclrtMemGetAccess(va, &loc, &flags));
    EXPECT(flags == ACL_RT_MEM_ACCESS_FLAGS_READWRITE && loc.type == ACL_MEM_LOCATION_TYPE_DEVICE);

    /* one copy across the two physical handles: they are adjacent mappings */
    size_t n = 2 * g / 4;
    int32_t *host = malloc(2 * g), *back = malloc(2 * g);
    for (size_t i = 0; i < n; i++) host[i] = (int32_t)i * 3;
    CHECK(aclrtMemcpy(va, 2 * g, host, 2 * g, ACL_MEMCPY_HOST_TO_DEVICE));
    memset(back, 0, 2 * g);
    CHECK(aclrtMemcpy(back, 2 * g, va, 2 * g, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT(memcmp(host, back, 2 * g) == 0);

    aclrtDrvMemHandle retained = NULL;
    CHECK(aclrtMemRetainAllocationHandle((char *)va + g + 64, &retained));
    EXPECT(retained == b);
    void *base = NULL;
    size_t size = 0;
    CHECK(aclrtMemGetAddressRange((char *)va + 100, &base, &size));
    EXPECT(base == va && size == 4 * g);

    /* the reserved range past the mappings holds nothing: a copy there is refused */
    printf("copy from unmapped: %d\n", aclrtMemcpy(back, 16, (char *)va + 2 * g, 16, ACL_MEMCPY_DEVICE_TO_HOST));
    /* the driver's bad inputs: ACL_ERROR_RT_PARAM_INVALID */
    printf("map over mapped: %d\n", aclrtMapMem(va, g, 0, a, 0));
    printf("unmap never mapped: %d\n", aclrtUnmapMem((char *)va + 3 * g));
    aclrtDrvMemHandle bad = NULL;
    printf("size not a granularity multiple: %d\n", aclrtMallocPhysical(&bad, g + 4096, &prop, 0));
    printf("release with mappings: %d\n", aclrtReleaseMemAddress(va));
    /* the ACL layer's checks: ACL_ERROR_INVALID_PARAM */
    EXPECT_CODE(aclrtMapMem(va, g, 4096, a, 0), ACL_ERROR_RT_PARAM_INVALID);
    EXPECT_CODE(aclrtMallocPhysical(&bad, g, &prop, 1), ACL_ERROR_INVALID_PARAM);
    EXPECT_CODE(aclrtReserveMemAddress(NULL, g, 0, NULL, 0), ACL_ERROR_INVALID_PARAM);

    /* free while mapped: deferred; the bytes stay readable until the unmap */
    CHECK(aclrtFreePhysical(a));
    int32_t first = -1;
    CHECK(aclrtMemcpy(&first, 4, va, 4, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT(first == 0);
    CHECK(aclrtUnmapMem(va));
    CHECK(aclrtUnmapMem((char *)va + g));
    CHECK(aclrtFreePhysical(b));
    CHECK(aclrtReleaseMemAddress(va));

    /* another process maps what this one exported (the path of the test program in argv[0]) */
    aclrtDrvMemHandle shared = NULL;
    CHECK(aclrtMallocPhysical(&shared, g, &prop, 0));
    void *sva = NULL;
    CHECK(aclrtReserveMemAddress(&sva, g, 0, NULL, 0));
    CHECK(aclrtMapMem(sva, g, 0, shared, 0));
    int32_t value = 4242;
    CHECK(aclrtMemcpy(sva, 4, &value, 4, ACL_MEMCPY_HOST_TO_DEVICE));
    uint64_t sh = 0;
    CHECK(aclrtMemExportToShareableHandle(shared, ACL_MEM_HANDLE_TYPE_NONE, ACL_RT_VMM_EXPORT_FLAG_DEFAULT, &sh));
    printf("export twice: %d\n", aclrtMemExportToShareableHandle(shared, ACL_MEM_HANDLE_TYPE_NONE, 0, &sh));
    char cmd[4096];
    snprintf(cmd, sizeof(cmd), "%s refused %llu", argv[0], (unsigned long long)sh);
    fflush(stdout);
    if (system(cmd) != 0) { printf("FAIL refused run\n"); return 1; }
    /* allow the next process: its pid is unknown before it starts, so validation is off */
    aclrtDrvMemHandle open_h = NULL;
    CHECK(aclrtMallocPhysical(&open_h, g, &prop, 0));
    CHECK(aclrtUnmapMem(sva));
    CHECK(aclrtMapMem(sva, g, 0, open_h, 0));
    CHECK(aclrtMemcpy(sva, 4, &value, 4, ACL_MEMCPY_HOST_TO_DEVICE));
    uint64_t open_sh = 0;
    CHECK(aclrtMemExportToShareableHandle(open_h, ACL_MEM_HANDLE_TYPE_NONE,
                                          ACL_RT_VMM_EXPORT_FLAG_DISABLE_PID_VALIDATION, &open_sh));
    snprintf(cmd, sizeof(cmd), "%s import %llu", argv[0], (unsigned long long)open_sh);
    fflush(stdout);
    if (system(cmd) != 0) { printf("FAIL import run\n"); return 1; }
    int32_t answer = 0;
    CHECK(aclrtMemcpy(&answer, 4, (char *)sva + 4, 4, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT(answer == 4243);
    CHECK(aclrtUnmapMem(sva));
    CHECK(aclrtFreePhysical(open_h));
    CHECK(aclrtFreePhysical(shared));
    CHECK(aclrtReleaseMemAddress(sva));
    printf("import of a freed handle: %d\n", aclrtMemImportFromShareableHandle(open_sh, 0, &open_h));
    free(host);
    free(back);
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    printf("vmm: ok\n");
    return 0;
}
