"""Virtual memory management (issue 26, item 3): reserved addresses hold nothing until physical
memory is mapped; mapped memory is ordinary device memory for copies and kernels, across the
boundaries of physical handles mapped side by side; the driver's bad inputs get their codes
(the Pythonic VirtualBuffer: tests/pythonic/test_virtual_buffer.py)."""
from __future__ import annotations

import numpy as np
import pytest

import npurt
import npurt.sanitizer
from npurt.runtime import constants as C
from npurt.runtime.errors import InvalidValueError, NpuError

MiB = 1 << 20
PROP = {"handleType": 0, "allocationType": 0, "memAttr": C.ACL_HBM_MEM_HUGE, "location": {"type": 1, "id": 0}}
H2D, D2H = C.ACL_MEMCPY_HOST_TO_DEVICE, C.ACL_MEMCPY_DEVICE_TO_HOST


def _put(rt, va, arr):
    rt.memcpy(va, arr.nbytes, arr.ctypes.data, arr.nbytes, H2D)


def _get(rt, va, nbytes):
    out = np.empty(nbytes, np.uint8)
    rt.memcpy(out.ctypes.data, nbytes, va, nbytes, D2H)
    return out


def _code(fn, *args):
    with pytest.raises(NpuError) as info:
        fn(*args)
    return info.value.code


def test_the_granularity_is_2_mib_and_1_gib_for_huge1g(rt):
    assert rt.mem_get_allocation_granularity(PROP, C.ACL_RT_MEM_ALLOC_GRANULARITY_MINIMUM) == 2 * MiB
    assert rt.mem_get_allocation_granularity(PROP, C.ACL_RT_MEM_ALLOC_GRANULARITY_RECOMMENDED) == 2 * MiB
    assert rt.mem_get_allocation_granularity({**PROP, "memAttr": C.ACL_HBM_MEM_HUGE1G}, 0) == 1 << 30


def test_mapped_memory_is_device_memory_across_adjacent_physical_handles(rt):
    g = 2 * MiB
    va = rt.reserve_mem_address(4 * g)
    a, b = rt.malloc_physical(g, PROP), rt.malloc_physical(g, PROP)
    rt.map_mem(va, g, 0, a)
    rt.map_mem(va + g, g, 0, b)
    data = np.random.default_rng(1).integers(0, 255, 2 * g, dtype=np.uint8)
    _put(rt, va, data)                         # one copy over both handles
    assert np.array_equal(_get(rt, va, 2 * g), data)
    rt.memset(va + g - 8, 16, 0xAB, 16)       # a set straddling the boundary
    assert set(_get(rt, va + g - 8, 16)) == {0xAB}
    assert rt.mem_retain_allocation_handle(va + g + 5) == b
    attrs = rt.pointer_get_attributes(va + 100)
    assert (attrs["allocation"], attrs["size"]) == (va, 4 * g)
    rt.unmap_mem(va + g)
    rt.unmap_mem(va)
    rt.free_physical(a)
    rt.free_physical(b)
    rt.release_mem_address(va)


def test_a_kernel_reads_and_writes_mapped_memory(rt):
    g = 2 * MiB
    va = rt.reserve_mem_address(g)
    h = rt.malloc_physical(g, PROP)
    rt.map_mem(va, g, 0, h)
    x = np.arange(1024, dtype=np.float32)
    _put(rt, va, x)

    @npurt.kernel
    def double(ctx, p: npurt.GM, n: np.int32):
        v = ctx.gm(p, np.float32, n)
        v[:] = v * 2

    npurt.launch(double, 1, va, 1024)
    npurt.synchronize()
    assert np.array_equal(_get(rt, va, x.nbytes).view(np.float32), x * 2)
    rt.unmap_mem(va)
    rt.free_physical(h)
    rt.release_mem_address(va)


def test_reserved_but_unmapped_addresses_fault_and_the_sanitizer_reports_them(rt):
    g = 2 * MiB
    va = rt.reserve_mem_address(2 * g)
    h = rt.malloc_physical(g, PROP)
    rt.map_mem(va, g, 0, h)
    with pytest.raises(InvalidValueError, match="no physical memory is mapped there"):
        _get(rt, va + g, 16)                   # past the mapping, inside the reservation
    with pytest.raises(InvalidValueError, match="run past the end"):
        _get(rt, va + g - 8, 16)               # a copy that runs off the mapped run
    san = npurt.sanitizer.enable(echo=False)
    try:
        with pytest.raises(InvalidValueError):
            rt.memset(va + g, 16, 0, 16)
        (report,) = san.reports
        assert report.tool == "memcheck" and "no physical memory is mapped" in "\n".join(report.lines())
    finally:
        san.disable()
    rt.unmap_mem(va)
    with pytest.raises(InvalidValueError):
        _get(rt, va, 16)                       # unmapped again: nothing there
    rt.free_physical(h)
    rt.release_mem_address(va)


