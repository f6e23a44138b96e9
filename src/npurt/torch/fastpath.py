"""The PrivateUse1 kernel of each aten op, and the fast kernel of the common case.

`kernels_for_all` gives every aten op with a CPU kernel (or a structured wrapper) a direct
Python kernel, made on first use from the op's plan (`kernel_for`). Functional and in-place
ops whose tensor arguments are plain npu tensors take `fast_kernel`: the general path's
steps (refs, meta cache, allocation, one OpTask on the current stream, uses recorded) in one
tight function. Anything it does not cover — keyword arguments, CPU tensors, a first call,
a device mismatch — goes the general way (fallback.Call), which also says what is wrong.
"""
from __future__ import annotations

import torch

from ..runtime import INLINE_MAX_BYTES, RUNTIME
from .fallback import Call
from .optask import OpTask, OutOpTask, current_stream
from .plan import CPU_KEYSET, FUNCTIONAL, INPLACE, META, SYNC_PATH, VIEW, Plan, bind, plan_of, scalar_key
from .storage import INFOS, ITEMSIZE, alloc, alloc_at, block_of, info, itemsize

_Tensor = torch.Tensor


def kernel_for(plan: Plan):
    """The PrivateUse1 kernel of one op: views redispatch to torch's CPU kernel (metadata only);
    functional and in-place ops with plain tensor arguments take the fast kernel; the rest
    the general path."""
    op = plan.op
    if plan.mode == VIEW:
        redispatch = op.redispatch

        def view(*args, **kwargs):
            return redispatch(CPU_KEYSET, *args, **kwargs)
        return view

    if plan.mode in (FUNCTIONAL, INPLACE) and all(k == 1 for _, k, _ in plan.pos_info) \
            and not plan.has_generator and not plan.upcast and not plan.kw:
        kernel = fast_kernel(plan)
        arity = hot_arity(plan)
        return hot_kernel(plan, arity, kernel) if arity else kernel

    def kernel(*args, **kwargs):
        return Call(plan, args, kwargs).run()
    return kernel


def fast_kernel(plan: Plan):
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
    infos, itemsizes, meta = INFOS, ITEMSIZE, META

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
                key.append(scalar_key(t))
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
                block_of(inf, t)
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
                key.append(scalar_key(args[i]))
        try:
            spec = meta.get(tuple(key))
        except TypeError:
            spec = None
        if spec is None or spec is SYNC_PATH:
            return Call(plan, args, kwargs).run()
        stream = current_stream(inf.index)
        if functional:
            shape, stride, dt, nbytes = spec
            out = alloc(inf, shape, stride, dt, nbytes)
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
            task = OpTask(run_out, hargs, {single_out: r}, name, reads, writes)
        else:
            task = OpTask(op, hargs, None, name, reads, writes)
        task.cheap = _cheap(blocks)
        stream.enqueue(task, holders=blocks)
        if not functional:
            out = args[rets[0]] if len(rets) == 1 and rets[0] is not None else Call(plan, args, kwargs).aliased_returns()
        return out
    return kernel


# ---------------------------------------------------------------- the hot path of small ops
# plan -> {(shape, stride, dtype) per tensor: (shape, stride, dtype, nbytes, itemsize) of the
# output}, learnt from META after the fast kernel's first call of that signature (bounded as
# META is: one entry per signature seen)
HOT: dict = {}


def hot_arity(plan: Plan) -> int:
    """How many tensors the hot path takes for `plan`'s op: 1 or 2, or 0 (not covered):
    functional ops with one output whose positional arguments are exactly the tensors."""
    out_op = plan.out_op
    if plan.mode != FUNCTIONAL or out_op is None or len(out_op[1]) != 1 or plan.scalar_pos:
        return 0
    tpos = [i for i, _, _ in plan.pos_info]
    return len(tpos) if tpos in ([0], [0, 1]) else 0


