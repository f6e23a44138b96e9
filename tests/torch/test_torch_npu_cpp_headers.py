"""The torch_npu shim's C++ headers (npurt/torch/shim/include, at `<torch_npu>/include` as in
torch_npu's wheel): a pluggable-allocator library written against torch_npu's headers compiles
with them (ACL's headers forward to `npurt cann-home`'s on CPATH; NPUCachingAllocator.h has the
allocator's types, torch's own), links npurt's libascendcl, and gives npu tensors memory through
NPUPluggableAllocator + MemPool in a process whose loader finds the prefix's lib64."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import sysconfig

import pytest
import torch
import torch.utils.cpp_extension

LIBRARY = r"""
#include <sys/types.h>
#include "third_party/acl/inc/acl/acl_base.h"
#include "third_party/acl/inc/acl/acl_rt.h"
#include "torch_npu/csrc/core/npu/NPUCachingAllocator.h"

extern "C" {
static int allocs, frees;
void *my_malloc(ssize_t size, int device, aclrtStream stream) {
    void *ptr = nullptr;
    if (aclrtMallocAlign32(&ptr, size, aclrtMemMallocPolicy::ACL_MEM_MALLOC_HUGE_FIRST) != ACL_SUCCESS) return nullptr;
    allocs++;
    return ptr;
}
void my_free(void *ptr, ssize_t size, int device, aclrtStream stream) { aclrtFree(ptr); frees++; }
int alloc_count(void) { return allocs; }
int free_count(void) { return frees; }
int stat_types(void) { c10_npu::NPUCachingAllocator::DeviceStats stats; return (int)stats.allocated_bytes.size(); }
}
"""

USE = r"""
import ctypes, sys, torch, npurt.torch
import npurt.torch.shim as torch_npu
lib = ctypes.CDLL(sys.argv[1])
alloc = torch_npu.npu.memory.NPUPluggableAllocator(sys.argv[1], "my_malloc", "my_free")
pool = torch.npu.MemPool(alloc._allocator)
with torch.npu.use_mem_pool(pool):
    x = torch.ones(256, 256, device="npu")
print("sum", x.sum().item(), "allocs", lib.alloc_count(), "stat types", lib.stat_types())
del x, pool
torch.npu.synchronize()
torch.npu.empty_cache()
print("frees", lib.free_count())
"""


@pytest.fixture(scope="module")
def prefix():
    if shutil.which("g++") is None or not sysconfig.get_config_var("Py_ENABLE_SHARED"):
        pytest.skip("needs g++ and a shared libpython (npurt cann-home's libascendcl)")
    pytest.importorskip("cffi")
    from npurt.capi.home import cann_home
    return cann_home()


@pytest.mark.slow  # a C++ compile of c10 headers: tens of seconds on a loaded 2-core VM
def test_a_pluggable_allocator_built_against_torch_npus_headers_allocates_npu_memory(prefix, tmp_path):
    import npurt.torch.shim as shim
    include = os.path.join(os.path.dirname(os.path.realpath(shim.__file__)), "include")
    src, so = tmp_path / "alloc.cpp", tmp_path / "liballoc.so"
    src.write_text(LIBRARY)
    abi = int(torch._C._GLIBCXX_USE_CXX11_ABI)
    cmd = ["g++", "-std=c++17", "-shared", "-fPIC", f"-D_GLIBCXX_USE_CXX11_ABI={abi}", "-o", str(so), str(src),
           f"-I{include}", f"-I{os.path.join(include, 'third_party', 'acl', 'inc')}",
           *[f"-I{p}" for p in torch.utils.cpp_extension.include_paths()], "-lascendcl"]
    env = dict(os.environ, CPATH=os.path.join(prefix, "include"), LIBRARY_PATH=os.path.join(prefix, "lib64"))
    built = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert built.returncode == 0, built.stderr[-2000:]
    env = dict(os.environ, LD_LIBRARY_PATH=os.path.join(prefix, "lib64"),
               PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    ran = subprocess.run([sys.executable, "-c", USE, str(so)], capture_output=True, text=True, env=env, timeout=300)
    assert ran.returncode == 0, ran.stderr[-2000:]
    # DeviceStats' arrays have one Stat per torch StatType: aggregate, small pool, large pool
    assert "sum 65536.0 allocs 1 stat types 3" in ran.stdout
    assert "frees 1" in ran.stdout
