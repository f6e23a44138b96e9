"""Host pointers the runtime must refuse instead of crashing the process: read-only and
PROT_NONE memory (np.memmap(mode="r"), guard pages), and malloc_host memory freed by one
thread while another copies through it (issue 11). The cases run in a subprocess, so a
regression fails its test instead of killing pytest."""
from __future__ import annotations

import pytest

from isolation import IsolatedCases

PRELUDE = """
import ctypes, tempfile, threading, time, warnings
import numpy as np
import npurt.acl as acl
assert acl.init() == 0 and acl.rt.set_device(0) == 0
libc = ctypes.CDLL(None)
libc.mmap.restype = ctypes.c_void_p
libc.mmap.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_long)
GUARD = libc.mmap(None, 2 * 4096, 0, 0x22, -1, 0)   # PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS
_file = tempfile.TemporaryFile()
_file.write(bytes(1 << 16)); _file.flush()
READONLY = np.memmap(_file, mode="r", dtype=np.uint8)
RO = READONLY.ctypes.data
dev, _ = acl.rt.malloc(1 << 16, 0)
def check(ret, what):
    assert ret not in (0, None), what
    msg = acl.get_recent_err_msg()
    assert what in msg, msg
"""

CASES = {
    "memcpy into read-only memory": "check(acl.rt.memcpy(RO, 4096, dev, 4096, 2), 'writable')",
    "memcpy from a guard page": "check(acl.rt.memcpy(dev, 4096, GUARD, 4096, 1), 'readable')",
    "memcpy_async into read-only memory": """
stream, _ = acl.rt.create_stream()
check(acl.rt.memcpy_async(RO, 4096, dev, 4096, 2, stream), 'writable')
assert acl.rt.synchronize_stream(stream) == 0
""",
    "memset of read-only memory": """
check(acl.rt.memset(RO, 4096, 1, 4096), 'writable')
stream, _ = acl.rt.create_stream()
check(acl.rt.memset_async(GUARD, 4096, 1, 4096, stream), 'writable')
""",
    "memcpy2d into read-only memory": "check(acl.rt.memcpy2d(RO, 128, dev, 128, 64, 16, 2), 'writable')",
    "ptr_to_bytes of a guard page": """
with warnings.catch_warnings(record=True):
    warnings.simplefilter("always")
    assert acl.util.ptr_to_bytes(GUARD, 16) is None
    assert acl.util.ptr_to_bytes(GUARD - 8, 16) is None   # runs from a mapped page into the guard
    assert acl.util.ptr_to_numpy(GUARD, (4,), 2) is None
""",
    "ptr_to_numpy of read-only memory": """
arr = acl.util.ptr_to_numpy(RO, (16,), 2)
assert arr is not None and not arr.flags.writeable
try:
    arr[0] = 1
except ValueError:
    pass
else:
    raise AssertionError("a write went through")
""",
    "host_register of read-only memory": """
check(acl.rt.host_register(RO, 4096, 0)[1], 'read-only')
alias, ret = acl.rt.host_register(RO, 4096, 8)   # ACL_HOST_REGISTER_READONLY
assert ret == 0, acl.get_recent_err_msg()
check(acl.rt.memcpy(RO, 4096, dev, 4096, 2), 'READONLY')
stream, _ = acl.rt.create_stream()
check(acl.rt.memcpy_async(RO, 4096, dev, 4096, 2, stream), 'READONLY')
assert acl.rt.memcpy(dev, 4096, RO, 4096, 1) == 0   # reading it is fine
assert acl.rt.host_unregister(RO) == 0
""",
    "a kernel writing read-only registered memory through its device alias": """
from npurt.runtime.kernel import GM, kernel, launch
from npurt.runtime.runtime import RUNTIME
@kernel
def fill(ctx, out: GM, n: np.int32):
    ctx.gm(out, np.uint8, n, "w")[:] = 7
@kernel
def copy_in(ctx, src: GM, dst: GM, n: np.int32):
    ctx.gm(dst, np.uint8, n, "w")[:] = ctx.gm(src, np.uint8, n, "r")
alias, ret = acl.rt.host_register(RO, 4096, 8)   # ACL_HOST_REGISTER_READONLY; the pages are PROT_READ
assert ret == 0, acl.get_recent_err_msg()
stream, _ = acl.rt.create_stream()
launch(fill, 1, (alias, 64), RUNTIME.streams.get(stream))   # segfaulted before issue 29
check(acl.rt.synchronize_stream(stream), 'ACL_HOST_REGISTER_READONLY')
launch(copy_in, 1, (alias, dev, 64), RUNTIME.streams.get(stream))   # reading it is fine
assert acl.rt.synchronize_stream(stream) == 0, acl.get_recent_err_msg()
assert acl.rt.host_unregister(RO) == 0
""",
    "host memory freed with free_host while a queued copy holds it": """
stream, _ = acl.rt.create_stream()
gate = threading.Event()
host, _ = acl.rt.malloc_host(4096)
from npurt.runtime.api import streams
from npurt.runtime.runtime import RUNTIME
streams.launch_host_func(RUNTIME.streams.get(stream), gate.wait)
assert acl.rt.memcpy_async(dev, 4096, host, 4096, 1, stream) == 0
assert acl.rt.free_host(host) == 0                 # npurt keeps it mapped until the copy ran
check(acl.rt.memcpy(host, 4096, dev, 4096, 2), 'freed with free_host')
check(acl.rt.memset(host, 4096, 1, 4096), 'freed with free_host')
with warnings.catch_warnings(record=True):
    warnings.simplefilter("always")
    assert acl.util.ptr_to_bytes(host, 16) is None
    assert acl.util.ptr_to_numpy(host, (16,), 2) is None
gate.set()
assert acl.rt.synchronize_stream(stream) == 0
""",
}
for _kind, _call in (("H2D", "acl.rt.memcpy(big, N, host, N, 1)"), ("D2H", "acl.rt.memcpy(host, N, big, N, 2)")):
    CASES[f"free_host during a {_kind} memcpy"] = f"""
N = 64 << 20
big, _ = acl.rt.malloc(N, 0)
for _ in range(6):
    host, _ = acl.rt.malloc_host(N)
    started = threading.Event()
    def copy():
        started.set()
        {_call}
    t = threading.Thread(target=copy)
    t.start(); started.wait(); time.sleep(0.002)
    assert acl.rt.free_host(host) == 0
    t.join()
assert acl.rt.free(big) == 0
"""


