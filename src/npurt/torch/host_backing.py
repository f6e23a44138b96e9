"""Large npu tensors the host cannot back are refused up front, as an out-of-memory error.

On the simulated NPU a tensor's device memory *is* host RAM (the device's arena in /dev/shm),
and torch code reads device data back into host memory (`.cpu()`, comparisons with a CPU
reference, `print`). The runtime itself lets device memory be overcommitted (untouched pages
cost nothing: a 64 GiB device on a smaller host, docs/runtime.md), but a tensor is written by
the op that makes it, so a tensor bigger than what the host can hold ends in the kernel's OOM
killer, which takes down this process or another one on the host, not in an error the program
can catch. torch's face therefore checks each large tensor allocation (HOST_CHECK_MIN or more)
against /proc/meminfo and refuses, with torch.npu.OutOfMemoryError (a torch.OutOfMemoryError,
code ACL_ERROR_RT_MEMORY_ALLOCATION), one that would leave the host without room for a host
copy of the device memory its tensors would then hold:

    live + 2 * nbytes + reserve  >  MemAvailable     -> refused

`live` is the bytes allocated in this process's device pools (npu tensors; their pages are out
of MemAvailable already), `reserve` a sixteenth of MemTotal kept for everything else on the
host; before refusing, the pools give their cached segments back to the host (empty_cache) and
the rule is asked again. Put differently: the process's device memory may take at most half of the host memory
open to it. On a host without /proc/meminfo, or with NPURT_HOST_BACKING_CHECK=0, nothing is
checked.
"""
from __future__ import annotations

import os

HOST_CHECK_MIN = 1 << 30   # smaller allocations are never checked (and never read /proc/meminfo)
RESERVE_SHARE = 16         # MemTotal / RESERVE_SHARE stays for the rest of the host
MEMINFO = "/proc/meminfo"


def meminfo() -> dict[str, int] | None:
    """MemTotal and MemAvailable in bytes, or None where the host does not say."""
    try:
        with open(MEMINFO, encoding="ascii") as f:
            text = f.read()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("MemTotal", "MemAvailable"):
            out[key] = int(rest.split()[0]) * 1024  # kB
    return out if len(out) == 2 else None


def enabled() -> bool:
    return os.environ.get("NPURT_HOST_BACKING_CHECK", "1") != "0"


def refusal(nbytes: int, live: int) -> str | None:
    """Why the host cannot back a new npu tensor of `nbytes` (None: it can, or it is not
    checked); `live` as in the module's rule."""
    if nbytes < HOST_CHECK_MIN or not enabled():
        return None
    info = meminfo()
    if info is None:
        return None
    reserve = info["MemTotal"] // RESERVE_SHARE
    if live + 2 * nbytes + reserve <= info["MemAvailable"]:
        return None
    gib = 1 << 30
    return (f"the simulated device's memory is host memory, and the host cannot back this tensor and a "
            f"host copy of the device memory it would hold ({(live + nbytes) / gib:.2f} GiB in npu tensors; "
            f"{info['MemAvailable'] / gib:.2f} GiB of host memory available, {reserve / gib:.2f} GiB kept for "
            "the host). Allocate less, or run on a host with "
            "more memory (NPURT_HOST_BACKING_CHECK=0 turns this check off)")
