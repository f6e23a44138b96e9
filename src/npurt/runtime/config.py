"""Settings read from the environment when the runtime initializes.

| variable | default | meaning |
| --- | --- | --- |
| NPURT_SOC | Ascend910B3 | simulated SoC (see npurt.driver.soc.SOCS) |
| NPURT_DEVICE_COUNT | 2 | number of simulated physical devices (1..16, a server's worth) |
| ASCEND_RT_VISIBLE_DEVICES | (all) | comma list of physical ids that become logical 0, 1, ... |
| NPURT_MEMCPY_KIND | address | `address`: copies go by address, as on the hardware; a kind that contradicts the addresses is warned about once per call site (`infer` is the same); `strict`: such a kind is refused |
| NPURT_LAUNCH_BLOCKING / ASCEND_LAUNCH_BLOCKING | 0 | 1: every task runs synchronously at enqueue |
| NPURT_INLINE | 1 | 0: cheap tasks on an idle stream never run in the enqueuing thread (inline.py) |
| NPURT_TASK_STACKS | 0 | 1: tasks keep their enqueue stack; async errors show it |
| NPURT_MAX_STREAMS | SoC limit | streams per device, default streams included |
| NPURT_POISON_FREED | 0 | 1: device memory returned to the pool is filled with 0xA5 |
| NPURT_WORKERS | 2 | scheduler worker threads per device |
| NPURT_HANG_WARNING_S | 10 | a host wait longer than this warns what it is stuck on (0: never) |
| NPURT_HBM_SIZE | SoC capacity | device memory per simulated device, e.g. `4G`, `512M` (less than the SoC's: small machines, `ulimit -v`) |
| NPURT_DRIVER | simulated | `simulated`: the simulated NPU; `null`: addresses and accounting, no memory behind them and no kernel run (tests of the driver contract, the runtime's own overhead) |
| NPURT_SHARED_DEVICES | 1 | `1`: processes of one namespace share the simulated devices (as on hardware); `0`: private devices |
| NPURT_DEVICE_NAMESPACE | default | the namespace whose processes share the devices |
| NPURT_LOG_LEVEL | WARNING | level of npurt's log messages on stderr (DEBUG, INFO, WARNING, ERROR, OFF) |
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import dataclasses
import logging

from ..driver import DRIVERS
from ..driver.shared import NAMESPACE_PATTERN
from ..driver.soc import DEFAULT_SOC, SocSpec, soc_by_name
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


_UNITS = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}
MIN_HBM_SIZE = 64 << 20   # room for the pool's 2 MiB segments and a few huge pages


def parse_size(name: str, raw: str) -> int:
    """Bytes from "4G", "512MiB", "1.5g", "1073741824" (binary units)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", raw, re.I)
    if not m:
        raise InvalidValueError(f"environment variable {name}={raw!r} is not a size (examples: 4G, 512M, "
                                "1073741824)")
    return int(float(m.group(1)) * _UNITS[m.group(2).lower()])


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
    inline: bool = True           # NPURT_INLINE: cheap tasks on an idle stream run at enqueue (inline.py)
    task_stacks: bool = False
    max_streams: int | None = None
    poison_freed: bool = False
    workers: int = 2
    hang_warning_s: float = 10.0
    hbm_size: int | None = None   # NPURT_HBM_SIZE: device memory per device (None: the SoC's)
    log_level: int | None = None  # NPURT_LOG_LEVEL (None: logging's default, warnings and up)
    driver: str = "simulated"      # NPURT_DRIVER: npurt.driver.DRIVERS
    # NPURT_SHARED_DEVICES / NPURT_DEVICE_NAMESPACE: the namespace whose processes share the
    # simulated devices (None: devices private to this process)
    shared_namespace: str | None = None

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
        raw_hbm = os.environ.get("NPURT_HBM_SIZE", "").strip()
        hbm_size = None
        if raw_hbm:
            hbm_size = parse_size("NPURT_HBM_SIZE", raw_hbm)
            if hbm_size < MIN_HBM_SIZE:
                raise InvalidValueError(f"NPURT_HBM_SIZE={raw_hbm!r} is below the minimum of "
                                        f"{MIN_HBM_SIZE >> 20} MiB per device")
            hbm_size = hbm_size // (2 << 20) * (2 << 20)  # whole huge pages
        raw_level = os.environ.get("NPURT_LOG_LEVEL", "").strip().upper()
        log_level = None
        if raw_level:
            if raw_level not in LOG_LEVELS:
                raise InvalidValueError(f"NPURT_LOG_LEVEL={raw_level!r} must be one of {', '.join(LOG_LEVELS)}")
            log_level = LOG_LEVELS[raw_level]
        driver = os.environ.get("NPURT_DRIVER", "simulated").strip().lower() or "simulated"
        if driver not in DRIVERS:
            raise InvalidValueError(f"NPURT_DRIVER={driver!r} must be one of {', '.join(sorted(DRIVERS))}")
        return cls(
            driver=driver,
            shared_namespace=_shared_namespace(),
            soc=os.environ.get("NPURT_SOC", DEFAULT_SOC).strip() or DEFAULT_SOC,
            physical_devices=count,
            visible_devices=parse_visible_devices(os.environ.get("ASCEND_RT_VISIBLE_DEVICES"), count),
            memcpy_kind=kind,
            launch_blocking=_flag("NPURT_LAUNCH_BLOCKING", "ASCEND_LAUNCH_BLOCKING"),
            inline=os.environ.get("NPURT_INLINE", "1").strip().lower() not in ("0", "false", "no", "off"),
            task_stacks=_flag("NPURT_TASK_STACKS"),
            max_streams=max_streams,
            poison_freed=_flag("NPURT_POISON_FREED"),
            workers=max(1, _int("NPURT_WORKERS", 2)),
            hang_warning_s=hang_warning_s,
            hbm_size=hbm_size,
            log_level=log_level,
        )

    def spec(self) -> SocSpec:
        """The simulated SoC these settings describe (NPURT_SOC, NPURT_HBM_SIZE applied)."""
        try:
            spec = soc_by_name(self.soc)
        except KeyError as exc:
            raise InvalidValueError(f"NPURT_SOC: {exc.args[0]}") from None
        if self.hbm_size is None:
            return spec
        if self.hbm_size > spec.memory_bytes:
            raise InvalidValueError(f"NPURT_HBM_SIZE ({self.hbm_size >> 20} MiB) exceeds the "
                                    f"{spec.memory_bytes >> 30} GiB of {spec.name}; it can only simulate less memory")
        # the driver's reserve keeps its share of the capacity (whole 2 MiB pages)
        reserved = spec.system_reserved * self.hbm_size // spec.memory_bytes // (2 << 20) * (2 << 20)
        return dataclasses.replace(spec, memory_bytes=self.hbm_size, system_reserved=reserved)

    def apply_log_level(self) -> None:
        """NPURT_LOG_LEVEL: npurt's logger gets that level and its own stderr handler."""
        if self.log_level is None:
            return
        logger = logging.getLogger("npurt")
        logger.setLevel(self.log_level)
        if not any(getattr(h, "npurt_env", False) for h in logger.handlers):
            handler = logging.StreamHandler()
            handler.setFormatter(logging.Formatter("%(name)s %(levelname)s: %(message)s"))
            handler.npurt_env = True
            logger.addHandler(handler)
            logger.propagate = False  # shown once, by our handler


