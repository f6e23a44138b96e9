"""Fault injection: make runtime calls, device tasks, allocations and devices fail on demand.

A fault spec (the `NPURT_FAULTS` environment variable, `npurt run --faults`, `npurt.faults`,
the `npurt_faults` pytest marker) is a list of entries separated by `;`::

    entry   := target ['@' when] ['=' code] {',' option '=' value}
    target  := API                 a runtime operation: acl.rt.malloc, aclrtMalloc, malloc
             | 'task:' KIND        a device task: kernel, copy, set, model, collective, host, any,
                                   or an exact task kind (memcpy_async, reduce_async, ...)
             | 'alloc'             a device allocation (any face: pyACL, C, Pythonic, torch)
             | 'device:' N         device N is lost: the task that triggers it and every later
                                   task and call on the device fail until reset_device(N)
             | 'hccl:' RANK        rank RANK of a communicator, at its collectives: =silent (it
                                   stops answering: it never reaches the collective, its peers
                                   time out with HCCL_E_TIMEOUT, its own stream waits as a hung
                                   rank's does) or =dead (it dies in the collective: a rank with a
                                   process of its own exits with status 137; a rank that is a
                                   thread of a shared process loses its device instead; its peers
                                   time out the same way)
    when    := N                   the Nth event only (default: 1)
             | N '+'               the Nth and every later one
             | '*' N               every Nth (N, 2N, 3N, ...)
             | P '%'               each event with probability P percent (seeded: `seed=`)
             | T 's' | T 'ms'      the first event at least T after the spec was armed
    code    := an aclError number (207001), its name (ACL_ERROR_RT_MEMORY_ALLOCATION) or an alias:
               oom 207001, aicore 507015, vector 507035, trap 507016, uce 507053 (uncorrectable
               memory error), timeout 507014 (AI-core timeout), lost 507010, hang (the task never
               finishes: a synchronize with a timeout returns 507046; an abort, destroy or reset
               ends it, with no failure of its own)
    option  := stream=ID | device=ID (tasks), budget=BYTES (alloc: fail once this many bytes
               would be live on the device; K/M/G suffixes), seed=INT (an entry of its own)

An event is a call of the operation (whichever face made it: `acl.rt.malloc`, C's `aclrtMalloc`,
the Pythonic API and torch reach the same runtime operation), a task of the kind starting on the
device, an allocation, a task on the device. Defaults: tasks fail with their own device error
(kernels 507015, copies 507013), allocations with 207001, a lost device with 507010.

Where an injected fault surfaces is where the real one would: an API fault is the call's return
code (an `NpuError` raised at the operation's entry, which every face turns into its own form);
a task fault is the task's failure, so the next synchronize reports it, the exception callback
sees it and `get_recent_err_msg` describes it; an allocation fault is the allocator's OOM.
Every injection is logged (logger "npurt", "injected fault") and counted; `FAULTS.summary()`
lists the counts, and a process that armed faults prints them at exit.

How it costs nothing when unused: operations are gated by swapping the code of the named
operation's function object for a gate with the same parameters (the faces hold references to
those function objects, so every face sees the gate) and swapping it back when disarmed; the
allocator's `malloc` is swapped the same way. The only check left on a hot path is
`FAULTS.tasks` in the scheduler, one attribute test per task.
"""
from __future__ import annotations

import atexit
import inspect
import logging
import os
import random
import re
import sys
import threading
import time
import types

from . import accel
from . import constants as C
from .errors import (ContextError, FeatureNotSupportedError, InvalidDeviceError, InvalidHandleError,
                     InvalidValueError, NotInitializedError, NpuError, OutOfMemoryError, ResourceExhaustedError,
                     StreamAbortedError, SyncTimeoutError, TaskError, error_name)

from .faultspec import (ALIASES, DEAD, HANG, KIND_GROUPS, KNOWN_KINDS, SILENT, Fault, FaultSpecError,  # noqa: F401
                        Trigger, parse, resolve_operation)

