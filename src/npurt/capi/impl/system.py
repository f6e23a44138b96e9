"""Versions and features of the installed "CANN" (npurt), data buffers, error detail
(acl_rt.h: aclsysGetVersionStr ... aclrtGetErrorVerbose; acl_base_rt.h: aclDataBuffer).

The CANN and runtime packages answer with the CANN release npurt models
(constants.CANN_VERSION, from hicann/runtime's version.cmake), as the pyACL facade's
get_version_str does; "npurt", "driver" and "firmware" with npurt's own version.
aclsysGetVersionNum encodes a version as the runtime does (acl.cpp CalculateVersionNum:
major * 10000000 + minor * 100000 + patch * 1000).
"""
from __future__ import annotations

import re

from ...runtime import fork_safe_lock
from ... import runtime as rt
from ..._version import __version__
from ...runtime import NpuError, constants as C
from .. import cdata
from ..registry import c_function
from ._common import null

_PACKAGES = {"runtime": C.CANN_VERSION, "npurt": __version__, "driver": __version__, "firmware": __version__}
_CANN_PACKAGES = {C.PKG_NAME_CANN: "runtime", C.PKG_NAME_RUNTIME: "runtime"}  # aclCANNPackageName


def _version(pkg: str | None) -> str:
    if pkg not in _PACKAGES:
        raise NpuError(f"package {pkg!r} is not installed (npurt provides {', '.join(sorted(_PACKAGES))})",
                       C.ACL_ERROR_INVALID_FILE)
    return _PACKAGES[pkg]


def version_number(text: str) -> int:
    m = re.match(r"(\d+)\.(\d+)\.(\d+)", text)
    major, minor, patch = (int(g) for g in m.groups())
    return major * 10_000_000 + minor * 100_000 + patch * 1000


@c_function("aclsysGetVersionStr")
def aclsysGetVersionStr(pkgName, versionStr):
    if not pkgName:
        raise null("pkgName")
    if not versionStr:
        raise null("versionStr")
    cdata.write(versionStr, _version(cdata.string(pkgName)).encode() + b"\0")
    return 0


@c_function("aclsysGetVersionNum")
def aclsysGetVersionNum(pkgName, versionNum):
    if not pkgName:
        raise null("pkgName")
    if not versionNum:
        raise null("versionNum")
    versionNum[0] = version_number(_version(cdata.string(pkgName)))
    return 0


@c_function("aclsysGetCANNVersion")
def aclsysGetCANNVersion(name, version):
    if not version:
        raise null("version")
    pkg = _CANN_PACKAGES.get(name)
    if pkg is None:
        raise NpuError(f"package {name} is not installed (npurt provides ACL_PKG_NAME_CANN and ACL_PKG_NAME_RUNTIME)", C.ACL_ERROR_INVALID_FILE)
    text = _version(pkg)
    major, minor, patch = text.split(".")[:3]
    out = cdata.struct("aclCANNPackageVersion *", version)
    for field, value in (("version", text), ("majorVersion", major), ("minorVersion", minor),
                         ("releaseVersion", "0"), ("patchVersion", patch)):
        setattr(out, field, value.encode())
    return 0


@c_function("aclGetCannAttribute")
def aclGetCannAttribute(cannAttr, value):
    """No optional CANN feature is available in npurt (as the facade answers)."""
    if not value:
        raise null("value")
    if cannAttr < 0:
        raise rt.InvalidValueError(f"cannAttr {cannAttr} is not an aclCannAttr")
    value[0] = 0
    return 0


_empty_list = {}


@c_function("aclGetCannAttributeList")
def aclGetCannAttributeList(cannAttrList, num):
    if not cannAttrList:
        raise null("cannAttrList")
    if not num:
        raise null("num")
    if "list" not in _empty_list:
        _empty_list["list"] = cdata.ffi.new("int[1]")
    cannAttrList[0] = int(cdata.ffi.cast("uintptr_t", _empty_list["list"]))
    num[0] = 0
    return 0


@c_function("aclrtCheckArchCompatibility")
def aclrtCheckArchCompatibility(socVersion, canCompatible):
    """Compatible when the SoC is the simulated one."""
    if not socVersion:
        raise null("socVersion")
    if not canCompatible:
        raise null("canCompatible")
    canCompatible[0] = int(cdata.string(socVersion) == rt.get_soc_name())
    return 0


@c_function("aclrtGetErrorVerbose")
def aclrtGetErrorVerbose(deviceId, errorInfo):
    """The simulated device has no memory (UCE) or AI core hardware errors to detail."""
    if not errorInfo:
        raise null("errorInfo")
    rt.get_device_count()
    if not 0 <= deviceId < rt.get_device_count():
        raise NpuError(f"deviceId {deviceId} is not a visible device", C.ACL_ERROR_RT_INVALID_DEVICEID)
    info = cdata.struct("aclrtErrorInfo *", errorInfo)
    cdata.ffi.memmove(info, b"\0" * cdata.ffi.sizeof("aclrtErrorInfo"), cdata.ffi.sizeof("aclrtErrorInfo"))
    return 0


# ---------------------------------------------------------------- data buffers
_buffers: dict[int, tuple] = {}   # address of the C struct -> (cdata keeping it alive,)
_lock = fork_safe_lock()


@c_function("aclCreateDataBuffer")
def aclCreateDataBuffer(data, size):
    buf = cdata.ffi.new("uintptr_t[2]", [data, size])
    addr = int(cdata.ffi.cast("uintptr_t", buf))
    with _lock:
        _buffers[addr] = buf
    return addr


def _buffer(dataBuffer):
    if not dataBuffer:
        raise null("dataBuffer")
    buf = _buffers.get(dataBuffer)
    if buf is None:
        raise rt.InvalidValueError(f"0x{dataBuffer:x} is not a data buffer from aclCreateDataBuffer")
    return buf


@c_function("aclDestroyDataBuffer")
def aclDestroyDataBuffer(dataBuffer):
    _buffer(dataBuffer)
    with _lock:
        del _buffers[dataBuffer]
    return 0


@c_function("aclGetDataBufferAddr")
def aclGetDataBufferAddr(dataBuffer):
    return _buffer(dataBuffer)[0]


@c_function("aclGetDataBufferSizeV2")
def aclGetDataBufferSizeV2(dataBuffer):
    return _buffer(dataBuffer)[1]


@c_function("aclGetDataBufferSize")
def aclGetDataBufferSize(dataBuffer):
    return _buffer(dataBuffer)[1] & 0xFFFFFFFF


@c_function("aclUpdateDataBuffer")
def aclUpdateDataBuffer(dataBuffer, data, size):
    buf = _buffer(dataBuffer)
    buf[0], buf[1] = data, size
    return 0
