"""Smoke tests of `npurt bench`: it runs end to end at a tiny size and writes the JSON figures
issue 7 fixes. No timing is asserted (speed belongs in the benchmark's own report)."""
from __future__ import annotations

import json
import importlib.util
import math

import pytest

from npurt.apps import bench
from npurt.apps.bench import harness, peers
from npurt.runtime.runtime import RUNTIME

REQUIRED_KEYS = {
    "enqueue_us", "roundtrip_us", "event_sync_us", "alloc_free_us",
    "memcpy_h2d_ratio", "memcpy_d2h_ratio", "memcpy_d2d_ratio",
    "kernel_add_ratio", "matmul_ratio", "overlap_speedup", "streams_10k_s", "bytes_per_task",
    "profiler_overhead", "sanitizer_overhead", "schedules_per_s",
    "allreduce_busbw_ratio",
    "jpegd_ratio", "model_exec_ratio", "model_exec_async_enqueue_us",
    "torch_op_us", "torch_transformer_ratio", "torch_script_ratio",
    "alloc_after_fragmentation_ms",  # issue 29: a large malloc after 10^6 small frees
    "c_call_ratio", "c_malloc_free_ratio", "c_first_call_s",  # issue 24: the C interface
    "graph_replay_ratio", "torch_graph_step_ratio",  # issue 25: ACL graphs
    "ddp_step_ratio",  # issue 27: DistributedDataParallel on 2 ranks, backend "hccl"
    "gelu_ratio",  # issue 28: the built-in gelu against the plain numpy formula
    # issue 28: latencies in units of the run's bare-call floor; the torch add's CPU over CPU torch's
    "enqueue_floors", "roundtrip_floors", "event_sync_floors", "torch_op_cpu_ratio",
    "shared_alloc_free_ratio", "ipc_copy_ratio",  # issue 26: a device shared by processes
    # issue 28: the rest of its targets (Pythonic add + synchronize, overlap of the plain threads'
    # limit, the compute stream's idle share, the torch add + synchronize's CPU time)
    "elementwise_sync_py_ratio", "overlap_of_limit", "overlap_compute_idle_pct", "torch_op_sync_cpu_us",
    "torch_op_sync_us",  # issue 28 names the add + synchronize so (its wall time; the CPU time above)
}
# measured where the C interface can be built (gcc, a shared libpython, cffi), else skipped with a note
CAPI_KEYS = {"c_call_ratio", "c_malloc_free_ratio", "c_first_call_s"}
# measured when PyTorch is installed (the optional extra npurt[torch]), else skipped with a note
TORCH_KEYS = {"torch_op_us", "torch_transformer_ratio", "ddp_step_ratio", "torch_graph_step_ratio",
              "torch_op_cpu_ratio", "torch_op_sync_cpu_us", "torch_op_sync_us"}
# two whole processes per sample: measured by `npurt bench` and --quick, not at the test size
TINY_SKIPS = {"torch_script_ratio"}
# find_spec, not import: without PyTorch, `import torch` would find tests/torch (a namespace package)
_torch_spec = importlib.util.find_spec("torch")
HAVE_TORCH = _torch_spec is not None and _torch_spec.origin is not None


def _capi_unavailable() -> bool:
    import shutil
    import sysconfig
    return (shutil.which("gcc") is None or not sysconfig.get_config_var("Py_ENABLE_SHARED")
            or importlib.util.find_spec("cffi") is None)


def _finalize() -> None:
    if RUNTIME.initialized:
        RUNTIME.finalized = False
        RUNTIME.finalize(timeout_s=5.0)


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    """One in-process run of the benchmark at the tiny size: (exit code, JSON, stdout)."""
    import contextlib
    import io
    _finalize()  # the bench owns the runtime (it raises the stream limit before init)
    out = tmp_path_factory.mktemp("bench") / "bench.json"
    text = io.StringIO()
    with contextlib.redirect_stdout(text):
        code = bench.main(quick=True, json_out=str(out), peers=False, profile=harness.TINY)
    _finalize()
    return code, json.loads(out.read_text()), text.getvalue()


def test_json_has_exactly_the_required_keys(tiny_run):
    _, data, _ = tiny_run
    assert set(data) == REQUIRED_KEYS


def test_every_json_figure_is_a_finite_number(tiny_run):
    _, data, out = tiny_run
    skipped = (set() if HAVE_TORCH else TORCH_KEYS) | TINY_SKIPS
    assert all(f"{k}" in out for k in TINY_SKIPS)          # the table says why it was skipped
    if _capi_unavailable():
        skipped |= CAPI_KEYS
    bad = {k: v for k, v in data.items()
           if k not in skipped and (not isinstance(v, (int, float)) or not math.isfinite(v))}
    assert not bad, f"figures not measured: {bad}\n{out}"


