"""Figures of devices shared between processes (issue 26), measured in child processes of a
namespace of their own (so the bench's own runtime is not in the way):

* shared_alloc_free_ratio: malloc + free on a shared device over a private one (<= 1.2). Two
  children, NPURT_SHARED_DEVICES=1 and =0, run the same loop: malloc and free of 4 KiB to
  8 MiB, with the cache emptied every 64 rounds so that segments are mapped and unmapped (the
  only step that reaches the shared chunk table); samples alternate between the two.
* ipc_copy_ratio: a D2D copy of `copy_bytes` (64 MiB) into a buffer imported from another
  process over np.copyto of the same bytes between host arrays (speed, >= 0.9). One child
  exports the buffer, another imports it and times both, paired.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
import uuid

import numpy as np

from ... import runtime as rt
from ...runtime import constants as C
from .harness import Profile, Stat, paired

SIZES = (4096, 64 << 10, 1 << 20, 8 << 20)
ROUNDS = 2000


def _env(namespace: str, shared: bool) -> dict:
    return {**os.environ, "NPURT_DEVICE_NAMESPACE": namespace, "NPURT_SHARED_DEVICES": "1" if shared else "0",
            "PYTHONPATH": os.pathsep.join(sys.path)}


def _child(code: str, env: dict, *args) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", code, *map(str, args)], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)


def _ask(child: subprocess.Popen, line: str = "go") -> str:
    child.stdin.write(line + "\n")
    child.stdin.flush()
    answer = child.stdout.readline()
    if not answer:
        raise RuntimeError(f"a bench child died: {child.stderr.read()[-2000:]}")
    return answer.strip()


ALLOC_PROGRAM = "from npurt.apps.bench.sharing import alloc_loop; alloc_loop()"
EXPORT_PROGRAM = "import sys; from npurt.apps.bench.sharing import exporter; exporter(int(sys.argv[1]))"
IMPORT_PROGRAM = "import sys; from npurt.apps.bench.sharing import importer; importer(int(sys.argv[1]), int(sys.argv[2]))"


def alloc_loop() -> None:
    """Child: one timed sample of the malloc + free loop per line read."""
    rt.set_device(0)
    malloc, free = rt.malloc, rt.free
    print("ready", flush=True)
    for _ in sys.stdin:
        t0 = time.perf_counter()
        for i in range(ROUNDS):
            free(malloc(SIZES[i & 3]))
            if not i & 63:
                rt.empty_cache()
        print(time.perf_counter() - t0, flush=True)


def exporter(nbytes: int) -> None:
    """Child: export a buffer and keep it until stdin closes."""
    rt.set_device(0)
    ptr = rt.malloc(nbytes)
    print(rt.ipc_mem_get_export_key(ptr, nbytes, rt.ipc.EXPORT_FLAG_DISABLE_PID_VALIDATION), flush=True)
    sys.stdin.read()


def importer(nbytes: int, repeats: int) -> None:
    """Child: import the buffer, time D2D copies into it against np.copyto, paired."""
    rt.set_device(0)
    dst = rt.ipc_mem_import_by_key(sys.stdin.readline().strip())
    src = rt.malloc(nbytes)
    rt.memset(src, nbytes, 1, nbytes)
    a, b = np.ones(nbytes, np.uint8), np.empty(nbytes, np.uint8)
    result = paired(lambda: np.copyto(b, a),
                    lambda: rt.memcpy(dst, nbytes, src, nbytes, C.ACL_MEMCPY_DEVICE_TO_DEVICE), repeats, 2)
    print(json.dumps({"ratio": [result.ratio.median, result.ratio.lo, result.ratio.hi, result.ratio.n]}), flush=True)


def measure(session, p: Profile) -> dict[str, Stat]:
    namespace = f"bench-{os.getpid()}-{uuid.uuid4().hex[:8]}"
    shared, private = _child(ALLOC_PROGRAM, _env(namespace, True)), _child(ALLOC_PROGRAM, _env(namespace, False))
    try:
        for child in (shared, private):
            if child.stdout.readline().strip() != "ready":
                raise RuntimeError(f"a bench child failed to start: {child.stderr.read()[-2000:]}")
        ratios = []
        for i in range(p.big_repeats + p.warmup):
            order = (shared, private) if i % 2 else (private, shared)
            t = {id(c): float(_ask(c)) for c in order}
            if i >= p.warmup:
                ratios.append(t[id(shared)] / t[id(private)])
    finally:
        for child in (shared, private):
            child.stdin.close()
            child.wait(timeout=120)
    nbytes = p.copy_bytes
    exp = _child(EXPORT_PROGRAM, _env(namespace, True), nbytes)
    try:
        key = exp.stdout.readline().strip()
        if not key:
            raise RuntimeError(f"the exporting child failed: {exp.stderr.read()[-2000:]}")
        imp = _child(IMPORT_PROGRAM, _env(namespace, True), nbytes, p.big_repeats)
        line = _ask(imp, key)
        imp.stdin.close()
        imp.wait(timeout=120)
    finally:
        exp.stdin.close()
        exp.wait(timeout=120)
    copy = json.loads(line)["ratio"]
    return {"shared_alloc_free_ratio": Stat.of(ratios), "ipc_copy_ratio": Stat(*copy)}
