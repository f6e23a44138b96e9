"""Plans: what each aten op is, worked out once from its schema, and the meta cache.

A `Plan` says how an op runs on npu tensors:

* **views** (every return an alias, nothing written) and in-place metadata ops: torch's own
  CPU kernel on the npu tensor, metadata only, no task, no copy;
* **compute ops** (functional, `out=`, in-place): their output metadata come from the op's
  meta kernel, cached in `META` per (op, shapes, strides, dtypes, scalar arguments), and
  one task computes them (fallback.Call, or fastpath's fast kernel);
* ops whose result is not a tensor (`item()`), whose output shape depends on the data
  (`nonzero`), or that have no meta kernel take the *synchronous* path (`SYNC_PATH`).

fp16 matmul-class ops compute in float32 and round once, as the NPU's cube unit accumulates
in float32 (`UPCAST_FP16`).
"""
from __future__ import annotations

import os

import torch
from torch.utils._python_dispatch import TorchDispatchMode

VIEW, FUNCTIONAL, OUT, INPLACE, SYNC = range(5)
SYNC_PATH = object()      # meta cache value: this key takes the synchronous path
META_CHECK = os.environ.get("NPURT_TORCH_META_CHECK") == "1"
CPU_KEYSET = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)   # redispatch views to torch's CPU kernel
_Tensor = torch.Tensor


def _tensor_kind(typ) -> int:
    """0: not a tensor; 1: Tensor or Tensor?; 2: a list of (optional) tensors."""
    if isinstance(typ, torch._C.OptionalType):
        typ = typ.getElementType()
    if isinstance(typ, torch._C.TensorType):
        return 1
    if isinstance(typ, torch._C.ListType):
        el = typ.getElementType()
        if isinstance(el, torch._C.OptionalType):
            el = el.getElementType()
        if isinstance(el, torch._C.TensorType):
            return 2
    return 0


