"""HCCL's timeouts, from the environment variables real HCCL reads.

| variable | default | meaning |
| --- | --- | --- |
| HCCL_EXEC_TIMEOUT | 1836 | seconds an operation waits for the other ranks (0: forever) |
| HCCL_CONNECT_TIMEOUT | 120 | seconds communicator creation waits for the other ranks |

Read when a communicator is created. As on A3 parts, fractions of a second are accepted (the
tests use short timeouts); HCCL_CONNECT_TIMEOUT below real HCCL's minimum of 120 s is accepted
too, so a test can see a missing rank quickly.
"""
from __future__ import annotations

import os

from .types import HCCL_E_PARA, HcclError

EXEC_TIMEOUT_DEFAULT = 1836.0
CONNECT_TIMEOUT_DEFAULT = 120.0


def _seconds(name: str, default: float, zero_ok: bool) -> float:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        value = float(raw)
    except ValueError:
        raise HcclError(f"environment variable {name}={raw!r} is not a number of seconds", HCCL_E_PARA) from None
    if value < 0 or (value == 0 and not zero_ok) or value != value or value > 2147483647:
        raise HcclError(f"environment variable {name}={raw!r} is out of range "
                        f"({'[0' if zero_ok else '(0'}, 2147483647] seconds)", HCCL_E_PARA)
    return value


def exec_timeout() -> float:
    """HCCL_EXEC_TIMEOUT in seconds; 0 means never time out."""
    return _seconds("HCCL_EXEC_TIMEOUT", EXEC_TIMEOUT_DEFAULT, zero_ok=True)


def connect_timeout() -> float:
    """HCCL_CONNECT_TIMEOUT in seconds."""
    return _seconds("HCCL_CONNECT_TIMEOUT", CONNECT_TIMEOUT_DEFAULT, zero_ok=False)
