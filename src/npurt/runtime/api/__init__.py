"""The runtime's operations as plain Python functions that raise `NpuError`s.

This is the one place where the rules live; the pyACL facade (`npurt.acl`) turns these
into return codes and int handles, the Pythonic API (`npurt`) wraps them in objects.
Streams, events and contexts are passed as objects; `None` as a stream means the current
context's default stream. One module per group of the ACL runtime API:

| module | operations |
| --- | --- |
| lifecycle | init, finalize, finalize_reference |
| devices | devices, peer access, device queries and settings |
| contexts | explicit contexts, the primary context, per-context options |
| streams | streams and host-function tasks |
| events | events |
| memory | device and host memory (configured allocation too), copies and sets, range checks |
| control | host callbacks, op timeouts, exception info |
| vmm | virtual memory management: reserved addresses, physical memory, mappings, sharing |
| managed | managed (unified) memory: allocation, prefetch, advice, attributes |
| mempool | stream-ordered memory pools (aclrtMemPool*) |
"""
from .contexts import *  # noqa: F401,F403
from .control import *  # noqa: F401,F403
from .devices import *  # noqa: F401,F403
from .events import *  # noqa: F401,F403
from .lifecycle import *  # noqa: F401,F403
from .memory import *  # noqa: F401,F403
from .streams import *  # noqa: F401,F403
from .vmm import *  # noqa: F401,F403
from .managed import *  # noqa: F401,F403
from .mempool import *  # noqa: F401,F403
