"""torch_npu's synchronization debug mode: `torch.npu.set_sync_debug_mode` / `get_sync_debug_mode`.

As torch_npu's (torch_npu/npu/utils.py, torch_npu/csrc/npu/Module.cpp, NPUFunctions.cpp):
0 / "default" off, 1 / "warn" a synchronizing operation warns "called a synchronizing NPU
operation", 2 / "error" it raises RuntimeError with those words. The synchronizing operations
that check it here are the ones torch_npu checks in aclrtSynchronizeStreamWithTimeout:
`Stream.synchronize()` and the blocking device-to-host copy (`.cpu()`, `.item()`, `.tolist()`).
Any other value: RuntimeError "invalid value of debug_mode, ...".
"""
from __future__ import annotations

import warnings

_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


_sync_debug_mode = 0


def set_sync_debug_mode(debug_mode) -> None:
    global _sync_debug_mode
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise RuntimeError("invalid value of debug_mode, expected one of `default`, `warn`, `error`")
        debug_mode = _DEBUG_MODES[debug_mode]
    if isinstance(debug_mode, bool) or not isinstance(debug_mode, int):
        raise RuntimeError("invalid argument to set_sync_debug_mode, debug_mode type must long")
    if not 0 <= debug_mode <= 2:
        raise RuntimeError("invalid value of debug_mode, expected one of 0,1,2")
    warnings.warn("Synchronization debug mode is a prototype feature and does not yet detect all "
                  "synchronizing operations")
    _sync_debug_mode = debug_mode


def get_sync_debug_mode() -> int:
    return _sync_debug_mode


def on_sync() -> None:
    """Called by the synchronizing operations (torch_npu's warn_or_error_on_sync)."""
    if _sync_debug_mode == 2:
        raise RuntimeError("called a synchronizing NPU operation")
    if _sync_debug_mode == 1:
        warnings.warn("called a synchronizing NPU operation")


