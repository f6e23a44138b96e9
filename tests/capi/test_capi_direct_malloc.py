"""aclrtMalloc / aclrtFree from C on the caching pool's direct path (npurt.capi.shims DIRECT:
the shim calls the C accelerator's `c_api` table instead of a Python callable): C programs
get the same codes as before for bad input and for a thread without a context, and a
listening tool (an observer, the sanitizer) still sees every allocation and free, because the
direct path declines and the Python path runs whenever one listens."""
from __future__ import annotations

import json
import textwrap

import pytest

from npurt.runtime import accel

from .test_capi_hosted import run_hosted
from .test_npurt_run_native import npurt_run

# the codes the C interface returned before the direct path (cffi / vectorcall path)
EXPECTED = {
    "init": 0, "before_set_device": 107002, "set_device": 0, "null_out": 100000, "size_zero": 100000,
    "bad_policy": 0, "free_null": 100000, "free_host_pointer": 100000, "double_free": 100000,
    "other_thread_malloc": 107002, "reset": 0, "after_reset": 107002, "finalize": 0,
}


def _codes(stdout: str) -> dict[str, int]:
    out = {}
    for line in stdout.splitlines():
        words = line.split()
        if len(words) == 2:
            out[words[0]] = int(words[1])
    return out


def test_a_c_programs_malloc_and_free_keep_their_codes(build_c):
    proc = build_c("malloc_fast.c").run()
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "loop_ok 1000 reused 1" in proc.stdout, proc.stdout
    assert _codes(proc.stdout) == EXPECTED, proc.stdout


def test_the_sanitizer_sees_a_c_programs_direct_mallocs_and_frees(build_c, cann_home, tmp_path):
    """With a tool listening every call takes the Python path: the sanitizer knows the block
    the loop freed last, so the program's second free of it is a double free."""
    report = tmp_path / "report.json"
    proc = npurt_run(cann_home, "--sanitize-report", str(report), build_c("malloc_fast.c").exe)
    assert proc.returncode == 86, proc.stdout + proc.stderr
    assert _codes(proc.stdout) == EXPECTED, proc.stdout
    kinds = sorted(r["kind"] for r in json.loads(report.read_text())["reports"])
    assert "double free" in kinds, kinds  # aclrtFree(first) after the loop freed it


HOSTED = textwrap.dedent("""
    import ctypes, os, sys, threading
    lib = ctypes.CDLL(os.path.join(sys.argv[1], "lib64", "libacl_rt.so"))
    from npurt.runtime import HOOKS, accel
    direct = accel.SPEEDUPS.direct_calls
    assert lib.aclInit(None) == 0 and lib.aclrtSetDevice(0) == 0
    p = ctypes.c_void_p()
    malloc, free = lib.aclrtMalloc, lib.aclrtFree
    malloc.argtypes = (ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int)
    free.argtypes = (ctypes.c_void_p,)

    def pairs(n):
        for _ in range(n):
            assert malloc(ctypes.byref(p), 4096, 0) == 0 and free(p) == 0

    pairs(1)                      # the first block comes from the Python pool; then cached
    before = direct()
    pairs(100)
    print("direct", direct() - before)
    seen = []
    observer = lambda name, **f: seen.append(name) if name in ("mem_alloc", "mem_free") else None
    HOOKS.add(observer)
    before = direct()
    pairs(3)
    print("listening direct", direct() - before, "events", seen.count("mem_alloc"), seen.count("mem_free"))
    HOOKS.remove(observer)
    accel.SPEEDUPS.suspend()      # what fault injection does: the Python path decides
    before = direct()
    pairs(3)
    print("suspended direct", direct() - before)
    accel.SPEEDUPS.resume()
    print("codes", malloc(None, 4096, 0), malloc(ctypes.byref(p), 0, 0), free(None))
    codes = []
    t = threading.Thread(target=lambda: codes.append(malloc(ctypes.byref(ctypes.c_void_p()), 4096, 0)))
    t.start(); t.join()
    print("no context", codes[0])
    assert lib.aclrtResetDevice(0) == 0 and lib.aclFinalize() == 0
""")


@pytest.mark.skipif(accel.SPEEDUPS is None, reason="the C accelerator (npurt._speedups) is not available here: "
                    "the C interface calls the Python pool, which tests/capi's programs cover")
def test_direct_calls_serve_the_cached_case_and_step_aside_for_tools(cann_home):
    proc = run_hosted(HOSTED, cann_home)
    assert proc.returncode == 0, proc.stderr
    out = proc.stdout
    assert "direct 200\n" in out, out
    assert "listening direct 0 events 3 3\n" in out, out
    assert "suspended direct 0\n" in out, out
    assert "codes 100000 100000 100000\n" in out, out
    assert "no context 107002\n" in out, out
