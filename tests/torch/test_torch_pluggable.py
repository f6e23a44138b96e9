"""torch_npu's NPUPluggableAllocator over npurt: npu tensors from a shared library's own alloc /
free functions (torch_npu's signatures), in a MemPool or for every tensor after
change_current_allocator. The library here forwards to functions the test hands it (npurt's
malloc and free), as a real one calls aclrtMalloc of npurt's C interface."""
from __future__ import annotations

import ctypes
import os
import subprocess
import sys

import pytest
import torch
from isolation import own_namespace

from npurt import runtime as rt

LIBRARY = r"""
#include <sys/types.h>
typedef void *(*alloc_t)(ssize_t, int, void *);
typedef void (*free_t)(void *, ssize_t, int, void *);
static alloc_t impl_alloc;
static free_t impl_free;
static int allocs, frees;
void set_impl(alloc_t a, free_t f) { impl_alloc = a; impl_free = f; }
void *my_malloc(ssize_t size, int device, void *stream) { allocs++; return impl_alloc(size, device, stream); }
void my_free(void *ptr, ssize_t size, int device, void *stream) { frees++; impl_free(ptr, size, device, stream); }
int alloc_count(void) { return allocs; }
int free_count(void) { return frees; }
"""
ALLOC = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)
FREE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)


def build(tmp_path) -> str:
    src, so = tmp_path / "alloc.c", tmp_path / "liballoc.so"
    src.write_text(LIBRARY)
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(so), str(src)], check=True)
    return str(so)


@pytest.fixture
def library(tmp_path):
    path = build(tmp_path)
    lib = ctypes.CDLL(path)
    calls = []

    def alloc(size, device, stream):
        calls.append(("alloc", size, device, stream))
        return rt.malloc_on(rt.RUNTIME.devices[device], size)

    def release(ptr, size, device, stream):
        calls.append(("free", size, device, stream))
        rt.free(ptr)

    keep = (ALLOC(alloc), FREE(release))
    lib.set_impl(*keep)
    return path, lib, calls, keep


def test_a_mem_pool_with_a_pluggable_allocator_takes_each_tensor_from_the_library(npu, library):
    path, lib, calls, _keep = library
    allocator = torch.npu.memory.NPUPluggableAllocator(path, "my_malloc", "my_free")
    pool = torch.npu.MemPool(allocator.allocator())
    with torch.npu.use_mem_pool(pool):
        x = torch.empty(1000, device=npu)
    assert lib.alloc_count() == 1 and lib.free_count() == 0
    stream = torch.npu.current_stream().npu_stream
    assert calls == [("alloc", 4000, 0, stream)]
    x.fill_(2.0)
    assert x.sum().item() == 2000.0
    y = torch.empty(1000, device=npu)                    # outside the pool: npurt's own
    assert lib.alloc_count() == 1
    del x, y
    torch.npu.synchronize()
    assert lib.free_count() == 1 and calls[-1] == ("free", 4000, 0, stream)


def test_memory_that_is_not_npurts_is_refused(npu, tmp_path):
    lib = ctypes.CDLL(build(tmp_path))
    keep = (ALLOC(lambda size, device, stream: 0x1000), FREE(lambda *args: None))
    lib.set_impl(*keep)
    pool = torch.npu.MemPool(torch.npu.memory.NPUPluggableAllocator(lib._name, "my_malloc", "my_free").allocator())
    with torch.npu.use_mem_pool(pool), pytest.raises(RuntimeError, match="0x1000, which is not npurt device memory"):
        torch.empty(10, device=npu)
    assert lib.free_count() == 1                          # given back to the library


def test_the_current_allocator_cannot_change_once_npu_memory_was_allocated(npu, library):
    torch.empty(1, device=npu)
    allocator = torch.npu.memory.NPUPluggableAllocator(library[0], "my_malloc", "my_free")
    with pytest.raises(RuntimeError, match="Can't swap an already initialized allocator"):
        torch.npu.memory.change_current_allocator(allocator)


def test_change_current_allocator_serves_every_tensor_from_the_library(tmp_path):
    code = f"""
import ctypes, torch, npurt.torch
from npurt import runtime as rt
lib = ctypes.CDLL({build(tmp_path)!r})
A = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)
F = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_ssize_t, ctypes.c_int, ctypes.c_void_p)
keep = (A(lambda n, d, s: rt.malloc_on(rt.RUNTIME.devices[d], n)), F(lambda p, n, d, s: rt.free(p)))
lib.set_impl(*keep)
torch.npu.memory.change_current_allocator(torch.npu.memory.NPUPluggableAllocator(lib._name, "my_malloc", "my_free"))
x = torch.arange(10, device="npu") * 2
print(x.sum().item(), lib.alloc_count())
del x
print(lib.free_count())
"""
    out = subprocess.run([sys.executable, "-c", code], env={**os.environ, **own_namespace()}, capture_output=True,
                         text=True, timeout=120)
    lines = out.stdout.split()
    assert lines[0] == "90" and int(lines[1]) >= 2 and int(lines[2]) >= 1, out.stderr[-2000:]

