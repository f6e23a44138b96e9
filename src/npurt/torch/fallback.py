"""The general path of an aten op on npu tensors (`Call`), and the boxed fallback.

A `Call` is one call of an op: its tensor arguments turned into refs (refs.py), its device,
its meta cache key. `run()` follows the op's plan (plan.py):

* compute ops get their output metadata from the op's meta kernel, cached in `plan.META`;
  outputs are allocated at once, `out=` tensors resized as meta says; then one `OpTask` is
  queued on the current stream of the tensors' device, calling the CPU kernel on host views
  (the op's `.out` overload where there is one), writing straight into device memory;
* the synchronous path runs the op as a task, waits, and copies the results into new npu
  tensors (in stream order).

CPU tensors are accepted as scalars (0-dim) and index tensors, as on CUDA and torch_npu;
everything else is the "same device" error. `fallback` is the PrivateUse1 kernel of ops that
have no direct kernel (ops torch keeps for CUDA-like backends): it names them.
"""
from __future__ import annotations

import logging
import math
import warnings

import torch

from .. import devices as _devices
from . import random, storage
from .optask import launch, run_sync
from .plan import (CPU_KEYSET, FUNCTIONAL, META, META_CHECK, OUT, SYNC, SYNC_PATH, VIEW, Plan, flatten, plan_of,
                   scalar_key)
from .refs import info_of, ref, ref_on, write_view
from .resize import resize_npu

log = logging.getLogger("npurt")
_NOT_TENSOR = object()
_Tensor = torch.Tensor


def fallback(op, *args, **kwargs):
    """The PrivateUse1 kernel of an aten op that has neither an explicit kernel nor one from
    `kernels_for_all()` (ops torch keeps for CUDA-like backends): a clear error."""
    name = str(op._schema.name)
    if not torch._C._dispatch_has_kernel_for_dispatch_key(name + ("." + op._overloadname if op._overloadname != "default" else ""), "CPU"):
        raise NotImplementedError(
            f"{op} has no CPU kernel, so npurt cannot run it on npu tensors (torch calls it only for "
            "CUDA-like backends). Please report it: it needs a mapping kernel in npurt.torch.aten")
    plan = plan_of(op)
    if plan.mode == VIEW:
        return op.redispatch(CPU_KEYSET, *args, **kwargs)
    return Call(plan, args, kwargs).run()


