"""Every environment variable npurt reads: its name, default and meaning, in one table.

`npurt info` prints them with the value in effect, and the docs' configuration table
(docs/configuration.md) is generated from `VARIABLES` when the site is built; a test holds the
table to the code (every variable the source reads is here, and everything here is read).
This module imports nothing: each layer keeps reading its own variables where it always did
(the runtime's in `npurt.runtime.config`, HCCL's in `npurt.hccl.config`, ...); this is the
one place that lists them.
"""
from dataclasses import dataclass


@dataclass(frozen=True)
class Variable:
    name: str
    default: str       # as a user would write it; "(unset)" when absence is the default
    meaning: str
    group: str         # who reads it: runtime, torch, hccl, launcher, C interface


VARIABLES: tuple[Variable, ...] = (
    # the runtime (npurt.runtime.config), read when it initializes
    Variable("NPURT_SOC", "Ascend910B3", "the simulated SoC: Ascend910B3, Ascend310P3 or Ascend910A", "runtime"),
    Variable("NPURT_DEVICE_COUNT", "2", "simulated physical devices (1..16, a server's worth)", "runtime"),
    Variable("ASCEND_RT_VISIBLE_DEVICES", "(all)", "comma list of physical ids that become logical devices "
             "0, 1, ...", "runtime"),
    Variable("NPURT_HBM_SIZE", "SoC capacity", "device memory per simulated device, e.g. 4G, 512M (less than "
             "the SoC's: small machines, ulimit -v)", "runtime"),
    Variable("NPURT_MEMCPY_KIND", "address", "address: copies go by address, as on the hardware (a "
             "contradicting kind is warned about once per call site; infer is the same); strict: refused",
             "runtime"),
    Variable("NPURT_LAUNCH_BLOCKING", "0", "1: every task runs synchronously at enqueue (errors point at "
             "their call)", "runtime"),
    Variable("ASCEND_LAUNCH_BLOCKING", "0", "CANN's name for NPURT_LAUNCH_BLOCKING", "runtime"),
    Variable("NPURT_INLINE", "1", "0: never run a cheap task in the thread that enqueued it (a small copy, "
             "record or built-in/torch kernel on an idle stream); every task goes to the scheduler's workers "
             "(docs/architecture.md, inline execution)", "runtime"),
    Variable("NPURT_TASK_STACKS", "0", "1: tasks keep their enqueue stack; asynchronous errors show it",
             "runtime"),
    Variable("NPURT_POISON_FREED", "0", "1: device memory returned to the pool is filled with 0xA5",
             "runtime"),
    Variable("NPURT_MAX_STREAMS", "SoC limit", "streams per device, default streams included", "runtime"),
    Variable("NPURT_WORKERS", "2", "scheduler worker threads per device", "runtime"),
    Variable("NPURT_SPEEDUPS", "1", "0: the pure-Python caching pool and malloc/free even where the C "
             "accelerator npurt._speedups is installed or can be built (npurt.runtime.accel)", "runtime"),
    Variable("NPURT_HANG_WARNING_S", "10", "a host wait longer than this many seconds warns what it is stuck "
             "on (0: never)", "runtime"),
    Variable("NPURT_DRIVER", "simulated", "simulated: the simulated NPU; null: addresses and accounting, no "
             "memory behind them and no kernel run (driver-contract tests, the runtime's own overhead)",
             "runtime"),
    Variable("NPURT_SHARED_DEVICES", "1", "1: the processes of a namespace share the simulated devices (one "
             "HBM in /dev/shm, equal device addresses, IPC memory and events), as on hardware; 0: each process "
             "has devices of its own", "runtime"),
    Variable("NPURT_DEVICE_NAMESPACE", "default", "the group of processes that share the simulated devices "
             "(letters, digits, _ . -): processes of different namespaces never see each other's devices "
             "(the test suite takes one per pytest process)", "runtime"),
    Variable("NPURT_LOG_LEVEL", "WARNING", "npurt's log messages on stderr: DEBUG, INFO, WARNING, ERROR, OFF",
             "runtime"),
    Variable("NPURT_FAULTS", "(unset)", "faults to inject, in the fault-spec language (docs/testing.md; "
             "npurt run --faults)", "runtime"),
    Variable("NPURT_FAULTS_SEED", "(unset)", "the seed of NPURT_FAULTS's random choices", "runtime"),
    Variable("NPURT_SCHEDULE", "(unset)", "random:SEED or choices:I,J,...: run the device under a controlled "
             "schedule, one task at a time (npurt run --schedule)", "runtime"),
    Variable("NPURT_SCHEDULE_TRACE", "(unset)", "a file the controlled schedule writes its choices to at exit",
             "runtime"),
    # torch on npu (npurt.torch)
    Variable("NPURT_TORCH_META_CHECK", "0", "1: check every op's meta-kernel output shapes against the CPU "
             "kernel's (a developer's check of the per-op plans; slow)", "torch"),
    Variable("NPURT_HOST_BACKING_CHECK", "1", "0: do not refuse npu tensors of 1 GiB or more that the host's "
             "available memory cannot back (torch.OutOfMemoryError instead of the OOM killer; "
             "npurt/torch/host_backing.py)", "torch"),
    Variable("PYTORCH_NPU_ALLOC_CONF", "(unset)", "torch_npu's caching-allocator settings, key:value,... "
             "(docs/torch.md: keys checked as torch_npu does; per_process_memory_fraction and "
             "expandable_segments take effect)", "torch"),
    Variable("PYTORCH_ALLOC_CONF", "(unset)", "torch's name for PYTORCH_NPU_ALLOC_CONF (setting both is an error)",
             "torch"),
    Variable("TORCH_NPU_DEVICE_CAPABILITY", "(unset)", "major.minor that torch.npu.get_device_capability() "
             "returns (unset: None, as torch_npu)", "torch"),
    Variable("TORCH_ACL_INIT_CONFIG_PATH", "(unset)", "a user acl.json torch_npu checks at its first set_device "
             "(exists, parses as JSON, has defaultDevice.default_device \"0\": the lazy set_device mode of CANN "
             "8.3.RC1+)", "torch"),
    Variable("ACL_OP_INIT_MODE", "1", "torch_npu's operator init mode (0, 1, 2); other values warn and read as "
             "the default (1 on a 910B with CANN 8.3.RC1+)",
             "torch"),
    Variable("TASK_QUEUE_ENABLE", "1", "torch_npu's task queue switch; read only for PER_STREAM_QUEUE's rule",
             "torch"),
    Variable("PER_STREAM_QUEUE", "0", "1 (with TASK_QUEUE_ENABLE on, launches not blocking): an ExternalStream's "
             "npu_stream raises, as torch_npu's per-stream task queue cannot hand it out", "torch"),
    Variable("HCCL_BLOCKING_WAIT", "0", "1: a torch.distributed work's wait() also blocks the host until the "
             "collective ran (torch_npu's meaning; by default it only orders the current stream)", "torch"),
    # collectives (npurt.hccl)
    Variable("HCCL_EXEC_TIMEOUT", "1836", "seconds a collective waits for the other ranks (0: forever)", "hccl"),
    Variable("HCCL_CONNECT_TIMEOUT", "120", "seconds communicator creation waits for the other ranks", "hccl"),
    Variable("RANK", "(unset)", "this process's rank (set by npurt launch, torchrun or the MPI launcher)", "hccl"),
    Variable("WORLD_SIZE", "(unset)", "the number of ranks", "hccl"),
    Variable("LOCAL_RANK", "(unset)", "this rank's index on its host: the device it uses", "hccl"),
    Variable("LOCAL_WORLD_SIZE", "(unset)", "ranks per host", "hccl"),
    Variable("NPURT_HOST_INDEX", "(unset)", "which simulated host a rank is on (set by npurt launch --per-host)",
             "hccl"),
    # the programs
    Variable("NPURT_MPIEXEC", "(the mpich wheel's)", "the MPI launcher npurt launch starts the ranks with",
             "launcher"),
    Variable("NPURT_CANN_HOME", "(unset)", "the CANN prefix native programs run against (exported by the "
             "prefix's set_env.sh; else the one npurt cann-home makes)", "launcher"),
    # read by libacl_rt's Python start in a native program (set by npurt run ./app)
    Variable("NPURT_SANITIZE", "(unset)", "the sanitizer's tools (all, or race,mem,...) for a native program "
             "(npurt run --sanitize ./app)", "C interface"),
    Variable("NPURT_SANITIZE_REPORT", "(unset)", "the JSON file a native program's sanitizer writes its "
             "reports to", "C interface"),
    Variable("NPURT_PROFILE", "(unset)", "the directory a native program's profile goes to (npurt run "
             "--profile DIR ./app)", "C interface"),
)

BY_NAME = {v.name: v for v in VARIABLES}


def table_markdown() -> str:
    """The configuration table of the docs: one row per variable, grouped by reader."""
    rows = ["| variable | default | meaning | read by |", "| --- | --- | --- | --- |"]
    rows += [f"| `{v.name}` | {v.default} | {v.meaning} | {v.group} |" for v in VARIABLES]
    return "\n".join(rows) + "\n"


if __name__ == "__main__":   # `python -m npurt.envvars`: the table the README holds
    print(table_markdown(), end="")