class Plan:
    """What the kernels need to know about one OpOverload, worked out from its schema once."""

    def __init__(self, op):
        self.op = op
        self.name = str(op._schema.name) + ("." + op._overloadname if op._overloadname != "default" else "")
        schema = op._schema
        tags = set(op.tags)
        args = schema.arguments
        self.written = {a.name for a in args if a.alias_info is not None and a.alias_info.is_write}
        # positional arguments: (index, 1 tensor / 2 tensor list, written?); the others' indices
        self.pos_info = [(i, _tensor_kind(a.type), a.name in self.written)
                         for i, a in enumerate(args) if not a.kwarg_only and _tensor_kind(a.type)]
        self.scalar_pos = [i for i, a in enumerate(args) if not a.kwarg_only and not _tensor_kind(a.type)]
        self.kw = {a.name: (_tensor_kind(a.type), a.name in self.written) for a in args
                   if a.kwarg_only and _tensor_kind(a.type)}
        self.out_names = [a.name for a in args if a.kwarg_only and a.name in self.written]
        self.has_generator = any(a.name == "generator" for a in args)
        self.device_kw = any(a.name == "device" for a in args)
        rets = schema.returns
        self.returns_tensor = [_tensor_kind(r.type) for r in rets]
        # which argument each aliasing return comes from
        alias_of = {}
        for i, a in enumerate(args):
            if a.alias_info is not None:
                for s in a.alias_info.before_set:
                    alias_of[s] = i
        self.ret_alias = [alias_of.get(next(iter(r.alias_info.before_set)))
                          if r.alias_info is not None and r.alias_info.before_set else None for r in rets]
        self.arg_names = [a.name for a in args]
        self.arg_kwonly = [a.kwarg_only for a in args]
        view = bool(rets) and all(r.alias_info is not None and not r.alias_info.is_write for r in rets) \
            and not self.written
        if view or torch.Tag.inplace_view in tags:
            self.mode = VIEW
        elif (torch.Tag.dynamic_output_shape in tags or torch.Tag.data_dependent_output in tags
              or any(k == 0 for k in self.returns_tensor) or self.name in META_DIFFERS):
            self.mode = SYNC
        elif self.out_names:
            self.mode = OUT
        elif self.written:
            self.mode = INPLACE
        else:
            self.mode = FUNCTIONAL
        self.out_op = _out_overload(op) if self.mode == FUNCTIONAL else None
        # False once the .out kernel wanted to grow an out: copy instead. Losses with a reduction
        # (mse_loss, smooth_l1_loss, ...) use their out as elementwise scratch: copy from the start
        self.out_safe = not any(a.name == "reduction" for a in args)
        self.numbers_as_tensors = False  # True once the op refused a number in a tensor slot
        self.run_out = self._run_out if self.out_op is not None else None
        # the .out kernel's C callable and its out argument (run_one_out: no Python layer between)
        self.out_call = self.out_op[0]._op if self.out_op is not None else None
        self.out_name = self.out_op[1][0] if self.out_op is not None and len(self.out_op[1]) == 1 else None
        self.binding = None  # torch's generated binding of the .out overload, once `bind` checked it
        self.bind_tried = False
        self.upcast = schema.name.split("::")[-1] in UPCAST_FP16
        # in-place ops whose result does not depend on the tensor's old values write it ("w");
        # the others (add_, mul_, ...) read and write it ("rw"), as tools should see them
        self.overwrite = schema.name.split("::")[-1] in OVERWRITE
        # elementwise ops take CPU tensors only as scalars (0-dim), as on CUDA and torch_npu
        self.pointwise = torch.Tag.pointwise in tags

    def __repr__(self) -> str:
        return f"<Plan {self.name} {('view', 'functional', 'out', 'inplace', 'sync')[self.mode]}>"

    def _run_out(self, *args, **kwargs):
        """In a task: the op's `.out` kernel writing straight into device memory. Some CPU out
        kernels use their out as scratch of another size; the out's storage is exactly the
        tensor's bytes, so that fails to resize, and then (from then on) the functional op
        runs and its results are copied."""
        names = self.out_op[1]
        outs = [o for n in names for o in flatten(kwargs[n])]
        if self.out_safe:
            meta = [None if o is None else (o.shape, o.stride(), o.storage_offset()) for o in outs]
            if self._out_kernel(args, kwargs):
                return
            for o, m in zip(outs, meta):  # the failed resize left its new sizes behind
                if o is not None:
                    o.as_strided_(*m)
        for n in names:
            del kwargs[n]
        res = self.op(*args, **kwargs)
        for o, x in zip(outs, flatten(res)):
            if o is None:
                continue
            if o.shape != x.shape:
                raise RuntimeError(f"{self.name}: its meta kernel promised an output of shape {tuple(o.shape)}, "
                                   f"the CPU kernel made {tuple(x.shape)} (an npurt.torch gap: please report it)")
            o.copy_(x)

    def _out_kernel(self, args, kwargs) -> bool:
        """The `.out` kernel; False if it wanted to resize an out (from then on `out_safe` is
        False: the functional op runs instead)."""
        try:
            self.out_call(*args, **kwargs)
            return True
        except RuntimeError as exc:
            if "not resizable" not in str(exc):
                raise
            self.out_safe = False
            return False

    def run_one_out(self, args: list, out, shape, stride) -> None:
        """`_run_out` for an op with one out: `out` a host view of storage offset 0 laid out
        as (`shape`, `stride`), what the meta kernel said (the fast kernels' task, which knows
        the layout and so need not read it back). `_out_kernel`'s steps, written out; the
        call is torch's generated binding where `bind` found one (OpTask.run turns torch
        functions off while a torch function mode is on)."""
        kwargs = {self.out_name: out}
        if self.out_safe:
            try:
                (self.binding or self.out_call)(*args, **kwargs)
                return
            except RuntimeError as exc:
                if "not resizable" not in str(exc):
                    raise
                self.out_safe = False
            out.as_strided_(shape, stride, 0)  # the failed resize left its new sizes behind
        self._run_out(*args, **kwargs)


_function_mode = torch._C._is_torch_function_mode_enabled


class _Seen(TorchDispatchMode):
    """The aten ops a call dispatches to."""

    def __init__(self):
        super().__init__()
        self.ops = []


def _seen_dispatch(self, func, types, args=(), kwargs=None):
    self.ops.append(func)
    return func(*args, **(kwargs or {}))


