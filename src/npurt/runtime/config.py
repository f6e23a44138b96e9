"""Settings read from the environment when the runtime initializes.

| variable | default | meaning |
| --- | --- | --- |
| NPURT_SOC | Ascend910B3 | simulated SoC (see npurt.driver.soc.SOCS) |
| NPURT_DEVICE_COUNT | 2 | number of simulated physical devices (1..16, a server's worth) |
| ASCEND_RT_VISIBLE_DEVICES | (all) | comma list of physical ids that become logical 0, 1, ... |
| NPURT_MEMCPY_KIND | address | `address`: copies go by address, as on the hardware; a kind that contradicts the addresses is warned about once per call site (`infer` is the same); `strict`: such a kind is refused |
| NPURT_LAUNCH_BLOCKING / ASCEND_LAUNCH_BLOCKING | 0 | 1: every task runs synchronously at enqueue |
| NPURT_TASK_STACKS | 0 | 1: tasks keep their enqueue stack; async errors show it |
| NPURT_MAX_STREAMS | SoC limit | streams per device, default streams included |
| NPURT_POISON_FREED | 0 | 1: device memory returned to the pool is filled with 0xA5 |
| NPURT_WORKERS | 2 | scheduler worker threads per device |
| NPURT_HANG_WARNING_S | 10 | a host wait longer than this logs what it is stuck on (0: never) |
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from ..driver.soc import DEFAULT_SOC
from .errors import InvalidValueError  # a ValueError that also carries ACL_ERROR_INVALID_PARAM

POISON_BYTE = 0xA5
MAX_DEVICES = 16  # the most NPUs one server holds (A3 super-node servers have 16)


def _flag(*names: str) -> bool:
    return any(os.environ.get(n, "").strip().lower() in ("1", "true", "yes", "on") for n in names)


def _int(name: str, default: int | None) -> int | None:
    raw = os.environ.get(name, "").strip()
    if not raw:
        return default
    try:
        return int(raw, 0)
    except ValueError:
        raise InvalidValueError(f"environment variable {name}={raw!r} is not an integer") from None


def parse_visible_devices(raw: str | None, physical_count: int) -> list[int]:
    """Physical ids listed by ASCEND_RT_VISIBLE_DEVICES, in order.

    As on real machines the list is read up to its first invalid entry (not a number, out of
    range, or repeated); everything from there on is ignored. Unset means all devices.
    """
    if raw is None:
        return list(range(physical_count))
    ids: list[int] = []
    for part in raw.split(","):
        part = part.strip()
        if not part.isdigit():
            break
        dev = int(part)
        if dev >= physical_count or dev in ids:
            break
        ids.append(dev)
    return ids


@dataclass
class Settings:
    soc: str = DEFAULT_SOC
    physical_devices: int = 2
    visible_devices: list[int] = field(default_factory=lambda: [0, 1])
    memcpy_kind: str = "address"
    launch_blocking: bool = False
    task_stacks: bool = False
    max_streams: int | None = None
    poison_freed: bool = False
    workers: int = 2
    hang_warning_s: float = 10.0

    @classmethod
    def from_env(cls) -> "Settings":
        count = _int("NPURT_DEVICE_COUNT", 2)
        if not 1 <= count <= MAX_DEVICES:
            raise InvalidValueError(f"NPURT_DEVICE_COUNT={count} must be 1..{MAX_DEVICES} (the devices of one "
                                    "simulated server); for more NPUs run more ranks with `npurt launch`")
        kind = os.environ.get("NPURT_MEMCPY_KIND", "address").strip().lower() or "address"
        if kind not in ("address", "strict", "infer"):
            raise InvalidValueError(f"NPURT_MEMCPY_KIND={kind!r} must be 'address' or 'strict'")
        kind = "address" if kind == "infer" else kind
        max_streams = _int("NPURT_MAX_STREAMS", None)
        if max_streams is not None and max_streams < 1:  # 0 would silently mean "the SoC's"
            raise InvalidValueError(f"NPURT_MAX_STREAMS={max_streams} must be at least 1 "
                                    "(it counts the default streams too)")
        raw_hang = os.environ.get("NPURT_HANG_WARNING_S", "10").strip() or "0"
        try:
            hang_warning_s = float(raw_hang)
        except ValueError:
            raise InvalidValueError(f"environment variable NPURT_HANG_WARNING_S={raw_hang!r} is not "
                                    "a number of seconds") from None
        return cls(
            soc=os.environ.get("NPURT_SOC", DEFAULT_SOC).strip() or DEFAULT_SOC,
            physical_devices=count,
            visible_devices=parse_visible_devices(os.environ.get("ASCEND_RT_VISIBLE_DEVICES"), count),
            memcpy_kind=kind,
            launch_blocking=_flag("NPURT_LAUNCH_BLOCKING", "ASCEND_LAUNCH_BLOCKING"),
            task_stacks=_flag("NPURT_TASK_STACKS"),
            max_streams=max_streams,
            poison_freed=_flag("NPURT_POISON_FREED"),
            workers=max(1, _int("NPURT_WORKERS", 2)),
            hang_warning_s=hang_warning_s,
        )
