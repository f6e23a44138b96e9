"""What each figure is (label, unit, target) and how a run is shown: one table, and JSON.

The JSON holds exactly the figures with `json=True` (the keys issue 7 fixes), each the
median of its samples; everything else is printed only.
"""
from __future__ import annotations

import json
import math
import os
import platform
import time
from dataclasses import dataclass, field

import numpy as np

from .harness import Profile, Stat


@dataclass(frozen=True)
class Spec:
    id: str
    label: str           # may use {copy} {add} {matmul} {streams} {tasks} {batches} {batch} {frees}
    unit: str
    better: str          # "lower" or "higher": which way is good
    target: float | None = None
    json: bool = False

    def meets(self, v: float) -> bool | None:
        if self.target is None:
            return None
        return v <= self.target if self.better == "lower" else v >= self.target


L, H = "lower", "higher"
SPECS: list[Spec] = [
    Spec("py_call_us", "floor: a bare Python call, same 6 arguments", "us", L),
    Spec("enqueue_us", "async enqueue, tiny copy (memcpy_async 64 B)", "us", L, 2, True),
    Spec("enqueue_py_us", "  Pythonic: Stream + DeviceArray copy", "us", L),
    Spec("enqueue_floors", "  in floors (enqueue_us / the bare call)", "floors", L, 24, True),
    Spec("enqueue_py_ratio", "    Pythonic / pyACL", "x", L, 2),
    Spec("roundtrip_us", "tiny copy + synchronize_stream", "us", L, 10, True),
    Spec("roundtrip_py_us", "  Pythonic: copy + Stream.synchronize", "us", L),
    Spec("roundtrip_floors", "  in floors (roundtrip_us / the bare call)", "floors", L, 60, True),
    Spec("roundtrip_py_ratio", "    Pythonic / pyACL", "x", L, 2),
    Spec("event_sync_us", "record_event + synchronize_event", "us", L, 10, True),
    Spec("event_sync_py_us", "  Pythonic: Event.record + .synchronize", "us", L),
    Spec("event_sync_floors", "  in floors (event_sync_us / the bare call)", "floors", L, 55, True),
    Spec("event_sync_py_ratio", "    Pythonic / pyACL", "x", L, 2),
    Spec("alloc_free_us", "malloc + free, 4 KiB, cached", "us", L, 1, True),
    Spec("alloc_free_py_us", "  Pythonic: npurt.empty + drop", "us", L),
    Spec("alloc_free_py_ratio", "    Pythonic / pyACL", "x", L, 2),
    Spec("elementwise_py_us", "Pythonic: c = a + b, 4 KiB float32 (enqueue)", "us", L, 5),
    Spec("elementwise_sync_py_us", "Pythonic: c = a + b, then Stream.synchronize", "us", L),
    Spec("elementwise_sync_py_ratio", "  over the tiny copy + synchronize_stream (pyACL)", "x", L, 2, True),
    Spec("empty_kernel_us", "empty kernel: launch_kernel + synchronize", "us", L),
    Spec("copyto_gbps", "reference: np.copyto {copy}, pinned host", "GB/s", H),
    Spec("memcpy_h2d_ratio", "memcpy H2D {copy} / np.copyto", "x", H, 0.9, True),
    Spec("memcpy_d2h_ratio", "memcpy D2H {copy} / np.copyto", "x", H, 0.9, True),
    Spec("memcpy_d2d_ratio", "memcpy D2D {copy} / np.copyto", "x", H, 0.9, True),
    Spec("memcpy_h2d_async_ratio", "  memcpy_async H2D + sync / np.copyto", "x", H),
    Spec("kernel_add_ratio", "add float32 {add} / numpy (speed)", "x", H, 0.9, True),
    Spec("kernel_add_ms", "  add kernel + synchronize", "ms", L),
    Spec("numpy_add_ms", "  reference: np.add(out=)", "ms", L),
    Spec("matmul_ratio", "matmul float32 {matmul}^2 / numpy (speed)", "x", H, 0.9, True),
    Spec("matmul_ms", "  matmul kernel + synchronize", "ms", L),
    Spec("numpy_matmul_ms", "  reference: np.matmul(out=)", "ms", L),
    Spec("overlap_speedup", "copy+gelu, 2 streams vs 1 ({batches}x{batch})", "x", H, 1.5, True),
    Spec("overlap_ideal", "  limit: perfect overlap of this work mix", "x", H),
    Spec("overlap_threads_limit", "  the same pipeline on 2 plain threads vs 1 (this machine)", "x", H),
    Spec("overlap_threads_unordered", "    the copies and kernels on 2 threads, no order between them", "x", H),
    Spec("overlap_of_limit", "  2 streams / 2 plain threads", "x", H, 0.95, True),
    Spec("overlap_kernel_fraction", "  share of each batch the kernel covers (balanced)", "", H),
    Spec("overlap_compute_idle_pct", "  compute stream idle in hand-offs (data ready -> stream resumes)", "%", L, 1, True),
    Spec("overlap_handoff_us", "    median hand-off, [min-max]", "us", L),
    Spec("overlap_switches_per_batch", "  thread switches per batch, 2 streams (voluntary, all threads)", "", L),
    Spec("overlap_threads_switches_per_batch", "    the same on 2 plain threads (events)", "", L),
    Spec("overlap_one_stream_ms", "  one stream", "ms", L),
    Spec("overlap_two_streams_ms", "  two streams + events", "ms", L),
    Spec("overlap_copies_ms", "  the copies alone", "ms", L),
    Spec("overlap_kernels_ms", "  the kernels alone", "ms", L),
    Spec("gelu_ratio", "built-in gelu / the plain numpy formula, same elements (time)", "x", L, 1.05, True),
    Spec("streams_10k_s", "{streams} streams: create, 1 task, sync", "s", L, 2, True),
    Spec("bytes_per_task", "memory per queued task ({tasks}; tracemalloc+malloc)", "B", L, 400, True),
    Spec("bytes_per_task_rss", "  the same by RSS delta", "B", L),
    Spec("enqueue_queued_us", "  enqueue while {tasks} are queued", "us", L),
    Spec("alloc_after_fragmentation_ms", "malloc 1 MB after {frees} frees of 480 B blocks", "ms", L, 50, True),
    Spec("profiler_overhead", "profiler on / off: copy+gelu pipeline ({batches}x{batch})", "x", L, 1.3, True),
    Spec("profiler_tiny_task_us", "  profiler cost per tiny copy + synchronize", "us", L),
    Spec("sanitizer_overhead", "sanitizer (all tools) on / off: the demo's pipeline", "x", L, 3, True),
    Spec("schedules_per_s", "npurt run --schedules: seeded runs of the demo's race per second", "/s", H, 0.5, True),
    Spec("allreduce_busbw_ratio", "AllReduce {allreduce}, 2 processes: busbw / mpi4py", "x", H, 0.8, True),
    Spec("allreduce_busbw_gbps", "  npurt.hccl all_reduce + synchronize, bus bandwidth", "GB/s", H),
    Spec("mpi_allreduce_busbw_gbps", "  reference: mpi4py Allreduce of numpy buffers", "GB/s", H),
    Spec("ddp_step_ratio", "torch DDP step, MLP on 2 ranks / the step with grads all-reduced by hand", "x", L, 1.3,
         True),
    Spec("ddp_step_ms", "  DistributedDataParallel step (backend hccl)", "ms", L),
    Spec("ddp_manual_step_ms", "  reference: plain step + npurt.hccl all_reduce per gradient", "ms", L),
    Spec("jpegd_ratio", "JPEG decode 1920x1080 to NV12 (acl.media) / Pillow to RGB", "x", H, 0.8, True),
    Spec("jpegd_ms", "  dvpp_jpeg_decode_async + synchronize_stream", "ms", L),
    Spec("pillow_decode_ms", "  reference: Pillow decode to an RGB array", "ms", L),
    Spec("model_exec_ratio", "small CNN: acl.mdl.execute / ONNX Runtime direct (speed)", "x", H, 0.9, True),
    Spec("model_exec_ms", "  acl.mdl.execute of the CNN", "ms", L),
    Spec("model_ort_ms", "  reference: ONNX Runtime session.run", "ms", L),
    Spec("model_exec_async_enqueue_us", "acl.mdl.execute_async enqueue (small MLP)", "us", L, 10, True),
    Spec("c_call_ratio", "C interface: aclrtMemcpy 4 B H2D from C / acl.rt.memcpy", "x", L, 1.3, True),
    Spec("c_memcpy_us", "  from C (libacl_rt.so)", "us", L),
    Spec("c_memcpy_acl_us", "  through the pyACL facade", "us", L),
    Spec("c_malloc_free_ratio", "C interface: aclrtMalloc + aclrtFree 4 KiB / the facade's", "x", L, 1.5, True),
    Spec("c_malloc_free_us", "  from C", "us", L),
    Spec("c_malloc_free_acl_us", "  through the pyACL facade", "us", L),
    Spec("shared_alloc_free_ratio", "malloc + free, device shared by processes / private device (time)", "x", L,
         1.2, True),
    Spec("ipc_copy_ratio", "D2D copy {copy} into memory imported from another process / np.copyto (speed)", "x",
         H, 0.9, True),
    Spec("c_first_call_s", "C interface: a fresh program's first call (starts Python)", "s", L, 1.0, True),
    Spec("graph_replay_ratio", "ACL graph: replay of 200 small tasks / enqueueing them (+ synchronize)", "x", L, 0.5, True),
    Spec("graph_enqueue_us", "  200 tasks enqueued + synchronize", "us", L),
    Spec("graph_replay_us", "  one replay of them + synchronize", "us", L),
    Spec("torch_graph_step_ratio", "torch: MLP decode step, NPUGraph replay / eager on npu", "x", L, 0.5, True),
    Spec("torch_graph_eager_ms", "  eager step + synchronize", "ms", L),
    Spec("torch_graph_replay_ms", "  copy input + replay + synchronize", "ms", L),
    Spec("torch_op_us", "torch: a + b on npu, host cost (launch)", "us", L, 25, True),
    Spec("torch_op_queued_us", "  the same with the device held (ops pile up)", "us", L),
    Spec("torch_op_busy_us", "  a loop of adds with the device running", "us", L),
    Spec("torch_op_floors", "  in floors (torch_op_us / the bare call)", "floors", L),
    Spec("torch_op_cpu_us", "  calling-thread CPU time of the idle add", "us", L),
    Spec("torch_op_cpu_ratio", "  that CPU time / CPU torch's add (paired)", "x", L, 12, True),
    # issue 28's key for the add + synchronize (its target is on the CPU time, the row below;
    # the wall time here, never below it, holds to the same bound)
    Spec("torch_op_sync_us", "  a + b, then torch.npu.synchronize", "us", L, 35, True),
    Spec("torch_op_sync_cpu_us", "    its calling-thread CPU time", "us", L, 35, True),
    Spec("torch_sync_idle_us", "  torch.npu.synchronize with nothing queued", "us", L),
    Spec("torch_transformer_ratio", "torch: TransformerEncoderLayer step, npu / CPU torch (speed)", "x", H, 0.9, True),
    Spec("torch_transformer_npu_ms", "  npu step (fwd + bwd + SGD, synchronized)", "ms", L),
    Spec("torch_transformer_cpu_ms", "  reference: the same step in CPU torch", "ms", L),
    Spec("torch_script_ratio", "torch: a small training script as a process, npurt run --torch-npu / CPU torch (time)",
         "x", L, 1.5, True),
    Spec("torch_script_npu_s", "  npurt run --torch-npu train_step.py (whole process)", "s", L),
    Spec("torch_script_cpu_s", "  reference: python train_step.py on CPU torch", "s", L),
]
BY_ID = {s.id: s for s in SPECS}
JSON_KEYS = [s.id for s in SPECS if s.json]


