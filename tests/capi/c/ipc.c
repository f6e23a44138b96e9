/* IPC between two C processes (acl_rt.h): memory with a pid allow-list, an IPC event, an IPC
 * notify, and the codes of bad input. Run as `ipc export` and `ipc import KEY HANDLE NOTIFY`;
 * the test drives both through their stdin and stdout, one step at a time. */
#include "check.h"
#include <unistd.h>

#define SIZE 4096

static void wait_line(const char *what)
{
    char line[256];
    if (!fgets(line, sizeof line, stdin)) { printf("FAIL no %s\n", what); exit(1); }
}

static int exporter(void)
{
    void *dev = NULL;
    aclrtStream stream = NULL;
    aclrtEvent event = NULL;
    aclrtNotify notify = NULL;
    char key[65], small[8], ntf_key[65];
    aclrtIpcEventHandle handle;
    unsigned char byte = 0;
    CHECK(aclrtMalloc(&dev, SIZE, ACL_MEM_MALLOC_HUGE_FIRST));
    CHECK(aclrtMemset(dev, SIZE, 0x5A, SIZE));
    CHECK(aclrtCreateStream(&stream));
    printf("key too small: %d\n", aclrtIpcMemGetExportKey(dev, SIZE, small, sizeof small, 0));
    printf("past the allocation: %d\n", aclrtIpcMemGetExportKey(dev, 1 << 30, key, sizeof key, 0));
    CHECK(aclrtIpcMemGetExportKey(dev, SIZE, key, sizeof key, ACL_RT_IPC_MEM_EXPORT_FLAG_DEFAULT));
    CHECK(aclrtCreateEventExWithFlag(&event, ACL_EVENT_IPC));
    CHECK(aclrtRecordEvent(event, stream));
    CHECK(aclrtSynchronizeEvent(event));
    CHECK(aclrtIpcGetEventHandle(event, &handle));
    CHECK(aclrtCreateNotify(&notify, 0));
    CHECK(aclrtNotifyGetExportKey(notify, ntf_key, sizeof ntf_key, ACL_RT_NOTIFY_EXPORT_FLAG_DISABLE_PID_VALIDATION));
    printf("exported %s ", key);
    for (size_t i = 0; i < sizeof handle.reserved; i++) printf("%02x", (unsigned char)handle.reserved[i]);
    printf(" %s\n", ntf_key);
    fflush(stdout);
    int32_t pid = 0;
    if (scanf("%d", &pid) != 1) { printf("FAIL no pid\n"); return 1; }
    CHECK(aclrtIpcMemSetImportPid(key, &pid, 1));
    printf("allowed %d\n", pid);
    fflush(stdout);
    wait_line("check");  /* the rest of the pid's line */
    wait_line("check");
    CHECK(aclrtMemcpy(&byte, 1, dev, 1, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("byte after the importer wrote: 0x%02x\n", byte);
    CHECK(aclrtWaitAndResetNotify(notify, stream, 0));
    CHECK(aclrtSynchronizeStream(stream));
    printf("notified\n");
    CHECK(aclrtIpcMemClose(key));
    CHECK(aclrtFree(dev));
    CHECK(aclrtDestroyEvent(event));
    CHECK(aclrtDestroyNotify(notify));
    CHECK(aclrtDestroyStream(stream));
    return 0;
}

static int importer(const char *key, const char *hex, const char *ntf_key)
{
    void *dev = NULL, *bogus = NULL;
    aclrtStream stream = NULL;
    aclrtEvent event = NULL;
    aclrtNotify notify = NULL;
    aclrtIpcEventHandle handle, forged;
    unsigned char byte = 0;
    int32_t pid = 0;
    char fake[65];
    for (size_t i = 0; i < sizeof handle.reserved; i++) {
        unsigned int b;
        sscanf(hex + 2 * i, "%2x", &b);
        handle.reserved[i] = (char)b;
    }
    CHECK(aclrtCreateStream(&stream));
    printf("before the allow-list: %d\n", aclrtIpcMemImportByKey(&dev, key, 0));
    snprintf(fake, sizeof fake, "%.*s", (int)strlen(key), key);
    fake[strlen(fake) - 1] = fake[strlen(fake) - 1] == '0' ? '1' : '0';
    printf("forged key: %d\n", aclrtIpcMemImportByKey(&bogus, fake, 0));
    printf("close unknown: %d\n", aclrtIpcMemClose(fake));
    memset(&forged, 0, sizeof forged);
    memcpy(forged.reserved, fake, strlen(fake));
    printf("forged event handle: %d\n", aclrtIpcOpenEventHandle(forged, &event));
    CHECK(aclrtDeviceGetBareTgid(&pid));
    printf("pid %d\n", pid);
    fflush(stdout);
    wait_line("go");
    CHECK(aclrtIpcMemImportByKey(&dev, key, 0));
    CHECK(aclrtMemcpy(&byte, 1, dev, 1, ACL_MEMCPY_DEVICE_TO_HOST));
    printf("imported byte 0x%02x\n", byte);
    printf("free imported: %d\n", aclrtFree(dev));
    CHECK(aclrtMemset(dev, SIZE, 0x33, SIZE));
    CHECK(aclrtIpcOpenEventHandle(handle, &event));
    CHECK(aclrtStreamWaitEvent(stream, event));
    CHECK(aclrtSynchronizeStream(stream));
    aclrtEventRecordedStatus status;
    CHECK(aclrtQueryEventStatus(event, &status));
    printf("event status %d\n", (int)status);
    CHECK(aclrtNotifyImportByKey(&notify, ntf_key, 0));
    CHECK(aclrtRecordNotify(notify, stream));
    CHECK(aclrtSynchronizeStream(stream));
    CHECK(aclrtIpcMemClose(key));
    CHECK(aclrtDestroyEvent(event));
    CHECK(aclrtDestroyStream(stream));
    printf("done\n");
    fflush(stdout);
    return 0;
}

int main(int argc, char **argv)
{
    CHECK(aclInit(NULL));
    CHECK(aclrtSetDevice(0));
    int rc = argc > 1 && !strcmp(argv[1], "export") ? exporter()
           : argc > 4 ? importer(argv[2], argv[3], argv[4]) : 2;
    CHECK(aclrtResetDevice(0));
    CHECK(aclFinalize());
    if (rc == 0) printf("ipc: ok\n");
    return rc;
}
