"""libacl_rt.so loaded into a process where Python already runs (ctypes, a Python extension
linking it, npurt's own bench): the library uses that interpreter and the process exits cleanly.

cffi's start-up lock lives in a libpython field that any attribute lookup on a capsule sets
(numpy, torch's DLPack and datetime.datetime_CAPI do); the first C call then spun for ever.
"""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

PROGRAM = textwrap.dedent("""
    import ctypes, datetime, os, sys
    getattr(datetime.datetime_CAPI, "no_such_attribute", None)   # what numpy and torch do anyway
    lib = ctypes.CDLL(os.path.join(sys.argv[1], "lib64", "libacl_rt.so"))
    device = ctypes.c_int32(-1)
    assert lib.aclrtSetDevice(1) == 0
    assert lib.aclrtGetDevice(ctypes.byref(device)) == 0
    import npurt
    print("device", device.value, "same runtime", npurt.current_device())
""")


def run_hosted(program: str, cann_home: str) -> subprocess.CompletedProcess:
    """`program` run by this Python with this sys.path, the prefix as its argument."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
    return subprocess.run([sys.executable, "-c", program, cann_home], capture_output=True, text=True,
                          timeout=240, env=env)


def test_a_python_process_calls_the_library_after_capsule_lookups_and_exits_cleanly(cann_home):
    proc = run_hosted(PROGRAM, cann_home)
    assert proc.returncode == 0, proc.stderr
    assert "device 1 same runtime 1" in proc.stdout
