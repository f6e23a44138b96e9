"""`torch.distributed` backend "hccl" over npurt.hccl: `init_process_group("hccl")` on npu.

    torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
    dist.init_process_group("hccl")            # RANK, WORLD_SIZE, MASTER_ADDR/PORT: env://
    dist.all_reduce(t)                         # t on npu: an HcclAllReduce task on the current stream
    model = DistributedDataParallel(model)     # runs unmodified

Registered by `npurt.torch.register()` as torch_npu registers it: backend "hccl" for device
"npu" (`Backend.default_device_backend_map["npu"] == "hccl"`). The ranks are the processes
of an MPI job (`npurt launch -n N script.py`, or `mpirun`): npurt.hccl connects processes
through MPI, so plain `torchrun` (processes without MPI) is refused with a message naming
`npurt launch`.

As in torch_npu's ProcessGroupHCCL (torch_npu/csrc/distributed/ProcessGroupHCCL.cpp):

* one HCCL communicator per device, made on the first collective on that device: rank 0's
  root info goes to the others through the process group's store;
* ReduceOp SUM, PRODUCT, MIN, MAX; AVG is a SUM then a division by the group size;
  PREMUL_SUM multiplies first (floating types only); BAND/BOR/BXOR are refused ("Cannot use
  ReduceOp.BAND with HCCL"); a bool (or uint8) all-reduce is computed in int32, a bool SUM as
  MAX (a logical or);
* every operation returns a Work: `wait()`, `is_completed()`, `get_future()`, `exception()`.

Streams: each operation is queued on the current stream of its tensors' device, after the
work already queued there, and later work on that stream runs after it. torch_npu runs
collectives on a separate HCCL stream that first waits for the current stream; `work.wait()`
then makes the current stream wait for it. Queuing on the current stream itself gives the
order torch_npu gives after `wait()` (so results are the same, `async_op=True` or not), without
overlapping communication with later compute. `wait()` does not block the host (as in
torch_npu), unless HCCL_BLOCKING_WAIT=1; a failed collective raises at the next synchronize
of the stream (npurt.TaskError), as on the device.

Sub-groups (`new_group`) are supported when they hold every rank (npurt.hccl makes a
cross-process communicator collectively over the whole MPI job; a smaller group would leave
the other processes out of that step): a group of fewer ranks raises NotImplementedError.
"""
from __future__ import annotations

import datetime
import os
import threading

import torch
import torch.distributed as dist
from torch.futures import Future

from .. import hccl
from ..runtime import get_recent_err_msg
from .streams import current_stream

BACKEND = "hccl"
_DTYPES = {
    torch.int8: hccl.HCCL_DATA_TYPE_INT8, torch.int16: hccl.HCCL_DATA_TYPE_INT16,
    torch.int32: hccl.HCCL_DATA_TYPE_INT32, torch.int64: hccl.HCCL_DATA_TYPE_INT64,
    torch.uint8: hccl.HCCL_DATA_TYPE_UINT8, torch.bool: hccl.HCCL_DATA_TYPE_UINT8,
    torch.uint16: hccl.HCCL_DATA_TYPE_UINT16, torch.uint32: hccl.HCCL_DATA_TYPE_UINT32,
    torch.uint64: hccl.HCCL_DATA_TYPE_UINT64, torch.float16: hccl.HCCL_DATA_TYPE_FP16,
    torch.float32: hccl.HCCL_DATA_TYPE_FP32, torch.float64: hccl.HCCL_DATA_TYPE_FP64,
    torch.bfloat16: hccl.HCCL_DATA_TYPE_BFP16,
}
_OPS = {dist.ReduceOp.SUM: hccl.HCCL_REDUCE_SUM, dist.ReduceOp.PRODUCT: hccl.HCCL_REDUCE_PROD,
        dist.ReduceOp.MAX: hccl.HCCL_REDUCE_MAX, dist.ReduceOp.MIN: hccl.HCCL_REDUCE_MIN}
_UNSUPPORTED = {dist.ReduceOp.BAND: "BAND", dist.ReduceOp.BOR: "BOR", dist.ReduceOp.BXOR: "BXOR"}


def _check(ret: int, what: str) -> None:
    if ret != hccl.HCCL_SUCCESS:
        raise RuntimeError(f"HCCL {what} failed: {hccl.get_error_string(ret)} ({ret}): {get_recent_err_msg()}")


