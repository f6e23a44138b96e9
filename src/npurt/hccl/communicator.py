"""The Pythonic communicator: HCCL collectives on DeviceArrays, raising HcclError.

    import npurt, npurt.hccl as hccl

    def main(rank):
        comm = hccl.Communicator.world()            # every rank of the job
        grad = npurt.to_device(local_gradient)
        comm.all_reduce(grad, op="sum")              # in place, on the current stream
        ...

    hccl.spawn(main)    # threads in one process; under `npurt launch -n N`, this process's rank

Operations are queued on `stream` (default: the current stream of the communicator's device)
like any other work, and return at once. Reductions default to in-place (`out=None`) as in
torch.distributed; operations whose result has another shape allocate it unless `out` is
given. A failure while the operation runs (other ranks asked for something else, a rank never
arrived) is raised by the stream's synchronize (or the next `to_host`).
"""
from __future__ import annotations

import math

import numpy as np

from .. import devices as _devices
from .. import streams as _streams
from ..array import DeviceArray, empty
from ..runtime import RUNTIME
from . import api, world
from . import types as T
from .comm import HcclComm


def _op(op) -> int:
    if isinstance(op, str):
        value = T.REDUCE_OPS_BY_NAME.get(op.lower())
        if value is None:
            raise T.HcclError(f"op must be one of {sorted(T.REDUCE_OPS_BY_NAME)}, got {op!r}", T.HCCL_E_PARA)
        return value
    return T.reduce_op(op)


