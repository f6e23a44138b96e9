"""HcclComm: one rank of a communicator, and the rules every HCCL call checks.

Each operation validates its arguments at the call (bad input raises HcclError with the code
HCCL returns: HCCL_E_PTR for a null buffer or stream, HCCL_E_PARA for a wrong value,
HCCL_E_NOT_SUPPORT for an unsupported data type or op), then enqueues one CollectiveTask on
the stream passed. The task is matched with the other ranks' by its sequence number in the
communicator (collectives) or between the two ranks (send/recv), so every rank must issue the
same collectives in the same order, as HCCL requires.
"""
from __future__ import annotations

import operator
import threading
from collections import defaultdict

from ..runtime import InvalidValueError, RUNTIME, Stream, resolve
from . import types as T
from .ops import Op
from .task import CollectiveTask


class HcclComm:
    """One rank of a communicator: its rank, the communicator's size, its device, and the
    transport (in-process or MPI) that connects it to the other ranks."""

    def __init__(self, rank: int, size: int, device, name: str):
        self.rank, self.size, self.device, self.name = rank, size, device, name
        self.transport = None
        self.handle = 0
        self.destroyed = False
        self.async_error: T.HcclError | None = None
        self._lock = threading.Lock()
        self._issued = 0
        self._collectives = 0
        self._p2p: dict[tuple[str, int], int] = defaultdict(int)

    def __repr__(self) -> str:
        return f"<HcclComm {self.name} rank {self.rank} of {self.size} on device {self.device.id}>"

    @property
    def soc(self) -> str:
        return self.device.spec.name

    # ---------------------------------------------------------- collectives
    def all_reduce(self, send: int, recv: int, count: int, data_type: int, op: int, stream) -> None:
        o = self._op("all_reduce", count, data_type, op)
        o.send, o.recv = self._buffers(o, (send, count, "send"), (recv, count, "recv"), same_ok=True)
        self._submit(o, stream)

    def broadcast(self, buf: int, count: int, data_type: int, root: int, stream) -> None:
        o = self._op("broadcast", count, data_type, root=self._rank_arg(root, "root"))
        o.send, = self._buffers(o, (buf, count, "buffer"))
        o.recv = o.send
        self._submit(o, stream)

    def all_gather(self, send: int, recv: int, send_count: int, data_type: int, stream) -> None:
        o = self._op("all_gather", send_count, data_type)
        o.send, o.recv = self._buffers(o, (send, send_count, "send"), (recv, send_count * self.size, "recv"))
        self._submit(o, stream)

    def reduce_scatter(self, send: int, recv: int, recv_count: int, data_type: int, op: int, stream) -> None:
        o = self._op("reduce_scatter", recv_count, data_type, op)
        o.send, o.recv = self._buffers(o, (send, recv_count * self.size, "send"), (recv, recv_count, "recv"))
        self._submit(o, stream)

    def reduce(self, send: int, recv: int, count: int, data_type: int, op: int, root: int, stream) -> None:
        o = self._op("reduce", count, data_type, op, root=self._rank_arg(root, "root"))
        if self.rank == o.root:
            o.send, o.recv = self._buffers(o, (send, count, "send"), (recv, count, "recv"), same_ok=True)
        else:  # recv_buf is only written on the root
            o.send, = self._buffers(o, (send, count, "send"))
        self._submit(o, stream)

    def all_to_all(self, send: int, send_count: int, send_type: int, recv: int, recv_count: int,
                   recv_type: int, stream) -> None:
        self._same_type(send_type, recv_type)
        if _count(recv_count, "recv_count") != _count(send_count, "send_count"):
            raise T.HcclError(f"all_to_all: send_count ({send_count}) and recv_count ({recv_count}) must be "
                              "equal: every rank sends send_count elements to each rank", T.HCCL_E_PARA)
        n = self.size
        counts = [send_count] * n
        displs = [send_count * j for j in range(n)]
        self._all_to_all("all_to_all", send, counts, displs, send_type, recv, counts, displs, stream, send_count)

    def all_to_all_v(self, send: int, send_counts, send_displs, send_type: int, recv: int, recv_counts,
                     recv_displs, recv_type: int, stream) -> None:
        self._same_type(send_type, recv_type)
        self._all_to_all("all_to_all_v", send, self._list(send_counts, "send_counts"),
                         self._list(send_displs, "send_displs"), send_type, recv,
                         self._list(recv_counts, "recv_counts"), self._list(recv_displs, "recv_displs"), stream, 0)

    def send(self, buf: int, count: int, data_type: int, dest_rank: int, stream) -> None:
        o = self._op("send", count, data_type, peer=self._peer_arg(dest_rank, "dest_rank"))
        o.send, = self._buffers(o, (buf, count, "send"))
        self._submit(o, stream)

    def recv(self, buf: int, count: int, data_type: int, src_rank: int, stream) -> None:
        o = self._op("recv", count, data_type, peer=self._peer_arg(src_rank, "src_rank"))
        o.recv, = self._buffers(o, (buf, count, "recv"))
        self._submit(o, stream)

    def barrier(self, stream) -> None:
        self._submit(self._op("barrier", 0, T.HCCL_DATA_TYPE_INT8), stream)

    def destroy(self) -> None:
        """HcclCommDestroy: no new operations; queued ones still run."""
        if self.destroyed:
            raise T.HcclError(f"{self.name} rank {self.rank} was already destroyed", T.HCCL_E_PARA)
        self.destroyed = True
        if self.transport is not None:
            self.transport.close()

    # ---------------------------------------------------------- checks
    def _op(self, kind: str, count, data_type, red=None, root: int = -1, peer: int = -1) -> Op:
        if self.destroyed:
            raise T.HcclError(f"{kind}: the communicator ({self.name} rank {self.rank}) was destroyed", T.HCCL_E_PARA)
        count = _count(count, "count")
        reducing = red is not None
        if reducing:
            red = T.reduce_op(red)
        dtype = T.data_type(data_type, reducing=reducing, soc=self.soc, op=red)
        return Op(kind, self, count, data_type, dtype, red=red if reducing else -1, root=root, peer=peer)

    def _rank_arg(self, value, name: str) -> int:
        if type(value) is not int or not 0 <= value < self.size:
            raise T.HcclError(f"{name} {value!r} is not a rank of this communicator (0..{self.size - 1})", T.HCCL_E_PARA)
        return value

    def _peer_arg(self, value, name: str) -> int:
        value = self._rank_arg(value, name)
        if value == self.rank:
            raise T.HcclError(f"{name} {value} is this rank itself; send and recv need another rank", T.HCCL_E_PARA)
        return value

    def _same_type(self, send_type, recv_type) -> None:
        if send_type != recv_type:
            raise T.HcclError(f"send_type {send_type!r} and recv_type {recv_type!r} must be the same data type",
                              T.HCCL_E_PARA)

    def _list(self, values, name: str) -> list[int]:
        try:
            items = [operator.index(v) for v in values]
        except TypeError:
            raise T.HcclError(f"{name} must be a list of {self.size} ints, got {values!r}", T.HCCL_E_PARA) from None
        if len(items) != self.size or any(v < 0 or v > T.SYS_MAX_COUNT for v in items):
            raise T.HcclError(f"{name} must hold {self.size} non-negative ints (one per rank), got {values!r}",
                              T.HCCL_E_PARA)
        return items

    def _buffers(self, op: Op, *specs, same_ok: bool = False) -> list[int]:
        """Validate (address, element count, role) buffers: device memory of this rank's device,
        large enough; two buffers must be the same (when allowed) or not overlap."""
        spans, addrs = [], []
        for addr, count, role in specs:
            nbytes = count * op.itemsize
            if addr is None or addr == 0:
                if nbytes:
                    raise T.HcclError(f"{op.kind}: the {role} buffer is null", T.HCCL_E_PTR)
                addrs.append(0)
                spans.append(None)
                continue
            if type(addr) is not int:
                raise T.HcclError(f"{op.kind}: the {role} buffer must be a device address (int), got "
                                  f"{type(addr).__name__}", T.HCCL_E_PARA)
            spans.append(self._locate(op, addr, nbytes, role) if nbytes else None)
            addrs.append(addr)
        if len(specs) == 2 and spans[0] is not None and spans[1] is not None:
            (a, an), (b, bn) = ((addrs[i], specs[i][1] * op.itemsize) for i in range(2))
            if a < b + bn and b < a + an and not (same_ok and a == b and an == bn):
                rule = "be the same buffer (in place) or not overlap" if same_ok else "not overlap"
                raise T.HcclError(f"{op.kind}: the send buffer (0x{a:x}, {an} B) and the recv buffer "
                                  f"(0x{b:x}, {bn} B) overlap; they must {rule}", T.HCCL_E_PARA)
        op.spans = [s for s in spans if s is not None]
        return addrs

    def _locate(self, op: Op, addr: int, nbytes: int, role: str):
        try:
            span = resolve(RUNTIME, addr, nbytes, f"{op.kind} {role} buffer")
        except InvalidValueError as exc:
            raise T.HcclError(f"{op.kind}: {exc.message}", T.HCCL_E_PARA) from None
        if span.device is not self.device:
            where = "host memory" if span.device is None else f"memory of device {span.device.id}"
            raise T.HcclError(f"{op.kind}: the {role} buffer 0x{addr:x} is {where}; rank {self.rank} of "
                              f"{self.name} uses device {self.device.id}", T.HCCL_E_PARA)
        return span

    def _all_to_all(self, kind, send, send_counts, send_displs, send_type, recv, recv_counts, recv_displs,
                    stream, count) -> None:
        o = self._op(kind, count, send_type)
        send_extent, recv_extent = o.extent(send_counts, send_displs), o.extent(recv_counts, recv_displs)
        if send and send == recv:
            raise T.HcclError(f"{kind}: send_buf and recv_buf cannot be the same buffer", T.HCCL_E_PARA)
        o.send, o.recv = self._buffers(o, (send, send_extent, "send"), (recv, recv_extent, "recv"))
        o.send_counts, o.send_displs = send_counts, send_displs
        o.recv_counts, o.recv_displs = recv_counts, recv_displs
        self._submit(o, stream)

    # ---------------------------------------------------------- enqueue
    def _submit(self, op: Op, stream) -> None:
        if stream is None or stream == 0:
            raise T.HcclError(f"{op.kind}: the stream is null; pass the stream the operation runs on", T.HCCL_E_PTR)
        if type(stream) is not Stream or stream.destroyed:
            raise T.HcclError(f"{op.kind}: {stream!r} is not a live stream", T.HCCL_E_PARA)
        if stream.device is not self.device:
            raise T.HcclError(f"{op.kind}: the stream belongs to device {stream.device.id}; rank {self.rank} of "
                              f"{self.name} uses device {self.device.id}", T.HCCL_E_PARA)
        holders = [span.block for span in op.spans if span is not None]

        with self._lock:
            op.index = self._issued
            if op.kind in ("send", "recv"):
                key = (op.kind, op.peer)
                op.match = self._p2p[key]
            else:
                op.match = self._collectives
            try:
                stream.enqueue(CollectiveTask(op), holders=holders)
            except InvalidValueError as exc:
                raise T.HcclError(f"{op.kind}: {exc.message}", T.HCCL_E_PARA) from None
            except Exception as exc:
                raise T.HcclError(f"{op.kind}: the stream refused the task: {exc}", T.HCCL_E_RUNTIME) from None
            self._issued += 1
            if op.kind in ("send", "recv"):
                self._p2p[key] += 1
            else:
                self._collectives += 1


def _count(value, name: str) -> int:
    if type(value) is not int:
        try:
            value = operator.index(value)
        except TypeError:
            raise T.HcclError(f"{name} must be an int, got {type(value).__name__}", T.HCCL_E_PARA) from None
    if not 0 <= value <= T.SYS_MAX_COUNT:
        raise T.HcclError(f"{name} {value} is out of range (0..{T.SYS_MAX_COUNT})", T.HCCL_E_PARA)
    return value
