"""pyACL namespaces npurt does not have: the hi_mpi media API (acl.himpi). (acl.mdl,
acl.op, acl.media and acl.prof are real modules.)

None of these means anything on the simulated NPU (no hi_mpi layer).
Each namespace is a module whose functions return
ACL_ERROR_RT_FEATURE_NOT_SUPPORT (207000): the documented ones listed here in their real
return shape, any other name as a function returning the bare code. So a script that
touches them gets a return code to check, never an AttributeError.
"""
from __future__ import annotations

import sys
import types

from ._wrap import not_supported

_WHY = {
    "acl.himpi": "the hi_mpi media API (acl.himpi) is not simulated; use acl.media (DVPP)",
}

# documented functions: name -> (shape, value returned in place of the outputs)
_KNOWN = {
    "acl.himpi": {"dvpp_malloc": ("one", 0), "dvpp_free": ("ret", None)},
}


def _namespace(name: str) -> types.ModuleType:
    module = types.ModuleType(f"npurt.{name}", f"{name}: not supported by npurt. {_WHY[name]}.")
    known = {fn: not_supported(f"{name}.{fn}", _WHY[name], shape, value)
             for fn, (shape, value) in _KNOWN[name].items()}
    module.__dict__.update(known)
    module.__all__ = sorted(known)

    def __getattr__(attr: str):  # any other documented function of the group
        if attr.startswith("__"):
            raise AttributeError(attr)
        stub = not_supported(f"{name}.{attr}", _WHY[name])
        setattr(module, attr, stub)
        return stub

    module.__getattr__ = __getattr__
    sys.modules[module.__name__] = module
    return module


himpi = _namespace("acl.himpi")

get_cann_version = not_supported(
    "acl.get_cann_version", "CANN package versions (aclCANNPackageName) do not exist in npurt; use "
    "acl.get_version_str('runtime')", "one", None)

KNOWN = _KNOWN
