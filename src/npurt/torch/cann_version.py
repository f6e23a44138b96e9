"""CANN versions as torch_npu reads and compares them (torch_npu/csrc/core/npu/GetCANNInfo.cpp).

`get(module)`: the version of a CANN package. npurt models the CANN runtime release of
`npurt.runtime.constants.CANN_VERSION` (9.1.0, hicann/runtime's version.cmake), so "CANN",
"RUNTIME" and the v2 package "runtime" answer with it; every other package is not installed
(""), what torch_npu answers when aclsysGetCANNVersion / aclsysGetVersionStr fail.

`is_gte(version, module)`: torch_npu's IsGteCANNVersion. DRIVER is refused; a version below
"8.1.RC1" is refused; versions 8.0-8.4 compare by torch_npu's first numbering (x.y.z,
x.y.RCn, x.y.Tn, x.y.RCn.alphaN, x.y.z.alphaN), 8.5 and 9+ by its second (x.y.z with an
optional alpha / beta / rc pre-release, which ranks below the release); across the two,
by major and minor only. An empty or unparsable current version is never >=.
"""
from __future__ import annotations

import re

from ..runtime import constants as C

_MODELLED = {"CANN": C.CANN_VERSION, "RUNTIME": C.CANN_VERSION, "runtime": C.CANN_VERSION}
_BASE = "8.1.RC1"   # the oldest CANN that can report its version


def get(module: str = "CANN") -> str:
    return _MODELLED.get(module, "")


def _tokens(v: str) -> list:
    return re.split(r"[.-]", v)


def _num(token: str) -> int:
    return int(token) if token.isdigit() else -1


def _v1(v: str) -> int:
    """torch_npu's VersionToNum (8.0 - 8.4)."""
    t = _tokens(v)
    if len(t) < 3 or _num(t[0]) < 0 or _num(t[1]) < 0:
        return 0
    major, minor = _num(t[0]), _num(t[1])
    release, rc, tv, alpha, weight, pre = -1, -51, -1, 0, 0, 0
    third = t[2]
    if len(t) == 3 and third.startswith("RC") and _num(third[2:]) >= 0:
        rc = _num(third[2:])
    elif len(t) == 3 and third.startswith("T") and _num(third[1:]) >= 0:
        tv = _num(third[1:])
    elif len(t) == 3 and third.isdigit():
        release = int(third)
    elif len(t) == 4 and third.startswith("RC") and t[3].startswith("alpha") and _num(third[2:]) >= 0 \
            and _num(t[3][5:]) >= 0:
        rc, alpha = _num(third[2:]), _num(t[3][5:])
    elif len(t) == 4 and third.isdigit() and t[3].startswith("alpha") and _num(t[3][5:]) >= 0:
        release, weight, pre = int(third), 300, _num(t[3][5:])
    else:
        return 0
    return ((major + 1) * 100000000 + (minor + 1) * 1000000 + (release + 1) * 10000 + (rc + 1) * 100 + 5000
            + (tv + 1) * 100 - (100 - alpha) - weight + pre)


_WEIGHT = {"alpha": 300, "beta": 200, "rc": 100}


def _v2(v: str) -> int:
    """torch_npu's VersionV2ToNum (8.5 and 9+)."""
    t = _tokens(v)
    if len(t) < 3 or min(_num(t[0]), _num(t[1]), _num(t[2])) < 0:
        return 0
    base = _num(t[0]) * 10000000 + _num(t[1]) * 100000 + _num(t[2]) * 1000
    if len(t) == 3:
        return base
    if len(t) == 4:
        m = re.fullmatch(r"(alpha|beta|rc)(\d*)", t[3])
        if m and (m.group(2) or t[3] in _WEIGHT):
            return base - _WEIGHT[m.group(1)] + (int(m.group(2)) if m.group(2) else 0)
        return 0
    if len(t) == 5 and t[3] in _WEIGHT and t[4].isdigit():
        return base - _WEIGHT[t[3]] + int(t[4])
    return 0


def _compare(current: str, target: str) -> int:
    """1 if current >= target, 0 if not, -1 if either cannot be read (CompareVersionsByDispatch)."""
    a, b = _tokens(current), _tokens(target)
    if len(a) <= 2 or len(b) <= 2 or not all(x.isdigit() for x in (a[0], a[1], b[0], b[1])):
        return -1
    ma, na, mb, nb = int(a[0]), int(a[1]), int(b[0]), int(b[1])
    if ma == 8 and na < 5 and mb == 8 and nb < 5:
        return int(_v1(current) >= _v1(target))
    if (ma == 8 and na == 5 and mb == 8 and nb == 5) or (ma > 8 and mb > 8):
        return int(_v2(current) >= _v2(target))
    return int((ma, na) >= (mb, nb))


def is_gte(version: str, module: str = "CANN") -> bool:
    if module == "DRIVER":
        raise RuntimeError("When the module is DRIVER, IsGteCANNVersion is not supported. ")
    t = _tokens(version)
    if len(t) < 2 or not t[0].isdigit():
        return False
    if int(t[0]) <= int(_tokens(_BASE)[0]) and version < _BASE:
        raise RuntimeError(f'When the version {version} is less than "8.1.RC1", GetCANNVersion is not supported. ')
    return _compare(get(module), version) == 1
