"""The execution engine behind npurt's graph engine: ONNX Runtime on the CPU.

onnx and onnxruntime are the optional extra `npurt[models]`; nothing imports them until a
model is converted or loaded. Without them, loading a model fails with
ACL_ERROR_GE_LOAD_MODEL (545001) and conversion with a message; both say what to install.

Sessions run with ORT's intra-op thread count bounded by the simulated AI cores the runtime
gives a model: min(the SoC's AI core count, the host cores the driver's core pool uses), no
inter-op parallelism, and no spinning (idle ORT threads sleep instead of burning the host
cores other streams' tasks need). Weights are handed to ORT as external initializers that
live in the model's weight memory in the device arena.
"""
from __future__ import annotations

from ..runtime import NpuError, RUNTIME, constants as C

INSTALL = "pip install 'npurt[models]'"


class MissingExtraError(NpuError):
    """onnx / onnxruntime are not installed."""

    code = C.ACL_ERROR_GE_LOAD_MODEL


def import_onnx():
    try:
        import onnx
    except ImportError:
        raise MissingExtraError(f"models need the onnx package, which is not installed: {INSTALL}") from None
    return onnx


def import_ort():
    try:
        import onnxruntime
    except ImportError:
        raise MissingExtraError(f"models run on ONNX Runtime, which is not installed: {INSTALL}") from None
    return onnxruntime


def session_options(threads: int, external: tuple[list, list] | None = None):
    """ORT session options as npurt runs models (the bench's reference uses the same)."""
    ort = import_ort()
    so = ort.SessionOptions()
    so.intra_op_num_threads = max(1, threads)
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    so.add_session_config_entry("session.intra_op.allow_spinning", "0")
    so.log_severity_level = 3
    if external is not None and external[0]:
        so.add_external_initializers(*external)
    return so


def session(graph: bytes, threads: int, external: tuple[list, list] | None = None):
    ort = import_ort()
    return ort.InferenceSession(graph, session_options(threads, external), providers=["CPUExecutionProvider"])


def run_options():
    """RunOptions of one model execution: npurt sets `terminate` to stop it (its deadline, a
    device reset, Ctrl-C, interpreter exit) and reports that itself, so ORT's own error log
    of a terminated run is silenced."""
    ro = import_ort().RunOptions()
    ro.log_severity_level = 4
    return ro


def ai_core_threads(spec_cores: int) -> int:
    """ORT threads for a model: bounded by the SoC's AI cores and the driver's core pool."""
    pool = RUNTIME.driver.cores.threads if RUNTIME.driver is not None else 1
    return max(1, min(spec_cores, pool))
