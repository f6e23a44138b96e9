"""`PYTORCH_NPU_ALLOC_CONF`: the caching allocator's settings, parsed and checked as torch_npu does.

torch_npu reads `PYTORCH_NPU_ALLOC_CONF` (or torch's `PYTORCH_ALLOC_CONF`; both set is an error)
once, when its allocator starts, and `torch.npu.memory._set_allocator_settings(s)` re-parses a
string later (torch_npu/csrc/core/npu/NPUAllocatorConfig.cpp, NPUCachingAllocator.cpp). The
string is `key:value` pairs separated by commas; a value may be a bracketed list
(`roundup_power2_divisions:[256:1,512:2,>:4]`). Tokens are split as c10's ConfigTokenizer
splits them (`,` `:` `[` `]` are tokens, whitespace is dropped).

Keys: torch's device-generic ones that torch_npu takes (max_split_size_mb,
garbage_collection_threshold, roundup_power2_divisions, expandable_segments,
pinned_use_background_threads, large_segment_size_mb, max_non_split_rounding_mb,
pinned_max_round_threshold_mb, pinned_max_cached_size_mb), which torch's own parser
(`torch._C._accelerator_setAllocatorSettings`, c10's AcceleratorAllocatorConfig) checks with
its own messages, and torch_npu's (pin_memory_expandable_segments, pinned_mem_register,
base_addr_aligned_kb, page_size, segment_size_mb, multi_stream_lazy_reclaim,
pinned_reserve_segment_size_mb, per_process_memory_fraction, release_lock_on_npumalloc,
throw_on_npumalloc_oom), checked here with torch_npu's messages. Any other key is a ValueError
"Unrecognized key '...' in NPU allocator config". `_set_allocator_settings` accepts only
expandable_segments, max_split_size_mb, max_non_split_rounding_mb, release_lock_on_npumalloc,
throw_on_npumalloc_oom, per_process_memory_fraction, pinned_max_round_threshold_mb and
pinned_max_cached_size_mb. `expandable_segments` together with `max_split_size_mb` or
`garbage_collection_threshold` is refused, as there.

What takes effect on npurt: `per_process_memory_fraction` caps npu tensor memory per device
(as `torch.npu.set_per_process_memory_fraction`), `expandable_segments` is read by the
expandable-segments allocator (`settings().expandable_segments`), and max_split_size_mb,
max_non_split_rounding_mb, garbage_collection_threshold, roundup_power2_divisions,
large_segment_size_mb and segment_size_mb shape npu tensors' large blocks (caching.py). The
pinned-memory keys, page_size, base_addr_aligned_kb, multi_stream_lazy_reclaim and the lock /
OOM switches are kept and reported (`settings()`) only.

The environment is read on the allocator's first use, not at `import torch_npu`.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field, replace

import torch

from ..runtime import fork_safe_lock
from . import caching, storage

# torch's device-generic keys torch_npu takes (kNPUSupportAccKeys)
ACCELERATOR_KEYS = frozenset({
    "max_split_size_mb", "garbage_collection_threshold", "roundup_power2_divisions", "expandable_segments",
    "pinned_use_background_threads", "large_segment_size_mb", "max_non_split_rounding_mb",
    "pinned_max_round_threshold_mb", "pinned_max_cached_size_mb"})
# torch_npu's own keys (NPUAllocatorConfig::getKeys)
NPU_KEYS = frozenset({
    "pin_memory_expandable_segments", "pinned_mem_register", "base_addr_aligned_kb", "page_size",
    "segment_size_mb", "multi_stream_lazy_reclaim", "pinned_reserve_segment_size_mb",
    "per_process_memory_fraction", "release_lock_on_npumalloc", "throw_on_npumalloc_oom"})
# what torch_npu.npu.memory._set_allocator_settings() may change after start
RUNTIME_SETTABLE = frozenset({
    "expandable_segments", "max_split_size_mb", "max_non_split_rounding_mb", "release_lock_on_npumalloc",
    "throw_on_npumalloc_oom", "per_process_memory_fraction", "pinned_max_round_threshold_mb",
    "pinned_max_cached_size_mb"})

MB = 1024 * 1024
ALIGN_ROUND_LARGE = 16 * 1024  # torch_npu's kAlignRoundLarge: base_addr_aligned_kb is 0..16


@dataclass(frozen=True)
class AllocatorSettings:
    """The settings in effect (defaults: torch_npu's)."""

    max_split_size: int | None = None             # bytes; None: no limit (torch's SIZE_MAX)
    max_non_split_rounding_size: int | None = None
    garbage_collection_threshold: float = 0.0
    roundup_power2_divisions: tuple = ()          # the raw list, as written
    expandable_segments: bool = False
    pinned_use_background_threads: bool = False
    large_segment_size: int = 20 * MB
    pinned_max_round_threshold: int | None = None
    pinned_max_cached_size: int | None = None
    pin_memory_expandable_segments: bool = False
    pinned_mem_register: bool = False
    base_addr_aligned_size: int = ALIGN_ROUND_LARGE
    page_size_1g: bool = False
    segment_size: int = 0
    multi_stream_lazy_reclaim: bool = False
    pinned_reserve_segment_size_mb: int = 0
    per_process_memory_fraction: float = 1.0
    release_lock_on_npumalloc: bool = False
    throw_on_npumalloc_oom: bool = False
    text: str = ""                                # the last string parsed
    keys: frozenset = field(default_factory=frozenset)  # the keys that string set


_settings = AllocatorSettings()
_lock = fork_safe_lock()


def tokenize(text: str) -> list[str]:
    """c10's ConfigTokenizer: `,` `:` `[` `]` are tokens of their own, whitespace is dropped."""
    tokens, buf = [], ""
    for ch in text:
        if ch in ",:[]":
            if buf:
                tokens.append(buf)
                buf = ""
            tokens.append(ch)
        elif not ch.isspace():
            buf += ch
    if buf:
        tokens.append(buf)
    return tokens


class _Tokens:
    def __init__(self, text: str):
        self.t = tokenize(text)

    def __len__(self):
        return len(self.t)

    def __getitem__(self, i):
        if i >= len(self.t):
            raise RuntimeError("Index out of bounds in ConfigTokenizer")
        return self.t[i]

    def expect(self, i: int, token: str) -> None:
        if i >= len(self.t) or self.t[i] != token:
            got = self.t[i] if i < len(self.t) else "the end"
            raise ValueError(f"Error parsing CachingAllocator settings, expected '{token}' but got {got!r}")

    def skip_key(self, i: int) -> int:
        """The index of the key's value (of the closing ']' for a list)."""
        self.expect(i + 1, ":")
        i += 2
        self[i]
        if self.t[i] != "[":
            return i
        while i + 1 < len(self.t) and self.t[i + 1] != "]":
            i += 1
        if i + 1 >= len(self.t):
            raise RuntimeError("Expected closing bracket ']' in ConfigTokenizer but reached end of config")
        return i + 1

    def value(self, i: int, what: str) -> str:
        """The single value of the key at i-2 ..., or torch_npu's 'expecting ... value' error."""
        if i >= len(self.t):
            raise ValueError(f"Error, expecting {what} value")
        return self.t[i]


def _bool(tokens: _Tokens, i: int, key: str) -> bool:
    v = tokens.value(i, key)
    if v not in ("True", "False"):
        raise ValueError(f"Expected a single True/False argument for {key}")
    return v == "True"


def _int_in(tokens: _Tokens, i: int, key: str, low: int, high: int, unit: str = "") -> int:
    v = tokens.value(i, key)
    if not v.isdigit():
        raise ValueError(f"CachingAllocator option {key} is invalid.")
    n = int(v)
    if str(n) != v or not low <= n <= high:
        raise ValueError(f"CachingAllocator option {key} error, must be [{low}~{high}], dtype is int"
                         if not unit else f"CachingAllocator option {key} error, must be [{low}, {high}], "
                         "dtype is int")
    return n


def _size_mb(v: str, key: str) -> int:
    try:
        return int(v) * MB
    except ValueError:
        raise ValueError(f"CachingAllocator option {key} is invalid: {v!r} is not a number of MB") from None


def parse(text: str, allowed: frozenset | None = None, base: AllocatorSettings | None = None) -> AllocatorSettings:
    """The settings `text` makes (over `base`, default: torch_npu's defaults); ValueError names
    the first bad key or value. `allowed`: the only keys accepted (`_set_allocator_settings`)."""
    tokens = _Tokens(text)
    s = replace(base or AllocatorSettings())
    keys = set()
    i = 0
    while i < len(tokens):            # pass 1: every key known (and allowed)
        key = tokens[i]
        if key not in ACCELERATOR_KEYS and key not in NPU_KEYS:
            raise ValueError(f"Unrecognized key '{key}' in NPU allocator config, ")
        if allowed is not None and key not in allowed:
            raise ValueError(f"torch_npu.npu.memory._set_allocator_settings() unsupported setting: {key}")
        keys.add(key)
        i = tokens.skip_key(i)
        if i + 1 < len(tokens):
            tokens.expect(i + 1, ",")
            i += 1
        i += 1
    if text.strip():
        # torch's own parser checks the device-generic keys (its messages: ValueError), and keeps
        # torch's AcceleratorAllocatorConfig in step, as torch_npu does
        torch._C._accelerator_setAllocatorSettings(text)
    changes: dict = {}
    i = 0
    while i < len(tokens):            # pass 2: the values
        key = tokens[i]
        v = i + 2
        if key == "max_split_size_mb":
            changes["max_split_size"] = _size_mb(tokens.value(v, key), key)
        elif key == "max_non_split_rounding_mb":
            changes["max_non_split_rounding_size"] = _size_mb(tokens.value(v, key), key)
        elif key == "garbage_collection_threshold":
            changes["garbage_collection_threshold"] = float(tokens.value(v, key))
        elif key == "roundup_power2_divisions":
            end = tokens.skip_key(i)
            changes["roundup_power2_divisions"] = tuple(t for t in tokens.t[v:end + 1] if t not in {"[", "]", ",", ":"})
        elif key == "expandable_segments":
            changes["expandable_segments"] = tokens.value(v, key) in ("True", "true")
        elif key == "pinned_use_background_threads":
            changes["pinned_use_background_threads"] = tokens.value(v, key) in ("True", "true")
        elif key == "large_segment_size_mb":
            changes["large_segment_size"] = _size_mb(tokens.value(v, key), key)
        elif key == "pinned_max_round_threshold_mb":
            changes["pinned_max_round_threshold"] = _size_mb(tokens.value(v, key), key)
        elif key == "pinned_max_cached_size_mb":
            changes["pinned_max_cached_size"] = _size_mb(tokens.value(v, key), key)
        elif key in ("pin_memory_expandable_segments", "pinned_mem_register", "multi_stream_lazy_reclaim",
                     "release_lock_on_npumalloc", "throw_on_npumalloc_oom"):
            changes[key] = _bool(tokens, v, key)
        elif key == "base_addr_aligned_kb":
            changes["base_addr_aligned_size"] = _int_in(tokens, v, key, 0, ALIGN_ROUND_LARGE // 1024) * 1024
        elif key == "page_size":
            if tokens.value(v, key) != "1g":
                raise ValueError(f"Unsupported page_size value: {tokens.value(v, key)}")
            changes["page_size_1g"] = True
        elif key == "segment_size_mb":
            changes["segment_size"] = _int_in(tokens, v, key, 20, 512, unit="mb") * MB
        elif key == "per_process_memory_fraction":
            try:
                fraction = float(tokens.value(v, key))
            except ValueError:
                raise ValueError(f"per_process_memory_fraction is invalid: {tokens.value(v, key)!r}") from None
            if not 0.0 <= fraction <= 1.0:
                raise ValueError("per_process_memory_fraction is invalid, set it in [0.0, 1.0]")
            changes["per_process_memory_fraction"] = fraction
        elif key == "pinned_reserve_segment_size_mb":
            changes["pinned_reserve_segment_size_mb"] = int(tokens.value(v, key))
        i = tokens.skip_key(i)
        i += 2 if i + 1 < len(tokens) else 1
    s = replace(s, **changes, text=text, keys=frozenset(keys | set(s.keys)))
    if s.expandable_segments and (s.max_split_size is not None or s.garbage_collection_threshold != 0):
        raise RuntimeError("`max_split_size_mb` or `garbage_collection_threshold`, cannot be enabled with "
                           "`expandable_segments`, please set `expandable_segments` to `False`.")
    if s.pinned_mem_register and s.pin_memory_expandable_segments:
        s = replace(s, pinned_mem_register=False)  # torch_npu: not together; it warns and turns it off
    return s


def from_environment(environ=os.environ) -> AllocatorSettings:
    """The settings of PYTORCH_NPU_ALLOC_CONF (or PYTORCH_ALLOC_CONF); both set is an error."""
    npu, acc = environ.get("PYTORCH_NPU_ALLOC_CONF"), environ.get("PYTORCH_ALLOC_CONF")
    if npu is not None and acc is not None:
        raise ValueError("Both PYTORCH_NPU_ALLOC_CONF and PYTORCH_ALLOC_CONF have been set, please set only "
                         "one of them.")
    text = npu if npu is not None else acc
    return parse(text) if text else AllocatorSettings()


_loaded = False        # the environment's settings were parsed (on the allocator's first use)
_ON_CHANGE: list = []  # callables run after the settings changed (mem_pools.refresh)


def on_change(fn) -> None:
    _ON_CHANGE.append(fn)


def settings() -> AllocatorSettings:
    """The settings in effect now (the environment's are parsed on first use)."""
    if not _loaded:
        start()
    return _settings


def configure(new: AllocatorSettings) -> None:
    """Make `new` the settings in effect and apply them: the memory fraction, the large-block
    rules (caching.py), the routing of expandable segments (the on_change callbacks)."""
    global _settings
    with _lock:
        old, _settings = _settings, new
    caching.set_rules(new)
    if new.per_process_memory_fraction != old.per_process_memory_fraction or \
            "per_process_memory_fraction" in new.keys - old.keys:
        for index in range(torch.npu.device_count()):
            storage.set_fraction(index, new.per_process_memory_fraction)
    for fn in _ON_CHANGE:
        fn()


def start() -> None:
    """The allocator's first use (the first npu allocation, or a call that reads the settings):
    the environment's settings are parsed then, as torch_npu's allocator parses them when it
    starts, so a process may still set PYTORCH_NPU_ALLOC_CONF after `import torch_npu`."""
    if not _loaded:
        load_environment()


def load_environment() -> None:
    """Parse the environment's settings now. Bad settings raise, and again at the next use."""
    global _loaded
    _loaded = True  # (configure's callbacks read the settings)
    try:
        configure(from_environment())
    except Exception:
        _loaded = False
        raise


def set_allocator_settings(text: str) -> None:
    """torch_npu.npu.memory._set_allocator_settings: change the run-time-settable keys."""
    if not isinstance(text, str):
        raise TypeError(f"_set_allocator_settings expects a str, got {type(text).__name__}")
    configure(parse(text, allowed=RUNTIME_SETTABLE, base=settings()))


storage.ON_START.append(start)  # the first npu allocation starts the allocator
