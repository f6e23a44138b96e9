/* Streams and events from C: a producer stream fills a buffer, an event tells a consumer
 * stream when it may read it (without the event the two streams would race on the buffer:
 * the second classic pitfall), and two timing events measure the whole. */
#include "acl/acl.h"
#include <stdio.h>

#define CHECK(call) do { aclError e_ = (call); if (e_ != ACL_SUCCESS) { \
    fprintf(stderr, "%s failed: %d (%s)\n", #call, e_, aclGetRecentErrMsg()); return 1; } } while (0)

int main(void)
{
    enum { N = 1 << 20 };
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    aclrtStream producer, consumer;
    CHECK(aclrtCreateStream(&producer));
    CHECK(aclrtCreateStream(&consumer));
    aclrtEvent ready, start, end;
    CHECK(aclrtCreateEvent(&ready));
    CHECK(aclrtCreateEventWithFlag(&start, ACL_EVENT_TIME_LINE));
    CHECK(aclrtCreateEventWithFlag(&end, ACL_EVENT_TIME_LINE));

    void *buf = NULL;
    unsigned char *out = NULL;
    CHECK(aclrtMalloc(&buf, N, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMallocHost((void **)&out, N));

    CHECK(aclrtRecordEvent(start, producer));
    CHECK(aclrtMemsetAsync(buf, N, 42, N, producer));      /* produce */
    CHECK(aclrtRecordEvent(ready, producer));
    CHECK(aclrtStreamWaitEvent(consumer, ready));          /* the consumer waits for it */
    CHECK(aclrtMemcpyAsync(out, N, buf, N, ACL_MEMCPY_DEVICE_TO_HOST, consumer));
    CHECK(aclrtRecordEvent(end, consumer));
    CHECK(aclrtSynchronizeEvent(end));                     /* the host waits for the last event */

    float ms = 0;
    CHECK(aclrtEventElapsedTime(&ms, start, end));
    printf("consumer read %d (expected 42) after the producer; %.3f ms on the simulated device\n", out[N - 1], ms);

    aclrtEventRecordedStatus status;
    CHECK(aclrtQueryEventStatus(ready, &status));
    printf("the ready event has %s\n", status == ACL_EVENT_RECORDED_STATUS_COMPLETE ? "completed" : "not completed");

    CHECK(aclrtFreeHost(out));
    CHECK(aclrtFree(buf));
    CHECK(aclrtDestroyEvent(ready));
    CHECK(aclrtDestroyEvent(start));
    CHECK(aclrtDestroyEvent(end));
    CHECK(aclrtDestroyStream(producer));
    CHECK(aclrtDestroyStream(consumer));
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    if (out == NULL) return 1;
    printf("OK\n");
    return 0;
}
