"""HCCL's C API in pyACL style: snake_case names, the C parameter order, outputs returned
before a trailing `ret` (an HcclResult), int handles for communicators and streams.

    root_info, ret = hccl.get_root_info()                       # rank 0; share it (e.g. MPI bcast)
    comm, ret = hccl.comm_init_root_info(n_ranks, root_info, rank)
    ret = hccl.all_reduce(send_ptr, recv_ptr, count, hccl.HCCL_DATA_TYPE_FP32, hccl.HCCL_REDUCE_SUM,
                          comm, stream)                          # stream: an acl.rt stream handle
    ret = acl.rt.synchronize_stream(stream)                     # a collective's failure shows here

No function raises: bad arguments return HCCL_E_PTR / HCCL_E_PARA / HCCL_E_NOT_SUPPORT at the
call, failures while the operation runs (a mismatch between ranks, a rank that never arrives)
surface at the stream's synchronize with the HcclResult as the code. Every failure is recorded
as the thread's last error, so `acl.get_recent_err_msg()` explains it.
"""
from __future__ import annotations

import uuid

from .._cstyle.retcode import CodeSpace, returning
from ..runtime import RUNTIME, NpuError, handle_table, peek_context
from . import config, local, rank_table, world
from . import types as T
from .comm import HcclComm
from . import mpi

COMMS = handle_table("hccl comm")
_MAGIC = b"NPURT-HCCL\x01"
_LOCAL, _MPI = b"L", b"M"

__all__ = ["get_root_info", "comm_init_root_info", "comm_init_cluster_info", "comm_init_all", "comm_destroy",
           "get_rank_size", "get_rank_id", "get_comm_name", "get_comm_async_error", "get_error_string",
           "all_reduce", "broadcast", "all_gather", "reduce_scatter", "reduce", "all_to_all", "all_to_all_v",
           "send", "recv", "barrier"]


# HcclResult codes: an HcclError keeps its code, a runtime error is HCCL_E_RUNTIME (its aclError
# named in the message), the failure recorded as the thread's last error (npurt._cstyle.retcode)
HCCL = CodeSpace("hccl", success=T.HCCL_SUCCESS, invalid_param=T.HCCL_E_PARA, internal=T.HCCL_E_INTERNAL,
                 native=T.HcclError, record_as=T.HcclError,
                 foreign=lambda exc: (T.HCCL_E_RUNTIME, f"{exc.message} [runtime error {exc.code}]"))


def _hccl(*fail_values):
    """Turn an implementation returning outputs (or None) into pyACL's shape: (*outputs, ret)."""
    return returning(*fail_values, space=HCCL)


def _comm(handle) -> HcclComm:
    if handle is None or handle == 0:
        raise T.HcclError("the communicator is null", T.HCCL_E_PTR)
    if isinstance(handle, HcclComm):
        return handle
    comm = COMMS.lookup(handle)
    if comm is None:
        raise T.HcclError(f"0x{handle:x} is not a live communicator handle (destroyed, or never created)"
                          if isinstance(handle, int) else f"expected a communicator handle, got {handle!r}",
                          T.HCCL_E_PARA)
    return comm


def _stream(handle):
    """The runtime Stream of an acl.rt stream handle (or an npurt.Stream); 0 stays null."""
    if handle is None or handle == 0:
        return None
    if hasattr(handle, "runtime_stream"):
        return handle.runtime_stream
    try:
        return RUNTIME.streams.get(handle)
    except NpuError as exc:
        raise T.HcclError(f"stream: {exc.message}", T.HCCL_E_PARA) from None


def _current_device():
    ctx = peek_context()
    if ctx is None or not ctx.alive:
        raise T.HcclError("no device is set in this thread: call acl.rt.set_device(device_id) first",
                          T.HCCL_E_RUNTIME)
    return ctx.device


def _register(comm: HcclComm) -> int:
    comm.handle = COMMS.add(comm)
    return comm.handle