@pytest.fixture(scope="module")
def cases():
    return IsolatedCases(PRELUDE, CASES, timeout=120)


def _ok(cases, name):
    outcome = cases.result(name)
    assert outcome == "ok", outcome


def test_memcpy_into_read_only_memory_is_refused(cases):
    _ok(cases, "memcpy into read-only memory")


def test_memcpy_from_a_guard_page_is_refused(cases):
    _ok(cases, "memcpy from a guard page")


def test_memcpy_async_into_read_only_memory_is_refused(cases):
    _ok(cases, "memcpy_async into read-only memory")


def test_memset_of_read_only_or_guard_memory_is_refused(cases):
    _ok(cases, "memset of read-only memory")


def test_memcpy2d_into_read_only_memory_is_refused(cases):
    _ok(cases, "memcpy2d into read-only memory")


def test_ptr_to_bytes_and_ptr_to_numpy_of_a_guard_page_return_none(cases):
    _ok(cases, "ptr_to_bytes of a guard page")


def test_ptr_to_numpy_of_read_only_memory_is_a_read_only_view(cases):
    _ok(cases, "ptr_to_numpy of read-only memory")


def test_host_register_of_read_only_memory_needs_the_readonly_flag_and_refuses_writes(cases):
    _ok(cases, "host_register of read-only memory")


@pytest.mark.parametrize("kind", ["H2D", "D2H"])
def test_free_host_during_a_synchronous_copy_does_not_unmap_the_pages_under_it(cases, kind):
    _ok(cases, f"free_host during a {kind} memcpy")


def test_a_kernel_cannot_write_read_only_registered_memory_through_its_device_alias(cases):
    _ok(cases, "a kernel writing read-only registered memory through its device alias")


def test_host_memory_freed_with_free_host_is_refused_while_npurt_still_maps_it(cases):
    _ok(cases, "host memory freed with free_host while a queued copy holds it")
