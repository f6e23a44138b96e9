"""Runtime layer: devices, contexts, memory, streams, events, the scheduler, kernels.

Its operations (`npurt.runtime.malloc`, `create_stream`, `memcpy_async`, ...) are plain
functions that raise `NpuError`s carrying the real aclError codes; see `api/`.
"""
import sys as _sys

if not getattr(_sys, "_is_gil_enabled", lambda: True)():
    raise ImportError("npurt's lock-free fast paths (memory pool, scheduler) rely on the GIL; "
                      "run it on a CPython build with the GIL enabled (not a free-threaded build)")

from . import address, constants, dtypes  # noqa: E402
from .api import *  # noqa: F401,F403 - the runtime's operations
from .context import (PER_THREAD, Context, bind, current_context, current_stream_on, current_streams, peek_context,
                      set_current_stream)
from .device import Device
from .errors import (AddressUnalignedError, ContextError, DeadlockError, EventError, FeatureNotSupportedError,
                     InvalidDeviceError, InvalidHandleError, InvalidValueError, NotInitializedError,
                     NpuError, OutOfMemoryError, ResourceExhaustedError, StreamAbortedError,
                     SubscriptionError, SyncTimeoutError, TaskError, error_name, get_last_error,
                     get_recent_err_msg, set_last_error, ParamInvalidError)
from .address import Span, dead_address_message, record_use, resolve
from .config import ENV_VARIABLES, Settings
from .errors import MemcpyKindWarning, as_int, register_code_names
from .event import Event, RecordTask, WaitTask
from .faults import FAULTS, FaultSpecError, operations_of as _operations_of
from . import api as _api
from .memory import FREE as BLOCK_FREE, LIVE as BLOCK_LIVE, PENDING as BLOCK_PENDING, note_use, note_uses
from .vmm import reserved_pool
from .memory_take import take_at
from .memops import KIND_NAMES as MEMCPY_KIND_NAMES
from .warn import HangWarning, LeakWarning
from .watchdog import WATCHDOG
from .forking import fork_safe_lock, on_fork_child
from .handles import HandleTable, table as handle_table
from .memory import DeviceMemory as _DeviceMemory
from .schedule import SCHEDULE, ScheduleSpecError
from .schedule import parse as parse_schedule
from .observers import API_SURFACES, HOOKS
from .runtime import RUNTIME
from .scheduler import Blocker
from .task_failures import task_error
from .stream import Stream, compute_in_c, enqueue_task
from .tasks import HostFuncTask, Task
from .inline import MAX_BYTES as INLINE_MAX_BYTES, cheap_bytes
from . import graph
from .graph import (CaptureError, Graph, capture_begin, capture_end, capture_info, destroy_graph, execute,
                    execute_async, graph_of)
from . import graph_cond, graph_edit, model_build
from .notify import (Notify, create_notify, destroy_notify, notify_of, record_notify, value_wait, value_write,
                     wait_and_reset_notify)
from . import ipc
from ..driver.shared import detach_all as detach_shared_devices
from .ipc import ipc_mem_close, ipc_mem_get_export_key, ipc_mem_import_by_key, ipc_mem_set_import_pid
from .ipc_sync import (IpcEvent, IpcNotify, ipc_get_event_handle, ipc_open_event_handle, notify_get_export_key,
                       notify_import_by_key, notify_set_import_pid)
from .accel import describe as accelerator, dlpack_capsule
from .entries import allocation_record, fast_entry, is_fast_entry

# malloc and free of every face: C entry points with the C accelerator (entries.py); the
# Python operations stay in api/ (what fault injection gates and the entries fall back to)
malloc = fast_entry("malloc", _api.malloc)
free = fast_entry("free", _api.free)

