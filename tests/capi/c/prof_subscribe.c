/* Model subscription from C as hicann/runtime's 5_performance/profiling/2_subscribe_model does
 * it: a model index registered with MsprofSetDeviceIdByGeModelIdx, a pipe's write end in the
 * subscribe config; unsubscribing closes that fd (and sets it to -1), so the reader sees the
 * end of the pipe. */
#include <unistd.h>
#include "check.h"
#include "acl/acl_prof.h"
#include "profiling/aprof_pub.h"

int main(void)
{
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    int fds[2];
    EXPECT(pipe(fds) == 0);
    EXPECT(MsprofSetDeviceIdByGeModelIdx(0, 0) == 0);
    EXPECT(aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, NULL) == NULL);
    aclprofSubscribeConfig *config = aclprofCreateSubscribeConfig(1, ACL_AICORE_NONE, &fds[1]);
    EXPECT(config != NULL);
    aclError unknown = aclprofModelSubscribe(5, config);
    printf("unregistered model: %d %s\n", unknown, aclGetRecentErrMsg());
    EXPECT(unknown == 145003);
    CHECK(aclprofModelSubscribe(0, config));
    EXPECT(aclprofModelSubscribe(0, config) != ACL_SUCCESS);   /* already subscribed */
    size_t size = 0;
    CHECK(aclprofGetOpDescSize(&size));
    char buf[4096];
    uint32_t n = 7;
    EXPECT(size > 0 && aclprofGetOpNum(buf, size - 1, &n) == ACL_ERROR_INVALID_PARAM && n == 7);
    CHECK(aclprofModelUnSubscribe(0));
    EXPECT(fds[1] == -1);                      /* closed by the unsubscribe */
    EXPECT(read(fds[0], buf, sizeof buf) == 0); /* the reader sees the end: no model ran, no records */
    EXPECT(aclprofModelUnSubscribe(0) == ACL_ERROR_INVALID_PARAM);
    CHECK(aclprofDestroySubscribeConfig(config));
    EXPECT(MsprofUnsetDeviceIdByGeModelIdx(0, 0) == 0);
    close(fds[0]);
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    printf("prof_subscribe: ok (op record size %zu)\n", size);
    return 0;
}
