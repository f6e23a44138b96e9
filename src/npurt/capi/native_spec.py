"""The npurt-private C entry point of native kernel launches, as a spec fragment.

`kernel<<<blockDim, l2ctrl, stream>>>(args...)` (an aclError) in a kernel source built by npurt's host
Ascend C toolchain calls `npurtLaunchNativeKernel` of libacl_rt.so (declared for kernels in
the toolchain's npurt_ascendc/launch.h; its header here is for completeness). Not a CANN
function: CANN's compiler emits its own registration and launch calls.
"""
from __future__ import annotations


def spec() -> dict:
    params = [("const char *", "name"), ("void *", "kernel"), ("void *", "trampoline"), ("const char *", "kinds"),
              ("uint32_t", "blockDim"), ("void *", "stream"), ("const uint64_t *", "slots"), ("uint32_t", "count")]
    fn = {"kind": "function", "name": "npurtLaunchNativeKernel", "ret": "aclError",
          "params": [{"decl": f"{t}{'' if t.endswith('*') else ' '}{n}", "name": n, "type": t} for t, n in params]}
    return {"headers": {"npurt/native_kernel.h": {"includes": ["stdint.h", "acl/acl_base.h"], "items": [fn]}}}
