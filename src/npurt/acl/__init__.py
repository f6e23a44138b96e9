"""npurt.acl: a pyACL-compatible facade over the npurt runtime.

Same names, argument order, return conventions and constant values as CANN's pyACL::

    import npurt.acl as acl            # or `npurt run script.py`, where `import acl` is this

    ret = acl.init()
    ret = acl.rt.set_device(0)
    stream, ret = acl.rt.create_stream()
    dev_ptr, ret = acl.rt.malloc(1024, acl.ACL_MEM_MALLOC_HUGE_FIRST)

* `acl` — init, finalize, finalize_reference, get_soc_name, get_recent_err_msg,
  get_device_capability, versions and the other small APIs, aclDataBuffer.
* `acl.rt` — the runtime (devices, contexts, streams, events, memory, callbacks,
  exceptions, kernels).
* `acl.util` — pointer/bytes/numpy helpers and helper threads.
* `acl.constants` — every ACL_* constant (also attributes of `acl` and `acl.rt`).
* `acl.mdl` — offline models (see npurt.acl.mdl).
* `acl.prof` — profiling (npurt's profiler: msprof-style timelines and summaries).
* `acl.media` — DVPP image processing (JPEG/PNG decode, VPC resize/crop, JPEG encode) on
  the simulated NPU's media engine; video codecs return ACL_ERROR_RT_FEATURE_NOT_SUPPORT.
* `acl.himpi`, `acl.blas`, `acl.fv` — groups the simulated NPU does not have: every
  function of the real module is there, parses its arguments as the real one and returns
  ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000) in its real return shape.

No function raises: every failure is a return code and is recorded for
`acl.rt.get_last_error()` and `acl.get_recent_err_msg()`. See docs/compatibility.md.
"""
from __future__ import annotations

import sys as _sys
import types as _types

from ..runtime import API_SURFACES as _API_SURFACES
from . import constants, mdl, media, op, prof, rt, util
from ._namespaces import blas, fv, get_cann_version, himpi
from ._other import *  # noqa: F401,F403 - init, finalize, get_soc_name, ...
from ._tensor import *  # noqa: F401,F403 - data buffers, tensor descs
from .constants import *  # noqa: F401,F403


def _offer_api_spans() -> None:
    """Offer the facade's namespaces to tools that time API calls (the profiler's API spans)."""
    package = _sys.modules[__name__]
    groups = [m for m in vars(package).values() if isinstance(m, _types.ModuleType)
              and m.__name__.startswith(__name__ + ".") and not m.__name__.rsplit(".", 1)[-1].startswith("_")
              and m.__name__ not in (f"{__name__}.constants", f"{__name__}.prof")]
    for module in sorted([package, *groups], key=lambda m: m.__name__):
        _API_SURFACES.offer("acl", module, module.__name__[len("npurt."):])


_offer_api_spans()
