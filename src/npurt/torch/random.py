"""Random numbers on npu: a per-device (seed, offset) generator, as CUDA's and the NPU's are.

Each random op takes the device's next offset when it is *queued* (in program order, whatever
stream it goes to) and runs with a CPU generator seeded from (seed, offset). So a seed fixes
every npu random op's numbers, `get_rng_state` / `set_rng_state` replay them (activation
checkpointing relies on that), and numbers do not depend on which thread or stream ran first.
They differ from CPU torch's for the same seed, as on real devices.
`torch.Generator(device="npu")` cannot be made from Python (torch has no Python hook for a
backend's generator); a CPU generator passed explicitly is used as given.
"""
from __future__ import annotations


import torch

from ..runtime import fork_safe_lock

DEFAULT_SEED = 67280421310721  # c10's default_rng_seed_val, the CUDA default
_MASK = (1 << 64) - 1
_lock = fork_safe_lock()
_state: dict[int, list[int]] = {}   # device index -> [seed, offset]


def _mix(seed: int, offset: int) -> int:
    """splitmix64 of (seed, offset): a well-spread 63-bit seed for one op's generator."""
    z = (seed + (offset + 1) * 0x9E3779B97F4A7C15) & _MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
    return (z ^ (z >> 31)) >> 1


def next_seed(index: int) -> int:
    with _lock:
        st = _state.setdefault(index, [DEFAULT_SEED, 0])
        seed, st[1] = _mix(st[0], st[1]), st[1] + 1
    return seed


def seeded(fn, index: int):
    """fn with `generator=` a CPU generator for the device's next (seed, offset)."""
    seed = next_seed(index)

    def run(*args, **kwargs):
        kwargs["generator"] = torch.Generator().manual_seed(seed)
        return fn(*args, **kwargs)
    return run


def manual_seed(seed: int, index: int) -> None:
    with _lock:
        _state[index] = [int(seed) & _MASK, 0]


def initial_seed(index: int) -> int:
    return _state.get(index, [DEFAULT_SEED, 0])[0]


def get_state(index: int) -> torch.Tensor:
    """The generator state as torch_npu and CUDA give it: 16 bytes, seed and offset (uint64 LE)."""
    seed, offset = _state.get(index, [DEFAULT_SEED, 0])
    raw = seed.to_bytes(8, "little") + offset.to_bytes(8, "little")
    return torch.tensor(list(raw), dtype=torch.uint8)


def set_state(state: torch.Tensor, index: int) -> None:
    if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8 or state.numel() != 16:
        raise RuntimeError("an npu RNG state is a 16-byte torch.uint8 tensor (from get_rng_state)")
    raw = bytes(state.cpu().tolist())
    with _lock:
        _state[index] = [int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")]
