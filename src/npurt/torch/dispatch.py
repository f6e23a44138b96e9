"""How an aten op on npu tensors runs: as an npurt stream task over host views of the arena.

Every aten op with a CPU kernel gets a Python kernel for the PrivateUse1 key (kernels.py holds
the explicit ones; ops torch keeps for CUDA-like backends reach `fallback`, which names them).
Per op it decides once, on first use, from the schema, what kind of op it is (a `Plan`), then
per call:

* **views** (every return an alias, nothing written) and in-place metadata ops run torch's own
  CPU kernel on the npu tensor: metadata only, no task, no copy;
* **compute ops** get their output metadata from the op's meta kernel, cached per
  (op, shapes, strides, dtypes, scalar arguments); outputs are allocated at once, `out=`
  tensors resized as meta says; then one `OpTask` is queued on the current stream of the
  tensors' device. When it runs it calls the CPU kernel on host views, writing straight into
  device memory (the op's `.out` overload where there is one). Functional and in-place ops
  with plain tensor arguments take `_fast_kernel`, the same steps in one tight function;
* ops whose result is not a tensor (`item()`), whose output shape depends on the data
  (`nonzero`), or that have no meta kernel take the *synchronous* path: the task runs, the
  caller waits for it, and the results are copied into new npu tensors.

Every task records its use of the blocks it touches (npurt's stream-ordered free) and knows
which byte ranges it reads and writes (`OpTask.accesses`, the runtime's task protocol that
tools such as the sanitizer read). fp16 matmul-class ops compute in float32 and round
once, as the NPU's cube unit accumulates in float32.
"""
from __future__ import annotations

import logging
import math
import os
import threading
import warnings

import torch

from .. import streams as _streams
from ..runtime import constants as C
from ..runtime.memory import note_uses
from ..runtime.runtime import RUNTIME
from ..runtime.tasks import Task
from . import _dlpack, memory
from .memory import ITEMSIZE, _infos, info, itemsize

_CPU = torch._C.DispatchKeySet(torch._C.DispatchKey.CPU)
_Tensor = torch.Tensor


# ---------------------------------------------------------------- tensor arguments
# An npu tensor argument as a task sees it, a *ref*: the tuple (arena view of its dtype,
# shape, strides, element offset in the arena, device address, item size). Plain tuples (a
# class instance costs a microsecond per tensor); boxed aten arguments are never tuples, so
# in a task's arguments a tuple is a ref.
BASE, SHAPE, STRIDE, OFFSET, PTR, SIZE = range(6)


def write_view(r: tuple) -> torch.Tensor:
    """A new host view for a tensor the op writes: a CPU tensor whose storage is exactly the
    bytes it spans (out kernels may restride their outs or reason about their storage)."""
    base, shape, stride, offset, ptr, size = r
    if not ptr:  # an empty tensor: no bytes of its own (an arena view here could grow over others')
        return _dlpack.host_tensor_at(base.data_ptr(), shape, stride, base.dtype)
    return _dlpack.host_tensor_at(base.data_ptr() + offset * size, shape, stride, base.dtype)


def read_view(r: tuple) -> torch.Tensor:
    """A host view for reading, shared through a small cache: a view of the arena is valid
    whatever lives there, and the same addresses come back (the pool reuses them)."""
    base = r[0]
    if not r[4]:  # an empty tensor: no bytes of its own
        return _dlpack.host_tensor_at(base.data_ptr(), r[1], r[2], base.dtype)
    cache = _VIEWS.get(id(base))
    if cache is None or cache[0] is not base:
        cache = _VIEWS[id(base)] = (base, {})
    cache = cache[1]
    key = (r[3], r[1], r[2])
    v = cache.get(key)
    if v is None:
        if len(cache) > 8192:
            cache.clear()
        v = cache[key] = base.as_strided(r[1], r[2], r[3])
    return v