# The surface: everything above the runtime (faces, clients, tools, the Pythonic API) imports
# only these names, from `npurt.runtime` itself (tests/test_architecture.py holds it).
__all__ = [
    # data: ACL constants and aclError codes; the one dtype table (aclDataType, numpy, sizes, bfloat16)
    'constants', 'dtypes',
    # addresses: resolve(rt, addr, nbytes, role) -> Span (the allocation holding it); the
    # `address` module's host probes and views (view, host_view, is_device, VA_BASE, ...)
    'address', 'Span', 'dead_address_message', 'record_use', 'resolve',
    # objects and the one owner of process state
    'Blocker', 'CallbackTask', 'Context', 'HandleTable', 'PER_THREAD', 'bind', 'handle_table', 'Device', 'Event', 'HostFuncTask', 'RUNTIME', 'Stream',
    'Task', 'current_context', 'peek_context', 'task_error', 'RecordTask', 'WaitTask',
    # inline execution (inline.py): what a task may touch and still run in the enqueuing thread
    'INLINE_MAX_BYTES', 'cheap_bytes',
    # Stream.enqueue(task, holders=holders) of a task just made, in C (None without the
    # extension): the Pythonic API's per-op tasks, event records, kernel launches; which of
    # them the C run loop computes
    'enqueue_task', 'compute_in_c',
    # the current stream per thread and device
    'current_stream_on', 'current_streams', 'set_current_stream',
    # the C accelerator: which pool runs (a line for `npurt info`), C entry points of malloc/free,
    # DLPack capsules in C (or None)
    'accelerator', 'allocation_record', 'dlpack_capsule', 'fast_entry', 'is_fast_entry',
    # observers; fault injection (faults.py) and controlled schedules (schedule.py)
    'HOOKS', 'API_SURFACES', 'FAULTS', 'FaultSpecError', 'SCHEDULE', 'ScheduleSpecError', 'parse_schedule',
    # settings
    'ENV_VARIABLES', 'Settings',
    # stream-ordered use of memory (what a task holds, retired with it), the watchdog's timers
    'note_use', 'note_uses', 'WATCHDOG', 'BLOCK_LIVE', 'BLOCK_FREE', 'BLOCK_PENDING', 'MEMCPY_KIND_NAMES',
    # a caching pool on a reserved address range (torch's expandable segments and MemPools)
    'reserved_pool',
    # a block at a given address made live again (torch's checkpointed private pools)
    'take_at',
    # processes: module-level locks a forked child gets back unlocked, handlers run in the child
    'fork_safe_lock', 'on_fork_child',
    # errors and warnings; as_int: the runtime's exact-int argument check
    'HangWarning', 'LeakWarning', 'MemcpyKindWarning', 'as_int', 'register_code_names',
    'AddressUnalignedError', 'ContextError', 'DeadlockError', 'EventError',
    'FeatureNotSupportedError', 'InvalidDeviceError', 'InvalidHandleError', 'InvalidValueError',
    'NotInitializedError', 'NpuError', 'OutOfMemoryError', 'ParamInvalidError',
    'ResourceExhaustedError', 'StreamAbortedError', 'SubscriptionError', 'SyncTimeoutError',
    'TaskError', 'error_name', 'get_last_error', 'get_recent_err_msg', 'set_last_error',
    # kernels: Python @kernel functions and host-built native kernels, binaries, launches
    'GM', 'KernelFunction', 'KernelTrap', 'NativeKernel', 'binary_get_function', 'binary_load',
    'binary_load_from_data', 'binary_load_from_file', 'binary_of', 'binary_unload', 'create_binary',
    'destroy_binary', 'function_handle', 'function_of', 'get_function_addr', 'get_function_name',
    'kernel_args_append', 'kernel_args_append_place_holder', 'kernel_args_finalize',
    'kernel_args_get_handle_mem_size', 'kernel_args_get_mem_size', 'kernel_args_get_place_holder_buffer',
    'kernel_args_init', 'kernel_args_init_by_user_mem', 'kernel_args_para_update', 'launch', 'launch_kernel',
    'launch_kernel_with_config', 'launch_kernel_with_host_args', 'launch_native', 'native_kernel_at',
    'enqueue_launch', 'host_bytes', 'kernel_function', 'launch_function', 'resolve_dtype',
    'set_kernel_task_params',
    'register_cpu_func', 'reduce_async',
    # ACL graphs: capture as a stream mode, replay (graph.py; `graph` is the module: modes, THREAD, exchange_mode)
    'graph', 'CaptureError', 'Graph', 'capture_begin', 'capture_end', 'capture_info', 'destroy_graph', 'execute',
    'execute_async', 'graph_of',
    # editing graphs (graph_edit.py: task groups, per-task queries), conditional tasks (graph_cond.py),
    # built models, labels, stream activation and switches (model_build.py): the modules
    'graph_edit', 'graph_cond', 'model_build',
    # notifies and value waits (notify.py)
    'Notify', 'create_notify', 'destroy_notify', 'notify_of', 'record_notify', 'wait_and_reset_notify',
    'value_write', 'value_wait',
    # IPC between the processes sharing a device (ipc.py: memory, `ipc` the module: flags; ipc_sync.py)
    'ipc', 'IpcEvent', 'IpcNotify', 'ipc_get_event_handle', 'ipc_mem_close', 'ipc_mem_get_export_key',
    'ipc_mem_import_by_key', 'ipc_mem_set_import_pid', 'ipc_open_event_handle', 'notify_get_export_key',
    'notify_import_by_key', 'notify_set_import_pid', 'detach_shared_devices',
    # operations (api/, one module per ACL group)
    'AllocatorDesc', 'allocator_create_desc', 'allocator_destroy_desc', 'allocator_of',
    'allocator_register', 'allocator_set', 'allocator_unregister', 'check_device_id',
    'check_device_range', 'check_malloc_config', 'cmo_async', 'copy_array_async', 'create_context',
    'create_event', 'create_stream', 'ctx_get_sys_param_opt', 'ctx_set_sys_param_opt',
    'current_device', 'destroy_context', 'destroy_event', 'destroy_stream', 'device_by_id',
    'device_can_access_peer', 'device_disable_peer_access', 'device_enable_peer_access',
    'device_get_bare_tgid', 'device_get_limit', 'device_get_stream_priority_range',
    'device_get_uuid', 'device_peer_access_status', 'device_set_limit',
    'effective_op_execute_timeout_us', 'empty_cache', 'enqueue', 'ensure_initialized',
    'event_elapsed_time', 'event_get_timestamp', 'exception_info', 'finalize', 'finalize_reference',
    'free', 'free_host', 'get_context', 'get_device', 'get_device_capability', 'get_device_count',
    'get_device_info', 'get_device_sat_mode', 'get_device_utilization_rate', 'get_devices_topo',
    'get_event_avail_num', 'get_hardware_info', 'get_logic_dev_id_by_phy_dev_id',
    'get_logic_dev_id_by_user_dev_id', 'get_mem_info', 'get_op_timeout_interval',
    'get_overflow_status', 'get_phy_dev_id_by_logic_dev_id', 'get_primary_ctx_state',
    'get_run_mode', 'get_soc_name', 'get_stream_attribute', 'get_stream_available_num',
    'get_sys_param_opt', 'get_user_dev_id_by_logic_dev_id', 'host_get_device_pointer',
    'host_register', 'host_unregister', 'init', 'launch_callback', 'launch_host_func', 'malloc',
    'malloc_host', 'malloc_host_with_cfg', 'malloc_on', 'malloc_with_cfg', 'memcpy', 'memcpy2d',
    'memcpy2d_async', 'memcpy_async', 'memory_stats', 'memset', 'memset_async',
    'pointer_get_attributes', 'process_report', 'query_device_status', 'query_event',
    'query_event_status', 'query_event_wait_status', 'record_event', 'reset_device',
    'reset_device_force', 'reset_event', 'reset_overflow_status', 'set_context', 'set_device',
    'set_device_sat_mode', 'set_exception_info_callback', 'set_op_execute_timeout_us',
    'set_op_wait_timeout', 'set_stream_attribute', 'set_stream_failure_mode', 'set_sys_param_opt',
    'set_ts_device', 'stream_abort', 'stream_of', 'stream_query', 'stream_wait_event',
    'subscribe_report', 'synchronize_device', 'synchronize_event', 'synchronize_stream',
    'unsubscribe_report',
    # virtual memory management (api/vmm.py)
    'mem_get_allocation_granularity', 'malloc_physical', 'free_physical', 'reserve_mem_address',
    'release_mem_address', 'map_mem', 'mem_map_no_access', 'unmap_mem', 'mem_set_access', 'mem_get_access',
    'mem_retain_allocation_handle', 'mem_get_allocation_properties_from_handle',
    'mem_export_to_shareable_handle', 'mem_set_pid_to_shareable_handle', 'mem_import_from_shareable_handle',
    'physical_of',
    # managed memory (api/managed.py)
    'mem_alloc_managed', 'mem_managed_prefetch_async', 'mem_managed_prefetch_batch_async', 'mem_managed_advise',
    'mem_managed_get_attr',
    # stream-ordered memory pools (api/mempool.py)
    'mem_pool_create', 'mem_pool_destroy', 'mem_pool_set_attr', 'mem_pool_get_attr', 'mem_pool_malloc_async',
    'mem_pool_free_async', 'mem_pool_trim_to', 'pool_of',
    # device and stream resource limits (cores kernels may use)
    'RES_CUBE_CORE', 'RES_VECTOR_CORE', 'check_res_limit', 'core_limit', 'get_device_res_limit',
    'get_res_in_current_thread', 'get_stream_res_limit', 'res_cores', 'reset_device_res_limit',
    'reset_stream_res_limit', 'set_device_res_limit', 'set_stream_res_limit',
    'unuse_stream_res_in_current_thread', 'use_stream_res_in_current_thread',
]

