"""acl.rt's virtual memory management (pyACL: malloc_physical ... mem_get_allocation_granularity):
the real wrapper's return shapes and codes; physical memory shared with another process
through a shareable handle, and no record of it left once the exporter is gone."""
from __future__ import annotations

import os

import numpy as np

from npurt import acl
from npurt.runtime import constants as C
from npurt.runtime import shareable

PROP = {"handleType": 0, "allocationType": 0, "memAttr": C.ACL_HBM_MEM_NORMAL, "location": {"type": 1, "id": 0},
        "reserve": 0}


def test_the_pyacl_flow_and_its_codes(rt):
    g, ret = acl.rt.mem_get_allocation_granularity(PROP, 0)
    assert (g, ret) == (2 << 20, 0)
    handle, ret = acl.rt.malloc_physical(g, PROP, 0)
    assert ret == 0 and handle
    va, ret = acl.rt.reserve_mem_address(2 * g, 0, 0, 0)
    assert ret == 0
    assert acl.rt.map_mem(va, g, 0, handle, 0) == 0
    assert acl.rt.map_mem(va, g, 0, handle, 0) == C.ACL_ERROR_RT_PARAM_INVALID     # over a mapped range
    data = np.arange(256, dtype=np.int32)
    assert acl.rt.memcpy(va, g, data.ctypes.data, data.nbytes, C.ACL_MEMCPY_HOST_TO_DEVICE) == 0
    out = np.zeros_like(data)
    assert acl.rt.memcpy(out.ctypes.data, out.nbytes, va, out.nbytes, C.ACL_MEMCPY_DEVICE_TO_HOST) == 0
    assert np.array_equal(out, data)
    assert acl.rt.memcpy(out.ctypes.data, 16, va + g, 16, C.ACL_MEMCPY_DEVICE_TO_HOST) == C.ACL_ERROR_INVALID_PARAM
    assert acl.rt.unmap_mem(va + g) == C.ACL_ERROR_RT_PARAM_INVALID                  # never mapped
    assert acl.rt.malloc_physical(g + 1, PROP, 0) == (0, C.ACL_ERROR_RT_PARAM_INVALID)
    shared, ret = acl.rt.mem_export_to_shareable_handle(handle, 0, 0)
    assert ret == 0 and os.path.exists(os.path.join(shareable.directory(), f"{shared}.json"))
    assert acl.rt.mem_set_pid_to_shareable_handle(shared, [os.getpid() + 1]) == 0
    assert acl.rt.mem_import_from_shareable_handle(shared, 0)[1] == C.ACL_ERROR_RT_PARAM_INVALID  # same process
    assert acl.rt.unmap_mem(va) == 0
    assert acl.rt.free_physical(handle) == 0
    assert not os.path.exists(os.path.join(shareable.directory(), f"{shared}.json"))   # withdrawn with the memory
    assert acl.rt.release_mem_address(va) == 0


EXPORTER = """
import os, sys, numpy as np
from npurt import acl
acl.init(); acl.rt.set_device(0)
prop = {"handleType": 0, "allocationType": 0, "memAttr": 5, "location": {"type": 1, "id": 0}, "reserve": 0}
h, _ = acl.rt.malloc_physical(2 << 20, prop, 0)
va, _ = acl.rt.reserve_mem_address(2 << 20, 0, 0, 0)
acl.rt.map_mem(va, 2 << 20, 0, h, 0)
acl.rt.memset(va, 16, 0x3C, 16)
sh, _ = acl.rt.mem_export_to_shareable_handle(h, 0, 1)   # no pid allow-list
print(sh, flush=True)
sys.stdin.readline()                                       # the importer has read it
"""


def test_another_process_maps_the_same_physical_memory_and_no_record_outlives_it(rt, tmp_path):
    import subprocess
    import sys
    script = tmp_path / "exporter.py"
    script.write_text(EXPORTER)
    child = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "NPURT_DEVICE_NAMESPACE": f"vmm-{os.getpid()}"})
    try:
        shared = int(child.stdout.readline())
        handle, ret = acl.rt.mem_import_from_shareable_handle(shared, 0)
        assert ret == 0
        va, _ = acl.rt.reserve_mem_address(2 << 20, 0, 0, 0)
        assert acl.rt.map_mem(va, 2 << 20, 0, handle, 0) == 0
        out = np.zeros(16, np.uint8)
        acl.rt.memcpy(out.ctypes.data, 16, va, 16, C.ACL_MEMCPY_DEVICE_TO_HOST)
        assert set(out) == {0x3C}
        child.stdin.write("\n")
        child.stdin.flush()
        assert child.wait(timeout=60) == 0
        # the exporter exited without freeing: its record went with it; the pages stay mapped here
        assert not os.path.exists(os.path.join(shareable.directory(), f"{shared}.json"))
        acl.rt.memcpy(out.ctypes.data, 16, va, 16, C.ACL_MEMCPY_DEVICE_TO_HOST)
        assert set(out) == {0x3C}
        assert acl.rt.mem_import_from_shareable_handle(shared, 0)[1] == C.ACL_ERROR_RT_PARAM_INVALID  # stale
        acl.rt.unmap_mem(va)
        acl.rt.free_physical(handle)
        acl.rt.release_mem_address(va)
    finally:
        if child.poll() is None:
            child.kill()


def test_the_record_of_an_exporter_killed_with_sigkill_is_swept(rt, tmp_path):
    import signal
    import subprocess
    import sys
    script = tmp_path / "exporter.py"
    script.write_text(EXPORTER)
    child = subprocess.Popen([sys.executable, str(script)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                             env={**os.environ, "NPURT_DEVICE_NAMESPACE": f"vmm-{os.getpid()}"})
    shared = int(child.stdout.readline())
    record = os.path.join(shareable.directory(), f"{shared}.json")
    assert os.path.exists(record)
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=60)
    assert os.path.exists(record)                         # nobody withdrew it
    assert acl.rt.mem_import_from_shareable_handle(shared, 0)[1] == C.ACL_ERROR_RT_PARAM_INVALID
    assert not os.path.exists(record)                     # swept