@pytest.mark.skipif(HAVE_TORCH, reason="PyTorch is installed: the torch figures are measured")
def test_torch_figures_are_skipped_with_a_note_without_pytorch(tiny_run):
    code, data, out = tiny_run
    assert code == 0 and all(data[k] is None for k in TORCH_KEYS)
    assert "skipped: PyTorch is not installed (its CPU build: pip install torch --index-url " in out


def test_run_reports_success_when_every_figure_was_measured(tiny_run):
    code, _, out = tiny_run
    assert code == 0, out


def test_reduced_run_says_so_in_its_output(tiny_run):
    _, _, out = tiny_run
    assert "TINY MODE: sizes and repeats are reduced" in out


def test_table_prints_every_json_figure_with_its_target(tiny_run):
    _, _, out = tiny_run
    for spec in bench.report.SPECS:
        if spec.json:
            label = bench.report.label_of(spec, harness.TINY)
            line = next((ln for ln in out.splitlines() if ln.startswith(label)), None)
            assert line is not None, f"no row for {spec.id}"
            if (spec.id in TORCH_KEYS and not HAVE_TORCH) or spec.id in TINY_SKIPS:
                assert "skipped" in line, line
                continue
            assert ("yes" in line.split()) or ("NO" in line.split()), line


def test_run_without_peers_says_how_to_measure_them(tiny_run):
    _, _, out = tiny_run
    assert "run `npurt bench --peers`" in out


def test_missing_peer_is_skipped_with_the_install_hint(monkeypatch):
    monkeypatch.setattr(peers.importlib.util, "find_spec", lambda name: None)
    res = peers.run_peer("PoCL", harness.TINY)
    assert res.skipped is not None and "pip install" in res.skipped


def test_skipped_peer_gets_a_line_in_the_footer():
    from npurt.apps.bench.report import Results, footer
    res = Results("npurt")
    text = footer(res, [Results("PoCL", skipped="pyopencl is not installed")], True)
    assert "peer PoCL: skipped: pyopencl is not installed" in text


@pytest.mark.parametrize("name, module", [("PoCL", "pyopencl"), ("Numba sim", "numba")])
def test_installed_peer_measures_the_shared_latency_figures(name, module):
    pytest.importorskip(module)
    res = peers.run_peer(name, harness.TINY, timeout_s=120)
    assert res.skipped is None, res.skipped
    assert not res.errors, res.errors
    for key in ("enqueue_us", "roundtrip_us", "alloc_free_us", "memcpy_h2d_ratio"):
        assert key in res.stats and res.stats[key].finite(), key


def test_stat_reports_median_and_range_of_its_samples():
    s = harness.Stat.of([5.0, 1.0, 3.0, 9.0, 2.0])
    assert (s.median, s.lo, s.hi, s.n) == (3.0, 1.0, 9.0, 5)


def test_paired_ratio_is_reference_time_over_subject_time(monkeypatch):
    times = iter([4.0, 2.0, 2.0, 4.0, 6.0, 3.0])  # (ref, subj), then (subj, ref), then (ref, subj)
    monkeypatch.setattr(harness, "timed", lambda fn: next(times))
    res = harness.paired(lambda: None, lambda: None, repeats=3, warmup=0)
    assert res.ratio.median == 2.0 and res.ratio.n == 3


def test_failed_figure_is_reported_as_null_with_exit_code_1(monkeypatch, tmp_path, capsys):
    from npurt.apps.bench import metrics

    def broken(session, profile):
        raise RuntimeError("matmul kernel exploded")

    monkeypatch.setattr(metrics, "measure_matmul", broken)
    _finalize()
    out = tmp_path / "bench.json"
    code = bench.main(quick=True, json_out=str(out), peers=False, profile=harness.TINY)
    _finalize()
    data = json.loads(out.read_text())
    printed = capsys.readouterr()
    assert code == 1
    assert data["matmul_ratio"] is None
    assert "npurt error: matmul: RuntimeError: matmul kernel exploded" in printed.out


def test_only_measures_the_groups_whose_names_contain_one_of_its_words():
    assert bench.selected("many streams", ("streams",)) and bench.selected("many streams", None)
    assert not bench.selected("latency", ("streams", "overlap"))
    _finalize()
    try:
        res, peer_results = bench.run(harness.TINY, peers=False, only=("streams",))
    finally:
        _finalize()
    assert "streams_10k_s" in res.stats and res.stats["streams_10k_s"].finite()
    assert "enqueue_us" not in res.stats and "overlap_speedup" not in res.stats and not peer_results
