/* `npurt bench`'s c_first_call_s: the seconds the first call of the C interface takes in a
 * fresh process (it starts Python and imports npurt), then a second call for contrast. */
#include "acl/acl.h"
#include <stdio.h>
#include <time.h>

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

int main(void)
{
    uint32_t count = 0;
    double t0 = now();
    aclError first = aclrtGetDeviceCount(&count);
    double t1 = now();
    aclError second = aclrtGetDeviceCount(&count);
    double t2 = now();
    printf("first_call_s=%.6f second_call_s=%.9f rets=%d,%d\n", t1 - t0, t2 - t1, first, second);
    return first != ACL_SUCCESS || second != ACL_SUCCESS;
}
