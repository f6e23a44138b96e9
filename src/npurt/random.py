"""Random device arrays, as torch makes them: `npurt.randn(2, 3, dtype=npurt.float16, device="npu:1")`.

The numbers come from one numpy Generator per process (PCG64), seeded by `manual_seed`; they
are drawn on the host at the call, in call order (so a seed fixes them whatever the streams
do), and copied to the device on the current stream like any host data. float16 and bfloat16
arrays are drawn in float32 and rounded.
"""
from __future__ import annotations


import numpy as np

from .runtime import fork_safe_lock
from .array.core import DeviceArray, as_dtype
from .array.creation import _size, to_device
from .exceptions import InvalidValueError

_lock = fork_safe_lock()
_generator = np.random.default_rng()


def manual_seed(seed: int) -> None:
    """Seed the generator of rand / randn / randint (torch.manual_seed, torch.npu.manual_seed)."""
    global _generator
    if not isinstance(seed, int) or isinstance(seed, bool):
        raise InvalidValueError(f"manual_seed needs an int, got {seed!r}")
    with _lock:
        _generator = np.random.default_rng(seed & 0xFFFF_FFFF_FFFF_FFFF)


seed = manual_seed


def _draw(fn: str, size, dtype, device, stream, draw) -> DeviceArray:
    shape, dtype, device = _size(fn, size, dtype, device)
    dt = as_dtype("float32" if dtype is None else dtype)
    if dt.kind != "f" and dt.name != "bfloat16":
        raise InvalidValueError(f"npurt.{fn} makes floating-point arrays; dtype {dt} is not one (use randint)")
    with _lock:
        host = draw(_generator, shape, np.float64 if dt == np.float64 else np.float32)
    return to_device(host.astype(dt, copy=False), stream=stream, device=device)


def randn(*size, dtype=None, device=None, stream=None) -> DeviceArray:
    """Standard normal samples: `randn(2, 3)` or `randn((2, 3), dtype, device)`."""
    return _draw("randn", size, dtype, device, stream, lambda g, s, t: g.standard_normal(s, dtype=t))


def rand(*size, dtype=None, device=None, stream=None) -> DeviceArray:
    """Uniform samples in [0, 1): `rand(2, 3)` or `rand((2, 3), dtype, device)`."""
    return _draw("rand", size, dtype, device, stream, lambda g, s, t: g.random(s, dtype=t))


def randint(low: int, high: int | None = None, size=(), dtype="int32", device=None, stream=None) -> DeviceArray:
    """Integers in [low, high) (torch's argument order; [0, low) when high is omitted)."""
    if high is None:
        low, high = 0, low
    dt = as_dtype(dtype)
    if dt.kind not in "iu":
        raise InvalidValueError(f"npurt.randint makes integer arrays; dtype {dt} is not one")
    if not high > low:
        raise InvalidValueError(f"npurt.randint: high ({high}) must be greater than low ({low})")
    with _lock:
        host = _generator.integers(low, high, size=size, dtype=dt)
    return to_device(np.asarray(host), stream=stream, device=device)
