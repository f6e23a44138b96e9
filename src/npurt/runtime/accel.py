"""The optional C accelerator (`npurt._speedups`) and its pure-Python twins.

The caching pool's hot path (malloc of a cached small block, free of a block no queued work
uses) costs a few dict operations in Python; in C it is a few pointer moves. What the
extension provides, and what stands in for it without one (the same names, the same
behaviour, the same tests):

| name | with the extension | without |
| --- | --- | --- |
| `BlockBase` | a block record as a C struct, linked into its bin | a class with `__slots__` |
| `Bin` | the free blocks of one size, an intrusive list: O(1) take, give back, claim | a dict used as an ordered set |
| `PoolBase` | DeviceMemory's base: counters as C fields, the small bins as a C array, malloc/free's cached-block case in C | nothing (memory.py's Python fast path) |
| `Entry` | the runtime's and the facades' malloc/free, the Pythonic `allocate` and `npurt.empty` as C callables (see `npurt.runtime.entries`); a malloc or free entry's `c_api` is a capsule of its fast case as C functions with C arguments, which libacl_rt.so's aclrtMalloc / aclrtFree call directly (`direct_calls()` counts the calls they answered) | the Python functions themselves (no `c_api`: the C interface calls them) |
| `Allocation` | the Pythonic allocation record in C; its dealloc frees through the pool's fast path (`entries.allocation_record`) | the Python record with `__del__` (npurt.array.allocation) |
| `note_use`, `note_uses`, `prune_uses` | memory.py's use records of blocks, in C | memory.py's functions |
| `Lock` | threading.Lock not tracked by the garbage collector (a stream's enqueue lock, a worker's wake lock) | threading.Lock |
| `Doorbell` | a deferred worker wake-up: a launch's store instead of a futex wake, answered by an idle worker that polls it without the GIL (scheduler.py, "Deferred wake-ups") | nothing: every launch wakes a worker |
| `capsule` | a DLPack capsule at an address npurt chooses, one C allocation whose deleter calls the owner's release (`dlpack_capsule`: npu tensors' storage, each op's output) | npurt.array.dlpack's rewrite of numpy's capsule |

The C entries cache the calling thread's context pool and each device's pool; `invalidate`
forgets them and is called wherever the answer can change (context.bind and retire: a
context bound, destroyed, reset or released; finalize; a fork's child).

The Python pool stays the slow path and the tools' view: every block is a Python-visible
object in the same tables (`live`, the bins, the segment index) whichever implementation
runs, and an entry calls the Python function it stands for whenever a listening tool is
active, the thread has no live context, an argument needs converting, the cache misses or
anything fails, before it has changed anything.

Where the extension comes from: `pip install` builds it where a C compiler exists (setup.py;
a failed build leaves the pure-Python pool). A source checkout has none, so it is compiled
on first import into a cache directory keyed by the source's digest and the Python, when a
compiler is found (a second or so, once). `NPURT_SPEEDUPS=0` turns it off, whatever is
installed; `npurt info` says which pool runs.
"""
from __future__ import annotations

import hashlib
import importlib.machinery
import importlib.util
import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

ENV = "NPURT_SPEEDUPS"


def _disabled() -> bool:
    return os.environ.get("NPURT_SPEEDUPS", "1").strip().lower() in ("0", "off", "false", "no")
_SOURCE = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "_speedups.c")


def _cache_dir() -> str:
    cache = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(cache, "npurt", "speedups")


def build(source: str = _SOURCE, directory: str | None = None) -> str | None:
    """Compile the extension from `source` into `directory` (default: the cache, under a
    name keyed by the source's digest and the Python); its path, or None when there is no
    compiler or the build fails. Written under a temporary name and renamed into place, so
    processes building at once each get a whole file."""
    try:
        with open(source, "rb") as f:
            digest = hashlib.sha256(f.read()).hexdigest()[:16]
    except OSError:
        return None
    suffix = sysconfig.get_config_var("EXT_SUFFIX") or ".so"
    directory = directory or _cache_dir()
    target = os.path.join(directory, f"_speedups-{digest}{suffix}")
    if os.path.exists(target):
        return target
    cc = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
    include = sysconfig.get_paths().get("include")
    if cc is None or not include or not os.path.exists(os.path.join(include, "Python.h")):
        return None
    try:
        os.makedirs(directory, exist_ok=True)
        fd, tmp = tempfile.mkstemp(suffix=suffix, dir=directory)
        os.close(fd)
        done = subprocess.run([cc, "-O2", "-fPIC", "-shared", f"-I{include}", source, "-o", tmp],
                              capture_output=True, timeout=120)
        if done.returncode != 0:
            os.unlink(tmp)
            return None
        os.replace(tmp, target)
        return target
    except (OSError, subprocess.SubprocessError):
        return None