@dataclass
class Results:
    """Figures of one system (npurt or a peer): stats, and notes for figures it lacks or
    measured differently."""

    name: str
    stats: dict[str, Stat] = field(default_factory=dict)
    notes: dict[str, str] = field(default_factory=dict)
    skipped: str | None = None    # why the whole system was not measured
    errors: list[str] = field(default_factory=list)

    def add(self, figures: dict[str, Stat]) -> None:
        self.stats.update(figures)


# figures computed from two others of the same run: id -> (numerator, denominator)
DERIVED = {"enqueue_py_ratio": ("enqueue_py_us", "enqueue_us"),
           "roundtrip_py_ratio": ("roundtrip_py_us", "roundtrip_us"),
           "event_sync_py_ratio": ("event_sync_py_us", "event_sync_us"),
           "alloc_free_py_ratio": ("alloc_free_py_us", "alloc_free_us"),
           "elementwise_sync_py_ratio": ("elementwise_sync_py_us", "roundtrip_us"),
           # latencies in units of the run's bare Python call (comparable across days when the
           # VM's speed differs)
           "enqueue_floors": ("enqueue_us", "py_call_us"),
           "roundtrip_floors": ("roundtrip_us", "py_call_us"),
           "event_sync_floors": ("event_sync_us", "py_call_us"),
           "torch_op_floors": ("torch_op_us", "py_call_us"),
           "overlap_of_limit": ("overlap_speedup", "overlap_threads_limit")}