def _shared_namespace() -> str | None:
    """NPURT_SHARED_DEVICES (default 1: processes share the devices, as on hardware) and
    NPURT_DEVICE_NAMESPACE (default "default"): the group of processes that share them."""
    raw = os.environ.get("NPURT_SHARED_DEVICES", "1").strip() or "1"
    if raw not in ("0", "1"):
        raise InvalidValueError(f"NPURT_SHARED_DEVICES={raw!r} must be 1 (processes share the simulated "
                                "devices) or 0 (each process has devices of its own)")
    if raw == "0":
        return None
    namespace = os.environ.get("NPURT_DEVICE_NAMESPACE", "default").strip() or "default"
    if not NAMESPACE_PATTERN.fullmatch(namespace):
        raise InvalidValueError(f"NPURT_DEVICE_NAMESPACE={namespace!r} must be 1-64 letters, digits, "
                                "'_', '.' or '-'")
    return namespace


LOG_LEVELS = {"DEBUG": logging.DEBUG, "INFO": logging.INFO, "WARNING": logging.WARNING, "ERROR": logging.ERROR,
              "OFF": logging.CRITICAL + 10}


def ENV_VARIABLES(settings: Settings) -> list[tuple[str, str]]:  # noqa: N802 - a table, named as one
    """(variable, value in effect) for every setting, for `npurt info`."""
    names = {v: k for k, v in LOG_LEVELS.items()}
    spec = settings.spec()
    return [
        ("NPURT_SOC", settings.soc),
        ("NPURT_DEVICE_COUNT", str(settings.physical_devices)),
        ("ASCEND_RT_VISIBLE_DEVICES", ",".join(map(str, settings.visible_devices))),
        ("NPURT_HBM_SIZE", f"{spec.memory_bytes / 2**30:g} GiB per device"),
        ("NPURT_SHARED_DEVICES", "0" if settings.shared_namespace is None else "1"),
        ("NPURT_DEVICE_NAMESPACE", settings.shared_namespace or "(private devices)"),
        ("NPURT_MEMCPY_KIND", settings.memcpy_kind),
        ("NPURT_LAUNCH_BLOCKING", "1" if settings.launch_blocking else "0"),
        ("NPURT_INLINE", "1" if settings.inline else "0"),
        ("NPURT_TASK_STACKS", "1" if settings.task_stacks else "0"),
        ("NPURT_POISON_FREED", "1" if settings.poison_freed else "0"),
        ("NPURT_MAX_STREAMS", str(settings.max_streams or spec.max_streams)),
        ("NPURT_WORKERS", str(settings.workers)),
        ("NPURT_HANG_WARNING_S", f"{settings.hang_warning_s:g}"),
        ("NPURT_LOG_LEVEL", names.get(settings.log_level, "WARNING")),
        ("NPURT_DRIVER", settings.driver),
    ]