def _dtype(t: torch.Tensor) -> int:
    try:
        return _DTYPES[t.dtype]
    except KeyError:
        raise RuntimeError(f"HCCL does not support data type {t.dtype}") from None


def _npu(t: torch.Tensor, what: str) -> torch.Tensor:
    if t.device.type != "npu":
        raise ValueError(f"{what}: the hccl backend takes npu tensors, got one on {t.device} (use gloo for cpu)")
    if not t.is_contiguous():
        raise ValueError(f"{what}: tensors must be contiguous")
    return t


def _reduce_op(opts) -> tuple[int, object]:
    op = opts.reduceOp
    kind = op.op if hasattr(op, "op") else op
    if kind in _UNSUPPORTED:
        raise RuntimeError(f"Cannot use ReduceOp.{_UNSUPPORTED[kind]} with HCCL")
    if kind in (dist.ReduceOp.AVG, dist.ReduceOp.PREMUL_SUM):
        return hccl.HCCL_REDUCE_SUM, kind
    if kind not in _OPS:
        raise RuntimeError("Unhandled ReduceOp")
    return _OPS[kind], kind


class Work(dist._Work):
    """One queued HCCL operation: the outputs, and an npu event recorded after it."""

    def __init__(self, outputs: list, stream, op_name: str):
        super().__init__()
        self._outputs = outputs
        self._stream = stream
        self._event = torch.npu.Event()
        self._event.record(stream)
        self._op_name = op_name
        self._future = Future(devices=[])
        self._future.set_result(outputs)

    def is_completed(self) -> bool:
        return self._event.query()

    def is_success(self) -> bool:
        return self.is_completed()

    def exception(self):
        return None

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        """Order the caller's current stream after the operation (it is already: it was
        queued there); with HCCL_BLOCKING_WAIT=1 also wait on the host."""
        current_stream(self._stream.device_index).wait_event(self._event)
        if os.environ.get("HCCL_BLOCKING_WAIT", "0") == "1":
            self._event.synchronize()
        return True

    def synchronize(self) -> None:
        self.wait()

    def get_future(self) -> Future:
        return self._future

    def result(self) -> list:
        return self._outputs

    def source_rank(self) -> int:
        return getattr(self, "_source_rank", -1)

    def __repr__(self) -> str:
        return f"<hccl Work {self._op_name} completed={self.is_completed()}>"


