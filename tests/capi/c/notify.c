/* Notifies: a record on one stream releases a wait (and reset) on another; a wait nobody
   releases times out with ACL_ERROR_RT_WAIT_TIMEOUT; ids; bad arguments. */
#include "check.h"

int main(void)
{
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream a, b;
    CHECK(aclrtCreateStream(&a));
    CHECK(aclrtCreateStream(&b));
    aclrtNotify n = NULL, m = NULL;
    CHECK(aclrtCreateNotify(&n, ACL_NOTIFY_DEFAULT));
    CHECK(aclrtCreateNotify(&m, ACL_NOTIFY_DEFAULT));
    uint32_t id_n = 0, id_m = 0;
    CHECK(aclrtGetNotifyId(n, &id_n));
    CHECK(aclrtGetNotifyId(m, &id_m));
    EXPECT(id_n != id_m);

    uint64_t one = 1, zero = 0, got = 0;
    void *word = NULL;
    CHECK(aclrtMalloc(&word, 8, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpy(word, 8, &zero, 8, ACL_MEMCPY_HOST_TO_DEVICE));
    /* b waits for n, then copies the word stream a set before recording n */
    CHECK(aclrtWaitAndResetNotify(n, b, 0));
    void *copy = NULL;
    CHECK(aclrtMalloc(&copy, 8, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemcpyAsync(copy, 8, word, 8, ACL_MEMCPY_DEVICE_TO_DEVICE, b));
    aclrtStreamStatus st;
    CHECK(aclrtStreamQuery(b, &st));
    EXPECT(st == ACL_STREAM_STATUS_NOT_READY);
    CHECK(aclrtValueWrite(word, one, 0, a));
    CHECK(aclrtRecordNotify(n, a));
    CHECK(aclrtSynchronizeStream(b));
    CHECK(aclrtMemcpy(&got, 8, copy, 8, ACL_MEMCPY_DEVICE_TO_HOST));
    EXPECT(got == 1);

    /* the wait reset n: a second wait with a timeout fails at the synchronize */
    CHECK(aclrtWaitAndResetNotify(n, b, 30));
    aclError timed = aclrtSynchronizeStream(b);
    printf("timed out: %d\n", timed);
    EXPECT(timed == ACL_ERROR_RT_WAIT_TIMEOUT);

    EXPECT(aclrtCreateNotify(&m, 5) == ACL_ERROR_RT_PARAM_INVALID);
    EXPECT(aclrtCreateNotify(NULL, 0) == ACL_ERROR_INVALID_PARAM);
    EXPECT(aclrtRecordNotify(NULL, a) == ACL_ERROR_INVALID_PARAM);
    EXPECT(aclrtValueWait(word, 1, 9, a) == ACL_ERROR_RT_PARAM_INVALID);
    CHECK(aclrtDestroyNotify(n));
    EXPECT(aclrtRecordNotify(n, a) == ACL_ERROR_RT_INVALID_HANDLE);
    CHECK(aclrtDestroyNotify(m));
    CHECK(aclrtFree(word));
    CHECK(aclrtFree(copy));
    CHECK(aclrtDestroyStream(a));
    CHECK(aclrtDestroyStream(b));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    printf("notify: ok\n");
    return 0;
}
