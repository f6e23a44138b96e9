/* The first pitfall of every runtime guide: reading device memory on the host. The buffer
 * is allocated in a function of its own (exported: the program is linked -rdynamic) so that
 * the explanation can name where it was allocated. */
#include "check.h"

__attribute__((noinline, visibility("default"))) int *allocate_buffer(size_t size)
{
    int *dev = NULL;
    CHECK(aclrtMalloc((void **)&dev, size, ACL_MEM_MALLOC_HUGE_FIRST));
    return dev;
}

int main(void)
{
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    int *dev = allocate_buffer(4096);
    printf("about to read device memory on the host\n");
    fflush(stdout);
    volatile int x = dev[10];   /* SIGSEGV, as on hardware */
    printf("read %d: not reached\n", x);
    return 0;
}