class Call:
    """One call of an op: its arguments turned into Refs, its device, its meta cache key."""

    __slots__ = ("plan", "args", "kwargs", "hargs", "hkw", "reads", "writes", "blocks", "index", "key")

    def __init__(self, plan: Plan, args, kwargs):
        if plan.numbers_as_tensors:
            args, kwargs = _numbers_to_tensors(plan, args, kwargs)
        self.plan, self.args, self.kwargs = plan, args, kwargs
        self.reads, self.writes, self.blocks = [], [], []
        self.index = None
        key = [plan]
        hargs = list(args)
        n = len(hargs)
        for i, kind, written in plan.pos_info:
            if i >= n:
                break
            v = hargs[i]
            if kind == 1:
                if isinstance(v, _Tensor):
                    hargs[i] = self._tensor(v, written, key, written and not plan.overwrite)
                else:  # None, or a number torch unwrapped from a wrapped scalar tensor
                    key.append(scalar_key(v))
            elif v is not None:
                key.append(len(v))
                hargs[i] = [self._tensor(x, written, key, written and not plan.overwrite)
                            if isinstance(x, _Tensor) else x for x in v]
        for i in plan.scalar_pos:
            if i < n:
                key.append(scalar_key(args[i]))
        if kwargs:
            hkw = dict(kwargs)
            kw = plan.kw
            for name, v in kwargs.items():
                k = kw.get(name)
                if k is None:
                    key.append((name, scalar_key(v)))
                elif v is not None:
                    rw = k[1] and name not in plan.out_names and not plan.overwrite  # not an out=
                    if k[0] == 1:
                        hkw[name] = self._tensor(v, k[1], key, rw) if isinstance(v, _Tensor) else v
                    else:
                        key.append(len(v))
                        hkw[name] = [self._tensor(x, k[1], key, rw) if isinstance(x, _Tensor) else x for x in v]
            if plan.device_kw and kwargs.get("device") is not None:  # factory-style: the CPU computes
                dev = torch.device(kwargs["device"])
                if dev.type == "npu":
                    hkw["device"] = "cpu"
                    if self.index is None:
                        self.index = dev.index
        else:
            hkw = {}
        self.hargs, self.hkw = hargs, hkw
        try:
            self.key = tuple(key)
            hash(self.key)
        except TypeError:
            self.key = None

    def _tensor(self, t, written: bool, key: list, read_too: bool = True):
        dt = t.dtype
        shape = t.shape
        stride = t.stride()
        key.append((shape, stride, dt))
        idx = t.get_device()
        if idx < 0:
            if t.device.type != "cpu":
                raise RuntimeError(f"{self.plan.name}: npu ops take npu tensors (and CPU scalars or "
                                   f"indices), got a tensor on {t.device}")
            if self.plan.pointwise and t.dim():
                raise RuntimeError("Expected all tensors to be on the same device, but found at least two "
                                   f"devices, npu:{self._npu_index()} and cpu! (in {self.plan.name}: "
                                   "move the CPU tensor with .to('npu'); 0-dim CPU tensors are scalars)")
            key.append("cpu")
            # CPU scalars and index tensors are read when the task runs: take them now, as
            # the device would (a kernel argument, or a staged copy)
            return t if written else t.clone()
        if self.index is None:
            self.index = idx
        elif idx != self.index:
            raise RuntimeError(f"Expected all tensors to be on the same device, but found at least two "
                               f"devices, npu:{self.index} and npu:{idx}! (in {self.plan.name})")
        r = ref_on(info_of(idx), t, shape, stride, dt, self.blocks)
        if written:
            self.writes.append(r)
            if read_too:
                self.reads.append(r)
        else:
            self.reads.append(r)
        return r

    def _npu_index(self) -> int:
        """The device of this call's first npu tensor (for messages)."""
        if self.index is not None:
            return self.index
        for v in (*self.args, *self.kwargs.values()):
            for x in (v if isinstance(v, (list, tuple)) else (v,)):
                if isinstance(x, _Tensor) and x.get_device() >= 0:
                    return x.get_device()
        return _devices.current_device()

    # ------------------------------------------------------------ running
    def run(self):
        plan = self.plan
        if self.index is None:
            self.index = _devices.current_device()
        if plan.mode == SYNC:
            return self.sync()
        spec = META.get(self.key) if self.key is not None else None
        if spec is None:
            spec = self.meta()
            if spec is not SYNC_PATH and plan.mode != FUNCTIONAL and self._writes_overlapping_memory():
                # torch's CPU kernels refuse many writes into a tensor whose elements share memory
                # (an expanded out=, "unsupported operation: more than one element ..."), and
                # meta kernels check nothing: run such calls synchronously, so the refusal is
                # the caller's exception, as on torch_npu, not a failed task found later
                spec = SYNC_PATH
            if spec is not SYNC_PATH and plan.mode == FUNCTIONAL and META_CHECK:
                # NPURT_TORCH_META_CHECK=1: first calls run synchronously and check meta's
                # shapes against the CPU kernel's (a developer's tool: it blocks on the stream)
                raw = self.compute()
                if not _agrees(spec, raw):
                    log.warning("npurt.torch: %s: meta says %s, the CPU kernel made %s; it takes the "
                                "synchronous path", plan.name, spec, _shapes(raw))
                    spec = SYNC_PATH
                if self.key is not None:
                    META[self.key] = spec
                return self.results(raw)
            if self.key is not None:
                META[self.key] = spec
        if spec is SYNC_PATH:
            return self.sync()
        if plan.mode == FUNCTIONAL:
            return self.functional(spec)
        if plan.mode == OUT:
            self.resize_outs(spec)
        self.launch(self.plan.op, self.hargs, self.hkw)
        return self.aliased_returns()

    def _writes_overlapping_memory(self) -> bool:
        """Whether a tensor this call writes has elements sharing memory (torch's internal
        overlap; it depends on shapes and strides only, which the meta cache key holds)."""
        written = [v for (i, kind, w) in self.plan.pos_info if w and i < len(self.args) for v in
                   (self.args[i] if kind == 2 and self.args[i] is not None else (self.args[i],))]
        written += [v for name, (kind, w) in self.plan.kw.items() if w and name in self.kwargs for v in
                    (self.kwargs[name] if kind == 2 and self.kwargs[name] is not None else (self.kwargs[name],))]
        return any(isinstance(t, _Tensor) and t.device.type == "npu" and not t.is_contiguous()
                   and torch._debug_has_internal_overlap(t) == 1 for t in written)

    def launch(self, fn, args, kwargs, post=None):
        plan = self.plan
        if plan.upcast and _has_half(self.args):
            fn = _upcast(fn)
        if plan.has_generator and kwargs.get("generator") is None:
            fn = random.seeded(fn, self.index)
        return launch(self.index, fn, args, kwargs, plan.name, self.reads, self.writes, self.blocks, post)

    def functional(self, spec):
        outs = _allocate(spec, info_of(self.index))
        out_refs = []
        flat = flatten(outs)
        for t in flat:
            if t is not None:
                out_refs.append(ref(t, self.blocks))
        self.writes.extend(out_refs)
        plan = self.plan
        if plan.out_op is not None and all(t is not None for t in flat):  # (no `in`: == on tensors)
            names = plan.out_op[1]
            kw = dict(self.hkw)
            it = iter(out_refs)
            for name, o in zip(names, _top(outs)):
                kw[name] = [next(it) for _ in o] if type(o) is list else next(it)
            self.launch(plan.run_out, self.hargs, kw)
        else:
            fn = _copy_into(plan.op, out_refs)
            self.launch(fn, self.hargs, self.hkw)
        return outs

    def resize_outs(self, spec):
        """Make the out= tensors the shape meta says (torch's resize_output)."""
        changed = False
        for name, want in zip(self.plan.out_names, spec):
            out = self.kwargs.get(name)
            if isinstance(out, _Tensor) and want is not None and tuple(out.shape) != want[0]:
                resize_npu(out, want[0])
                changed = True
            elif type(out) in (list, tuple):
                for o, w in zip(out, want):
                    if w is not None and tuple(o.shape) != w[0]:
                        resize_npu(o, w[0])
                        changed = True
        if changed:  # the refs of the outs were taken before: take them again
            self.__init__(self.plan, self.args, self.kwargs)

    def aliased_returns(self):
        plan, args, kwargs = self.plan, self.args, self.kwargs
        rets = [self._arg_value(i) for i in plan.ret_alias]
        if not rets:
            return None
        return rets[0] if len(rets) == 1 else tuple(rets)

    def _arg_value(self, i):
        """The caller's value of schema argument `i` (positional or keyword)."""
        if i is None:
            return None
        if i < len(self.args) and not self.plan.arg_kwonly[i]:
            return self.args[i]
        return self.kwargs[self.plan.arg_names[i]]

    def meta(self):
        """Output metadata from the meta kernel: a structure of (shape, stride, dtype, bytes),
        or SYNC_PATH when there is no meta kernel or it cannot say (the synchronous path)."""
        shape_of = FACTORY_OUT_SHAPES.get(self.plan.name)
        if shape_of is not None:  # their meta kernels are Python refs that import dynamo (seconds)
            out = self.kwargs["out"]
            shape = tuple(shape_of(*self.args))
            stride = storage.contiguous_strides(shape)
            return [(shape, stride, out.dtype, storage.span_bytes(shape, stride, out.element_size()))]
        margs = [_to_meta(a) for a in self.args]
        mkw = {k: _to_meta(v) for k, v in self.kwargs.items()}
        if self.plan.device_kw and "device" in mkw:
            mkw["device"] = "meta"
        try:
            with _NO_AUTOCAST(), warnings.catch_warnings():
                warnings.simplefilter("ignore")  # meta kernels' own deprecation chatter
                res = self.plan.op(*margs, **mkw)
        except Exception:  # noqa: BLE001 - no meta kernel, or a user error the real op reports
            if not self.plan.numbers_as_tensors and _numbers_in_tensor_slots(self.plan, self.args, self.kwargs):
                # torch unwrapped a scalar tensor into a number, and this op takes no number
                # there: from now on, numbers in its tensor slots become 0-dim tensors
                self.plan.numbers_as_tensors = True
                self.__init__(self.plan, self.args, self.kwargs)
                return self.meta()
            return SYNC_PATH
        if self.plan.mode == FUNCTIONAL:
            return _describe(res)
        if self.plan.mode == OUT:
            return [_describe(mkw.get(n)) for n in self.plan.out_names]
        return ()

    def sync(self):
        """Run the op on host views, wait, and turn its results into npu tensors."""
        return self.results(self.compute())

    def compute(self):
        """Run the op on host views as a task and wait for it; its (CPU) results."""
        plan = self.plan
        fn = plan.op
        if plan.has_generator and self.hkw.get("generator") is None:
            fn = random.seeded(fn, self.index)
        return run_sync(self.index, fn, self.hargs, self.hkw, plan.name, self.reads, self.writes, self.blocks)

    def results(self, res):
        """The op's results for the caller: CPU results copied into new npu tensors (in stream
        order), aliases of arguments as the arguments."""
        plan = self.plan
        if not any(self.plan.returns_tensor):
            return res
        single = len(plan.returns_tensor) == 1
        items = [res] if single else list(res)
        out = []
        for i, item in enumerate(items):
            alias = plan.ret_alias[i] if i < len(plan.ret_alias) else None
            if alias is not None:
                out.append(self._arg_value(alias))
            else:
                out.append(_upload(item, self.index))
        return out[0] if single else tuple(out)