def span(r: tuple) -> tuple[int, int]:
    """(address, bytes) of the device memory a ref reaches."""
    shape, stride, ptr, size = r[1], r[2], r[4], r[5]
    lo = hi = 0
    for n, st in zip(shape, stride):
        if n > 1:
            if st < 0:
                lo += st * (n - 1)
            else:
                hi += st * (n - 1)
    if not all(shape):
        return ptr, 0
    return ptr + lo * size, (hi - lo + 1) * size


# id(arena view of a device and dtype) -> (that view, {(offset, shape, stride): host view});
# memory.info() drops a device's entries when the runtime was finalized (a new arena)
_VIEWS: dict = {}


def _info_of(index: int):
    inf = _infos.get(index)
    if inf is None or inf.devs is not RUNTIME.devices:
        return info(index)
    return inf


def ref(t: torch.Tensor, blocks: list) -> tuple:
    """The ref of npu tensor `t`; appends the npurt block holding it to `blocks`."""
    return ref_on(_info_of(t.get_device()), t, t.shape, t.stride(), t.dtype, blocks)


def ref_on(inf, t: torch.Tensor, shape, stride, dt, blocks: list) -> tuple:
    """`ref` with the device's info and the tensor's layout already in hand."""
    size = ITEMSIZE.get(dt) or itemsize(dt)
    ptr = t.data_ptr()
    block = inf.live.get(ptr - t.storage_offset() * size)
    if block is not None:
        blocks.append(block)
    elif t.numel():
        memory.block_of(inf, t)  # raises: released or foreign memory
    base = inf.views.get(dt)
    if base is None:
        base = inf.view_of(dt)
    return (base, shape, stride, (ptr - inf.va_base) // size if ptr else 0, ptr, size)


# ---------------------------------------------------------------- the task
class OpTask(Task):
    """An aten op (or a piece of one) queued on a stream: `fn(*args, **kwargs)` with every ref
    replaced by its host view. `reads` and `writes` are the refs it reads and writes (an
    in-place argument is in both)."""

    __slots__ = ("fn", "args", "kwargs", "name", "reads", "writes", "post")
    kind = "kernel"
    error_code = C.ACL_ERROR_RT_AICORE_EXCEPTION

    def __init__(self, fn, args, kwargs, name, reads, writes, post=None):
        self.fn, self.args, self.kwargs, self.name = fn, args, kwargs, name
        self.reads, self.writes, self.post = reads, writes, post

    def run(self) -> None:
        writes = self.writes
        args = [_host(a, writes) for a in self.args]
        kwargs = {k: _host(v, writes) for k, v in self.kwargs.items()} if self.kwargs else {}
        result = self.fn(*args, **kwargs)
        if self.post is not None:
            self.post(result)

    def accesses(self) -> tuple:
        """(device address, bytes, mode) of every range the op touches, mode "r", "w" or "rw"
        (an in-place argument): the runtime's task protocol that tools such as the sanitizer read."""
        reads, writes = self.reads, self.writes
        out = [(*span(r), "rw" if _is_in(r, writes) else "r") for r in reads]
        out += [(*span(r), "w") for r in writes if not _is_in(r, reads)]
        return tuple(out)

    def describe(self) -> str:
        return f"kernel {self.name}"

    def details(self) -> dict:
        """For tools (the profiler): the aten op's name and the bytes it reads and writes."""
        acc = self.accesses()
        return {"name": self.name, "bytes": sum(n for _, n, _ in acc),
                "bytes_written": sum(n for _, n, m in acc if "w" in m)}


def _host(a, writes):
    t = type(a)
    if t is tuple:
        return write_view(a) if _is_in(a, writes) else read_view(a)
    if t is list:
        return [(write_view(x) if _is_in(x, writes) else read_view(x)) if type(x) is tuple else x for x in a]
    return a


def _is_in(r, refs) -> bool:
    for x in refs:  # identity, not ==: equal tuples may be distinct tensors' refs
        if x is r:
            return True
    return False


def current_stream(index: int):
    """The runtime stream ops on npu:`index` go to in this thread: the thread's current
    stream, else (in autograd's engine threads) the stream backward was called on, else the
    device's default stream."""
    s = _streams._tls.current.get(index)
    if s is not None and not s._s.destroyed:
        return s._s
    if BACKWARD_STREAMS:
        override = BACKWARD_STREAMS.get(index)
        # only autograd's engine threads (made by C++: threading sees them as dummies)
        if override is not None and not override.destroyed and isinstance(threading.current_thread(), _Dummy):
            return override
    ctx = _info_of(index).device.default_context
    if ctx is not None and ctx.alive:
        return ctx.default_stream
    return _streams._runtime_stream(index)


_Dummy = threading._DummyThread
BACKWARD_STREAMS: dict = {}   # device index -> runtime stream, while a backward pass runs


def launch(index: int, fn, args, kwargs, name: str, reads: list, writes: list, blocks: list,
           post=None) -> int:
    """Queue fn(*args, **kwargs) on npu:`index`'s current stream; record the use of `blocks`."""
    stream = current_stream(index)
    seq = stream.enqueue(OpTask(fn, args, kwargs, name, reads, writes, post))
    note_uses(blocks, stream, seq)
    return seq


def run_sync(index: int, fn, args, kwargs, name: str, reads, writes, blocks):
    """Run fn on host views as a task of the current stream and wait for it; its result."""
    box = []
    stream = current_stream(index)
    seq = launch(index, fn, args, kwargs, name, reads, writes, blocks, post=box.append)
    stream.synchronize(until=seq)
    if not box:  # dropped (an abort or an earlier stop-on-failure): nothing was computed
        stream.raise_error()
        raise RuntimeError(f"npu op {name} did not run: its stream {stream.stream_id} dropped it")
    return box[0]


# ---------------------------------------------------------------- op plans
VIEW, FUNCTIONAL, OUT, INPLACE, SYNC = range(5)
_SYNC = object()          # meta cache value: this key takes the synchronous path
META_CHECK = os.environ.get("NPURT_TORCH_META_CHECK") == "1"
log = logging.getLogger("npurt")
_NOT_TENSOR = object()


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
        out_op, names = self.out_op
        outs = [o for n in names for o in _flatten(kwargs[n])]
        if self.out_safe:
            meta = [None if o is None else (o.shape, o.stride(), o.storage_offset()) for o in outs]
            try:
                out_op(*args, **kwargs)
                return
            except RuntimeError as exc:
                if "not resizable" not in str(exc):
                    raise
                self.out_safe = False
            for o, m in zip(outs, meta):  # the failed resize left its new sizes behind
                if o is not None:
                    o.as_strided_(*m)
        for n in names:
            del kwargs[n]
        res = self.op(*args, **kwargs)
        for o, x in zip(outs, _flatten(res)):
            if o is None:
                continue
            if o.shape != x.shape:
                raise RuntimeError(f"{self.name}: its meta kernel promised an output of shape {tuple(o.shape)}, "
                                   f"the CPU kernel made {tuple(x.shape)} (an npurt.torch gap: please report it)")
            o.copy_(x)

    def kernel(self):
        """The PrivateUse1 kernel of this op."""
        op = self.op
        if self.mode == VIEW:
            redispatch = op.redispatch

            def view(*args, **kwargs):
                return redispatch(_CPU, *args, **kwargs)
            return view

        if self.mode in (FUNCTIONAL, INPLACE) and all(k == 1 for _, k, _ in self.pos_info) \
                and not self.has_generator and not self.upcast and not self.kw:
            return _fast_kernel(self)

        def kernel(*args, **kwargs):
            return Call(self, args, kwargs).run()
        return kernel


def _fast_kernel(plan: Plan):
    """The kernel of a functional or in-place op whose tensor arguments are plain tensors: the
    common case (elementwise ops, matmuls, reductions) in one tight function. Anything it
    does not cover (keyword arguments, CPU tensors, a first call) goes the general way."""
    tpos = [i for i, _, _ in plan.pos_info]
    written = {i for i, _, w in plan.pos_info if w}
    spos = plan.scalar_pos
    functional = plan.mode == FUNCTIONAL
    out_op = plan.out_op
    single_out = None
    if functional and out_op is not None and len(out_op[1]) == 1:
        single_out = out_op[1][0]
    op, name, rets, run_out, overwrite = plan.op, plan.name, plan.ret_alias, plan.run_out, plan.overwrite
    infos, itemsizes, meta = _infos, ITEMSIZE, META

    def kernel(*args, **kwargs):
        if kwargs or (functional and single_out is None):
            return Call(plan, args, kwargs).run()
        key = [plan]
        reads, writes, blocks = [], [], []
        hargs = list(args)
        n = len(args)
        inf = None
        for i in tpos:
            if i >= n:
                break
            t = args[i]
            if not isinstance(t, _Tensor):  # None, or a number torch unwrapped from a scalar tensor
                if t is not None and plan.numbers_as_tensors:
                    return Call(plan, args, kwargs).run()
                key.append(_scalar_key(t))
                continue
            idx = t.get_device()
            if idx < 0:
                return Call(plan, args, kwargs).run()
            if inf is None:
                inf = infos.get(idx)
                if inf is None or inf.devs is not RUNTIME.devices:
                    inf = info(idx)
            elif idx != inf.index:
                return Call(plan, args, kwargs).run()  # raises the device mismatch
            dt = t.dtype
            shape = t.shape
            stride = t.stride()
            key.append((shape, stride, dt))
            size = itemsizes.get(dt) or itemsize(dt)
            ptr = t.data_ptr()
            block = inf.live.get(ptr - t.storage_offset() * size)
            if block is not None:
                blocks.append(block)
            elif t.numel():
                memory.block_of(inf, t)
            base = inf.views.get(dt)
            if base is None:
                base = inf.view_of(dt)
            r = hargs[i] = (base, shape, stride, (ptr - inf.va_base) // size if ptr else 0, ptr, size)
            if i in written:  # an in-place argument: written, and read unless the op overwrites it
                writes.append(r)
                if not overwrite:
                    reads.append(r)
            else:
                reads.append(r)
        if inf is None:
            return Call(plan, args, kwargs).run()
        for i in spos:
            if i < n:
                key.append(_scalar_key(args[i]))
        try:
            spec = meta.get(tuple(key))
        except TypeError:
            spec = None
        if spec is None or spec is _SYNC:
            return Call(plan, args, kwargs).run()
        stream = current_stream(inf.index)
        if functional:
            shape, stride, dt, nbytes = spec
            out = memory.alloc(inf, shape, stride, dt, nbytes)
            size = itemsizes[dt]
            ptr = out.data_ptr()
            block = inf.live.get(ptr)
            if block is not None:  # (an empty tensor has no address)
                blocks.append(block)
            base = inf.views.get(dt)
            if base is None:
                base = inf.view_of(dt)
            r = (base, shape, stride, (ptr - inf.va_base) // size if ptr else 0, ptr, size)
            writes.append(r)
            seq = stream.enqueue(OpTask(run_out, hargs, {single_out: r}, name, reads, writes))
        else:
            seq = stream.enqueue(OpTask(op, hargs, None, name, reads, writes))
            out = args[rets[0]] if len(rets) == 1 and rets[0] is not None else Call(plan, args, kwargs).aliased_returns()
        note_uses(blocks, stream, seq)
        return out
    return kernel


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


# ---------------------------------------------------------------- the fallback
def fallback(op, *args, **kwargs):
    """The PrivateUse1 kernel of an aten op that has neither an explicit kernel nor one from
    `kernels_for_all()` (ops torch keeps for CUDA-like backends): a clear error."""
    name = str(op._schema.name)
    if not torch._C._dispatch_has_kernel_for_dispatch_key(name + ("." + op._overloadname if op._overloadname != "default" else ""), "CPU"):
        raise NotImplementedError(
            f"{op} has no CPU kernel, so npurt cannot run it on npu tensors (torch calls it only for "
            "CUDA-like backends). Please report it: it needs a mapping kernel in npurt.torch.kernels")
    plan = plan_of(op)
    if plan.mode == VIEW:
        return op.redispatch(_CPU, *args, **kwargs)
    return Call(plan, args, kwargs).run()


def kernels_for_all(skip) -> dict:
    """A PrivateUse1 kernel for every aten op with a CPU kernel or a structured (functional or
    in-place) wrapper, except those in `skip` and those torch decomposes anyway: one direct
    Python call per op instead of the boxed fallback (and, for structured ops, instead of
    an `empty` plus an `.out` call)."""
    has = torch._C._dispatch_has_kernel_for_dispatch_key
    out = {}
    for qual in torch._C._dispatch_get_all_op_names():
        if not qual.startswith("aten::"):
            continue
        if not (has(qual, "CPU") or has(qual, "CompositeExplicitAutogradNonFunctional")):
            continue
        if has(qual, "CompositeImplicitAutograd"):
            continue
        name = qual[len("aten::"):]
        if name in skip:
            continue
        out[name] = _lazy_kernel(name)
    return out


def _lazy_kernel(name: str):
    """A kernel that works out its op's plan on first use (a plan costs ~1 ms; most programs
    use a few dozen of the ~1,100 ops)."""
    cell = []

    def kernel(*args, **kwargs):
        try:
            k = cell[0]
        except IndexError:
            packet, _, overload = name.partition(".")
            k = plan_of(getattr(getattr(torch.ops.aten, packet), overload or "default")).kernel()
            cell.append(k)
        return k(*args, **kwargs)
    return kernel


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
                    key.append(_scalar_key(v))
            elif v is not None:
                key.append(len(v))
                hargs[i] = [self._tensor(x, written, key, written and not plan.overwrite)
                            if isinstance(x, _Tensor) else x for x in v]
        for i in plan.scalar_pos:
            if i < n:
                key.append(_scalar_key(args[i]))
        if kwargs:
            hkw = dict(kwargs)
            kw = plan.kw
            for name, v in kwargs.items():
                k = kw.get(name)
                if k is None:
                    key.append((name, _scalar_key(v)))
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
        inf = _infos.get(idx)
        if inf is None or inf.devs is not RUNTIME.devices:
            inf = info(idx)
        r = ref_on(inf, t, shape, stride, dt, self.blocks)
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
        return _devices_current()

    # ------------------------------------------------------------ running
    def run(self):
        plan = self.plan
        if self.index is None:
            self.index = _devices_current()
        if plan.mode == SYNC:
            return self.sync()
        spec = META.get(self.key) if self.key is not None else None
        if spec is None:
            spec = self.meta()
            if spec is not _SYNC and plan.mode == FUNCTIONAL and META_CHECK:
                # NPURT_TORCH_META_CHECK=1: first calls run synchronously and check meta's
                # shapes against the CPU kernel's (a developer's tool: it blocks on the stream)
                raw = self.compute()
                if not _agrees(spec, raw):
                    log.warning("npurt.torch: %s: meta says %s, the CPU kernel made %s; it takes the "
                                "synchronous path", plan.name, spec, _shapes(raw))
                    spec = _SYNC
                if self.key is not None:
                    META[self.key] = spec
                return self.results(raw)
            if self.key is not None:
                META[self.key] = spec
        if spec is _SYNC:
            return self.sync()
        if plan.mode == FUNCTIONAL:
            return self.functional(spec)
        if plan.mode == OUT:
            self.resize_outs(spec)
        self.launch(self.plan.op, self.hargs, self.hkw)
        return self.aliased_returns()

    def launch(self, fn, args, kwargs, post=None):
        plan = self.plan
        if plan.upcast and _has_half(self.args):
            fn = _upcast(fn)
        if plan.has_generator and kwargs.get("generator") is None:
            from . import random
            fn = random.seeded(fn, self.index)
        return launch(self.index, fn, args, kwargs, plan.name, self.reads, self.writes, self.blocks, post)

    def functional(self, spec):
        outs = _allocate(spec, _info_of(self.index))
        out_refs = []
        flat = _flatten(outs)
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
        from .kernels import resize_npu
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
        or _SYNC when there is no meta kernel or it cannot say (the synchronous path)."""
        shape_of = FACTORY_OUT_SHAPES.get(self.plan.name)
        if shape_of is not None:  # their meta kernels are Python refs that import dynamo (seconds)
            out = self.kwargs["out"]
            shape = tuple(shape_of(*self.args))
            stride = memory.contiguous_strides(shape)
            return [(shape, stride, out.dtype, memory.span_bytes(shape, stride, out.element_size()))]
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
            return _SYNC
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
            from . import random
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


def _devices_current() -> int:
    from .. import _devices
    return _devices.current_device()


def _scalar_key(v):
    t = type(v)
    if t is float or t is int or t is bool:
        return (t, v)
    if t is list or t is tuple:
        return tuple(_scalar_key(x) for x in v)
    if isinstance(v, torch.Generator):
        return "generator"
    return v


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
        return (shape, stride, res.dtype, memory.span_bytes(shape, stride, res.element_size()))
    if res is None:
        return None
    if type(res) in (list, tuple):
        return type(res)(_describe(x) for x in res)
    return _NOT_TENSOR


def _allocate(spec, inf):
    if spec is None:
        return None
    if type(spec) is tuple and len(spec) == 4 and isinstance(spec[2], torch.dtype):
        return memory.alloc(inf, spec[0], spec[1], spec[2], spec[3])
    return type(spec)(_allocate(s, inf) for s in spec)


def _top(x):
    """The top-level items of a result (a single tensor is one item)."""
    if type(x) is tuple and not (len(x) == 4 and isinstance(x[2], torch.dtype)):
        return list(x)
    return [x]


def _flatten(x) -> list:
    if isinstance(x, _Tensor) or x is None:
        return [x]
    out = []
    for item in x:
        out.extend(_flatten(item))
    return out


def _shapes(raw) -> list:
    return [None if x is None else tuple(x.shape) for x in (_flatten(raw) if not isinstance(raw, _Tensor) else [raw])]


def _agrees(spec, raw) -> bool:
    """Whether CPU results have the shapes and dtypes meta promised."""
    want, got = _flatten_spec(spec), _flatten(raw) if not isinstance(raw, _Tensor) else [raw]
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
        dst = memory.empty_strided(tuple(x.shape), x.stride(), x.dtype, index)
    else:
        src = x.contiguous()
        dst = memory.empty(src.shape, src.dtype, index)
    blocks = []
    r = ref(dst, blocks)
    launch(index, _copy_host, (r, src), None, "copy (host result)", [], [r], blocks)
    return dst


def _dense(x) -> bool:
    """Non-overlapping and dense: its elements fill exactly the span its strides reach."""
    return memory.span_bytes(tuple(x.shape), x.stride(), 1) == x.numel() and all(st >= 0 for st in x.stride())


def _copy_host(dst, src) -> None:
    dst.copy_(src)


def _copy_into(op, out_refs):
    """fn running the functional `op` on host views and copying its results into the outs."""
    def run(*args, **kwargs):
        res = op(*args, **kwargs)
        flat = _flatten(res)
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
