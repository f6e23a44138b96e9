/* C loops for `npurt bench`'s C-interface figures (npurt.apps.bench.capi): each runs n calls of
 * the C interface and returns the seconds they took (CLOCK_MONOTONIC), so the bench compares
 * them with the same loops through the pyACL facade in the same process and runtime. */
#include "acl/acl.h"
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

/* n x 4-byte aclrtMemcpy host -> device; -1 if a call failed */
double loop_memcpy_h2d(void *dev, void *host, int n)
{
    double t0 = now();
    for (int i = 0; i < n; i++) {
        if (aclrtMemcpy(dev, 4, host, 4, ACL_MEMCPY_HOST_TO_DEVICE) != ACL_SUCCESS) return -1;
    }
    return now() - t0;
}

/* n x (aclrtMalloc 4 KiB + aclrtFree) */
double loop_malloc_free(int n)
{
    double t0 = now();
    for (int i = 0; i < n; i++) {
        void *p = NULL;
        if (aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return -1;
        if (aclrtFree(p) != ACL_SUCCESS) return -1;
    }
    return now() - t0;
}
