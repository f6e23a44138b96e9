/* A correct program: npurt run ./run_hello exits 0, with or without --sanitize. */
#include <stdio.h>
#include "acl/acl.h"

int main(void) {
    void *dev = NULL;
    if (aclInit(NULL) != ACL_SUCCESS || aclrtSetDevice(0) != ACL_SUCCESS) return 1;
    if (aclrtMalloc(&dev, 1024, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return 1;
    if (aclrtMemset(dev, 1024, 0, 1024) != ACL_SUCCESS) return 1;
    printf("hello from a native program\n");
    aclrtFree(dev);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