def _load():
    """npurt._speedups: installed, or built into the cache; None when off or unavailable."""
    if _disabled():
        return None
    name = "npurt._speedups"
    if name in sys.modules:  # loaded by an earlier import of this module
        return sys.modules[name]
    package = os.path.dirname(_SOURCE)
    installed = [os.path.join(package, "_speedups" + suffix) for suffix in importlib.machinery.EXTENSION_SUFFIXES]
    # installed by pip (setup.py builds it where a compiler exists), else built into the cache
    path = next((p for p in installed if os.path.exists(p)), None) or build()
    if path is None:
        return None
    try:
        loader = importlib.machinery.ExtensionFileLoader(name, path)
        spec = importlib.util.spec_from_file_location(name, path, loader=loader)
        module = importlib.util.module_from_spec(spec)
        loader.exec_module(module)
    except ImportError:
        return None
    sys.modules[name] = module
    return module


SPEEDUPS = _load()
"""The extension module, or None: the pure-Python pool runs."""

dlpack_capsule = getattr(SPEEDUPS, "capsule", None)
"""capsule(ptr, shape, strides, code, bits, device_type, device_id, owner): a DLPack capsule in
C (npurt.array.dlpack.capsule_at's contract), or None without the extension."""


class _PyBlockBase:
    """A block record (the pure-Python twin of _speedups.BlockBase)."""

    __slots__ = ("addr", "size", "requested", "align32", "segment", "prev", "next", "state", "uses", "pool")

    def __init__(self, addr: int, size: int, segment, pool):
        self.addr, self.size, self.segment, self.pool = addr, size, segment, pool
        self.requested = 0     # the size asked for (what diagnostics and tools report against)
        self.align32 = False   # malloc_align32: no 32 bytes of padding
        self.prev = None
        self.next = None
        self.state = 0         # FREE
        self.uses = None       # stream -> last sequence number that uses this block


class _PyBin(dict):
    """The free blocks of one size: a dict used as an insertion-ordered set (bin[block] =
    None; popitem() takes the block cached last; pop(block, default) claims a given one)."""

    __slots__ = ("untracked",)

    def __init__(self):
        super().__init__()
        self.untracked = False  # dropped from the sizes best_fit searches


class _PyPoolBase:
    """DeviceMemory's base without the extension: the fast path is memory.py's Python."""

    def _note_bin(self, size: int, lst) -> None:
        """The small pool made the bin of `size` (the C array of bins mirrors them)."""

    def _set_small_pool(self, pool, dirty) -> None:
        """The pool whose small bins the C fast path serves."""


if SPEEDUPS is not None:
    BlockBase, Bin, PoolBase = SPEEDUPS.BlockBase, SPEEDUPS.Bin, SPEEDUPS.PoolBase
else:
    BlockBase, Bin, PoolBase = _PyBlockBase, _PyBin, _PyPoolBase


def _no_caches() -> None:
    """Without the extension there is nothing to forget."""


invalidate = SPEEDUPS.invalidate if SPEEDUPS is not None else _no_caches
"""Forget what the C entries cache (the calling thread's context pool, each device's pool):
called whenever that can change (a context bound or dead, the devices forgotten)."""
if SPEEDUPS is not None:
    os.register_at_fork(after_in_child=invalidate)  # the parent's pools are not the child's


forget_copy_windows = SPEEDUPS.forget_copy_windows if SPEEDUPS is not None else _no_caches
"""Forget what the C copies learnt of the devices' memory (the devices were forgotten)."""


def suspend() -> None:
    """Hold every C entry's fast path off until `resume` (counted): fault injection gates the
    Python operations and the allocator's malloc, which the fast path would bypass."""
    if SPEEDUPS is not None:
        SPEEDUPS.suspend()


def resume() -> None:
    """Undo one `suspend`."""
    if SPEEDUPS is not None:
        SPEEDUPS.resume()


def describe() -> str:
    """Which pool runs, for `npurt info` and the bench's header."""
    if SPEEDUPS is not None:
        return f"C accelerator ({os.path.basename(SPEEDUPS.__file__)})"
    if _disabled():
        return f"pure Python ({ENV}=0)"
    return "pure Python (no C compiler or build failed)"