class ProcessGroupHCCL(dist.ProcessGroup):
    """torch.distributed's backend "hccl": collectives between the ranks' npus."""

    def __init__(self, store, rank: int, size: int, timeout=None):
        super().__init__(rank, size)
        self._store, self._rank, self._size, self._timeout = store, rank, size, timeout
        self._comms: dict[int, int] = {}
        self._lock = threading.Lock()
        self._comm_seq = 0
        self._send_streams: dict[int, object] = {}
        if torch.npu.device_count():
            self._comm(torch.npu.current_device())  # made now, while every rank is here

    # ---------------------------------------------------------------- plumbing
    def getBackendName(self) -> str:
        return BACKEND

    @property
    def _backend_name(self) -> str:  # pragma: no cover - torch reads it on some paths
        return BACKEND

    def size(self) -> int:
        return self._size

    def rank(self) -> int:
        return self._rank

    def _comm(self, device_index: int, kind: str = "collective") -> int:
        """This rank's communicator of `kind` on `device_index`. Three per device, made
        together (every rank makes them at the same point: npurt.hccl creates a cross-process
        communicator collectively): "collective", and two for point-to-point traffic, "up"
        (sends to higher ranks, receives from lower) and "down" (the reverse), so the two
        directions between a pair of ranks never queue behind each other (an HCCL send waits
        for its receive)."""
        with self._lock:
            comms = self._comms.get(device_index)
            if comms is None:
                comms = self._comms[device_index] = {k: self._new_comm(device_index)
                                                     for k in ("collective", "up", "down")}
            return comms[kind]

    def _new_comm(self, device_index: int) -> int:
        """One communicator: rank 0's root info reaches the others through the store."""
        key = f"npurt_hccl_root_info/{self._comm_seq}"  # the k-th communicator of every rank
        self._comm_seq += 1
        if self._rank == 0:
            info, ret = hccl.get_root_info()
            _check(ret, "get_root_info")
            self._store.set(key, bytes(info))
        info = bytes(self._store.get(key))
        with torch.npu.device(device_index):
            comm, ret = hccl.comm_init_root_info(self._size, info, self._rank)
        _check(ret, "comm_init_root_info")
        return comm

    def _run(self, tensors, what: str, issue, stream=None, kind: str = "collective") -> Work:
        """Queue `issue(comm, stream_handle)` on the current stream of the tensors' device
        (or on `stream`)."""
        dev = tensors[0].device.index
        comm = self._comm(dev, kind)
        stream = stream or current_stream(dev)
        issue(comm, stream.npurt_stream)
        for t in tensors:
            t.record_stream(stream)
        return Work(tensors, stream, what)

    # ---------------------------------------------------------------- collectives
    def allreduce(self, tensors, opts=None):
        opts = opts or dist.AllreduceOptions()
        for t in tensors:
            _npu(t, "all_reduce")
        op, kind = _reduce_op(opts)
        works = [self._allreduce_one(t, op, kind, opts) for t in tensors]
        return works[-1]

    def _allreduce_one(self, t, op, kind, opts) -> Work:
        work_t = t
        if t.dtype in (torch.bool, torch.uint8):  # torch_npu reduces them in int32
            work_t = t.to(torch.int32)
            if t.dtype == torch.bool and op == hccl.HCCL_REDUCE_SUM:
                op = hccl.HCCL_REDUCE_MAX
        if kind == dist.ReduceOp.PREMUL_SUM:
            if t.dtype not in (torch.float16, torch.float32, torch.bfloat16, torch.float64):
                raise RuntimeError("PreMulSum Data type must be half, float, bfloat16 or double")
            factor = opts.reduceOp.supplement_.double_factor if hasattr(opts.reduceOp, "supplement_") else None
            if factor is not None:
                work_t.mul_(factor)

        def issue(comm, s):
            _check(hccl.all_reduce(work_t.data_ptr(), work_t.data_ptr(), work_t.numel(), _dtype(work_t), op,
                                   comm, s), "all_reduce")
        work = self._run([work_t], "all_reduce", issue)
        if kind == dist.ReduceOp.AVG:
            if work_t.is_floating_point():
                work_t.div_(self._size)
            else:
                work_t.div_(self._size, rounding_mode="trunc")
        if work_t is not t:
            t.copy_(work_t)
        return Work([t], work._stream, "all_reduce")

    def allreduce_coalesced(self, tensors, opts=None):
        opts = opts or dist.AllreduceCoalescedOptions()
        return self.allreduce(tensors, opts)

    def broadcast(self, tensors, opts=None):
        opts = opts or dist.BroadcastOptions()
        root = opts.rootRank
        for t in tensors:
            _npu(t, "broadcast")

        def issue(comm, s):
            for t in tensors:
                _check(hccl.broadcast(t.data_ptr(), t.numel(), _dtype(t), root, comm, s), "broadcast")
        return self._run(tensors, "broadcast", issue)

    def reduce(self, tensors, opts=None):
        opts = opts or dist.ReduceOptions()
        op, kind = _reduce_op(opts)
        t = _npu(tensors[0], "reduce")

        def issue(comm, s):
            _check(hccl.reduce(t.data_ptr(), t.data_ptr(), t.numel(), _dtype(t), op, opts.rootRank, comm, s),
                   "reduce")
        work = self._run([t], "reduce", issue)
        if kind == dist.ReduceOp.AVG and self._rank == opts.rootRank:
            t.div_(self._size)
        return work

    def _allgather_base(self, output, input, opts=None):
        _npu(output, "all_gather_into_tensor")
        _npu(input, "all_gather_into_tensor")
        if output.numel() != input.numel() * self._size or output.dtype != input.dtype:
            raise ValueError("all_gather_into_tensor: the output must hold world_size inputs of the same dtype")

        def issue(comm, s):
            _check(hccl.all_gather(input.data_ptr(), output.data_ptr(), input.numel(), _dtype(input), comm, s),
                   "all_gather")
        return self._run([output, input], "all_gather", issue)

    all_gather_single = _allgather_base

    def allgather(self, output_lists, inputs, opts=None):
        work = None
        for outputs, inp in zip(output_lists, inputs):
            _npu(inp, "all_gather")
            flat = torch.empty((self._size * inp.numel(),), dtype=inp.dtype, device=inp.device)
            work = self._allgather_base(flat, inp.contiguous())
            for r, out in enumerate(outputs):
                out.copy_(flat[r * inp.numel():(r + 1) * inp.numel()].view(out.shape))
        return Work([o for outs in output_lists for o in outs], work._stream, "all_gather")

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        work = None
        for out, inp in zip(outputs, inputs):
            work = self._allgather_base(out, inp, opts)
        return work

    def _reduce_scatter_base(self, output, input, opts=None):
        opts = opts or dist.ReduceScatterOptions()
        _npu(output, "reduce_scatter_tensor")
        _npu(input, "reduce_scatter_tensor")
        if input.numel() != output.numel() * self._size or output.dtype != input.dtype:
            raise ValueError("reduce_scatter_tensor: the input must hold world_size outputs of the same dtype")
        op, kind = _reduce_op(opts)

        def issue(comm, s):
            _check(hccl.reduce_scatter(input.data_ptr(), output.data_ptr(), output.numel(), _dtype(output), op,
                                       comm, s), "reduce_scatter")
        work = self._run([output, input], "reduce_scatter", issue)
        if kind == dist.ReduceOp.AVG:
            output.div_(self._size)
        return work

    reduce_scatter_single = _reduce_scatter_base

    def reduce_scatter(self, outputs, input_lists, opts=None):
        work = None
        for out, inputs in zip(outputs, input_lists):
            flat = torch.cat([i.reshape(-1) for i in inputs])
            work = self._reduce_scatter_base(out, flat, opts)
        return work

    def reduce_scatter_tensor_coalesced(self, outputs, inputs, opts=None):
        work = None
        for out, inp in zip(outputs, inputs):
            work = self._reduce_scatter_base(out, inp, opts)
        return work

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        _npu(output, "all_to_all_single")
        _npu(input, "all_to_all_single")
        n = self._size
        row_in = input.numel() // max(1, input.shape[0]) if input.dim() else 1
        row_out = output.numel() // max(1, output.shape[0]) if output.dim() else 1
        in_splits = list(input_split_sizes) or [input.shape[0] // n] * n
        out_splits = list(output_split_sizes) or [output.shape[0] // n] * n
        send_counts = [s * row_in for s in in_splits]
        recv_counts = [s * row_out for s in out_splits]
        sdispls = [sum(send_counts[:i]) for i in range(n)]
        rdispls = [sum(recv_counts[:i]) for i in range(n)]
        dt = _dtype(input)

        def issue(comm, s):
            _check(hccl.all_to_all_v(input.data_ptr(), send_counts, sdispls, dt, output.data_ptr(), recv_counts,
                                     rdispls, dt, comm, s), "all_to_all_v")
        return self._run([output, input], "all_to_all", issue)

    all_to_all_single = alltoall_base

    def alltoall(self, outputs, inputs, opts=None):
        for t in (*outputs, *inputs):
            _npu(t, "all_to_all")
        flat_in = torch.cat([t.reshape(-1) for t in inputs])
        flat_out = torch.empty(sum(t.numel() for t in outputs), dtype=outputs[0].dtype, device=outputs[0].device)
        n = self._size
        send_counts = [t.numel() for t in inputs]
        recv_counts = [t.numel() for t in outputs]
        sdispls = [sum(send_counts[:i]) for i in range(n)]
        rdispls = [sum(recv_counts[:i]) for i in range(n)]
        dt = _dtype(flat_in)

        def issue(comm, s):
            _check(hccl.all_to_all_v(flat_in.data_ptr(), send_counts, sdispls, dt, flat_out.data_ptr(), recv_counts,
                                     rdispls, dt, comm, s), "all_to_all_v")
        work = self._run([flat_out, flat_in], "all_to_all", issue)
        offset = 0
        for t in outputs:
            t.copy_(flat_out[offset:offset + t.numel()].view(t.shape))
            offset += t.numel()
        return Work(list(outputs), work._stream, "all_to_all")

    def scatter(self, outputs, input_lists, opts=None):
        """Scatter as torch_npu does it without a native HCCL scatter: a broadcast of the
        root's list, each rank keeping its part."""
        root = opts.rootRank if opts is not None else 0
        out = _npu(outputs[0], "scatter")
        parts = input_lists[0] if self._rank == root else [torch.empty_like(out) for _ in range(self._size)]
        flat = torch.cat([p.reshape(-1) for p in parts]) if self._rank == root else \
            torch.empty(out.numel() * self._size, dtype=out.dtype, device=out.device)
        bopts = dist.BroadcastOptions()
        bopts.rootRank = root
        work = self.broadcast([flat], bopts)
        out.copy_(flat[self._rank * out.numel():(self._rank + 1) * out.numel()].view(out.shape))
        return Work([out], work._stream, "scatter")

    def gather(self, output_lists, inputs, opts=None):
        root = opts.rootRank if opts is not None else 0
        inp = _npu(inputs[0], "gather")
        flat = torch.empty(inp.numel() * self._size, dtype=inp.dtype, device=inp.device)
        work = self._allgather_base(flat, inp.contiguous())
        if self._rank == root:
            for r, out in enumerate(output_lists[0]):
                out.copy_(flat[r * inp.numel():(r + 1) * inp.numel()].view(out.shape))
        return work

    def barrier(self, opts=None):
        dev = torch.npu.current_device()
        if opts is not None and getattr(opts, "device_ids", None):
            dev = opts.device_ids[0]
        comm = self._comm(dev)
        stream = current_stream(dev)
        _check(hccl.barrier(comm, stream.npurt_stream), "barrier")
        stream.synchronize()  # torch's barrier returns when every rank arrived
        return Work([], stream, "barrier")

    # ---------------------------------------------------------------- point to point
    def send(self, tensors, dst: int, tag: int = 0):
        """A send waits for its receiver, so it goes on a stream of its own (after the current
        stream's work): a rank may post its sends before its receives (batch_isend_irecv's
        ring exchange) without blocking them. `wait()` orders the current stream after it."""
        t = _npu(tensors[0], "send")
        dev = t.device.index
        side = self._send_streams.get(dev)
        if side is None:
            side = self._send_streams[dev] = torch.npu.Stream(device=dev)
        side.wait_stream(current_stream(dev))

        def issue(comm, s):
            _check(hccl.send(t.data_ptr(), t.numel(), _dtype(t), dst, comm, s), "send")
        return self._run([t], "send", issue, stream=side, kind="up" if dst > self._rank else "down")

    def recv(self, tensors, src: int, tag: int = 0):
        t = _npu(tensors[0], "recv")

        def issue(comm, s):
            _check(hccl.recv(t.data_ptr(), t.numel(), _dtype(t), src, comm, s), "recv")
        work = self._run([t], "recv", issue, kind="up" if src < self._rank else "down")
        work._source_rank = src
        return work

    def shutdown(self) -> None:
        """destroy_process_group(): wait until this rank's queued operations ran (the other
        ranks may still need this rank's part of them), then destroy the communicators."""
        for dev, comms in list(self._comms.items()):
            torch.npu.synchronize(dev)
            for comm in comms.values():
                hccl.comm_destroy(comm)
        self._comms.clear()

    abort = shutdown

    def recv_anysource(self, tensors, tag: int = 0):
        raise RuntimeError("HCCL does not support receiving from any source")

    def __repr__(self) -> str:
        return f"<ProcessGroupHCCL rank {self._rank} of {self._size}>"


def _create(store, rank: int, size: int, timeout) -> ProcessGroupHCCL:
    world = hccl.current_world()
    if size > 1 and world.kind != "mpi":
        raise RuntimeError("backend 'hccl' on npurt connects the processes of an MPI job: start the script with "
                           "`npurt launch -n N script.py` (it sets RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR and "
                           "MASTER_PORT as torchrun does), or under mpirun")
    if size > 1 and size != world.size:
        raise NotImplementedError(f"backend 'hccl' on npurt: a group of {size} of the job's {world.size} ranks; "
                                  "npurt.hccl makes cross-process communicators over the whole MPI job, so groups "
                                  "must hold every rank")
    return ProcessGroupHCCL(store, rank, size, timeout)


def register() -> None:
    """Make "hccl" torch.distributed's backend for npu tensors (as torch_npu does)."""
    if BACKEND in dist.Backend.backend_list and dist.Backend.default_device_backend_map.get("npu") == BACKEND:
        return
    dist.Backend.register_backend(BACKEND, _create, devices=["npu"])