# ---------------------------------------------------------------- communicators
@_hccl(b"")
def get_root_info():
    """HcclGetRootInfo: HCCL_ROOT_INFO_BYTES bytes naming a new communicator. Give the same bytes
    to every rank's comm_init_root_info (threads of this process, or processes of an MPI job,
    e.g. with mpi4py's bcast)."""
    kind = _MPI if world.mpi_launched() else _LOCAL
    info = _MAGIC + kind + uuid.uuid4().bytes
    return info + bytes(T.HCCL_ROOT_INFO_BYTES - len(info))


def _parse_root_info(root_info) -> tuple[bytes, bytes]:
    if isinstance(root_info, (bytearray, memoryview)):
        root_info = bytes(root_info)
    if not isinstance(root_info, bytes) or len(root_info) != T.HCCL_ROOT_INFO_BYTES or \
            not root_info.startswith(_MAGIC) or root_info[len(_MAGIC):len(_MAGIC) + 1] not in (_LOCAL, _MPI):
        raise T.HcclError(f"root_info must be the {T.HCCL_ROOT_INFO_BYTES} bytes get_root_info returned",
                          T.HCCL_E_PARA)
    start = len(_MAGIC) + 1
    return root_info[start - 1:start], b"root:" + root_info[start:start + 16]


def _check_ranks(n_ranks, rank) -> None:
    if type(n_ranks) is not int or n_ranks < 1:
        raise T.HcclError(f"n_ranks must be a positive int, got {n_ranks!r}", T.HCCL_E_PARA)
    if type(rank) is not int or not 0 <= rank < n_ranks:
        raise T.HcclError(f"rank {rank!r} is out of range 0..{n_ranks - 1}", T.HCCL_E_PARA)


def join(key: bytes, kind: bytes, n_ranks: int, rank: int, device, name: str) -> HcclComm:
    """Create this rank's communicator `key` (in-process or MPI) and wait for the others."""
    comm = HcclComm(rank, n_ranks, device, name)
    exec_s, connect_s = config.exec_timeout(), config.connect_timeout()
    if kind == _MPI:  # even a rank alone takes part: creation is collective over the MPI world
        mpi.init(key, comm, connect_s, exec_s)
    else:
        local.join(key, comm, connect_s, exec_s)
    return comm


@_hccl(0)
def comm_init_root_info(n_ranks, root_info, rank):
    """HcclCommInitRootInfo: this thread's device becomes rank `rank` of `n_ranks`; returns when
    every rank has joined (HCCL_E_TIMEOUT after HCCL_CONNECT_TIMEOUT)."""
    _check_ranks(n_ranks, rank)
    kind, key = _parse_root_info(root_info)
    device = _current_device()
    return _register(join(key, kind, n_ranks, rank, device, f"comm-{key[5:9].hex()}"))


@_hccl(0)
def comm_init_cluster_info(rank_table_file, rank):
    """HcclCommInitClusterInfo: the ranks and devices come from a rank table file; this
    thread's device must be the one the table gives `rank`."""
    table_ = rank_table.load(rank_table_file)
    _check_ranks(table_.size, rank)
    device = _current_device()
    entry = table_.ranks[rank]
    if device.backend.physical_id != entry.device_id:
        raise T.HcclError(f"rank {rank} uses device {entry.device_id} of server {entry.server!r} in the rank "
                          f"table, but this thread's device is {device.backend.physical_id}; call "
                          f"set_device({entry.device_id}) first", T.HCCL_E_PARA)
    multi = world.mpi_launched()
    if not multi and len(table_.servers) > 1:
        raise T.HcclError(f"rank table {rank_table_file!r} lists {len(table_.servers)} servers; ranks on other "
                          "servers need one process per rank under an MPI launcher (npurt launch / mpirun)",
                          T.HCCL_E_PARA)
    kind = _MPI if multi else _LOCAL
    return _register(join(table_.key, kind, table_.size, rank, device, f"table-{table_.key[6:10].hex()}"))