def _arange_size(start, end=None, step=1):
    if end is None:
        start, end = 0, start
    if step == 0:
        raise RuntimeError("step must be nonzero")
    if (step > 0 and end < start) or (step < 0 and end > start):
        raise RuntimeError("upper bound and larger bound inconsistent with step sign")
    if all(isinstance(v, int) for v in (start, end, step)):
        return (-((start - end) // step),)
    return (math.ceil((end - start) / step),)


def _range_size(start, end, step=1):
    if step == 0:
        raise RuntimeError("step must be nonzero")
    return (int(math.floor((end - start) / step)) + 1,)


# factory ops torch reaches as op.out with an empty out: the out's shape from the arguments
FACTORY_OUT_SHAPES = {
    "aten::arange.start_out": _arange_size,
    "aten::arange.out": _arange_size,
    "aten::range.out": _range_size,
    "aten::linspace.out": lambda start, end, steps, *_: (steps,),
    "aten::logspace.out": lambda start, end, steps, *_: (steps,),
    "aten::eye.out": lambda n: (n, n),
    "aten::eye.m_out": lambda n, m: (n, m),
    "aten::randperm.out": lambda n: (n,),
    "aten::randperm.generator_out": lambda n: (n,),
}


def _numbers_in_tensor_slots(plan: Plan, args, kwargs) -> bool:
    n = len(args)
    if any(i < n and isinstance(args[i], (int, float, complex)) for i, k, _ in plan.pos_info if k == 1):
        return True
    return any(isinstance(kwargs.get(name), (int, float, complex)) for name, (k, _) in plan.kw.items() if k == 1)


def _numbers_to_tensors(plan: Plan, args, kwargs):
    """Numbers in tensor slots as the 0-dim tensors torch had wrapped them in: int64, bool,
    and floats in float64 next to float64 tensors, else in the default dtype (so type
    promotion and precision come out as with the wrapped number)."""
    wide = any(isinstance(a, _Tensor) and a.dtype in (torch.float64, torch.complex128)
               for a in (*args, *kwargs.values()))

    def convert(v):
        if isinstance(v, bool):
            return torch.tensor(v)
        if isinstance(v, int):
            return torch.tensor(v, dtype=torch.int64)
        if isinstance(v, float):
            return torch.tensor(v, dtype=torch.float64 if wide else torch.get_default_dtype())
        if isinstance(v, complex):
            return torch.tensor(v, dtype=torch.complex128 if wide else torch.complex64)
        return v
    args = list(args)
    for i, k, _ in plan.pos_info:
        if k == 1 and i < len(args):
            args[i] = convert(args[i])
    kwargs = {name: (convert(v) if plan.kw.get(name, (0,))[0] == 1 else v) for name, v in kwargs.items()}
    return tuple(args), kwargs


def _to_meta(v):
    if isinstance(v, _Tensor):
        if v.device.type == "meta":
            return v
        return torch.empty_strided(v.shape, v.stride(), dtype=v.dtype, device="meta")
    if type(v) in (list, tuple):
        return type(v)(_to_meta(x) for x in v)
    return v


def _describe(res):
    if isinstance(res, _Tensor):
        shape, stride = tuple(res.shape), res.stride()
        return (shape, stride, res.dtype, storage.span_bytes(shape, stride, res.element_size()))
    if res is None:
        return None
    if type(res) in (list, tuple):
        return type(res)(_describe(x) for x in res)
    return _NOT_TENSOR


def _allocate(spec, inf):
    if spec is None:
        return None
    if type(spec) is tuple and len(spec) == 4 and isinstance(spec[2], torch.dtype):
        return storage.alloc(inf, spec[0], spec[1], spec[2], spec[3])
    return type(spec)(_allocate(s, inf) for s in spec)


def _top(x):
    """The top-level items of a result (a single tensor is one item)."""
    if type(x) is tuple and not (len(x) == 4 and isinstance(x[2], torch.dtype)):
        return list(x)
    return [x]


def _shapes(raw) -> list:
    return [None if x is None else tuple(x.shape) for x in (flatten(raw) if not isinstance(raw, _Tensor) else [raw])]


def _agrees(spec, raw) -> bool:
    """Whether CPU results have the shapes and dtypes meta promised."""
    want, got = _flatten_spec(spec), flatten(raw) if not isinstance(raw, _Tensor) else [raw]
    if len(want) != len(got):
        return False
    for w, g in zip(want, got):
        if (w is None) != (g is None):
            return False
        if w is not None and (w[0] != tuple(g.shape) or w[2] != g.dtype):
            return False
    return True


def _flatten_spec(spec) -> list:
    if spec is None or (type(spec) is tuple and len(spec) == 4 and isinstance(spec[2], torch.dtype)):
        return [spec]
    out = []
    for s in spec:
        out.extend(_flatten_spec(s))
    return out


def _upload(x, index):
    """A CPU result of the synchronous path as a new npu tensor (copied in stream order),
    with the result's strides where they are dense."""
    if x is None or not isinstance(x, _Tensor):
        if type(x) in (list, tuple):
            return type(x)(_upload(i, index) for i in x)
        return x
    if _dense(x):
        src = x
        dst = storage.empty_strided(tuple(x.shape), x.stride(), x.dtype, index)
    else:
        src = x.contiguous()
        dst = storage.empty(src.shape, src.dtype, index)
    blocks = []
    r = ref(dst, blocks)
    launch(index, _copy_host, (r, src), None, "copy (host result)", [], [r], blocks)
    return dst


def _dense(x) -> bool:
    """Non-overlapping and dense: its elements fill exactly the span its strides reach."""
    return storage.span_bytes(tuple(x.shape), x.stride(), 1) == x.numel() and all(st >= 0 for st in x.stride())


def _copy_host(dst, src) -> None:
    dst.copy_(src)


def _copy_into(op, out_refs):
    """fn running the functional `op` on host views and copying its results into the outs."""
    def run(*args, **kwargs):
        res = op(*args, **kwargs)
        flat = flatten(res)
        views = [write_view(r) for r in out_refs]
        it = iter(views)
        for x in flat:
            if x is not None:
                next(it).copy_(x)
    return run


def _has_half(args) -> bool:
    for a in args:
        if isinstance(a, _Tensor) and a.dtype is torch.float16:
            return True
    return False


def _upcast(fn):
    """fn computed in float32 for float16 tensors, its results rounded back (out= included)."""
    def run(*args, **kwargs):
        f32 = [a.float() if isinstance(a, _Tensor) and a.dtype is torch.float16 else a for a in args]
        outs = {k: v for k, v in kwargs.items() if isinstance(v, _Tensor) and v.dtype is torch.float16}
        kw = {k: (v.float() if isinstance(v, _Tensor) and v.dtype is torch.float16 else v) for k, v in kwargs.items()}
        res = fn(*f32, **kw)
        for k, v in outs.items():
            v.copy_(kw[k])
        return res
    return run


class _NO_AUTOCAST:
    """Meta shape inference must not see autocast's casts."""

    def __enter__(self):
        self.g = torch._C._ExcludeDispatchKeyGuard(
            torch._C.DispatchKeySet(torch._C.DispatchKey.AutocastPrivateUse1))
        self.g.__enter__()

    def __exit__(self, *exc):
        self.g.__exit__(*exc)
