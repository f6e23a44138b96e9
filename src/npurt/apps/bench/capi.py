"""The C interface's figures: what a call costs from C (libacl_rt.so) next to the same call
through the pyACL facade, in the same process and on the same runtime.

* c_call_ratio: a C loop of 4-byte aclrtMemcpy host -> device over the same loop through
  `acl.rt.memcpy` (target <= 1.3).
* c_malloc_free_ratio: aclrtMalloc + aclrtFree of 4 KiB from C over the facade's (<= 1.5).
* c_first_call_s: a fresh C program's first call (starting the interpreter, importing numpy and
  npurt), reported.

The C loops (c/capi_loops.c) are built against `npurt cann-home`'s prefix and loaded with
ctypes: the library then runs in this interpreter, on the bench's runtime and its current
device. C and facade samples alternate, so a change of machine load hits both.
"""
from __future__ import annotations

import ctypes
import os
import re
import shutil
import subprocess
import tempfile

from ...capi.home import cann_home
from .harness import Profile, Stat, clock as _clock
from .torchnpu import Skipped

HERE = os.path.dirname(os.path.abspath(__file__))
FIGURES = ("c_call_ratio", "c_malloc_free_ratio", "c_first_call_s", "c_memcpy_us", "c_memcpy_acl_us",
           "c_malloc_free_us", "c_malloc_free_acl_us")


def _prefix_or_skip() -> str:
    if shutil.which("gcc") is None:
        raise Skipped({f: "no C compiler (gcc): the C interface cannot be built here" for f in FIGURES})
    try:
        return cann_home()
    except (RuntimeError, ImportError, OSError, subprocess.CalledProcessError) as exc:
        raise Skipped({f: f"the C interface cannot be built here: {exc}" for f in FIGURES}) from None


def _compile(prefix: str, out_dir: str, source: str, shared: bool) -> str:
    out = os.path.join(out_dir, os.path.splitext(source)[0] + (".so" if shared else ""))
    cmd = ["gcc", "-O2", *(["-shared", "-fPIC"] if shared else []), "-I", os.path.join(prefix, "include"),
           os.path.join(HERE, "c", source), "-o", out, "-L", os.path.join(prefix, "lib64"), "-lacl_rt",
           f"-Wl,-rpath,{os.path.join(prefix, 'lib64')}"]
    subprocess.run(cmd, check=True, capture_output=True, text=True)
    return out


def _first_call_s(exe: str, prefix: str, repeats: int) -> Stat:
    samples = []
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": os.environ.get("HOME", "/tmp"),
           "LD_LIBRARY_PATH": os.path.join(prefix, "lib64")}
    for _ in range(repeats):
        res = subprocess.run([exe], capture_output=True, text=True, env=env, timeout=120)
        m = re.search(r"first_call_s=([0-9.]+)", res.stdout)
        if res.returncode != 0 or not m:
            raise RuntimeError(f"the first-call program failed: {res.stdout} {res.stderr}")
        samples.append(float(m.group(1)))
    return Stat.of(samples)


def measure(s, p: Profile) -> dict[str, Stat]:
    prefix = _prefix_or_skip()
    acl = s.acl
    with tempfile.TemporaryDirectory(prefix="npurt-bench-capi-") as tmp:
        loops = ctypes.CDLL(_compile(prefix, tmp, "capi_loops.c", shared=True))
        loops.loop_memcpy_h2d.restype = loops.loop_malloc_free.restype = ctypes.c_double
        loops.loop_memcpy_h2d.argtypes = (ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int)
        loops.loop_malloc_free.argtypes = (ctypes.c_int,)
        dev, host = s.dev_a, s.malloc_host(4096)
        memcpy, malloc, free = acl.rt.memcpy, acl.rt.malloc, acl.rt.free
        h2d = acl.rt.ACL_MEMCPY_HOST_TO_DEVICE
        calls = max(p.latency_calls, 200)

        def c_memcpy():
            t = loops.loop_memcpy_h2d(dev, host, calls)
            if t < 0:
                raise RuntimeError("aclrtMemcpy failed from C")
            return t / calls * 1e6

        def py_memcpy():
            t0 = _clock()
            for _ in range(calls):
                memcpy(dev, 4, host, 4, h2d)
            return (_clock() - t0) / calls * 1e6

        def c_malloc_free():
            t = loops.loop_malloc_free(calls)
            if t < 0:
                raise RuntimeError("aclrtMalloc/aclrtFree failed from C")
            return t / calls * 1e6

        def py_malloc_free():
            t0 = _clock()
            for _ in range(calls):
                ptr, _ret = malloc(4096, 0)
                free(ptr)
            return (_clock() - t0) / calls * 1e6

        c_memcpy()  # the first C call binds the library to this interpreter
        cm, pm, ca, pa = [], [], [], []
        for _ in range(p.warmup):
            c_memcpy(), py_memcpy(), c_malloc_free(), py_malloc_free()
        for _ in range(max(p.latency_repeats, 5)):
            cm.append(c_memcpy())
            pm.append(py_memcpy())
            ca.append(c_malloc_free())
            pa.append(py_malloc_free())
        first = _first_call_s(_compile(prefix, tmp, "first_call.c", shared=False), prefix,
                              3 if p.latency_repeats >= 5 else 1)
    ratio = Stat.of([c / py for c, py in zip(cm, pm)])
    alloc_ratio = Stat.of([c / py for c, py in zip(ca, pa)])
    return {"c_call_ratio": ratio, "c_malloc_free_ratio": alloc_ratio, "c_first_call_s": first,
            "c_memcpy_us": Stat.of(cm), "c_memcpy_acl_us": Stat.of(pm), "c_malloc_free_us": Stat.of(ca),
            "c_malloc_free_acl_us": Stat.of(pa)}