def derived(stats: dict[str, Stat]) -> dict[str, Stat]:
    """The DERIVED ratios of medians, for the figures this run measured."""
    out = {}
    for fid, (num, den) in DERIVED.items():
        if num in stats and den in stats and stats[den].median:
            v = stats[num].median / stats[den].median
            out[fid] = Stat(v, v, v, 1)
    return out


def _fmt(v: float) -> str:
    if not math.isfinite(v):
        return str(v)
    a = abs(v)
    if a >= 1e5:
        return f"{v:,.0f}"
    if a >= 100:
        return f"{v:.0f}"
    if a >= 10:
        return f"{v:.1f}"
    if a >= 1:
        return f"{v:.2f}"
    if a >= 0.01 or a == 0:
        return f"{v:.3f}"
    return f"{v:.2g}"


def fmt_stat(s: Stat) -> str:
    if s.n == 1:
        return _fmt(s.median)
    return f"{_fmt(s.median)} [{_fmt(s.lo)}-{_fmt(s.hi)}]"


def label_of(spec: Spec, p: Profile) -> str:
    mib = 1 << 20
    size = lambda b: f"{b // mib} MiB" if b >= mib else f"{b // 1024} KiB"  # noqa: E731
    return spec.label.format(copy=size(p.copy_bytes), add=size(p.add_bytes), matmul=p.matmul_n,
                             streams=f"{p.streams:,}", tasks=f"{p.queued_tasks:,}",
                             batches=p.overlap_batches, batch=size(p.overlap_batch_bytes),
                             allreduce=size(p.allreduce_bytes), frees=f"{p.fragment_frees:,}")