log = logging.getLogger("npurt")

# operations a lost device still serves: the recovery path and the error queries
LOST_DEVICE_SERVES = frozenset({
    "reset_device", "reset_device_force", "finalize", "finalize_reference", "get_device_count",
    "get_run_mode", "get_soc_name", "check_device_id", "check_device_range"})

# where the runtime's operations live (its other published functions are helpers)
OPERATION_MODULES = ("npurt.runtime.api", "npurt.runtime.kernel", "npurt.runtime.binary",
                     "npurt.runtime.reduce", "npurt.runtime.launch")

def operations_of(*modules) -> dict:
    """name -> function of the operations the modules (and their submodules, one level down)
    define: what a spec's API names are looked up in."""
    found = {}
    for module in modules:
        for mod in [module, *(v for v in vars(module).values() if isinstance(v, types.ModuleType))]:
            if not mod.__name__.startswith(OPERATION_MODULES):
                continue
            for name, value in vars(mod).items():
                if (isinstance(value, types.FunctionType) and not name.startswith("_")
                        and value.__module__.startswith(OPERATION_MODULES)):
                    found.setdefault(value.__name__, value)
    return found


# ================================================================ the errors raised
_CLASSES = (OutOfMemoryError, SyncTimeoutError, StreamAbortedError, InvalidHandleError, InvalidDeviceError,
            InvalidValueError, FeatureNotSupportedError, ResourceExhaustedError, NotInitializedError,
            ContextError, TaskError)


def error_for(code: int, message: str) -> NpuError:
    """The NpuError the runtime raises for `code` (OutOfMemoryError for 207001, ...), so that
    each face reports an injected fault as it reports the real one."""
    for cls in _CLASSES:
        if cls.code == code:
            return cls(message, code)
    return NpuError(message, code)


class InjectedTaskFault(NpuError):
    """Raised in place of a task's work; the scheduler turns it into the task's TaskError,
    with this code, as it does any NpuError a task raises."""


