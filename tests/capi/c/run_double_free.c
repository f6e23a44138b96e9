/* A program with a bug the sanitizer reports: the same allocation freed twice. */
#include "acl/acl.h"

int main(void) {
    void *dev = NULL;
    aclInit(NULL);
    aclrtSetDevice(0);
    aclrtMalloc(&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST);
    aclrtFree(dev);
    aclrtFree(dev);
    aclrtResetDevice(0);
    aclFinalize();
    return 0;
}
