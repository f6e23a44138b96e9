"""The hot path of small ops: a functional op on one or two npu tensors, seen before.

`a + b`, `x * y`, `torch.relu(x)`: the ops a training step or an inference loop calls most,
each a few microseconds of CPU work, where the host's cost per launch is what users see.
The general kernels (dispatch.py) handle every argument form; these two handle only calls
whose positional arguments are exactly one or two npu tensors on one device, no keyword
arguments, and whose meta result the general path has already cached. They then skip the
general path's argument walk and cache key building: one flat key, one allocation, one task.

Everything else about the op is the general path's: the cached meta result (so dtype
promotion, broadcasting and output strides are the meta kernel's), the task (`OpTask` with
the op's `.out` kernel, the same name, reads and writes, so the sanitizer and profiler see
the same thing), the stream (`current_stream`) and the uses recorded for the stream-ordered
free. A call the hot path does not cover, or a first call, goes the general way, which fills
the cache the hot path reads. tests/torch/test_torch_hotpath.py holds the two to each other.
"""
from __future__ import annotations

from ..runtime.runtime import RUNTIME
from . import memory
from .dispatch import _SYNC, META, OpTask, _Tensor, current_stream
from .memory import ITEMSIZE, _infos, info

# plan -> {flat key: (shape, stride, dtype, nbytes, itemsize)}; filled from META (bounded:
# one entry per signature seen, as META itself)
HOT: dict = {}


def covers(plan, functional: bool, single_out) -> int:
    """How many tensors the hot path takes for `plan`'s op: 1 or 2, or 0 (not covered)."""
    if not functional or single_out is None or plan.scalar_pos:
        return 0
    tpos = [i for i, _, _ in plan.pos_info]
    return len(tpos) if tpos in ([0], [0, 1]) else 0


def kernel(plan, single_out: str, arity: int, general):
    """The PrivateUse1 kernel of `plan`'s op: the hot path, else `general(*args, **kwargs)`."""
    hot = HOT.setdefault(plan, {})
    name, run_out = plan.name, plan.run_out
    infos, alloc = _infos, memory.alloc

    def learn(key: tuple, meta_key: tuple) -> None:
        spec = META.get(meta_key)
        if spec is not None and spec is not _SYNC and len(spec) == 4 and type(spec[0]) is tuple:
            shape, stride, dt, nbytes = spec
            if nbytes:  # an empty result has no address: the general path handles it
                hot[key] = (shape, stride, dt, nbytes, ITEMSIZE.get(dt) or memory.itemsize(dt))

    def place(t, inf, shape, stride, dt, blocks) -> tuple:
        """A ref of npu tensor `t` (as dispatch.ref), its block appended to `blocks`."""
        size = ITEMSIZE[dt]
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

    def launch(inf, spec, hargs, reads, blocks):
        shape, stride, dt, nbytes, size = spec
        stream = current_stream(inf.index)
        out = alloc(inf, shape, stride, dt, nbytes)
        ptr = out.data_ptr()
        blocks.append(inf.live[ptr])
        base = inf.views.get(dt)
        if base is None:
            base = inf.view_of(dt)
        r = (base, shape, stride, (ptr - inf.va_base) // size, ptr, size)
        seq = stream.enqueue(OpTask(run_out, hargs, {single_out: r}, name, reads, [r]))
        for block in blocks:  # after the enqueue, as launch(): a refused task records no use
            uses = block.uses
            if uses is None:
                block.uses = {stream: seq}
            else:
                uses[stream] = seq
        return out

    def device_of(idx: int):
        inf = infos.get(idx)
        if inf is None or inf.devs is not RUNTIME.devices:
            inf = info(idx)
        return inf

    if arity == 1:
        def unary(*args, **kwargs):
            if kwargs or len(args) != 1:
                return general(*args, **kwargs)
            x = args[0]
            if not isinstance(x, _Tensor) or x.get_device() < 0:
                return general(*args, **kwargs)
            xs, xst, xd = x.shape, x.stride(), x.dtype
            key = (xs, xst, xd)
            spec = hot.get(key)
            if spec is None:
                out = general(*args, **kwargs)
                learn(key, (plan, key))
                return out
            inf = device_of(x.get_device())
            blocks = []
            rx = place(x, inf, xs, xst, xd, blocks)
            return launch(inf, spec, [rx], [rx], blocks)
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
        inf = device_of(idx)
        blocks = []
        rx = place(x, inf, xs, xst, xd, blocks)
        ry = place(y, inf, ys, yst, yd, blocks)
        return launch(inf, spec, [rx, ry], [rx, ry], blocks)
    return binary