# set after the class is made: torch wraps a mode's own __torch_dispatch__ in its dynamo
# disable, whose first call imports torch._dynamo (seconds; test_torch_first_op.py)
_Seen.__torch_dispatch__ = _seen_dispatch


def bind(plan: Plan, dtypes, out_dtype) -> None:
    """Find torch's generated binding of `plan`'s `.out` overload (`torch.add(x, y, out=o)` for
    aten::add.out), for the hot path's `run_one_out`: its argument parsing is generated C++
    for the signature, a third cheaper than an OpOverload call's parsing against the schema.
    Taken only if, called once on one-element CPU tensors of `dtypes` (positional) and an out
    of `out_dtype`, it dispatches to exactly that overload; once per plan."""
    if plan.bind_tried or _function_mode():  # (under `with torch.device("npu")` zeros would be npu tensors)
        return
    plan.bind_tried = True
    fn = getattr(torch._C._VariableFunctions, plan.op.overloadpacket.__name__, None)
    if fn is None or plan.out_name != "out":
        return
    seen = _Seen()
    try:
        args, out = [torch.zeros(1, dtype=d) for d in dtypes], torch.empty(1, dtype=out_dtype)
        with seen:
            fn(*args, out=out)
    except Exception:  # noqa: BLE001 - no such signature, dtypes it refuses: the OpOverload's call
        return
    if seen.ops == [plan.out_op[0]]:
        plan.binding = fn


def _out_overload(op):
    """The `.out` overload of a functional op (same arguments plus out tensors), or None."""
    schema = op._schema
    names = [(a.name, str(a.type)) for a in schema.arguments]
    packet = op.overloadpacket
    for name in packet.overloads():
        cand = getattr(packet, name)
        s = cand._schema
        outs = [a for a in s.arguments if a.kwarg_only and a.alias_info is not None and a.alias_info.is_write]
        if not outs or len(outs) != len(schema.returns):
            continue
        rest = [(a.name, str(a.type)) for a in s.arguments if a not in outs]
        if rest == names:
            return cand, [a.name for a in outs]
    return None


# in-place ops that overwrite their tensor without reading it (the rest read it too)
OVERWRITE = {"fill_", "zero_", "normal_", "uniform_", "random_", "exponential_", "geometric_", "cauchy_",
             "log_normal_", "bernoulli_", "copy_", "index_fill_", "masked_fill_", "masked_scatter_",
             "index_put_", "_index_put_impl_", "scatter_", "index_copy_", "put_", "resize_", "set_"}

# ops whose meta kernel's output shapes differ from the CPU kernel's where it matters (found with
# NPURT_TORCH_META_CHECK=1 over the tests and the model zoo): their results' shapes come from
# running them. (native_batch_norm differs too, only in eval mode's unused save_mean/invstd.)
META_DIFFERS = {"aten::_embedding_bag", "aten::_embedding_bag_forward_only"}

# matmul-class ops: fp16 inputs are computed in float32 and rounded once (the cube unit's
# float32 accumulation; CPU torch's own fp16 GEMM is also ~40x slower than float32 here)
UPCAST_FP16 = {"mm", "bmm", "addmm", "baddbmm", "addbmm", "addmv", "mv", "dot", "vdot", "addr",
               "convolution", "_convolution", "convolution_overrideable", "_scaled_mm", "linear",
               "matmul", "_addmm_activation"}

_PLANS: dict = {}
META: dict = {}


def plan_of(op) -> Plan:
    p = _PLANS.get(op)
    if p is None:
        p = _PLANS[op] = Plan(op)
    return p


def scalar_key(v):
    """A scalar argument as part of a meta cache key (type and value: 1 and 1.0 differ)."""
    t = type(v)
    if t is float or t is int or t is bool:
        return (t, v)
    if t is list or t is tuple:
        return tuple(scalar_key(x) for x in v)
    if isinstance(v, torch.Generator):
        return "generator"
    return v


def flatten(x) -> list:
    """The tensors (and Nones) of a nested result, in order."""
    if isinstance(x, _Tensor) or x is None:
        return [x]
    out = []
    for item in x:
        out.extend(flatten(item))
    return out
