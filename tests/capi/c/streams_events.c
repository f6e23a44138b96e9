/* Streams and events: two streams ordered by an event, priorities and flags, status
 * queries, timestamps and elapsed time, stream-config handles, failure of bad handles. */
#include "check.h"

static void onException(aclrtExceptionInfo *info) { (void)info; }

int main(void)
{
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream a, b;
    CHECK(aclrtCreateStreamWithConfig(&a, 1, ACL_STREAM_FAST_LAUNCH));
    CHECK(aclrtCreateStream(&b));
    uint32_t prio = 99, flags = 0;
    CHECK(aclrtStreamGetPriority(a, &prio));
    CHECK(aclrtStreamGetFlags(a, &flags));
    EXPECT(prio == 1 && (flags & ACL_STREAM_FAST_LAUNCH));
    int32_t least = 0, greatest = 0;
    CHECK(aclrtDeviceGetStreamPriorityRange(&least, &greatest));

    enum { N = 1 << 16 };
    void *buf = NULL;
    CHECK(aclrtMalloc(&buf, N, ACL_MEM_MALLOC_HUGE_FIRST));
    aclrtEvent start, produced, end;
    CHECK(aclrtCreateEventWithFlag(&start, ACL_EVENT_TIME_LINE));
    CHECK(aclrtCreateEvent(&produced));
    CHECK(aclrtCreateEventWithFlag(&end, ACL_EVENT_TIME_LINE));
    CHECK(aclrtRecordEvent(start, a));
    CHECK(aclrtMemsetAsync(buf, N, 3, N, a));
    CHECK(aclrtRecordEvent(produced, a));
    CHECK(aclrtStreamWaitEvent(b, produced));   /* b reads what a wrote */
    void *copy = NULL;
    CHECK(aclrtMallocHost(&copy, N));
    CHECK(aclrtMemcpyAsync(copy, N, buf, N, ACL_MEMCPY_DEVICE_TO_HOST, b));
    CHECK(aclrtRecordEvent(end, b));
    CHECK(aclrtSynchronizeEvent(end));
    EXPECT(((unsigned char *)copy)[N - 1] == 3);

    aclrtEventRecordedStatus rec;
    CHECK(aclrtQueryEventStatus(end, &rec));
    EXPECT(rec == ACL_EVENT_RECORDED_STATUS_COMPLETE);
    float ms = -1;
    CHECK(aclrtEventElapsedTime(&ms, start, end));
    EXPECT(ms >= 0);
    uint64_t ts = 0;
    CHECK(aclrtEventGetTimestamp(end, &ts));
    aclrtStreamStatus st;
    CHECK(aclrtStreamQuery(b, &st));
    EXPECT(st == ACL_STREAM_STATUS_COMPLETE);

    aclrtStreamConfigHandle *config = aclrtCreateStreamConfigHandle();
    EXPECT(config != NULL);
    uint32_t p3 = 3;
    CHECK(aclrtSetStreamConfigOpt(config, ACL_RT_STREAM_PRIORITY, &p3, sizeof p3));
    aclrtStream c;
    CHECK(aclrtCreateStreamV2(&c, config));
    CHECK(aclrtStreamGetPriority(c, &prio));
    EXPECT(prio == 3);
    CHECK(aclrtDestroyStreamConfigHandle(config));
    CHECK(aclrtDestroyStream(c));

    /* a destroyed event is a stale handle: an error code, never a crash */
    CHECK(aclrtDestroyEvent(produced));
    aclError e = aclrtRecordEvent(produced, a);
    printf("stale event: %d %s\n", e, aclGetRecentErrMsg());
    EXPECT(e == ACL_ERROR_RT_INVALID_HANDLE);
    e = aclrtSynchronizeStream((aclrtStream)0x12345);
    EXPECT(e != ACL_SUCCESS);
    EXPECT(aclrtGetLastError(ACL_RT_THREAD_LEVEL) == e);
    EXPECT(aclrtPeekAtLastError(ACL_RT_THREAD_LEVEL) == ACL_SUCCESS);

    CHECK(aclrtRecordEventWithFlag(end, a, ACL_EVENT_RECORD_DEFAULT));
    CHECK(aclrtSynchronizeEvent(end));
    CHECK(aclrtExceptionInfoCallbackRegister(onException));
    EXPECT(aclrtExceptionInfoCallbackRegister(onException) == ACL_ERROR_INVALID_PARAM);
    CHECK(aclrtExceptionInfoCallbackUnregister(onException));
    EXPECT(aclrtExceptionInfoCallbackUnregister(onException) == ACL_ERROR_INVALID_PARAM);

    /* a function npurt does not implement: 207000 and the reason, never a crash or a false success */
    uint32_t groups = 0;
    e = aclrtGetGroupCount(&groups);
    const char *why = aclGetRecentErrMsg();
    printf("stub: %d %s\n", e, why);
    EXPECT(e == ACL_ERROR_RT_FEATURE_NOT_SUPPORT && strstr(why, "aclrtGetGroupCount: not supported by npurt"));

    CHECK(aclrtDestroyEvent(start));
    CHECK(aclrtDestroyEvent(end));
    CHECK(aclrtFreeHost(copy));
    CHECK(aclrtFree(buf));
    CHECK(aclrtDestroyStream(a));
    CHECK(aclrtDestroyStream(b));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    printf("streams_events: ok\n");
    return 0;
}
