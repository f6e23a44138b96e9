"""`npurt bench`: npurt against the peers and the physical limit, side by side, in one run.

    npurt bench [--quick] [--json OUT] [--peers] [--only WORDS]

Modules: harness (timing, sizes), metrics (npurt through the pyACL facade), pythonic (the
same through npurt.Stream / Event / DeviceArray), profiler (what profiling costs), sanitizer
(what the sanitizer costs), schedules (seeded runs per second of npurt run --schedules), collectives
(AllReduce across 2 processes against mpi4py), sharing (a device shared by processes: malloc and IPC copies), media (JPEG decode on the simulated DVPP against
Pillow), capi (the C interface against the facade), graphs (ACL graph replay against enqueueing), models (acl.mdl execute against ONNX Runtime
run directly), torchnpu (torch on npu, when PyTorch is installed), peers (PoCL, Numba's CUDA
simulator), report (the table and the JSON).
bench/README.md and docs/performance.md explain the figures.
"""
from __future__ import annotations

import sys
import time

from . import capi, ddp, graphs, schedules, sharing
from ...progress import on_terminal, progress
from . import collectives, media, metrics, models, overlap, profiler, pythonic, sanitizer, torchnpu
from .harness import FULL, QUICK, Profile
from .peers import PEERS, run_peer
from .report import JSON_KEYS, Results, derived, footer, header, json_figures, table, write_json

__all__ = ["main", "run", "JSON_KEYS"]


def _progress(msg: str) -> None:
    """A stage's line in a log (stderr not a terminal); on a terminal the bar shows it."""
    if not on_terminal():
        print(f"  ... {msg}", file=sys.stderr, flush=True)


def selected(name: str, only: tuple[str, ...] | None) -> bool:
    """Whether the group of figures `name` ("many streams") runs under `--only` (words any
    of which it contains, case-insensitive; None: every group)."""
    return only is None or any(word.lower() in name.lower() for word in only)


def run(profile: Profile, peers: bool = False, only: tuple[str, ...] | None = None) -> tuple[Results, list[Results]]:
    """Measure npurt (and the peers); returns (npurt's results, the peers' results). `only`
    limits both to the groups whose names contain one of its words (see `selected`)."""
    res = Results("npurt")
    steps = [
        ("latency", metrics.measure_latency),
        ("empty kernel", metrics.measure_empty_kernel),
        ("Pythonic API latency", pythonic.measure),
        ("copies", metrics.measure_copies),
        ("elementwise add", metrics.measure_add),
        ("matmul", metrics.measure_matmul),
        ("copy/compute overlap", overlap.measure_overlap),
        ("many streams", metrics.measure_streams),
        ("memory per queued task", metrics.measure_queued_memory),
        ("malloc after fragmentation", metrics.measure_fragmentation),
        ("profiler overhead", profiler.measure),
        ("sanitizer overhead", sanitizer.measure),
        ("controlled schedules", schedules.measure),
        ("AllReduce across 2 processes", collectives.measure_allreduce),
        ("DDP step on 2 ranks", ddp.measure),
        ("JPEG decode (DVPP)", media.measure),
        ("model execution", models.measure),
        ("torch on npu", torchnpu.measure),
        ("a torch_npu script as a process", torchnpu.measure_script),
        ("C interface", capi.measure),
        ("devices shared between processes", sharing.measure),
        ("graph replay", graphs.measure),
        ("torch graph replay", graphs.measure_torch),
    ]
    with metrics.Session(profile) as session:
        for what, fn in steps:
            if not selected(what, only):
                continue
            _progress(f"npurt: {what}")
            t0 = time.perf_counter()
            try:
                with progress(f"npurt bench: {what}"):
                    res.add(fn(session, profile))
            except torchnpu.Skipped as skip:  # an optional extra is missing: a note, not an error
                res.notes.update(skip.notes)
            except Exception as exc:  # noqa: BLE001 - one failed figure must not lose the run
                res.errors.append(f"{what}: {type(exc).__name__}: {exc}")
            _progress(f"npurt: {what} took {time.perf_counter() - t0:.1f} s")
    res.add(derived(res.stats))
    peer_results = []
    if peers:
        for name in PEERS:
            _progress(f"peer {name}")
            peer_results.append(run_peer(name, profile, only=only))
    return res, peer_results


def main(quick: bool = False, json_out: str | None = None, peers: bool = False,
         profile: Profile | None = None, only: tuple[str, ...] | None = None) -> int:
    """Run the benchmark, print one table, write the JSON figures to `json_out` if given.
    Returns 0 when every JSON figure was measured (with `only`: when no selected group
    failed), 1 otherwise. `profile` overrides the sizes (the smoke test uses a tiny one)."""
    profile = profile or (QUICK if quick else FULL)
    t0 = time.perf_counter()
    print(header(profile), flush=True)
    if profile is not FULL:
        print(f"  {profile.name.upper()} MODE: sizes and repeats are reduced (see above); a smoke run, "
              "not the benchmark. Run `npurt bench` for the real figures.", flush=True)
    if only is not None:
        print(f"  ONLY: the groups whose names contain {', '.join(only)}; the other figures are not measured.",
              flush=True)
    res, peer_results = run(profile, peers, only)
    print()
    print(table(profile, res, peer_results))
    print()
    print(footer(res, peer_results, peers))
    print(f"total {time.perf_counter() - t0:.0f} s")
    if json_out:
        write_json(json_out, res)
        print(f"wrote {json_out}")
    missing = [k for k, v in json_figures(res).items() if v is None and k not in res.notes]
    if only is not None:
        return 1 if res.errors else 0
    if missing:
        print(f"not measured: {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0
