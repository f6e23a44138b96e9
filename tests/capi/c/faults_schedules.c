/* Fault injection and controlled schedules reach a C program unmodified (NPURT_FAULTS,
 * NPURT_SCHEDULE): three mallocs, then a memset on one stream and a copy of the same memory
 * on another with no event between them (an ordering bug: which one runs first decides the
 * byte printed). Prints what each call returned. */
#include "check.h"

int main(void)
{
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream s1, s2;
    CHECK(aclrtCreateStream(&s1));
    CHECK(aclrtCreateStream(&s2));
    void *p[3] = {NULL, NULL, NULL};
    aclError r[3];
    for (int i = 0; i < 3; i++) r[i] = aclrtMalloc(&p[i], 64, ACL_MEM_MALLOC_HUGE_FIRST);
    printf("malloc: %d %d %d\n", r[0], r[1], r[2]);
    if (r[1] != ACL_SUCCESS) printf("message: %s\n", aclGetRecentErrMsg());
    void *a = NULL, *b = NULL;
    CHECK(aclrtMalloc(&a, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMalloc(&b, 64, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemset(a, 64, 0, 64));
    CHECK(aclrtMemset(b, 64, 0, 64));
    CHECK(aclrtMemsetAsync(a, 64, 1, 64, s1));
    CHECK(aclrtMemcpyAsync(b, 64, a, 64, ACL_MEMCPY_DEVICE_TO_DEVICE, s2));
    aclError e1 = aclrtSynchronizeStream(s1);
    aclError e2 = aclrtSynchronizeStream(s2);
    unsigned char byte = 9;
    CHECK(aclrtMemcpy(&byte, 1, b, 1, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("sync: %d %d\n", e1, e2);
    printf("byte: %d\n", byte);
    CHECK(aclrtDestroyStream(s1));
    CHECK(aclrtDestroyStream(s2));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    return 0;
}
