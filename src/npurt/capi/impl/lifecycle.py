"""aclInit / aclFinalize, versions, error messages, logging and fp16 conversion (acl_base_rt.h,
acl_rt.h): the process-wide calls."""
from __future__ import annotations

import logging
import sys
import threading

import numpy as np

from ... import runtime as rt
from ...runtime import constants as C
from .. import cdata
from ..registry import c_function
from ..spec import load
from . import dump
from ._common import null

_log = logging.getLogger("npurt.capi.app_log")
_kept = threading.local()   # per C thread: the strings returned as const char *
_static: dict = {}
_MACROS = {i["name"]: i["value"] for b in load().headers.values() for i in b["items"] if i["kind"] == "macro"}
_ACL_VERSION = tuple(int(_MACROS[f"ACL_{k}_VERSION"]) for k in ("MAJOR", "MINOR", "PATCH"))


@c_function("aclInit")
def aclInit(configPath):
    path = cdata.string(configPath)
    rt.init(path)
    dump.configure(path, "aclInit")
    return 0


@c_function("aclFinalize")
def aclFinalize():
    rt.finalize()
    for s in (sys.stdout, sys.stderr):
        s.flush()
    return 0


@c_function("aclFinalizeReference")
def aclFinalizeReference(refCount):
    count = rt.finalize_reference()
    if refCount:
        refCount[0] = count
    return 0


@c_function("aclGetRecentErrMsg")
def aclGetRecentErrMsg():
    msg = rt.get_recent_err_msg()
    if not msg:
        return 0
    return cdata.kept_string(_kept.__dict__, "recent", msg)


@c_function("aclrtGetSocName")
def aclrtGetSocName():
    return cdata.kept_string(_static, "soc", rt.get_soc_name())


@c_function("aclrtGetVersion")
def aclrtGetVersion(majorVersion, minorVersion, patchVersion):
    for p, n in ((majorVersion, "majorVersion"), (minorVersion, "minorVersion"), (patchVersion, "patchVersion")):
        if not p:
            raise null(n)
    majorVersion[0], minorVersion[0], patchVersion[0] = _ACL_VERSION
    return 0


@c_function("aclrtGetRunMode")
def aclrtGetRunMode(runMode):
    if not runMode:
        raise null("runMode")
    runMode[0] = rt.get_run_mode()
    return 0


_LEVELS = {0: logging.DEBUG, 1: logging.INFO, 2: logging.WARNING, 3: logging.ERROR}


@c_function("aclAppLog")
def aclAppLog(logLevel, func, file, line, fmt):
    """`fmt` arrives formatted by the shim (vsnprintf)."""
    _log.log(_LEVELS.get(logLevel, logging.INFO), "[%s:%d %s] %s", cdata.string(file), line,
             cdata.string(func), cdata.string(fmt))


@c_function("aclFloat16ToFloat")
def aclFloat16ToFloat(value):
    return float(np.array(value, np.uint16).view(np.float16))


@c_function("aclFloatToFloat16")
def aclFloatToFloat16(value):
    return int(np.array(value, np.float16).view(np.uint16))


@c_function("aclDataTypeSize")
def aclDataTypeSize(dataType):
    return _DTYPE_SIZES.get(dataType, 0)


_DTYPE_SIZES = {C.ACL_FLOAT: 4, C.ACL_FLOAT16: 2, C.ACL_INT8: 1, C.ACL_INT32: 4, C.ACL_UINT8: 1, C.ACL_INT16: 2,
                C.ACL_UINT16: 2, C.ACL_UINT32: 4, C.ACL_INT64: 8, C.ACL_UINT64: 8, C.ACL_DOUBLE: 8, C.ACL_BOOL: 1,
                C.ACL_COMPLEX64: 8, C.ACL_COMPLEX128: 16, C.ACL_BF16: 2}
