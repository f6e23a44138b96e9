/* Shared by the C test programs: CHECK a call, printing the error and aclGetRecentErrMsg. */
#include "acl/acl.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define CHECK(call) do { aclError e_ = (call); if (e_ != ACL_SUCCESS) { \
    printf("FAIL %s:%d %s -> %d: %s\n", __FILE__, __LINE__, #call, e_, aclGetRecentErrMsg()); exit(1); } } while (0)
#define EXPECT(cond) do { if (!(cond)) { printf("FAIL %s:%d expected %s\n", __FILE__, __LINE__, #cond); exit(1); } } while (0)