# The kernel model (kernels, binaries, kernel args, native kernels) loads on first use, so that
# `import npurt` stays light: published name -> (module, name).
# `kernel_function` is the @kernel decorator: `kernel` names the module.
_BY_MODULE = {
    "kernel": ("GM", "KernelFunction", "enqueue_launch", "function_handle", "function_of", "host_bytes",
               "launch", "launch_kernel", "launch_kernel_with_host_args",
               "resolve_dtype", "set_kernel_task_params"),
    "native": ("KernelTrap", "NativeKernel", "launch_native", "native_kernel_at"),
    "binary": ("binary_get_function", "binary_load", "binary_load_from_data", "binary_load_from_file",
               "binary_of", "binary_unload", "create_binary", "destroy_binary", "get_function_addr",
               "get_function_name", "register_cpu_func"),
    "reduce": ("reduce_async",),
    "kernel_args": ("kernel_args_append", "kernel_args_append_place_holder", "kernel_args_finalize",
                    "kernel_args_get_handle_mem_size", "kernel_args_get_mem_size",
                    "kernel_args_get_place_holder_buffer", "kernel_args_init", "kernel_args_init_by_user_mem",
                    "kernel_args_para_update", "launch_kernel_with_config"),
}
_LAZY = {name: (module, name) for module, names in _BY_MODULE.items() for name in names}
_LAZY.update(kernel_function=("kernel", "kernel"), launch_function=("kernel", "launch"))


def __getattr__(name: str):
    target = _LAZY.get(name)
    if target is None:
        raise AttributeError(f"module 'npurt.runtime' has no attribute {name!r}")
    import importlib
    value = getattr(importlib.import_module(f"{__name__}.{target[0]}"), target[1])
    globals()[name] = value
    return value


def _kernel_operations() -> dict:
    """The kernel model's operations, for a fault spec that names one (loads them)."""
    import importlib
    return _operations_of(*(importlib.import_module(f"{__name__}.{m}") for m in _BY_MODULE))


# fault injection gates these operations by name, whichever face calls them (faults.py)
FAULTS.bind(_operations_of(_api), _DeviceMemory, peek_context, _kernel_operations)
FAULTS.arm_from_environment()
SCHEDULE.start_from_environment()
