"""Executors: what aclnnXxxGetWorkspaceSize plans and aclnnXxx runs.

A `Plan` is a list of steps (npurt.ops launchers and the two helper kernels below) whose
pointer arguments are either device addresses of the op's tensors or `Temp`s: offsets into
the workspace, each temporary aligned to 512 bytes (the workspace is the only memory an
aclnn op uses besides its tensors). `Plan.size` is the workspace size the first phase
reports. Running a plan checks the workspace given against that size and enqueues every
step on the stream, in order: ordinary kernel tasks.

Helper kernels (Python kernels on the simulated AI cores):
- `strided_copy`: dst (any strides) = src (any strides, broadcasting with stride 0) cast to
  dst's dtype, as numpy's copyto with unsafe casting (the same results as npurt.ops.cast);
- `axpby`: out = a + alpha * b (or a - alpha * b), computed in the op's compute dtype
  (float32 for half / bfloat16, then rounded once), for Add and Sub with alpha != 1.
"""
from __future__ import annotations


import numpy as np
from numpy.lib.stride_tricks import as_strided

from ...runtime import fork_safe_lock
from ...ops import kernels as K
from ... import GM, kernel
from ...runtime import RUNTIME, InvalidValueError, NpuError, handle_table, launch, resolve
from .objects import ACLNN_ERR_PARAM_INVALID, ACLNN_ERR_RUNTIME_ERROR, AclnnError, invalid, null

ALIGN = 512
MAX_DIMS = 8


class Temp:
    """A temporary in the workspace: `offset` bytes from its start, `nbytes` long."""

    __slots__ = ("offset", "nbytes")

    def __init__(self, offset: int, nbytes: int):
        self.offset, self.nbytes = offset, nbytes