# ================================================================ the registry
class Faults:
    """The armed faults of the process (one instance, FAULTS)."""

    def __init__(self) -> None:
        self.tasks = False           # the scheduler's one check: task or device faults armed, or a device lost
        self.spec = ""
        self.faults: list[Fault] = []
        self.lost: dict[int, int] = {}  # device id -> the code its calls and tasks fail with
        self.seed = 0
        self.rng = random.Random(0)
        self.armed_at = 0.0
        self.lock = threading.Lock()
        self._operations = None      # name -> function (see bind)
        self._eager: dict = {}
        self._more = None
        self.memory_class = None     # the allocator class whose malloc is gated
        self._entries_held = False   # armed: the C entries' fast paths are suspended (accel)
        self._gated: dict = {}       # function -> its original code
        self._malloc = None          # the allocator's original malloc
        self._malloc_large = None    # ... and malloc_large (torch's large blocks)
        self.totals: dict[str, int] = {}  # entry text -> injections, over every arming (the exit summary)
        self._summary_registered = False

    # ------------------------------------------------------------ arming
    def bind(self, operations: dict, memory_class, thread_context, more_operations=None) -> None:
        """The runtime package hands over its operations, its allocator class, how to read the
        calling thread's current context and how to load the operations it loads on first use
        (kernels, binaries): once, at import (this module sits below all of them)."""
        self.thread_context = thread_context
        self._eager = {n: f for n, f in operations.items()
                       if isinstance(f, types.FunctionType) and not f.__code__.co_freevars}
        self._more = more_operations
        self.memory_class = memory_class

    @property
    def operations(self) -> dict:
        """name -> function of every operation a spec may name (loads the lazy ones on first use)."""
        if self._operations is None:
            ops = dict(self._eager)
            if self._more is not None:
                for name, fn in self._more().items():
                    ops.setdefault(name, fn)
            self._operations = {n: f for n, f in ops.items()
                                if isinstance(f, types.FunctionType) and not f.__code__.co_freevars}
        return self._operations

    def _parse(self, spec: str):
        """Names are looked up among the operations loaded at import first; the kernel model's
        (loaded on first use) only when one is not found there, so that arming a spec of API
        faults keeps `import npurt` as light as it is."""
        try:
            return parse(spec, self._eager)
        except FaultSpecError:
            return parse(spec, self.operations)

    def check(self, spec: str) -> list[Fault]:
        """Parse `spec` without arming it (raises FaultSpecError)."""
        return self._parse(spec)[0]

    def arm(self, spec: str, seed: int | None = None) -> list[Fault]:
        """Replace the armed faults by those of `spec` (validated first: a bad spec changes
        nothing). Returns the faults."""
        faults, spec_seed = self._parse(spec)
        self.disarm()
        with self.lock:
            self.spec = spec
            self.faults = faults
            self.seed = seed if seed is not None else (spec_seed if spec_seed is not None else 0)
            self.rng = random.Random(self.seed)
            self.armed_at = time.monotonic()
        for f in faults:
            if f.target == "api":
                self._gate(f.name)
            elif f.target == "device":
                self._gate_all()
        if any(f.target == "alloc" for f in faults):
            self._gate_malloc()
        if faults and not self._entries_held:  # the C fast paths would bypass the gates
            accel.suspend()
            self._entries_held = True
        self.tasks = any(f.target in ("task", "device", "hccl") for f in faults)
        if faults and not self._summary_registered:
            self._summary_registered = True
            atexit.register(self._print_summary)
        return faults

    def disarm(self) -> None:
        """Remove every fault (counts stay in the summary) and bring lost devices back."""
        with self.lock:
            self.faults = []
            self.spec = ""
            self.lost.clear()
            self.tasks = False
        if self._entries_held:
            accel.resume()
            self._entries_held = False
        for fn, code in list(self._gated.items()):
            fn.__code__ = code
            fn.__globals__.pop(_orig_name(fn), None)
        self._gated.clear()
        if self._malloc is not None:
            self.memory_class.malloc = self._malloc
            self._malloc = None
        if self._malloc_large is not None:
            self.memory_class.malloc_large = self._malloc_large
            self._malloc_large = None

    @property
    def armed(self) -> bool:
        return bool(self.faults) or bool(self.lost)

    def summary(self) -> dict[str, int]:
        """Injections per entry, over the process's life (entries never triggered show 0)."""
        with self.lock:
            out = dict(self.totals)
            for f in self.faults:
                out.setdefault(f.text, 0)
            return out

    def _print_summary(self) -> None:
        """At exit, when anything was injected (a spec that never fired leaves the output alone)."""
        counts = self.summary()
        total = sum(counts.values())
        if total:
            parts = ", ".join(f"{k}: {v}" for k, v in counts.items())
            print(f"npurt: faults injected: {total} ({parts})", file=sys.stderr)

    # ------------------------------------------------------------ gates
    def _gate(self, name: str) -> None:
        fn = self._eager.get(name) or self.operations[name]
        if fn in self._gated:
            return
        original = fn.__code__
        orig = types.FunctionType(original, fn.__globals__, fn.__name__, fn.__defaults__, fn.__closure__)
        orig.__kwdefaults__ = fn.__kwdefaults__
        fn.__globals__[_orig_name(fn)] = orig
        fn.__globals__["_npurt_fault_gate"] = self.on_call
        fn.__code__ = _gate_code(fn, original, name)
        self._gated[fn] = original

    def _gate_all(self) -> None:
        for name in self.operations:
            self._gate(name)

    def _gate_malloc(self) -> None:
        cls = self.memory_class
        if cls is None or self._malloc is not None:
            return
        original = self._malloc = cls.malloc
        faults = self

        def malloc(pool, size, policy=0, align32=False):
            faults.on_alloc(pool, size)
            return original(pool, size, policy, align32)

        malloc.__doc__ = original.__doc__
        cls.malloc = malloc
        large = self._malloc_large = getattr(cls, "malloc_large", None)
        if large is not None:
            def malloc_large(pool, size, *rules):
                faults.on_alloc(pool, size)
                return large(pool, size, *rules)

            malloc_large.__doc__ = large.__doc__
            cls.malloc_large = malloc_large

    # ------------------------------------------------------------ events
    def _fire(self, f: Fault) -> bool:
        """Count one event for `f`; True if the fault fires on it (lock held)."""
        f.events += 1
        if f.trigger.fires(f.events, self.rng, time.monotonic() - self.armed_at, f.injected):
            f.injected += 1
            self.totals[f.text] = self.totals.get(f.text, 0) + 1
            return True
        return False

    def on_call(self, name: str) -> None:
        """Every gated operation calls this first; raises the injected error."""
        if self.lost and name not in LOST_DEVICE_SERVES:
            ctx = self.thread_context()
            if ctx is not None and ctx.device.id in self.lost:
                dev = ctx.device.id
                raise error_for(self.lost[dev], f"{name}: device {dev} is lost (injected fault); reset it "
                                "with reset_device before using it again")
        if name in ("reset_device", "reset_device_force"):
            return  # the device comes back in the runtime's release (on_reset)
        fired = None
        with self.lock:
            for f in self.faults:
                if f.target == "api" and f.name == name and self._fire(f):
                    fired = f
                    break
        if fired is not None:
            message = f"{name}: injected fault {fired.text!r} (call #{fired.events})"
            log.warning("npurt: injected fault: %s", message)
            raise error_for(fired.code, message)

    def on_alloc(self, pool, size) -> None:
        fired = None
        with self.lock:
            for f in self.faults:
                if f.target != "alloc":
                    continue
                if f.budget is not None and pool.allocated + (size if type(size) is int else 0) <= f.budget:
                    continue
                if self._fire(f):
                    fired = f
                    break
        if fired is not None:
            what = (f"the budget of {fired.budget} bytes ({pool.allocated} live)" if fired.budget is not None
                    else f"allocation #{fired.events}")
            message = (f"malloc of {size} bytes: injected out-of-memory ({fired.text!r}: {what}); "
                       "free memory or use a smaller size")
            log.warning("npurt: injected fault: %s", message)
            raise error_for(fired.code or C.ACL_ERROR_RT_MEMORY_ALLOCATION, message)

    def on_task(self, task) -> None:
        """The scheduler calls this right before a task runs (only while `tasks` is set);
        raises InjectedTaskFault for a task that fails, or hangs it."""
        device = task.stream.device.id
        lost = self.lost.get(device)
        if lost is not None:
            raise InjectedTaskFault(f"device {device} is lost (injected fault)", lost)
        fired = None
        with self.lock:
            for f in self.faults:
                if f.target in ("task", "device") and f.matches_task(task) and self._fire(f):
                    fired = f
                    break
            if fired is not None and fired.target == "device":
                self.lost[device] = fired.code or C.ACL_ERROR_RT_LOST_HEARTBEAT
        if fired is None:
            return
        if fired.target == "device":
            log.warning("npurt: injected fault: device %d lost at task #%d (%s)", device, task.seq, fired.text)
            raise InjectedTaskFault(f"device {device} is lost (injected fault {fired.text!r})", self.lost[device])
        log.warning("npurt: injected fault: %s on stream %d task #%d (%s)", task.kind, task.stream.stream_id,
                    task.seq, fired.text)
        if fired.code == HANG:
            self._hang(task, fired)
            return
        code = fired.code if fired.code is not None else task.error_code
        raise InjectedTaskFault(f"injected fault {fired.text!r} ({error_name(code)})", code)

    def on_collective(self, op, own_process: bool) -> bool:
        """HCCL calls this when a collective reaches the head of its stream, before it meets
        the other ranks (only while `tasks` is set). True: the rank stops answering (the
        collective must not reach the transport). A dying rank exits (`own_process`) or loses
        its device (raises InjectedTaskFault)."""
        fired = None
        with self.lock:
            for f in self.faults:
                if f.target == "hccl" and int(f.name) == op.rank and self._fire(f):
                    fired = f
                    break
        if fired is None:
            return False
        log.warning("npurt: injected fault: rank %d %s at %s (%s)", op.rank,
                    "stops answering" if fired.code == SILENT else "dies", op.describe(), fired.text)
        if fired.code == SILENT:
            return True
        if own_process:
            self._print_summary()
            sys.stderr.flush()
            os._exit(137)  # as a killed process: no cleanup, no goodbye to the peers
        device = op.comm.device.id if hasattr(op.comm, "device") else None
        if device is not None:
            self.lost[device] = C.ACL_ERROR_RT_LOST_HEARTBEAT
        raise InjectedTaskFault(f"rank {op.rank} died in {op.describe()} (injected fault {fired.text!r})",
                                C.ACL_ERROR_RT_LOST_HEARTBEAT)

    def _hang(self, task, fault: Fault) -> None:
        """Never finish, as a hung kernel, until the stream is aborted or destroyed, its device
        reset or the runtime finalized: then the task ends as an aborted one does, with no
        failure of its own (the abort is what the program did about it)."""
        stream = task.stream
        epoch = stream.abort_epoch
        device = stream.device
        while (stream.abort_epoch == epoch and not stream.destroyed and not stream.closing
               and device.runtime.initialized):
            time.sleep(0.005)

    def on_reset(self, device_id: int) -> None:
        """reset_device: a lost device works again."""
        if self.lost.pop(device_id, None) is not None:
            log.warning("npurt: device %d was reset; it is no longer lost", device_id)
        self.tasks = any(f.target in ("task", "device", "hccl") for f in self.faults) or bool(self.lost)

    def arm_from_environment(self) -> None:
        spec = os.environ.get("NPURT_FAULTS", "")
        if spec.strip():
            seed = os.environ.get("NPURT_FAULTS_SEED")
            if seed is not None and not re.fullmatch(r"-?\d+", seed.strip()):
                raise FaultSpecError(seed, 0, "NPURT_FAULTS_SEED must be an integer")
            self.arm(spec, int(seed) if seed is not None else None)


