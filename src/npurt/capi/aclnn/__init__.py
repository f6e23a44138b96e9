"""aclnn, the operator API of CANN's op library (libopapi / libnnopbase), over npurt's ops.

From C: create `aclTensor`s (a view of device memory: shape, strides, offset, dtype),
`aclScalar`s and `aclIntArray`s (host values, copied), then run an operator in two phases:

    aclnnAddGetWorkspaceSize(self, other, alpha, out, &workspaceSize, &executor);
    aclrtMalloc(&workspace, workspaceSize, ...);          // when workspaceSize > 0
    aclnnAdd(workspace, workspaceSize, executor, stream);  // enqueued on the stream

The first phase checks the arguments (shapes broadcast, dtypes supported, out's shape)
and plans the work: the kernels to launch and the temporaries they need in the workspace
(inputs that are broadcast, strided or of another dtype are gathered or cast into it
first; results for a strided or differently typed `out` go through it). The second checks
the workspace (at least the size asked, device memory) and enqueues the kernels on the
stream as ordinary kernel tasks; the executor is then spent (unless made repeatable with
aclSetAclOpExecutorRepeatable; aclDestroyAclOpExecutor frees it).

Modules: `objects` (tensors, scalars, arrays and their handles), `plans` (executors and
the helper kernels), `optable` (every operator: its C signature, as facts of CANN's
aclnnop headers, and how it is planned), `spec` (the spec fragment the C interface's
generators turn into headers aclnn/acl_meta.h, aclnnop/aclnn_*.h and shims).
"""