class Plan:
    def __init__(self, op: str):
        self.op = op
        self.size = 0
        self.steps: list[tuple] = []
        self.repeatable = False
        self.tensors: list[tuple] = []   # (role "input" / "output", index, Tensor): what a data dump holds

    def temp(self, nbytes: int) -> Temp:
        t = Temp(self.size, nbytes)
        self.size += -(-max(nbytes, 1) // ALIGN) * ALIGN
        return t

    def step(self, fn, *args, **kwargs) -> None:
        self.steps.append((fn, args, kwargs))

    def run(self, workspace: int, workspace_size: int, stream) -> int:
        """Enqueue the steps; returns the last task's sequence number (0 for an op with no
        work), the task id aclrtGetThreadLastTaskId reports."""
        if workspace_size < self.size:
            raise invalid(f"workspaceSize {workspace_size} is smaller than the {self.size} bytes "
                          f"aclnn{self.op}GetWorkspaceSize asked for")
        if self.size and not workspace:
            raise null(f"workspace (the op needs {self.size} bytes)")
        if self.size:
            self._check_workspace(workspace, stream)
        seq = 0
        for fn, args, kwargs in self.steps:
            real = tuple(workspace + a.offset if type(a) is Temp else a for a in args)
            try:
                seq = fn(*real, stream=stream, **kwargs)
            except AclnnError:
                raise
            except InvalidValueError as exc:  # e.g. a workspace that is not device memory of that size
                raise AclnnError(exc.message, ACLNN_ERR_PARAM_INVALID) from None
            except NpuError as exc:
                raise AclnnError(exc.message, ACLNN_ERR_RUNTIME_ERROR) from None
        return seq if type(seq) is int else 0


    def _check_workspace(self, workspace: int, stream) -> None:
        """The workspace must be device memory of the stream's device holding the size asked."""
        try:
            span = resolve(RUNTIME, workspace, self.size, "workspace")
        except InvalidValueError as exc:
            raise invalid(f"workspace: {exc.message}") from None
        device = stream.device if stream is not None else None
        if span.device is None:
            raise invalid(f"workspace 0x{workspace:x} is host memory; it must be device memory (aclrtMalloc)")
        if device is not None and span.device is not device:
            raise invalid(f"workspace 0x{workspace:x} is memory of device {span.device.id}, the stream runs on "
                          f"device {device.id}")


EXECUTORS = handle_table("aclnn executor")
_lock = fork_safe_lock()


def new_executor(plan: Plan) -> int:
    with _lock:
        return EXECUTORS.add(plan)


def executor(handle, what: str = "executor") -> Plan:
    if not handle:
        raise null(what)
    plan = EXECUTORS.lookup(handle)
    if plan is None:
        raise invalid(f"{what} 0x{handle:x} is not a live aclOpExecutor (already run, or destroyed)")
    return plan


def run_executor(handle, workspace: int, workspace_size: int, stream, op: str) -> int:
    """Phase two: enqueue the executor's plan on `stream`; returns the last task's sequence
    number."""
    plan = executor(handle)
    if plan.op != op:
        raise invalid(f"this executor was made by aclnn{plan.op}GetWorkspaceSize; aclnn{op} runs only its own")
    try:
        return plan.run(workspace, workspace_size, stream)
    finally:
        if not plan.repeatable:
            destroy_executor(handle)


def destroy_executor(handle) -> None:
    executor(handle)
    with _lock:
        EXECUTORS.remove(handle)


# ---------------------------------------------------------------- helper kernels
def _dims(shape, strides) -> tuple:
    shape = tuple(shape) + (1,) * (MAX_DIMS - len(shape))
    strides = tuple(strides) + (0,) * (MAX_DIMS - len(strides))
    return shape + strides


@kernel
def strided_copy(ctx, dst: GM, src: GM, dst_dt: np.int32, src_dt: np.int32, ndim: np.int32,
                 d0: np.int64, d1: np.int64, d2: np.int64, d3: np.int64, d4: np.int64, d5: np.int64,
                 d6: np.int64, d7: np.int64, s0: np.int64, s1: np.int64, s2: np.int64, s3: np.int64,
                 s4: np.int64, s5: np.int64, s6: np.int64, s7: np.int64, t0: np.int64, t1: np.int64,
                 t2: np.int64, t3: np.int64, t4: np.int64, t5: np.int64, t6: np.int64, t7: np.int64):
    """dst[idx] = src[idx] over `shape` (d0..), src strides s0.., dst strides t0.. (elements)."""
    shape = (d0, d1, d2, d3, d4, d5, d6, d7)[:ndim]
    if 0 in shape:
        return
    sdt, ddt = K.dtype_of(src_dt), K.dtype_of(dst_dt)
    sst, dst_st = (s0, s1, s2, s3, s4, s5, s6, s7)[:ndim], (t0, t1, t2, t3, t4, t5, t6, t7)[:ndim]
    span = lambda st: sum((d - 1) * s for d, s in zip(shape, st)) + 1  # noqa: E731
    src_view = as_strided(ctx.gm(src, sdt, span(sst), "r"), shape, tuple(s * sdt.itemsize for s in sst))
    dst_view = as_strided(ctx.gm(dst, ddt, span(dst_st), "w"), shape, tuple(s * ddt.itemsize for s in dst_st),
                          writeable=True)
    np.copyto(dst_view, src_view, casting="unsafe")


@kernel
def axpby(ctx, out: GM, a: GM, b: GM, n: np.int64, alpha: np.float64, sub: np.int32, dt: np.int32):
    """out = a + alpha * b (sub: a - alpha * b) over n elements."""
    d = K.dtype_of(dt)
    cd = K.compute_dtype(d)
    lo, hi = ctx.block_range(n)
    x = ctx.gm(a, d, n, "r")[lo:hi].astype(cd)
    y = ctx.gm(b, d, n, "r")[lo:hi].astype(cd)
    if np.issubdtype(cd, np.integer):
        scaled = y * cd.type(int(alpha))
    else:
        scaled = y * cd.type(alpha)
    r = x - scaled if sub else x + scaled
    ctx.gm(out, d, n, "w")[lo:hi] = r.astype(d)


def launch_strided_copy(dst, src, shape, dst_strides, src_strides, dst_dtype, src_dtype, stream=None):
    code_d, code_s = K.code_of(dst_dtype), K.code_of(src_dtype)
    args = (dst, src, code_d, code_s, len(shape)) + _dims(shape, src_strides)[:MAX_DIMS] \
        + _dims(shape, src_strides)[MAX_DIMS:] + _dims(shape, dst_strides)[MAX_DIMS:]
    return launch(strided_copy, 1, args, stream)


def launch_axpby(out, a, b, n, alpha, sub, dtype, stream=None):
    return launch(axpby, 1, (out, a, b, n, float(alpha), int(sub), K.code_of(dtype)), stream)


@kernel
def row_stats(ctx, mean: GM, rstd: GM, x: GM, rows: np.int64, cols: np.int64, eps: np.float64, dt: np.int32):
    """mean[r] and rstd[r] = 1 / sqrt(var[r] + eps) of each row of x[rows, cols] (population
    variance, in float32 for half / bfloat16, float64 for float64), as LayerNorm's extra outputs."""
    d = K.dtype_of(dt)
    cd = K.compute_dtype(d)
    lo, hi = ctx.block_range(rows)
    xs = ctx.gm(x, d, (rows, cols), "r")[lo:hi].astype(cd)
    m = xs.mean(axis=1, dtype=cd)
    v = ((xs - m[:, None]) ** 2).mean(axis=1, dtype=cd)
    ctx.gm(mean, d, rows, "w")[lo:hi] = m.astype(d)
    ctx.gm(rstd, d, rows, "w")[lo:hi] = (cd.type(1) / np.sqrt(v + cd.type(eps))).astype(d)


def launch_row_stats(mean, rstd, x, rows, cols, eps, dtype, stream=None):
    return launch(row_stats, 1, (mean, rstd, x, rows, cols, float(eps), K.code_of(dtype)), stream)
