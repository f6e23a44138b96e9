"""The Python implementations of libacl_rt.so's C functions, one module per ACL group.

Importing this package registers them (`npurt.capi.registry.c_function`); a C function of the
spec without one here is a stub (`npurt.capi.entry`).

| module | C functions |
| --- | --- |
| lifecycle | aclInit, aclFinalize, versions, aclGetRecentErrMsg, aclAppLog, fp16 |
| device | aclrtSetDevice ... device queries, peer access, limits, overflow, sys params |
| context | aclrtCreateContext ... aclrtCtxGetCurrentDefaultStream |
| stream | aclrtCreateStream ... stream attributes |
| event | aclrtCreateEvent ... aclrtEventGetTimestamp |
| memory | aclrtMalloc ... aclrtPointerGetAttributes |
| allocator | aclrtAllocator* (custom allocators per stream) |
| reslimit | device and stream resource limits (recorded, not enforced) |
| system | aclsys* versions, CANN attributes, data buffers, error detail |
| tdt | acltdt* channels, queues, buffers and routes on simulated host-device queues |
| prof | aclprof* and mstx*, through the pyACL facade's acl.prof (one implementation for both faces) |
| dump | acldump*, aclopStart/StopDumpArgs, aclmdl*Dump; dump_op for operators |
| graph | aclmdlRICaptureBegin/GetInfo/End/ThreadExchangeMode, aclmdlRIExecute(Async), aclmdlRIDestroy, aclmdlRIDebugPrint, task groups and updates, conditional tasks, names, ids, destroy callbacks, abort |
| model_build | aclmdlRIBuildBegin/BindStream/EndTask/BuildEnd/UnbindStream, labels, aclrtActiveStream, aclrtSwitchStream |
| notify | aclrtCreateNotify ... aclrtGetNotifyId, aclrtValueWrite, aclrtValueWait (stream tasks) |
| ipc | aclrtIpcMem* (export keys, allow-lists, import, close), aclrtIpcGet/OpenEventHandle, aclrtNotifyGetExportKey/ImportByKey/SetImportPid |
| random_numbers | aclrtRandomNumAsync (dropout mask, uniform, normal, truncated normal) |
| control | callbacks, report threads, host functions, op timeouts, last error, exception info |
| kernels | aclrtBinary*, aclrtLaunchKernel*, aclrtKernelArgs*, npurtLaunchNativeKernel (<<<>>>) |
| managed | aclrtMemAllocManaged, prefetch, advice, managed-range attributes |
| mempool | aclrtMemPoolCreate ... aclrtMemPoolTrimTo (stream-ordered memory pools) |
| vmm | aclrtReserveMemAddress ... aclrtMapMem, access, granularity, shareable handles |
| aclnn | acl_meta.h's tensor objects, aclnn<Op>GetWorkspaceSize / aclnn<Op> (libopapi, libnnopbase) |
"""
from . import (aclnn, allocator, context, control, device, dump, event, graph, ipc, kernels, lifecycle,  # noqa: F401
               memory, mempool, model_build, notify, prof, random_numbers, reslimit, stream, system, tdt, vmm,
               managed)
