"""acl.rt: the pyACL runtime functions (devices, contexts, streams, events, memory,
callbacks, exceptions, kernels), with pyACL's names, argument order and return shapes.

Every function returns its outputs followed by `ret` (an aclError code, 0 on success), or
just `ret` when it has no output; a few documented ones return a value alone. No function
raises: failures are return codes, recorded for `get_last_error` / `acl.get_recent_err_msg`.
Handles are ints; stream 0 is the current context's default stream. The constants
(`acl.rt.ACL_MEMCPY_HOST_TO_DEVICE`, ...) are attributes too. Groups the simulated NPU does
not have return ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000); docs/compatibility.md lists them.
"""
from __future__ import annotations

from ._allocator import *  # noqa: F401,F403
from ._context import *  # noqa: F401,F403
from ._control import *  # noqa: F401,F403
from ._device import *  # noqa: F401,F403
from ._event import *  # noqa: F401,F403
from ._kernel import *  # noqa: F401,F403
from ._memory import *  # noqa: F401,F403
from ._stream import *  # noqa: F401,F403
from ._unsupported import *  # noqa: F401,F403
from .constants import *  # noqa: F401,F403

from . import _allocator, _context, _control, _device, _event, _kernel, _memory, _stream, _unsupported  # isort: skip

FUNCTIONS = sorted({name for mod in (_allocator, _context, _control, _device, _event, _kernel, _memory, _stream,
                                     _unsupported)
                    for name in mod.__all__})
"""The names of every acl.rt function."""
