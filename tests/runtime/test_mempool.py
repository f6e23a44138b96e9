"""Stream-ordered memory pools (issue 26, item 4; acl_rt_memory_soma.h): allocations come back
to the pool in stream order and are reused by the same stream at once, by another stream once
the freeing work has finished (or with the dependency the pool inserts); release threshold,
trim, statistics, maxSize, and the refusals with the runtime's codes."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from npurt.runtime import constants as C
from npurt.runtime.errors import NpuError

MiB = 1 << 20
PROPS = {"allocType": 0, "handleType": 0, "location": {"type": 1, "id": 0}, "maxSize": 64 * MiB}
A = C  # attribute names below
RESERVED, USED = C.ACL_RT_MEM_POOL_ATTR_RESERVED_MEM_CURRENT, C.ACL_RT_MEM_POOL_ATTR_USED_MEM_CURRENT


def _code(fn, *args):
    with pytest.raises(NpuError) as info:
        fn(*args)
    return info.value.code


def _gate(rt, stream):
    """A host function that holds `stream` until the returned event is set."""
    go = threading.Event()
    rt.launch_host_func(stream, go.wait, 30)
    return go


def test_the_same_stream_reuses_a_freed_allocation_at_once(rt):
    pool = rt.mem_pool_create(PROPS)
    s = rt.create_stream()
    go = _gate(rt, s)                                   # the stream's work has not run yet
    a = rt.mem_pool_malloc_async(1000, pool, s)
    rt.mem_pool_free_async(a, s)
    b = rt.mem_pool_malloc_async(1000, pool, s)         # stream order makes reuse safe
    assert b == a
    assert rt.mem_pool_get_attr(pool, RESERVED) == 2 * MiB  # sizes are 2 MB multiples
    go.set()
    s.synchronize()
    rt.mem_pool_free_async(b, s)
    rt.mem_pool_destroy(pool)


def test_another_stream_waits_for_the_free_or_gets_new_memory(rt):
    pool = rt.mem_pool_create(PROPS)
    s1, s2 = rt.create_stream(), rt.create_stream()
    rt.mem_pool_set_attr(pool, C.ACL_RT_MEM_POOL_REUSE_ALLOW_INTERNAL_DEPENDENCIES, 0)
    go = _gate(rt, s1)
    a = rt.mem_pool_malloc_async(MiB, pool, s1)
    rt.mem_pool_free_async(a, s1)                       # s1's work before the free has not run
    b = rt.mem_pool_malloc_async(MiB, pool, s2)
    assert b != a                                       # no dependency allowed: new memory
    go.set()
    s1.synchronize()
    rt.mem_pool_free_async(b, s2)
    s2.synchronize()
    c = rt.mem_pool_malloc_async(MiB, pool, s2)         # opportunistic: the free has finished
    assert c in (a, b)
    rt.mem_pool_free_async(c, s2)
    s2.synchronize()
    rt.mem_pool_destroy(pool)


def test_with_internal_dependencies_the_allocating_stream_waits_for_the_free(rt):
    pool = rt.mem_pool_create(PROPS)
    s1, s2 = rt.create_stream(), rt.create_stream()
    go = _gate(rt, s1)
    a = rt.mem_pool_malloc_async(MiB, pool, s1)
    x = np.arange(MiB // 4, dtype=np.float32)
    rt.memcpy_async(a, MiB, rt.malloc_host(MiB), MiB, C.ACL_MEMCPY_HOST_TO_DEVICE, s1)  # s1 still uses a
    rt.mem_pool_free_async(a, s1)
    b = rt.mem_pool_malloc_async(MiB, pool, s2)
    assert b == a                                       # reused: s2 now waits for s1's free
    host = rt.malloc_host(MiB)
    np.frombuffer((np.ctypeslib.as_ctypes_type(np.uint8) * MiB).from_address(host), np.uint8)[:] = x.view(np.uint8)
    rt.memcpy_async(b, MiB, host, MiB, C.ACL_MEMCPY_HOST_TO_DEVICE, s2)
    assert s2.completed_seq < s2.enqueued_seq           # held behind s1's gate
    go.set()
    s2.synchronize()
    out = np.empty(MiB // 4, np.float32)
    rt.memcpy(out.ctypes.data, MiB, b, MiB, C.ACL_MEMCPY_DEVICE_TO_HOST)
    assert np.array_equal(out, x)                       # s2's write came after s1's
    rt.mem_pool_free_async(b, s2)
    s2.synchronize()
    rt.mem_pool_destroy(pool)


def test_statistics_release_threshold_and_trim(rt):
    pool = rt.mem_pool_create(PROPS)
    s = rt.create_stream()
    rt.mem_pool_set_attr(pool, C.ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD, 64 * MiB)  # keep everything
    ptrs = [rt.mem_pool_malloc_async(4 * MiB, pool, s) for _ in range(3)]
    assert rt.mem_pool_get_attr(pool, USED) == 12 * MiB
    for p in ptrs:
        rt.mem_pool_free_async(p, s)
    s.synchronize()
    assert rt.mem_pool_get_attr(pool, USED) == 0
    assert rt.mem_pool_get_attr(pool, RESERVED) == 12 * MiB                 # cached under the threshold
    assert rt.mem_pool_get_attr(pool, C.ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH) == 12 * MiB
    free_before = rt.get_mem_info(C.ACL_HBM_MEM)[0]
    rt.mem_pool_trim_to(pool, 4 * MiB)
    assert rt.mem_pool_get_attr(pool, RESERVED) == 4 * MiB
    rt.mem_pool_set_attr(pool, C.ACL_RT_MEM_POOL_ATTR_RELEASE_THRESHOLD, 0)
    p = rt.mem_pool_malloc_async(8 * MiB, pool, s)                          # idle bytes above 0 go back
    rt.mem_pool_free_async(p, s)
    s.synchronize()
    rt.mem_pool_trim_to(pool, 0)
    assert rt.mem_pool_get_attr(pool, RESERVED) == 0
    assert rt.get_mem_info(C.ACL_HBM_MEM)[0] >= free_before
    rt.mem_pool_set_attr(pool, C.ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH, 0)    # a high-water mark resets
    assert rt.mem_pool_get_attr(pool, C.ACL_RT_MEM_POOL_ATTR_USED_MEM_HIGH) == 0
    rt.mem_pool_destroy(pool)


def test_bad_input_gets_the_runtimes_codes(rt):
    pool = rt.mem_pool_create(PROPS)
    s = rt.create_stream()
    assert _code(rt.mem_pool_malloc_async, 80 * MiB, pool, s) == C.ACL_ERROR_RT_INTERNAL_ERROR   # past maxSize
    assert _code(rt.mem_pool_set_attr, pool, RESERVED, 1) == C.ACL_ERROR_RT_PARAM_INVALID        # read-only
    assert _code(rt.mem_pool_get_attr, pool, 99) == C.ACL_ERROR_RT_PARAM_INVALID
    assert _code(rt.mem_pool_create, {**PROPS, "allocType": 1}) == C.ACL_ERROR_INVALID_PARAM
    assert _code(rt.mem_pool_create, {**PROPS, "maxSize": 1 << 40}) == C.ACL_ERROR_RT_PARAM_INVALID
    p = rt.mem_pool_malloc_async(MiB, pool, s)
    assert _code(rt.mem_pool_destroy, pool) == C.ACL_ERROR_RT_INTERNAL_ERROR                    # in use
    rt.mem_pool_free_async(p, s)
    s.synchronize()
    rt.mem_pool_destroy(pool)
    assert _code(rt.mem_pool_get_attr, pool, RESERVED) == C.ACL_ERROR_RT_PARAM_INVALID           # destroyed
    assert rt.mem_pool_malloc_async(0, rt.mem_pool_create(PROPS), s) == 0


def test_free_async_of_ordinary_memory_frees_it_in_stream_order(rt):
    s = rt.create_stream()
    go = _gate(rt, s)
    d = rt.malloc(4096)
    stats = rt.memory_stats()
    rt.mem_pool_free_async(d, s)
    assert rt.memory_stats()["num_frees"] == stats["num_frees"]    # not yet: the stream is held
    go.set()
    s.synchronize()
    assert rt.memory_stats()["num_frees"] == stats["num_frees"] + 1