class Communicator:
    """One rank of a communicator. Make one with `Communicator.world()`,
    `Communicator.from_root_info(...)`, `Communicator.init_all(devices)` or
    `Communicator.from_rank_table(path, rank)`."""

    def __init__(self, comm: HcclComm):
        self._comm = comm

    # ---------------------------------------------------------- construction
    @classmethod
    def world(cls) -> "Communicator":
        """Every rank of the job: the threads of `spawn`, the processes of `npurt launch` /
        `mpirun`, or just this process. Made once per rank; uses the current device."""
        w = world.current()
        comm = w.cache.get("world")
        if comm is None or comm._comm.destroyed or not _alive(comm._comm.device):
            kind = b"M" if w.kind == "mpi" else b"L"
            key = (w.key or b"single") + b":" + str(len(w.cache)).encode()  # a new one after a destroy
            comm = cls(api.join(key, kind, w.size, w.rank, _devices.runtime_device(), "world"))
            w.cache["world"] = comm
            w.cache[key] = comm
        return comm

    @staticmethod
    def get_root_info() -> bytes:
        """Bytes naming a new communicator, for `from_root_info` on every rank."""
        return api.get_root_info.__wrapped__()

    @classmethod
    def from_root_info(cls, n_ranks: int, root_info: bytes, rank: int) -> "Communicator":
        """Rank `rank` of `n_ranks`, on the current device; returns once all ranks joined."""
        api._check_ranks(n_ranks, rank)
        kind, key = api._parse_root_info(root_info)
        return cls(api.join(key, kind, n_ranks, rank, _devices.runtime_device(), f"comm-{key[5:9].hex()}"))

    @classmethod
    def init_all(cls, devices=None) -> list["Communicator"]:
        """One communicator over several devices of this process: rank i on devices[i]
        (default: every visible device)."""
        RUNTIME.ensure_initialized()
        ids = list(range(_devices.device_count())) if devices is None else list(devices)
        return [cls(api._comm(h)) for h in api.comm_init_all.__wrapped__(len(ids), ids)]

    @classmethod
    def from_rank_table(cls, path: str, rank: int) -> "Communicator":
        """Rank `rank` of the rank table at `path` (its device must be the current one)."""
        _devices.thread_context()
        return cls(api._comm(api.comm_init_cluster_info.__wrapped__(path, rank)))

    # ---------------------------------------------------------- facts
    @property
    def rank(self) -> int:
        return self._comm.rank

    @property
    def size(self) -> int:
        return self._comm.size

    @property
    def device(self) -> int:
        return self._comm.device.id

    @property
    def handle(self) -> int:
        """The pyACL-style handle (for the functions of npurt.hccl)."""
        if not self._comm.handle:
            api._register(self._comm)
        return self._comm.handle

    def __repr__(self) -> str:
        return f"Communicator(rank={self.rank}, size={self.size}, device={self.device})"

    def destroy(self) -> None:
        """Refuse new operations (queued ones still run)."""
        self._comm.destroy()
        if self._comm.handle:
            api.COMMS.remove(self._comm.handle)

    def __enter__(self) -> "Communicator":
        return self

    def __exit__(self, *exc) -> None:
        if not self._comm.destroyed:
            self.destroy()

    # ---------------------------------------------------------- helpers
    def _stream(self, stream):
        if stream is None:
            return _streams._runtime_stream(self.device)
        if isinstance(stream, _streams.Stream):
            return stream.runtime_stream
        raise T.HcclError(f"stream must be an npurt.Stream or None, got {type(stream).__name__}", T.HCCL_E_PARA)

    def _array(self, x, name: str) -> DeviceArray:
        if not isinstance(x, DeviceArray):
            raise T.HcclError(f"{name} must be a DeviceArray, got {type(x).__name__}", T.HCCL_E_PARA)
        if x.device != self.device:
            raise T.HcclError(f"{name} is on device {x.device}; this rank's device is {self.device}", T.HCCL_E_PARA)
        if not x.is_contiguous():
            raise T.HcclError(f"{name} must be C-contiguous (use .contiguous())", T.HCCL_E_PARA)
        return x

    def _out(self, out, shape, dtype, name="out") -> DeviceArray:
        if out is None:
            return empty(shape, dtype, device=self.device)
        out = self._array(out, name)
        if out.dtype != dtype or out.size != math.prod(shape):
            raise T.HcclError(f"{name} must hold {math.prod(shape)} elements of {dtype}, got {out.size} of "
                              f"{out.dtype}", T.HCCL_E_PARA)
        return out

    # ---------------------------------------------------------- operations
    def all_reduce(self, x: DeviceArray, op="sum", out: DeviceArray | None = None, stream=None) -> DeviceArray:
        """Reduce x over all ranks; the result goes to `out` (default: into x). Returns it."""
        x = self._array(x, "x")
        out = x if out is None else self._out(out, x.shape, x.dtype)
        self._comm.all_reduce(x.ptr, out.ptr, x.size, T.data_type_of(x.dtype), _op(op), self._stream(stream))
        return out

    def broadcast(self, x: DeviceArray, root: int = 0, stream=None) -> DeviceArray:
        """Copy root's x into every rank's x (in place). Returns x."""
        x = self._array(x, "x")
        self._comm.broadcast(x.ptr, x.size, T.data_type_of(x.dtype), root, self._stream(stream))
        return x

    def all_gather(self, x: DeviceArray, out: DeviceArray | None = None, stream=None) -> DeviceArray:
        """Every rank's x, stacked: shape (size, *x.shape) unless `out` is given."""
        x = self._array(x, "x")
        out = self._out(out, (self.size, *x.shape), x.dtype)
        self._comm.all_gather(x.ptr, out.ptr, x.size, T.data_type_of(x.dtype), self._stream(stream))
        return out

    def reduce_scatter(self, x: DeviceArray, op="sum", out: DeviceArray | None = None,
                       stream=None) -> DeviceArray:
        """Reduce x over all ranks and keep this rank's block: x's first axis is split into
        `size` blocks; the result has shape (x.shape[0] // size, *x.shape[1:])."""
        x = self._array(x, "x")
        if not x.shape or x.shape[0] % self.size:
            raise T.HcclError(f"reduce_scatter: x's first axis ({x.shape[0] if x.shape else 'none'}) must be a "
                              f"multiple of the communicator's size {self.size}", T.HCCL_E_PARA)
        out = self._out(out, (x.shape[0] // self.size, *x.shape[1:]), x.dtype)
        self._comm.reduce_scatter(x.ptr, out.ptr, out.size, T.data_type_of(x.dtype), _op(op), self._stream(stream))
        return out

    def reduce(self, x: DeviceArray, root: int = 0, op="sum", out: DeviceArray | None = None,
               stream=None) -> DeviceArray:
        """Reduce x over all ranks into root's `out` (default: root's x). Returns it (x on
        the other ranks, unchanged)."""
        x = self._array(x, "x")
        out = x if out is None else self._out(out, x.shape, x.dtype)
        self._comm.reduce(x.ptr, out.ptr, x.size, T.data_type_of(x.dtype), _op(op), root, self._stream(stream))
        return out

    def all_to_all(self, x: DeviceArray, out: DeviceArray | None = None, stream=None) -> DeviceArray:
        """Block j of x's first axis goes to rank j; block i of the result came from rank i."""
        x = self._array(x, "x")
        if not x.shape or x.shape[0] % self.size:
            raise T.HcclError(f"all_to_all: x's first axis must be a multiple of the communicator's size "
                              f"{self.size}", T.HCCL_E_PARA)
        out = self._out(out, x.shape, x.dtype)
        dt, block = T.data_type_of(x.dtype), x.size // self.size
        self._comm.all_to_all(x.ptr, block, dt, out.ptr, block, dt, self._stream(stream))
        return out

    def all_to_all_v(self, x: DeviceArray, send_counts, out: DeviceArray, recv_counts, send_displs=None,
                     recv_displs=None, stream=None) -> DeviceArray:
        """x[send_displs[j]:+send_counts[j]] (flat elements) goes to rank j; what rank i sends
        lands at out[recv_displs[i]:+recv_counts[i]]. Displacements default to packed."""
        x, out = self._array(x, "x"), self._array(out, "out")
        if out.dtype != x.dtype:
            raise T.HcclError(f"out has dtype {out.dtype}; x has {x.dtype}", T.HCCL_E_PARA)
        send_displs = _packed(send_counts) if send_displs is None else send_displs
        recv_displs = _packed(recv_counts) if recv_displs is None else recv_displs
        dt = T.data_type_of(x.dtype)
        for counts, displs, arr, name in ((send_counts, send_displs, x, "x"), (recv_counts, recv_displs, out, "out")):
            extent = max((int(d) + int(c) for d, c in zip(displs, counts) if c), default=0)
            if extent > arr.size:
                raise T.HcclError(f"all_to_all_v: the counts and displacements reach element {extent} of {name}, "
                                  f"which has {arr.size}", T.HCCL_E_PARA)
        self._comm.all_to_all_v(x.ptr, send_counts, send_displs, dt, out.ptr, recv_counts, recv_displs, dt,
                                self._stream(stream))
        return out

    def send(self, x: DeviceArray, dest: int, stream=None) -> None:
        """Send x to rank `dest` (matched with its recv)."""
        x = self._array(x, "x")
        self._comm.send(x.ptr, x.size, T.data_type_of(x.dtype), dest, self._stream(stream))

    def recv(self, x: DeviceArray, src: int, stream=None) -> DeviceArray:
        """Receive into x from rank `src`. Returns x."""
        x = self._array(x, "x")
        self._comm.recv(x.ptr, x.size, T.data_type_of(x.dtype), src, self._stream(stream))
        return x

    def barrier(self, stream=None) -> None:
        """The stream passes this point once every rank's stream has reached it."""
        self._comm.barrier(self._stream(stream))

    @property
    def async_error(self) -> int:
        """HCCL_SUCCESS, or the HcclResult of the first operation that failed."""
        err = self._comm.async_error
        return T.HCCL_SUCCESS if err is None else err.code


def _alive(device) -> bool:
    """False once the runtime was finalized (and maybe initialized again) since `device` was made."""
    devices = RUNTIME.devices
    return RUNTIME.initialized and device.id < len(devices) and devices[device.id] is device


def _packed(counts) -> list[int]:
    """Displacements that lay the blocks out back to back."""
    return [int(v) for v in np.cumsum([0, *counts])[:-1]]