def header(p: Profile) -> str:
    load = os.getloadavg()
    return (f"npurt bench: {p.describe()}\n"
            f"  {time.strftime('%Y-%m-%d %H:%M:%S %Z')}, {os.cpu_count()} CPUs, Python {platform.python_version()}, "
            f"numpy {np.__version__}, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}\n"
            f"  medians of repeated samples after warm-up, [min-max] of the samples; "
            f"ratios are paired with their reference in the same run")


def table(p: Profile, npurt: Results, peers: list[Results]) -> str:
    """One table: npurt's figures, targets, and each peer's figure with npurt / peer."""
    measured = [r for r in peers if r.skipped is None]
    cols = ["metric", "unit", "npurt [min-max]", "target", "met"]
    for r in measured:
        cols += [r.name, f"npurt/{r.name.split()[0]}"]
    rows = [cols]
    for spec in SPECS:
        stat = npurt.stats.get(spec.id)
        if stat is None and not any(spec.id in r.stats or spec.id in r.notes for r in measured) \
                and spec.id not in npurt.notes:
            continue
        met = spec.meets(stat.median) if stat is not None else None
        target = "" if spec.target is None else ("<= " if spec.better == L else ">= ") + _fmt(spec.target)
        row = [label_of(spec, p), spec.unit,
               fmt_stat(stat) if stat is not None else npurt.notes.get(spec.id, "-"),
               target, "" if met is None else ("yes" if met else "NO")]
        for r in measured:
            ps = r.stats.get(spec.id)
            note = r.notes.get(spec.id, "")
            if ps is None:
                row += [note or "-", ""]
                continue
            cell = fmt_stat(ps) + (f" ({note})" if note else "")
            ratio = _fmt(stat.median / ps.median) if stat is not None and ps.median else ""
            row += [cell, ratio]
        rows.append(row)
    widths = [max(len(r[i]) for r in rows) for i in range(len(cols))]
    lines = []
    for k, r in enumerate(rows):
        lines.append("  ".join(c.ljust(w) if i == 0 else c.rjust(w) if i > 1 else c.ljust(w)
                               for i, (c, w) in enumerate(zip(r, widths))).rstrip())
        if k == 0:
            lines.append("  ".join("-" * w for w in widths))
    return "\n".join(lines)


def footer(npurt: Results, peers: list[Results], peers_requested: bool) -> str:
    lines = []
    for fid, note in npurt.notes.items():
        if fid not in npurt.stats:
            lines.append(f"npurt {fid}: {note}")
    for err in npurt.errors:
        lines.append(f"npurt error: {err}")
    if not peers_requested:
        lines.append("peers: not measured (run `npurt bench --peers` to compare with PoCL and Numba's CUDA simulator)")
    for r in peers:
        if r.skipped is not None:
            lines.append(f"peer {r.name}: skipped: {r.skipped}")
        for err in r.errors:
            lines.append(f"peer {r.name} error: {err}")
    lines.append("unit: us = microseconds; x = speed relative to the reference (> 1 is faster); "
                 "npurt/peer < 1 is better for us, s, ms and B rows, > 1 for x and GB/s rows")
    return "\n".join(lines)


def json_figures(npurt: Results) -> dict[str, float | None]:
    """Exactly the JSON keys, each the median (None where the figure could not be measured)."""
    out = {}
    for key in JSON_KEYS:
        stat = npurt.stats.get(key)
        out[key] = float(stat.median) if stat is not None and stat.finite() else None
    return out


def write_json(path: str, npurt: Results) -> None:
    with open(path, "w") as f:
        json.dump(json_figures(npurt), f, indent=2)
        f.write("\n")
