"""Random numbers on npu: a per-device (seed, offset) generator, as CUDA's and the NPU's are.

Each random op takes the device's next offset when it is *queued* (in program order, whatever
stream it goes to) and runs with a CPU generator seeded from (seed, offset). So a seed fixes
every npu random op's numbers, `get_rng_state` / `set_rng_state` replay them (activation
checkpointing relies on that), and numbers do not depend on which thread or stream ran first.
They differ from CPU torch's for the same seed, as on real devices.

In a graph capture (torch_npu's graph-safe generator state, NPUGeneratorImpl.cpp): a random
op captured on a device takes an offset *within the graph* (0, 1, ... per capture, starting at
0), and reads the seed and base offset when it runs. Each replay takes the device's seed and
offset as they stand when the replay is queued, then advances the offset by what the graph
used (`replay_prologue`), so a replay draws what the same ops would draw eagerly at that
point, and the ops after it go on from there. During a capture `get_state` gives the
in-graph offset and `set_state` sets it; a new seed (`manual_seed`, `set_state`) must equal
the generator's ("... can be called during stream capture only if new seed is the same as
the original seed."), and `set_offset` / `get_offset` are refused.
`torch.Generator(device="npu")` cannot be made from Python (torch has no Python hook for a
backend's generator); a CPU generator passed explicitly is used as given.
"""
from __future__ import annotations


import torch

from ..runtime import capture_info, fork_safe_lock
from ..runtime import graph as _graph
from .optask import current_stream as _current_stream

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


class GraphRng:
    """The random state of one device's ops in one captured graph."""

    __slots__ = ("used", "replay")

    def __init__(self):
        self.used = 0                 # in-graph offsets taken so far (the graph's whole increment)
        self.replay = (DEFAULT_SEED, 0)  # (seed, base offset) of the replay now running

    def seed_of(self, k: int) -> int:
        seed, base = self.replay
        return _mix(seed, base + k)


_graph_rngs: dict = {}   # (runtime graph, device index) -> GraphRng, while the graph is captured


def _capturing(index: int):
    """The graph being captured on the device's current stream, or None."""
    status, graph = capture_info(_current_stream(index))
    return graph if status != _graph.STATUS_NONE else None


def _graph_rng(index: int) -> GraphRng | None:
    graph = _capturing(index)
    if graph is None:
        return None
    if graph.parent is not None:  # the body of a conditional task (graph_if.py): its replays draw no offset
        raise RuntimeError("RNG op during graph capture but generator is not registered with the graph being "
                           "captured: a random op inside a conditional node's body (a torch.cond branch) is not "
                           "supported")
    with _lock:
        return _graph_rngs.setdefault((graph, index), GraphRng())


def capture_epilogue(graph) -> dict:
    """At a capture's end: {device index: GraphRng} of the devices whose RNG the graph used."""
    with _lock:
        done = [key for key in _graph_rngs if key[0] is graph]
        return {index: _graph_rngs.pop((g, index)) for g, index in done}


def replay_prologue(index: int, rng: GraphRng) -> tuple[int, int]:
    """At a replay's queueing: the (seed, base offset) it draws from; the device's offset
    moves past what the graph uses."""
    with _lock:
        st = _state.setdefault(index, [DEFAULT_SEED, 0])
        start = (st[0], st[1])
        st[1] += rng.used
    return start


def next_seed(index: int) -> int:
    with _lock:
        st = _state.setdefault(index, [DEFAULT_SEED, 0])
        seed, st[1] = _mix(st[0], st[1]), st[1] + 1
    return seed


def seeded(fn, index: int):
    """fn with `generator=` a CPU generator for the device's next (seed, offset); in a
    capture, for the graph's next offset, seeded when the replay runs it."""
    rng = _graph_rng(index)
    if rng is None:
        seed = next_seed(index)

        def run(*args, **kwargs):
            kwargs["generator"] = torch.Generator().manual_seed(seed)
            return fn(*args, **kwargs)
        return run
    with _lock:
        k, rng.used = rng.used, rng.used + 1

    def replayed(*args, **kwargs):
        kwargs["generator"] = torch.Generator().manual_seed(rng.seed_of(k))
        return fn(*args, **kwargs)
    return replayed


def _check_capture_seed(seed: int, index: int) -> None:
    if seed != _state.get(index, [DEFAULT_SEED, 0])[0]:
        raise RuntimeError("NPUGeneratorImpl::set_current_seed can be called during stream capture only if new "
                           "seed is the same as the original seed.")


def manual_seed(seed: int, index: int) -> None:
    seed = int(seed) & _MASK
    if _capturing(index) is not None:
        _check_capture_seed(seed, index)
        return
    with _lock:
        _state[index] = [seed, 0]


def set_offset(offset: int, index: int) -> None:
    if _capturing(index) is not None:
        raise RuntimeError("Cannot call NPUGeneratorImpl::set_offset while in capture mode")
    with _lock:
        _state.setdefault(index, [DEFAULT_SEED, 0])[1] = int(offset)


def get_offset(index: int) -> int:
    if _capturing(index) is not None:
        raise RuntimeError("Cannot call NPUGeneratorImpl::get_offset while in capture mode")
    return _state.get(index, [DEFAULT_SEED, 0])[1]


def initial_seed(index: int) -> int:
    return _state.get(index, [DEFAULT_SEED, 0])[0]


def get_state(index: int) -> torch.Tensor:
    """The generator state as torch_npu and CUDA give it: 16 bytes, seed and offset (uint64 LE)."""
    seed, offset = _state.get(index, [DEFAULT_SEED, 0])
    rng = _graph_rng(index)
    if rng is not None:
        offset = rng.used
    raw = seed.to_bytes(8, "little") + offset.to_bytes(8, "little")
    return torch.tensor(list(raw), dtype=torch.uint8)


def set_state(state: torch.Tensor, index: int) -> None:
    if not isinstance(state, torch.Tensor) or state.dtype != torch.uint8 or state.numel() != 16:
        raise RuntimeError("an npu RNG state is a 16-byte torch.uint8 tensor (from get_rng_state)")
    raw = bytes(state.cpu().tolist())
    seed, offset = int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little")
    rng = _graph_rng(index)
    if rng is not None:
        _check_capture_seed(seed, index)
        with _lock:
            rng.used = offset
        return
    with _lock:
        _state[index] = [seed, offset]