def hot_kernel(plan: Plan, arity: int, general):
    """The kernel of `a + b`, `x * y`, `relu(x)`: calls whose positional arguments are exactly
    one or two npu tensors on one device, no keyword arguments, with a signature the fast
    kernel has seen, go from one flat key to one allocation and one task: the fast kernel's
    task (same op, name, reads and writes, uses recorded with the enqueue), so tools and the
    stream-ordered free see no difference. Anything else goes to `general` (the fast kernel),
    which also fills the cache this path reads. tests/torch/test_torch_hotpath.py holds the
    two to each other and to CPU torch.

    Every step is written out in the one function (a ref, the allocation, the task): each
    Python call it saves is a fraction of a microsecond of every small op."""
    hot = HOT.setdefault(plan, {})
    name, run_one_out = plan.name, plan.run_one_out
    infos, meta, cheap_max = INFOS, META, CHEAP_BYTES

    def learn(key: tuple, meta_key: tuple) -> None:
        spec = meta.get(meta_key)
        if spec is not None and spec is not SYNC_PATH and len(spec) == 4 and type(spec[0]) is tuple:
            shape, stride, dt, nbytes = spec
            if nbytes:  # an empty result has no address: the fast kernel handles it
                hot[key] = (shape, stride, dt, nbytes, ITEMSIZE.get(dt) or itemsize(dt))
                bind(plan, key[2::3], dt)

    def ref_of(inf, t, shape, stride, dt):
        """(ref, block) of an npu tensor argument (refs.ref_on, without the blocks list)."""
        size = ITEMSIZE.get(dt) or itemsize(dt)
        ptr = t.data_ptr()
        block = inf.live.get(ptr - t.storage_offset() * size)
        if block is None and t.numel():
            block_of(inf, t)  # raises: released or foreign memory
        base = inf.views.get(dt)
        if base is None:
            base = inf.view_of(dt)
        return (base, shape, stride, (ptr - inf.va_base) // size if ptr else 0, ptr, size), block

    def launch(inf, spec, hargs, blocks, used):
        shape, stride, dt, nbytes, size = spec
        stream = current_stream(inf.index)
        out, ptr, block = alloc_at(inf, shape, stride, dt, nbytes)
        blocks.append(block)
        base = inf.views.get(dt)
        if base is None:
            base = inf.view_of(dt)
        task = OutOpTask(run_one_out, hargs, None, name, hargs[:],
                         [(base, shape, stride, (ptr - inf.va_base) // size, ptr, size)])
        task.cheap = used + block.requested <= cheap_max
        stream.enqueue(task, holders=blocks)
        return out

    if arity == 1:
        def unary(*args, **kwargs):
            if kwargs or len(args) != 1:
                return general(*args, **kwargs)
            x = args[0]
            if not isinstance(x, _Tensor):
                return general(*args, **kwargs)
            idx = x.get_device()
            if idx < 0:
                return general(*args, **kwargs)
            xs, xst, xd = x.shape, x.stride(), x.dtype
            key = (xs, xst, xd)
            spec = hot.get(key)
            if spec is None:
                out = general(*args, **kwargs)
                learn(key, (plan, key))
                return out
            inf = infos.get(idx)
            if inf is None or inf.devs is not RUNTIME.devices:
                inf = info(idx)
            rx, bx = ref_of(inf, x, xs, xst, xd)
            if bx is None:
                return launch(inf, spec, [rx], [], 0)
            return launch(inf, spec, [rx], [bx], bx.requested)
        return unary

    def binary(*args, **kwargs):
        if kwargs or len(args) != 2:
            return general(*args, **kwargs)
        x, y = args
        if not isinstance(x, _Tensor) or not isinstance(y, _Tensor):
            return general(*args, **kwargs)
        idx = x.get_device()
        if idx < 0 or y.get_device() != idx:  # a CPU tensor, or a device mismatch (general raises)
            return general(*args, **kwargs)
        xs, xst, xd, ys, yst, yd = x.shape, x.stride(), x.dtype, y.shape, y.stride(), y.dtype
        key = (xs, xst, xd, ys, yst, yd)
        spec = hot.get(key)
        if spec is None:
            out = general(*args, **kwargs)
            learn(key, (plan, (xs, xst, xd), (ys, yst, yd)))
            return out
        inf = infos.get(idx)
        if inf is None or inf.devs is not RUNTIME.devices:
            inf = info(idx)
        rx, bx = ref_of(inf, x, xs, xst, xd)
        ry, by = ref_of(inf, y, ys, yst, yd)
        if bx is not None and by is not None:
            return launch(inf, spec, [rx, ry], [bx, by], bx.requested + by.requested)
        blocks = [b for b in (bx, by) if b is not None]  # (an empty tensor has no block)
        return launch(inf, spec, [rx, ry], blocks, sum(b.requested for b in blocks))
    return binary


# An op whose tensors' allocations hold at most this many bytes in all may run in the calling
# thread when its stream is idle (the runtime's inline execution, whose bound is for work
# linear in its bytes): an eighth of it, because an aten op's work may grow faster than its
# bytes (a matmul, a convolution); at 16 KiB the largest such op is microseconds.
CHEAP_BYTES = INLINE_MAX_BYTES // 8


def _cheap(blocks) -> bool:
    total = 0
    for block in blocks:
        total += block.requested
    return total <= CHEAP_BYTES


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
            k = kernel_for(plan_of(getattr(getattr(torch.ops.aten, packet), overload or "default")))
            cell.append(k)
        return k(*args, **kwargs)
    return kernel