def test_read_only_and_no_access_mappings(rt):
    g = 2 * MiB
    va = rt.reserve_mem_address(g)
    h = rt.malloc_physical(g, PROP)
    rt.mem_map_no_access(va, g, 0, h)
    with pytest.raises(InvalidValueError, match="without access"):
        _get(rt, va, 4)
    rt.mem_set_access(va, g, [{"flags": C.ACL_RT_MEM_ACCESS_FLAGS_READ, "location": {"type": 1, "id": 0}}])
    assert rt.mem_get_access(va) == ({"type": 1, "id": 0}, C.ACL_RT_MEM_ACCESS_FLAGS_READ)
    assert _get(rt, va, 4).tolist() == [0, 0, 0, 0]
    with pytest.raises(InvalidValueError, match="read-only"):
        rt.memset(va, 4, 1, 4)
    rt.mem_set_access(va, g, [{"flags": C.ACL_RT_MEM_ACCESS_FLAGS_READWRITE, "location": {"type": 1, "id": 0}}])
    rt.memset(va, 4, 1, 4)
    rt.unmap_mem(va)
    rt.free_physical(h)
    rt.release_mem_address(va)


def test_the_drivers_bad_inputs_get_param_invalid_and_leave_the_runtime_usable(rt):
    g = 2 * MiB
    va = rt.reserve_mem_address(2 * g)
    h = rt.malloc_physical(g, PROP)
    rt.map_mem(va, g, 0, h)
    assert _code(rt.map_mem, va, g, 0, h) == C.ACL_ERROR_RT_PARAM_INVALID           # over a mapped range
    assert _code(rt.unmap_mem, va + g) == C.ACL_ERROR_RT_PARAM_INVALID               # never mapped
    assert _code(rt.malloc_physical, g + 4096, PROP) == C.ACL_ERROR_RT_PARAM_INVALID  # not a granularity multiple
    assert _code(rt.map_mem, va + 4096, g, 0, h) == C.ACL_ERROR_RT_PARAM_INVALID     # misaligned address
    assert _code(rt.release_mem_address, va) == C.ACL_ERROR_RT_PARAM_INVALID         # still mapped
    assert _code(rt.malloc_physical, g, PROP, 1) == C.ACL_ERROR_INVALID_PARAM        # reserved flags
    assert _code(rt.map_mem, va + g, g, 4096, h) == C.ACL_ERROR_RT_PARAM_INVALID     # offset must be 0
    assert _code(rt.malloc_physical, g, {**PROP, "handleType": 2}) == C.ACL_ERROR_INVALID_PARAM
    # physical memory freed while mapped: deferred to its unmap, the bytes stay until then
    free_before = rt.get_mem_info(C.ACL_HBM_MEM)[0]
    rt.memset(va, 8, 7, 8)
    rt.free_physical(h)
    assert _get(rt, va, 8).tolist() == [7] * 8
    assert _code(rt.free_physical, h) == C.ACL_ERROR_RT_PARAM_INVALID                 # twice
    rt.unmap_mem(va)
    assert rt.get_mem_info(C.ACL_HBM_MEM)[0] == free_before + g                       # given back
    rt.release_mem_address(va)
    assert rt.malloc(64)  # the runtime goes on


def test_a_device_reset_releases_every_reservation_and_physical_handle(rt):
    g = 2 * MiB
    free_before = rt.get_mem_info(C.ACL_HBM_MEM)[0]
    va = rt.reserve_mem_address(g)
    h = rt.malloc_physical(g, PROP)
    rt.map_mem(va, g, 0, h)
    rt.reset_device(0)
    rt.set_device(0)
    assert rt.get_mem_info(C.ACL_HBM_MEM)[0] == free_before
    with pytest.raises(NpuError):
        rt.free_physical(h)
    assert rt.reserve_mem_address(g) == va     # the addresses are free again


def test_reserving_without_address_space_left_says_what_to_do(isolated):
    # the window's host side is reserved on the first reservation; under a tight ulimit -v that
    # fails with ACL_ERROR_RT_MEMORY_ALLOCATION and a message naming the two ways out, and the
    # runtime stays usable (plain device memory still works)
    # (the limit is set before npurt starts: with unlimited address space a device holds its
    # window's place from its start, so a limit set later never bites)
    code, out = isolated("""
        import resource
        import numpy as np
        with open("/proc/self/status") as f:
            used = next(int(line.split()[1]) << 10 for line in f if line.startswith("VmSize:"))
        # room for npurt, its threads and two 512 MiB devices, not for a 1.5 GiB window
        resource.setrlimit(resource.RLIMIT_AS, (used + (2 << 30), resource.RLIM_INFINITY))
        import npurt
        from npurt import acl
        print("ok", npurt.ones(3).to_host().tolist())
        va, ret = acl.rt.reserve_mem_address(2 << 20, 0, 0, 0)
        print("reserve:", va, ret, acl.get_recent_err_msg())
        print("then:", npurt.ones(2).to_host().tolist())
    """, env={"NPURT_HBM_SIZE": "512M", "OPENBLAS_NUM_THREADS": "1"})
    assert code == 0, out
    assert "reserve: 0 207001" in out, out
    assert "ulimit -v" in out and "NPURT_HBM_SIZE" in out, out
    assert "then: [1.0, 1.0]" in out, out