def _orig_name(fn) -> str:
    return f"_npurt_fault_orig_{fn.__name__}"


def _gate_code(fn, original: types.CodeType, name: str) -> types.CodeType:
    """The code of `def <name>(<fn's parameters>): gate(name); return orig(<parameters>)`;
    the defaults stay on the function object, so they need not appear here."""
    sig = inspect.signature(types.FunctionType(original, fn.__globals__))
    params, call, star = [], [], False
    for p in sig.parameters.values():
        if p.kind is p.POSITIONAL_ONLY:
            params.append(p.name)
            call.append(p.name)
        elif p.kind is p.POSITIONAL_OR_KEYWORD:
            params.append(p.name)
            call.append(p.name)
        elif p.kind is p.VAR_POSITIONAL:
            params.append("*" + p.name)
            call.append("*" + p.name)
            star = True
        elif p.kind is p.KEYWORD_ONLY:
            if not star:
                params.append("*")
                star = True
            params.append(p.name)
            call.append(f"{p.name}={p.name}")
        else:
            params.append("**" + p.name)
            call.append("**" + p.name)
    if any(p.kind is p.POSITIONAL_ONLY for p in sig.parameters.values()):
        last = max(i for i, p in enumerate(sig.parameters.values()) if p.kind is p.POSITIONAL_ONLY)
        params.insert(last + 1, "/")
    source = (f"def {fn.__name__}({', '.join(params)}):\n"
              f"    _npurt_fault_gate({name!r})\n"
              f"    return {_orig_name(fn)}({', '.join(call)})\n")
    namespace: dict = {}
    exec(compile(source, f"<npurt fault gate: {name}>", "exec"), {}, namespace)  # noqa: S102 - our own source
    code = namespace[fn.__name__].__code__
    return code.replace(co_name=original.co_name, co_qualname=original.co_qualname)


FAULTS = Faults()