@_hccl(())
def comm_init_all(n_devices, device_ids):
    """HcclCommInitAll: one communicator over several devices of this process (rank i on
    device_ids[i]); returns the list of handles."""
    if type(n_devices) is not int or n_devices < 1:
        raise T.HcclError(f"n_devices must be a positive int, got {n_devices!r}", T.HCCL_E_PARA)
    try:
        ids = list(device_ids)
    except TypeError:
        raise T.HcclError(f"device_ids must be a list of device ids, got {device_ids!r}", T.HCCL_E_PARA) from None
    if len(ids) != n_devices:
        raise T.HcclError(f"device_ids has {len(ids)} entries; n_devices is {n_devices}", T.HCCL_E_PARA)
    if len(set(ids)) != len(ids):
        raise T.HcclError(f"device_ids {ids} repeats a device; each rank needs its own", T.HCCL_E_PARA)
    RUNTIME.check_initialized()
    devices = []
    for dev in ids:
        try:
            devices.append(RUNTIME.device(dev))
        except NpuError as exc:
            raise T.HcclError(f"device_ids: {exc.message}", T.HCCL_E_PARA) from None
    key = b"all:" + uuid.uuid4().bytes
    comms = [HcclComm(i, n_devices, devices[i], f"all-{key[4:8].hex()}") for i in range(n_devices)]
    local.create(key, comms, config.exec_timeout())
    return [_register(c) for c in comms]


@_hccl()
def comm_destroy(comm):
    """HcclCommDestroy. Operations already queued still run; new ones are refused."""
    c = _comm(comm)
    c.destroy()
    COMMS.remove(c.handle)


@_hccl(0)
def get_rank_size(comm):
    return _comm(comm).size


@_hccl(0)
def get_rank_id(comm):
    return _comm(comm).rank


@_hccl("")
def get_comm_name(comm):
    return _comm(comm).name


@_hccl(T.HCCL_SUCCESS)
def get_comm_async_error(comm):
    """HcclGetCommAsyncError: the first failure of an operation of this communicator."""
    err = _comm(comm).async_error
    return T.HCCL_SUCCESS if err is None else err.code


def get_error_string(code):
    """HcclGetErrorString: a short description of an HcclResult (a str; no ret)."""
    return T.get_error_string(code)


# ---------------------------------------------------------------- operations
@_hccl()
def all_reduce(send_buf, recv_buf, count, data_type, op, comm, stream):
    _comm(comm).all_reduce(send_buf, recv_buf, count, data_type, op, _stream(stream))


@_hccl()
def broadcast(buf, count, data_type, root, comm, stream):
    _comm(comm).broadcast(buf, count, data_type, root, _stream(stream))


@_hccl()
def all_gather(send_buf, recv_buf, send_count, data_type, comm, stream):
    _comm(comm).all_gather(send_buf, recv_buf, send_count, data_type, _stream(stream))


@_hccl()
def reduce_scatter(send_buf, recv_buf, recv_count, data_type, op, comm, stream):
    _comm(comm).reduce_scatter(send_buf, recv_buf, recv_count, data_type, op, _stream(stream))


@_hccl()
def reduce(send_buf, recv_buf, count, data_type, op, root, comm, stream):
    _comm(comm).reduce(send_buf, recv_buf, count, data_type, op, root, _stream(stream))


@_hccl()
def all_to_all(send_buf, send_count, send_type, recv_buf, recv_count, recv_type, comm, stream):
    _comm(comm).all_to_all(send_buf, send_count, send_type, recv_buf, recv_count, recv_type, _stream(stream))


@_hccl()
def all_to_all_v(send_buf, send_counts, sdispls, send_type, recv_buf, recv_counts, rdispls, recv_type, comm,
                 stream):
    _comm(comm).all_to_all_v(send_buf, send_counts, sdispls, send_type, recv_buf, recv_counts, rdispls,
                             recv_type, _stream(stream))


@_hccl()
def send(buf, count, data_type, dest_rank, comm, stream):
    _comm(comm).send(buf, count, data_type, dest_rank, _stream(stream))


@_hccl()
def recv(buf, count, data_type, src_rank, comm, stream):
    _comm(comm).recv(buf, count, data_type, src_rank, _stream(stream))


@_hccl()
def barrier(comm, stream):
    _comm(comm).barrier(_stream(stream))
