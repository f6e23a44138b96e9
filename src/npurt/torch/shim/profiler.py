"""torch_npu.profiler: torch.profiler with torch_npu's names. Host (CPU) activity is traced by
torch; device activity is npurt's: run under `npurt run --profile` for its timeline."""
from __future__ import annotations

import enum

import torch.profiler as _tp

schedule = _tp.schedule
tensorboard_trace_handler = _tp.tensorboard_trace_handler
record_function = _tp.record_function


class ProfilerActivity(enum.Enum):
    CPU = "CPU"
    NPU = "NPU"


class ProfilerLevel:
    Level_none = "Level_none"
    Level0 = "Level0"
    Level1 = "Level1"
    Level2 = "Level2"


class AiCMetrics:
    AiCoreNone = "AiCoreNone"
    PipeUtilization = "PipeUtilization"
    ArithmeticUtilization = "ArithmeticUtilization"
    Memory = "Memory"
    MemoryL0 = "MemoryL0"
    ResourceConflictRatio = "ResourceConflictRatio"
    MemoryUB = "MemoryUB"
    L2Cache = "L2Cache"


class ExportType:
    Db = "db"
    Text = "text"


class _ExperimentalConfig:
    """Accepted for compatibility; its NPU-side switches have nothing to act on here."""

    def __init__(self, **kwargs):
        self.options = kwargs


class profile(_tp.profile):
    """torch_npu.profiler.profile(activities=[CPU, NPU], ...): torch.profiler.profile over the
    CPU activity (npu ops appear as the aten calls that queued them)."""

    def __init__(self, activities=None, schedule=None, on_trace_ready=None, record_shapes=False,
                 profile_memory=False, with_stack=False, with_flops=False, with_modules=False,
                 experimental_config=None, **kwargs):
        super().__init__(activities=[_tp.ProfilerActivity.CPU], schedule=schedule, on_trace_ready=on_trace_ready,
                         record_shapes=record_shapes, profile_memory=profile_memory, with_stack=with_stack,
                         with_flops=with_flops, with_modules=with_modules)
