"""npurt.hccl: HCCL-style collectives between simulated NPUs, in one process or across
processes and hosts (MPI).

Two front ends over one set of rules (`comm.py`):

* the HCCL C API in pyACL style (`api.py`): `get_root_info`, `comm_init_root_info`,
  `comm_init_cluster_info`, `comm_init_all`, `all_reduce(send_buf, recv_buf, count, data_type,
  op, comm, stream)`, ... returning `ret` (an HcclResult) last; the HcclResult, HcclDataType
  and HcclReduceOp constants with the values of hccl_types.h;
* `Communicator`, on DeviceArrays (`comm.all_reduce(x, op="sum", stream=s)`), and `spawn` to
  run a function on every rank (threads in one process, or this process's rank under
  `npurt launch -n N script.py` / `mpirun`).

Every operation is a task on the stream passed, ordered with the stream's other work. Ranks in
this process meet in memory (`local.py`); ranks in other processes through mpi4py (`mpi.py`,
the optional extra `npurt[dist]`, imported only when needed). See docs/distributed.md.
"""
from __future__ import annotations

from .api import *  # noqa: F401,F403
from .types import *  # noqa: F401,F403
from .types import HcclError  # noqa: F401
from .communicator import Communicator  # noqa: F401
from .ranks import spawn  # noqa: F401
from .world import World  # noqa: F401
from .world import current as current_world  # noqa: F401
