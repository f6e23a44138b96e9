/* A program that leaks: device memory never freed before the reset, host memory never freed
 * before aclFinalize, and one allocation freed properly (not reported). */
#include <stdio.h>
#include "acl/acl.h"

int main(void) {
    void *leaked = NULL, *freed = NULL, *host = NULL;
    aclInit(NULL);
    aclrtSetDevice(0);
    aclrtMalloc(&leaked, 4096, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtMalloc(&freed, 8192, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtFree(freed);
    aclrtMallocHost(&host, 256);
    aclrtResetDevice(0);
    aclFinalize();
    printf("leaked %p host %p\n", leaked, host);
    return 0;
}
