/* aclrtMalloc / aclrtFree on the direct C path of the caching pool (npurt.capi.shims DIRECT):
 * the codes of bad input and of a thread without a context, and a loop whose blocks come back
 * from the pool. Prints one "name code" line per case. */
#include "acl/acl.h"
#include <pthread.h>
#include <stdio.h>

static void *other_thread(void *arg)
{
    void *p = NULL;
    int *code = (int *)arg;
    code[0] = aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST);
    code[1] = aclrtFree(p);
    return NULL;
}

int main(void)
{
    void *p = NULL, *first = NULL;
    printf("init %d\n", aclInit(NULL));
    printf("before_set_device %d\n", aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    if (p) aclrtFree(p);
    p = NULL;
    printf("set_device %d\n", aclrtSetDevice(0));
    printf("null_out %d\n", aclrtMalloc(NULL, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    printf("size_zero %d\n", aclrtMalloc(&p, 0, ACL_MEM_MALLOC_HUGE_FIRST));
    p = NULL;
    printf("bad_policy %d\n", aclrtMalloc(&p, 4096, (aclrtMemMallocPolicy)99));  /* accepted, as before */
    if (p) aclrtFree(p);
    printf("free_null %d\n", aclrtFree(NULL));
    printf("free_host_pointer %d\n", aclrtFree(&p));
    int ok = 0, same = 0;
    for (int i = 0; i < 1000; i++) {
        p = NULL;
        aclError m = aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST);
        if (i == 0) first = p;
        same += p == first;
        ok += m == ACL_SUCCESS && p != NULL && aclrtFree(p) == ACL_SUCCESS;
    }
    printf("loop_ok %d reused %d\n", ok, same >= 999);
    printf("double_free %d\n", aclrtFree(first));
    int codes[2] = {-1, -1};
    pthread_t t;
    pthread_create(&t, NULL, other_thread, codes);
    pthread_join(t, NULL);
    printf("other_thread_malloc %d\n", codes[0]);
    printf("reset %d\n", aclrtResetDevice(0));
    printf("after_reset %d\n", aclrtMalloc(&p, 4096, ACL_MEM_MALLOC_HUGE_FIRST));
    printf("finalize %d\n", aclFinalize());
    return 0;
}
