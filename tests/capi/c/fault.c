/* The first pitfall of every runtime guide: reading device memory on the host. */
#include "check.h"

int main(void)
{
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    int *dev = NULL;
    CHECK(aclrtMalloc((void **)&dev, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    printf("about to read device memory on the host\n");
    fflush(stdout);
    volatile int x = dev[10];   /* SIGSEGV, as on hardware */
    printf("read %d: not reached\n", x);
    return 0;
}
