"""Every function of the pyACL facade, called once with valid and once with invalid
arguments (a table: one row per function).

A row gives the call with valid arguments and what it must return, and the call with
invalid arguments (or in a state where it must fail) and the aclError code it must return.
For the invalid call the test also checks that the failure is recorded: peek/get_last_error
give the code, get_recent_err_msg names the function and is cleared by reading it.
`test_table_covers_every_function` keeps the table complete.
"""
from __future__ import annotations

import ctypes
import mmap
import os
import re
import struct
import threading
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

import npurt.acl as acl
from npurt.acl import _namespaces
from npurt.acl import constants as C

ROOT = Path(__file__).resolve().parents[2]
VADD = str(ROOT / "examples" / "kernels" / "vadd.py")
KERNEL_SRC = b"""
import numpy as np
from npurt import GM, kernel

@kernel
def twice(ctx, x: GM, n: np.int32):
    lo, hi = ctx.block_range(n)
    v = ctx.gm(x, np.float32, n)[lo:hi]
    v *= 2
"""
OK = 0
INVALID = C.ACL_ERROR_INVALID_PARAM
BAD_DEVICE = C.ACL_ERROR_RT_INVALID_DEVICEID
NO_CONTEXT = C.ACL_ERROR_RT_CONTEXT_NULL
BAD_HANDLE = C.ACL_ERROR_RT_INVALID_HANDLE
NOT_SUPPORTED = C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT
PARAM_INVALID = C.ACL_ERROR_RT_PARAM_INVALID
GRANULE = 2 << 20  # the VMM granularity
VMM_PROP = {"handleType": 0, "allocationType": 0, "memAttr": C.ACL_HBM_MEM_HUGE, "location": {"type": 1, "id": 0},
            "reserve": 0}


# ---------------------------------------------------------------- the test environment
class Env:
    """An initialized runtime with device 0 set and a few resources to call with."""

    def __init__(self):
        assert acl.init() == OK
        assert acl.rt.set_device(0) == OK
        self.ctx, _ = acl.rt.get_context()
        self.stream, _ = acl.rt.create_stream()
        self.event, _ = acl.rt.create_event()
        self.dev, _ = acl.rt.malloc(4096, 0)
        self.dev2, _ = acl.rt.malloc(4096, 0)
        self.host, _ = acl.rt.malloc_host(4096)
        self._keep = []
        acl.rt.get_last_error(0)
        acl.get_recent_err_msg()

    def keep(self, obj):
        self._keep.append(obj)
        return obj

    # -- handles in particular states
    def complete_allocator_desc(self) -> int:
        desc = acl.rt.allocator_create_desc()
        for setter in (acl.rt.allocator_set_alloc_func_to_desc, acl.rt.allocator_set_free_func_to_desc,
                       acl.rt.allocator_set_get_addr_from_block_func_to_desc):
            setter(desc, print)
        acl.rt.allocator_set_obj_to_desc(desc, 1)
        return desc

    def stale_stream(self) -> int:
        s, _ = acl.rt.create_stream()
        acl.rt.destroy_stream(s)
        return s

    def stale_event(self) -> int:
        e, _ = acl.rt.create_event()
        acl.rt.destroy_event(e)
        return e

    def recorded_event(self, flag=None) -> int:
        e, _ = acl.rt.create_event() if flag is None else acl.rt.create_event_with_flag(flag)
        assert acl.rt.record_event(e, self.stream) == OK
        assert acl.rt.synchronize_stream(self.stream) == OK
        return e

    def page_buffer(self, size=8192) -> int:
        """A 4 KiB-aligned host buffer (for host_register)."""
        mm = self.keep(mmap.mmap(-1, size))
        return ctypes.addressof(ctypes.c_char.from_buffer(mm))

    # -- virtual memory management
    def physical(self) -> int:
        """A fresh 2 MiB physical memory handle of device 0."""
        handle, ret = acl.rt.malloc_physical(GRANULE, VMM_PROP, 0)
        assert ret == OK and handle
        return handle

    def reserved(self) -> int:
        """A fresh 2 MiB reserved range of device 0 (nothing mapped)."""
        va, ret = acl.rt.reserve_mem_address(GRANULE, 0, 0, 0)
        assert ret == OK and va
        return va

    def mapped(self) -> int:
        va = self.reserved()
        assert acl.rt.map_mem(va, GRANULE, 0, self.physical(), 0) == OK
        return va

    def exported(self, flags=0) -> int:
        shared, ret = acl.rt.mem_export_to_shareable_handle(self.physical(), 0, flags)
        assert ret == OK
        return shared

    # -- kernels
    def binary(self) -> int:
        b, ret = acl.rt.binary_load_from_file(VADD, [])
        assert ret == OK
        return b

    def vadd(self) -> int:
        f, ret = acl.rt.binary_get_function(self.binary(), "vadd")
        assert ret == OK
        return f

    def vadd_args(self, n=16) -> bytes:
        return struct.pack("<QQQi4x", self.dev, self.dev2, self.dev2, n)

    def args_on_device(self, n=16) -> int:
        args = self.vadd_args(n)
        buf, _ = acl.rt.malloc(len(args), 0)
        assert acl.rt.memcpy(buf, len(args), acl.util.bytes_to_ptr(args), len(args), 1) == OK
        return buf

    def kernel_args(self, appended=4) -> tuple[int, int]:
        f = self.vadd()
        a, ret = acl.rt.kernel_args_init(f)
        assert ret == OK
        for value in [struct.pack("<Q", self.dev), struct.pack("<Q", self.dev2), struct.pack("<Q", self.dev2),
                      struct.pack("<i", 16)][:appended]:
            self.keep(value)
            _, ret = acl.rt.kernel_args_append(a, acl.util.bytes_to_ptr(value), len(value))
            assert ret == OK
        return f, a

    def append_gm(self, args: int):
        value = self.keep(struct.pack("<Q", self.dev))
        return acl.rt.kernel_args_append(args, acl.util.bytes_to_ptr(value), len(value))

    def launch_with_config(self, reserve) -> int:
        f, a = self.kernel_args(4)
        assert acl.rt.kernel_args_finalize(a) == OK
        return acl.rt.launch_kernel_with_config(f, 2, self.stream, [], a, reserve)

    def created_binary(self) -> int:
        h = acl.rt.create_binary(acl.util.bytes_to_ptr(self.keep(KERNEL_SRC)), len(KERNEL_SRC))
        assert h
        return h

    # -- callbacks and exception infos
    def subscribed(self) -> int:
        tid = threading.get_ident()
        assert acl.rt.subscribe_report(tid, self.stream) == OK
        return tid

    def exception_info(self) -> int:
        """The handle of a real exception info: a callback that raises, seen by the
        exception-info callback."""
        infos = []
        acl.rt.set_exception_info_callback(infos.append)
        self.subscribed()

        def boom(_):
            raise RuntimeError("callback failed on purpose")

        assert acl.rt.launch_callback(boom, [], C.ACL_CALLBACK_NO_BLOCK, self.stream) == OK
        assert acl.rt.process_report(2000) == OK
        assert acl.rt.synchronize_stream(self.stream) == C.ACL_ERROR_RT_AICPU_EXCEPTION
        acl.rt.get_last_error(0)  # that failure was the point; start clean
        acl.get_recent_err_msg()
        assert infos, "the exception-info callback was not called"
        return infos[0]


def in_new_thread(fn):
    """fn() on a fresh thread (which has no current context); its exception is re-raised."""
    out = []

    def run():
        try:
            out.append(fn())
        except BaseException as exc:  # noqa: BLE001 - handed to the calling thread
            out.append(exc)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    if isinstance(out[0], BaseException):
        raise out[0]
    return out[0]


def uninitialized(fn):
    acl.finalize()
    return fn()


def twice(first, second):
    first()
    return second()


_EXPORTER = """
import sys, npurt.runtime as rt
rt.set_device(0)
p = rt.malloc(4096)
n = rt.create_notify(0)
print(rt.ipc_mem_get_export_key(p, 4096, 1), rt.notify_get_export_key(n, 2), flush=True)
sys.stdin.read()
"""


def imported_from_a_peer(use):
    """use(memory key, notify key) while another process of this namespace holds both exports."""
    import subprocess
    import sys
    peer = subprocess.Popen([sys.executable, "-c", _EXPORTER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)})
    try:
        mem_key, notify_key = peer.stdout.readline().split()
        return use(mem_key, notify_key)
    finally:
        peer.stdin.close()
        peer.wait(timeout=60)


_VMM_EXPORTER = """
import sys
from npurt import acl
acl.init(); acl.rt.set_device(0)
prop = {"handleType": 0, "allocationType": 0, "memAttr": 5, "location": {"type": 1, "id": 0}, "reserve": 0}
h, _ = acl.rt.malloc_physical(2 << 20, prop, 0)
print(acl.rt.mem_export_to_shareable_handle(h, 0, 1)[0], flush=True)   # no pid allow-list
sys.stdin.read()
"""


def imported_physical_from_a_peer():
    """mem_import_from_shareable_handle of what another process exported (and still holds)."""
    import subprocess
    import sys
    peer = subprocess.Popen([sys.executable, "-c", _VMM_EXPORTER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
                                            "NPURT_DEVICE_NAMESPACE": f"acl-functions-{os.getpid()}"})
    try:
        shared = int(peer.stdout.readline())
        return acl.rt.mem_import_from_shareable_handle(shared, 0)
    finally:
        peer.stdin.close()
        peer.wait(timeout=60)


# ---------------------------------------------------------------- the table
@dataclass
class Row:
    shape: str                       # "ret", "1", "2", "3" outputs before ret, or "value" (no ret)
    valid: Callable[[Env], Any]
    expect: Callable[[Any, Env], bool] | None = None   # extra check of the valid result
    invalid: Callable[[Env], Any] | None = None
    code: int = INVALID
    valid_ret: int = OK
    thread: bool = False             # make the invalid call on a fresh thread (no context)
    raises: tuple | None = None      # (exception type, message) the real extension raises instead


def R(shape, valid, expect=None, invalid=None, code=INVALID, valid_ret=OK, thread=False, raises=None):
    return Row(shape, valid, expect, invalid, code, valid_ret, thread, raises)


rt, util = acl.rt, acl.util
ROWS: dict[str, Row] = {
    # ---- acl
    "acl.init": R("ret", lambda e: uninitialized(lambda: acl.init()),
                  invalid=lambda e: uninitialized(lambda: acl.init("/nonexistent/acl.json")),
                  code=C.ACL_ERROR_INVALID_FILE),
    "acl.finalize": R("ret", lambda e: acl.finalize(), invalid=lambda e: twice(acl.finalize, acl.finalize),
                      code=C.ACL_ERROR_REPEAT_FINALIZE),
    "acl.finalize_reference": R("1", lambda e: acl.finalize_reference(), lambda r, e: r[0] == 0,
                                invalid=lambda e: uninitialized(acl.finalize_reference),
                                code=C.ACL_ERROR_REPEAT_FINALIZE),
    "acl.get_soc_name": R("value", lambda e: acl.get_soc_name(), lambda r, e: r == "Ascend910B3"),
    "acl.get_device_capability": R("1", lambda e: acl.get_device_capability(0, C.ACL_DEVICE_INFO_AI_CORE_NUM),
                                   lambda r, e: r[0] == 20, invalid=lambda e: acl.get_device_capability(0, 9)),
    "acl.get_version": R("3", lambda e: acl.get_version(), lambda r, e: r[:3] == (1, 0, 0)),
    "acl.get_version_str": R("1", lambda e: acl.get_version_str("runtime"), lambda r, e: isinstance(r[0], str),
                             invalid=lambda e: acl.get_version_str("cuda"), code=C.ACL_ERROR_INVALID_FILE),
    "acl.get_cann_attribute": R("1", lambda e: acl.get_cann_attribute(0), lambda r, e: r[0] == 0,
                                invalid=lambda e: acl.get_cann_attribute(-1)),
    "acl.get_cann_attribute_list": R("2", lambda e: acl.get_cann_attribute_list(), lambda r, e: r[:2] == ([], 0)),
    "acl.float16_to_float": R("value", lambda e: acl.float16_to_float(0x3C00), lambda r, e: r == 1.0,
                              invalid=lambda e: acl.float16_to_float("one"),
                              raises=(TypeError, "acl.float16_to_float args parse failed")),
    "acl.float_to_float16": R("value", lambda e: acl.float_to_float16(-2.0), lambda r, e: r == 0xC000,
                              invalid=lambda e: acl.float_to_float16("two"),
                              raises=(TypeError, "acl.float_to_float16 args parse failed")),
    "acl.app_log": R("value", lambda e: acl.app_log(1, "hello from a test"), lambda r, e: r is None,
                     invalid=lambda e: acl.app_log(9, "bad level")),
    "acl.get_cann_version": R("1", lambda e: acl.get_cann_version(0), valid_ret=NOT_SUPPORTED,
                              invalid=lambda e: acl.get_cann_version("x"),
                              raises=(TypeError, "acl.get_cann_version args parse failed")),

    # ---- devices
    "set_device": R("ret", lambda e: rt.set_device(1), invalid=lambda e: rt.set_device(99), code=BAD_DEVICE),
    "reset_device": R("ret", lambda e: twice(lambda: rt.set_device(1), lambda: rt.reset_device(1)),
                      invalid=lambda e: rt.reset_device(1), code=C.ACL_ERROR_RT_CONTEXT_RELEASE_ERROR),
    "reset_device_force": R("ret", lambda e: twice(lambda: rt.set_device(1), lambda: rt.reset_device_force(1)),
                            invalid=lambda e: rt.reset_device_force(99), code=BAD_DEVICE),
    "get_device": R("1", lambda e: rt.get_device(), lambda r, e: r[0] == 0,
                    invalid=lambda e: rt.get_device(), thread=True, code=NO_CONTEXT),
    "get_device_count": R("1", lambda e: rt.get_device_count(), lambda r, e: r[0] == 2),
    "get_run_mode": R("1", lambda e: rt.get_run_mode(), lambda r, e: r[0] == C.ACL_HOST),
    "set_ts_device": R("ret", lambda e: rt.set_ts_device(C.ACL_TS_ID_AICORE), invalid=lambda e: rt.set_ts_device(5)),
    "synchronize_device": R("ret", lambda e: rt.synchronize_device(),
                            invalid=lambda e: rt.synchronize_device(), thread=True, code=NO_CONTEXT),
    "synchronize_device_with_timeout": R("ret", lambda e: rt.synchronize_device_with_timeout(1000),
                                         invalid=lambda e: rt.synchronize_device_with_timeout(-2), code=PARAM_INVALID),
    "device_can_access_peer": R("1", lambda e: rt.device_can_access_peer(0, 1), lambda r, e: r[0] == 1,
                                invalid=lambda e: rt.device_can_access_peer(0, 0)),
    "device_enable_peer_access": R("ret", lambda e: rt.device_enable_peer_access(1, 0),
                                   invalid=lambda e: rt.device_enable_peer_access(1, 5)),
    "device_disable_peer_access": R("ret", lambda e: twice(lambda: rt.device_enable_peer_access(1, 0),
                                                           lambda: rt.device_disable_peer_access(1)),
                                    invalid=lambda e: rt.device_disable_peer_access(1)),
    "device_peer_access_status": R("1", lambda e: rt.device_peer_access_status(0, 1), lambda r, e: r[0] == 0,
                                   invalid=lambda e: rt.device_peer_access_status(0, 99), code=BAD_DEVICE),
    "get_device_info": R("1", lambda e: rt.get_device_info(0, C.ACL_DEV_ATTR_AICORE_CORE_NUM),
                         lambda r, e: r[0] == 20, invalid=lambda e: rt.get_device_info(0, 9999)),
    "get_device_capability": R("1", lambda e: rt.get_device_capability(0, C.ACL_FEATURE_SYSTEM_MEMQ_EVENT_CROSS_DEV),
                               lambda r, e: r[0] == 0, invalid=lambda e: rt.get_device_capability(0, 77)),
    "get_device_utilization_rate": R("1", lambda e: rt.get_device_utilization_rate(0),
                                     lambda r, e: 0 <= r[0]["memory_utilization"] <= 100,
                                     invalid=lambda e: rt.get_device_utilization_rate(99), code=BAD_DEVICE),
    "query_device_status": R("1", lambda e: rt.query_device_status(0), lambda r, e: r[0] == 0,
                             invalid=lambda e: rt.query_device_status(99), code=BAD_DEVICE),
    "set_device_sat_mode": R("ret", lambda e: rt.set_device_sat_mode(C.ACL_RT_OVERFLOW_MODE_SATURATION),
                             invalid=lambda e: rt.set_device_sat_mode(7)),
    "get_device_sat_mode": R("1", lambda e: rt.get_device_sat_mode(),
                             lambda r, e: r[0] == C.ACL_RT_OVERFLOW_MODE_INFNAN,
                             invalid=lambda e: rt.get_device_sat_mode(), thread=True, code=NO_CONTEXT),
    "get_overflow_status": R("ret", lambda e: rt.get_overflow_status(e.dev, 64, e.stream),
                             invalid=lambda e: rt.get_overflow_status(e.dev, 32, e.stream)),
    "reset_overflow_status": R("ret", lambda e: rt.reset_overflow_status(e.stream),
                               invalid=lambda e: rt.reset_overflow_status(e.stale_stream()), code=BAD_HANDLE),
    "device_get_stream_priority_range": R("2", lambda e: rt.device_get_stream_priority_range(),
                                          lambda r, e: r[:2] == (7, 0)),
    "get_devices_topo": R("1", lambda e: rt.get_devices_topo(0, 1), lambda r, e: r[0] == C.ACL_RT_DEVS_TOPOLOGY_HCCS,
                          invalid=lambda e: rt.get_devices_topo(1, 1)),
    # device and stream resource limits: cores kernels may use (20 cube, 40 vector cores on the default SoC)
    "get_device_res_limit": R("1", lambda e: rt.get_device_res_limit(0, 1), lambda r, e: r[0] == 40,
                              invalid=lambda e: rt.get_device_res_limit(0, 7)),
    "set_device_res_limit": R("ret", lambda e: rt.set_device_res_limit(0, 0, 8),
                              lambda r, e: rt.get_device_res_limit(0, 0)[0] == 8,
                              invalid=lambda e: rt.set_device_res_limit(0, 0, 21)),
    "reset_device_res_limit": R("ret", lambda e: (rt.set_device_res_limit(0, 0, 8), rt.reset_device_res_limit(0))[1],
                                lambda r, e: rt.get_device_res_limit(0, 0)[0] == 20,
                                invalid=lambda e: rt.reset_device_res_limit(99), code=BAD_DEVICE),
    "get_stream_res_limit": R("1", lambda e: (rt.set_device_res_limit(0, 1, 5), rt.get_stream_res_limit(e.stream, 1))[1],
                              lambda r, e: r[0] == 5,  # a stream without a limit of its own: its device's
                              invalid=lambda e: rt.get_stream_res_limit(e.stale_stream(), 1), code=BAD_HANDLE),
    "set_stream_res_limit": R("ret", lambda e: rt.set_stream_res_limit(e.stream, 1, 3),
                              lambda r, e: rt.get_stream_res_limit(e.stream, 1)[0] == 3,
                              invalid=lambda e: rt.set_stream_res_limit(e.stream, 1, 0)),
    "reset_stream_res_limit": R("ret", lambda e: (rt.set_stream_res_limit(e.stream, 1, 3),
                                                  rt.reset_stream_res_limit(e.stream))[1],
                                lambda r, e: rt.get_stream_res_limit(e.stream, 1)[0] == 40,
                                invalid=lambda e: rt.reset_stream_res_limit(e.stale_stream()), code=BAD_HANDLE),
    "use_stream_res_in_current_thread": R("ret", lambda e: (rt.set_stream_res_limit(e.stream, 0, 2),
                                                            rt.use_stream_res_in_current_thread(e.stream))[1],
                                          lambda r, e: rt.get_res_in_current_thread(0)[0] == 2,
                                          invalid=lambda e: rt.use_stream_res_in_current_thread(e.stale_stream()),
                                          code=BAD_HANDLE),
    "unuse_stream_res_in_current_thread": R("ret", lambda e: (rt.set_stream_res_limit(e.stream, 0, 2),
                                                              rt.use_stream_res_in_current_thread(e.stream),
                                                              rt.unuse_stream_res_in_current_thread(e.stream))[2],
                                            lambda r, e: rt.get_res_in_current_thread(0)[0] == 20,
                                            invalid=lambda e: rt.unuse_stream_res_in_current_thread(e.stale_stream()),
                                            code=BAD_HANDLE),
    "get_res_in_current_thread": R("1", lambda e: rt.get_res_in_current_thread(0), lambda r, e: r[0] == 20,
                                   invalid=lambda e: rt.get_res_in_current_thread(9)),
    "get_user_dev_id_by_logic_dev_id": R("1", lambda e: rt.get_user_dev_id_by_logic_dev_id(1), lambda r, e: r[0] == 1,
                                         invalid=lambda e: rt.get_user_dev_id_by_logic_dev_id(99), code=BAD_DEVICE),
    "get_logic_dev_id_by_user_dev_id": R("1", lambda e: rt.get_logic_dev_id_by_user_dev_id(0), lambda r, e: r[0] == 0,
                                         invalid=lambda e: rt.get_logic_dev_id_by_user_dev_id(9), code=BAD_DEVICE),
    "get_phy_dev_id_by_logic_dev_id": R("1", lambda e: rt.get_phy_dev_id_by_logic_dev_id(1), lambda r, e: r[0] == 1,
                                        invalid=lambda e: rt.get_phy_dev_id_by_logic_dev_id(-1),
                                        code=C.ACL_ERROR_RT_PARAM_INVALID),
    "get_logic_dev_id_by_phy_dev_id": R("1", lambda e: rt.get_logic_dev_id_by_phy_dev_id(1), lambda r, e: r[0] == 1,
                                        invalid=lambda e: rt.get_logic_dev_id_by_phy_dev_id(7), code=BAD_DEVICE),
    "device_get_uuid": R("1", lambda e: rt.device_get_uuid(0), lambda r, e: len(r[0]["bytes"]) == 16,
                         invalid=lambda e: rt.device_get_uuid(99), code=BAD_DEVICE),
    "device_get_bare_tgid": R("1", lambda e: rt.device_get_bare_tgid(), lambda r, e: r[0] == os.getpid()),
    "device_set_limit": R("ret", lambda e: rt.device_set_limit(C.ACL_RT_DEV_LIMIT_SIMD_STACK_SIZE, 64 * 1024),
                          invalid=lambda e: rt.device_set_limit(C.ACL_RT_DEV_LIMIT_SIMT_STACK_SIZE, 1152),
                          code=NOT_SUPPORTED),
    "device_get_limit": R("1", lambda e: rt.device_get_limit(C.ACL_RT_DEV_LIMIT_SIMD_STACK_SIZE),
                          lambda r, e: r[0] == 32768, invalid=lambda e: rt.device_get_limit(99)),
    "set_sys_param_opt": R("ret", lambda e: rt.set_sys_param_opt(C.ACL_OPT_DETERMINISTIC, 1),
                           invalid=lambda e: rt.set_sys_param_opt(42, 1)),
    "get_sys_param_opt": R("1", lambda e: rt.get_sys_param_opt(C.ACL_OPT_DETERMINISTIC), lambda r, e: r[0] == 0,
                           invalid=lambda e: rt.get_sys_param_opt(42)),

    # ---- contexts
    "create_context": R("1", lambda e: rt.create_context(0), lambda r, e: rt.get_context()[0] == r[0],
                        invalid=lambda e: rt.create_context(99), code=BAD_DEVICE),
    "destroy_context": R("ret", lambda e: rt.destroy_context(rt.create_context(0)[0]),
                         invalid=lambda e: rt.destroy_context(e.ctx)),
    "set_context": R("ret", lambda e: rt.set_context(e.ctx), invalid=lambda e: rt.set_context(e.stream),
                     code=BAD_HANDLE),
    "get_context": R("1", lambda e: rt.get_context(), lambda r, e: r[0] == e.ctx,
                     invalid=lambda e: rt.get_context(), thread=True, code=NO_CONTEXT),
    "ctx_get_current_default_stream": R("1", lambda e: rt.ctx_get_current_default_stream(),
                                        lambda r, e: r[0] not in (0, e.stream),
                                        invalid=lambda e: rt.ctx_get_current_default_stream(), thread=True,
                                        code=NO_CONTEXT),
    "get_primary_ctx_state": R("2", lambda e: rt.get_primary_ctx_state(0), lambda r, e: r[:2] == (1, 0),
                               invalid=lambda e: rt.get_primary_ctx_state(99), code=BAD_DEVICE),
    "ctx_set_sys_param_opt": R("ret", lambda e: rt.ctx_set_sys_param_opt(C.ACL_OPT_DETERMINISTIC, 1),
                               invalid=lambda e: rt.ctx_set_sys_param_opt(9, 1)),
    "ctx_get_sys_param_opt": R("1", lambda e: twice(lambda: rt.ctx_set_sys_param_opt(0, 2),
                                                    lambda: rt.ctx_get_sys_param_opt(0)), lambda r, e: r[0] == 2,
                               invalid=lambda e: rt.ctx_get_sys_param_opt(0), code=C.ACL_ERROR_RT_SYSPARAMOPT_NOT_SET),

    # ---- streams
    "create_stream": R("1", lambda e: rt.create_stream(), lambda r, e: r[0] != 0,
                       invalid=lambda e: rt.create_stream(), thread=True, code=NO_CONTEXT),
    "create_stream_with_config": R("1", lambda e: rt.create_stream_with_config(3, C.ACL_STREAM_FAST_LAUNCH),
                                   lambda r, e: rt.get_stream_attribute(r[0], C.ACL_STREAM_ATTR_PRIORITY)[0]
                                   == {"reserved": [3, 0, 0, 0]},
                                   invalid=lambda e: rt.create_stream_with_config(0, -1)),
    "destroy_stream": R("ret", lambda e: rt.destroy_stream(e.stream), invalid=lambda e: rt.destroy_stream(0)),
    "destroy_stream_force": R("ret", lambda e: rt.destroy_stream_force(rt.create_stream()[0]),
                              invalid=lambda e: rt.destroy_stream_force(e.stale_stream()), code=BAD_HANDLE),
    "synchronize_stream": R("ret", lambda e: rt.synchronize_stream(e.stream),
                            invalid=lambda e: rt.synchronize_stream(e.event), code=BAD_HANDLE),
    "synchronize_stream_with_timeout": R("ret", lambda e: rt.synchronize_stream_with_timeout(e.stream, 1000),
                                         invalid=lambda e: rt.synchronize_stream_with_timeout(e.stream, -5),
                                         code=PARAM_INVALID),
    "stream_query": R("1", lambda e: rt.stream_query(e.stream), lambda r, e: r[0] == C.ACL_STREAM_STATUS_COMPLETE,
                      invalid=lambda e: rt.stream_query(e.stale_stream()), code=BAD_HANDLE),
    "set_stream_failure_mode": R("ret", lambda e: rt.set_stream_failure_mode(e.stream, C.ACL_STOP_ON_FAILURE),
                                 invalid=lambda e: twice(lambda: rt.set_stream_failure_mode(e.stream, 1),
                                                         lambda: rt.set_stream_failure_mode(e.stream, 0)),
                                 code=NOT_SUPPORTED),
    "stream_abort": R("ret", lambda e: rt.stream_abort(e.stream), invalid=lambda e: rt.stream_abort(12345),
                      code=BAD_HANDLE),
    "stream_get_id": R("1", lambda e: rt.stream_get_id(0), lambda r, e: isinstance(r[0], int),
                       invalid=lambda e: rt.stream_get_id(e.event), code=BAD_HANDLE),
    "get_stream_available_num": R("1", lambda e: rt.get_stream_available_num(), lambda r, e: r[0] > 1000,
                                  invalid=lambda e: rt.get_stream_available_num(), thread=True, code=NO_CONTEXT),
    "set_stream_attribute": R("ret", lambda e: rt.set_stream_attribute(e.stream, C.ACL_STREAM_ATTR_USER_CUSTOM_TAG,
                                                                       {"userCustomTag": 5}),
                              invalid=lambda e: rt.set_stream_attribute(e.stream, 99, {})),
    "get_stream_attribute": R("1", lambda e: rt.get_stream_attribute(e.stream, C.ACL_STREAM_ATTR_FAILURE_MODE),
                              lambda r, e: r[0] == {"failureMode": C.ACL_CONTINUE_ON_FAILURE},
                              invalid=lambda e: rt.get_stream_attribute(e.stream, 99)),
    "set_stream_overflow_switch": R("ret", lambda e: rt.set_stream_overflow_switch(e.stream, 1),
                                    invalid=lambda e: rt.set_stream_overflow_switch(e.stale_stream(), 1),
                                    code=BAD_HANDLE),
    "get_stream_overflow_switch": R("1", lambda e: rt.get_stream_overflow_switch(e.stream), lambda r, e: r[0] == 0,
                                    invalid=lambda e: rt.get_stream_overflow_switch(e.stale_stream()),
                                    code=BAD_HANDLE),

    # ---- notifies and value waits (issue 25)
    "create_notify": R("1", lambda e: rt.create_notify(0), lambda r, e: r[0] != 0,
                       invalid=lambda e: rt.create_notify(5), code=PARAM_INVALID),
    "destroy_notify": R("ret", lambda e: rt.destroy_notify(rt.create_notify(0)[0]),
                        invalid=lambda e: rt.destroy_notify(12345), code=BAD_HANDLE),
    "record_notify": R("ret", lambda e: rt.record_notify(rt.create_notify(0)[0], e.stream),
                       invalid=lambda e: rt.record_notify(12345, e.stream), code=BAD_HANDLE),
    "wait_and_reset_notify": R("ret", lambda e: (lambda n: twice(lambda: rt.record_notify(n, e.stream),
                                                                 lambda: rt.wait_and_reset_notify(n, e.stream, 0)))(
                                   rt.create_notify(0)[0]),
                               invalid=lambda e: rt.wait_and_reset_notify(12345, e.stream, 0), code=BAD_HANDLE),
    "get_notify_id": R("1", lambda e: rt.get_notify_id(rt.create_notify(0)[0]), lambda r, e: r[0] >= 0,
                       invalid=lambda e: rt.get_notify_id(12345), code=BAD_HANDLE),
    # ---- IPC between the processes sharing a device (issue 26)
    "notify_get_export_key": R("1", lambda e: rt.notify_get_export_key(rt.create_notify(0)[0], 65, 0),
                               lambda r, e: r[0].startswith("ntf0-"),
                               invalid=lambda e: rt.notify_get_export_key(rt.create_notify(0)[0], 65, 1),
                               code=PARAM_INVALID),
    "notify_set_import_pid": R("ret", lambda e: (lambda n: twice(lambda: rt.notify_get_export_key(n, 65, 0),
                                                                 lambda: rt.notify_set_import_pid(n, [1])))(
                                   rt.create_notify(0)[0]),
                               invalid=lambda e: rt.notify_set_import_pid(rt.create_notify(0)[0], [1]),
                               code=PARAM_INVALID),
    "notify_import_by_key": R("1", lambda e: imported_from_a_peer(lambda m, n: rt.notify_import_by_key(n, 0)),
                              lambda r, e: r[0] != 0,
                              invalid=lambda e: rt.notify_import_by_key("ntf0-" + "0" * 32, 0), code=PARAM_INVALID),
    "ipc_mem_get_export_key": R("1", lambda e: rt.ipc_mem_get_export_key(e.dev, 4096, 65, 1),
                                lambda r, e: r[0].startswith("mem0-"),
                                invalid=lambda e: rt.ipc_mem_get_export_key(e.host, 4096, 65, 1), code=PARAM_INVALID),
    "ipc_mem_set_import_pid": R("ret", lambda e: rt.ipc_mem_set_import_pid(
                                    rt.ipc_mem_get_export_key(e.dev, 4096, 65, 0)[0], [1]),
                                invalid=lambda e: rt.ipc_mem_set_import_pid("mem0-" + "0" * 32, [1]),
                                code=PARAM_INVALID),
    "ipc_mem_import_by_key": R("1", lambda e: imported_from_a_peer(lambda m, n: twice(
                                   lambda: None, lambda: (lambda r: (rt.ipc_mem_close(m), r)[1])(
                                       rt.ipc_mem_import_by_key(m, 0)))),
                               lambda r, e: r[0] >= 1 << 48,
                               invalid=lambda e: rt.ipc_mem_import_by_key("mem0-" + "0" * 32, 0), code=PARAM_INVALID),
    "ipc_mem_close": R("ret", lambda e: rt.ipc_mem_close(rt.ipc_mem_get_export_key(e.dev, 4096, 65, 1)[0]),
                       invalid=lambda e: rt.ipc_mem_close("mem0-" + "0" * 32), code=PARAM_INVALID),
    # ---- virtual memory management
    "mem_get_allocation_granularity": R("1", lambda e: rt.mem_get_allocation_granularity(VMM_PROP, 0),
                                        lambda r, e: r[0] == GRANULE,
                                        invalid=lambda e: rt.mem_get_allocation_granularity(VMM_PROP, 2),
                                        code=PARAM_INVALID),
    "malloc_physical": R("1", lambda e: rt.malloc_physical(GRANULE, VMM_PROP, 0), lambda r, e: r[0] != 0,
                         invalid=lambda e: rt.malloc_physical(GRANULE + 1, VMM_PROP, 0), code=PARAM_INVALID),
    "free_physical": R("ret", lambda e: rt.free_physical(e.physical()),
                       invalid=lambda e: (lambda h: twice(lambda: rt.free_physical(h),
                                                          lambda: rt.free_physical(h)))(e.physical()),
                       code=BAD_HANDLE),
    "reserve_mem_address": R("1", lambda e: rt.reserve_mem_address(GRANULE, 0, 0, 0), lambda r, e: r[0] >= 1 << 48,
                             invalid=lambda e: rt.reserve_mem_address(GRANULE, 0, e.dev, 0), code=PARAM_INVALID),
    "release_mem_address": R("ret", lambda e: rt.release_mem_address(e.reserved()),
                             invalid=lambda e: rt.release_mem_address(e.mapped()), code=PARAM_INVALID),
    "map_mem": R("ret", lambda e: rt.map_mem(e.reserved(), GRANULE, 0, e.physical(), 0),
                 invalid=lambda e: rt.map_mem(e.mapped(), GRANULE, 0, e.physical(), 0), code=PARAM_INVALID),
    "unmap_mem": R("ret", lambda e: rt.unmap_mem(e.mapped()),
                   invalid=lambda e: rt.unmap_mem(e.reserved()), code=PARAM_INVALID),
    "mem_export_to_shareable_handle": R("1", lambda e: rt.mem_export_to_shareable_handle(e.physical(), 0, 0),
                                        lambda r, e: r[0] != 0,
                                        invalid=lambda e: rt.mem_export_to_shareable_handle(e.physical(), 0, 2),
                                        code=PARAM_INVALID),
    "mem_set_pid_to_shareable_handle": R("ret", lambda e: rt.mem_set_pid_to_shareable_handle(e.exported(),
                                                                                             [os.getpid() + 1]),
                                         invalid=lambda e: rt.mem_set_pid_to_shareable_handle(e.exported(), [])),
    "mem_import_from_shareable_handle": R("1", lambda e: imported_physical_from_a_peer(), lambda r, e: r[0] != 0,
                                          invalid=lambda e: rt.mem_import_from_shareable_handle(e.exported(1), 0),
                                          code=PARAM_INVALID),
    "value_write": R("ret", lambda e: rt.value_write(e.dev, 7, 0, e.stream),
                     invalid=lambda e: rt.value_write(e.dev, 7, 1, e.stream), code=PARAM_INVALID),
    "value_wait": R("ret", lambda e: rt.value_wait(e.dev, 0, C.ACL_STREAM_WAIT_VALUE_GEQ, e.stream),
                    invalid=lambda e: rt.value_wait(e.dev, 0, 9, e.stream), code=PARAM_INVALID),

    # ---- events
    "create_event": R("1", lambda e: rt.create_event(), lambda r, e: r[0] != 0,
                      invalid=lambda e: rt.create_event(), thread=True, code=NO_CONTEXT),
    "create_event_with_flag": R("1", lambda e: rt.create_event_with_flag(C.ACL_EVENT_SYNC), lambda r, e: r[0] != 0,
                                invalid=lambda e: rt.create_event_with_flag(0), code=PARAM_INVALID),
    "create_event_ex_with_flag": R("1", lambda e: rt.create_event_ex_with_flag(C.ACL_EVENT_SYNC),
                                   lambda r, e: rt.query_event_status(r[0])[0] == 1,
                                   invalid=lambda e: rt.create_event_ex_with_flag(0), code=PARAM_INVALID),
    "destroy_event": R("ret", lambda e: rt.destroy_event(e.event),
                       invalid=lambda e: rt.destroy_event(e.stale_event()), code=BAD_HANDLE),
    "record_event": R("ret", lambda e: rt.record_event(e.event, e.stream),
                      invalid=lambda e: rt.record_event(e.stream, e.stream), code=BAD_HANDLE),
    "synchronize_event": R("ret", lambda e: twice(lambda: rt.record_event(e.event, 0),
                                                  lambda: rt.synchronize_event(e.event)),
                           invalid=lambda e: rt.synchronize_event(12345), code=BAD_HANDLE),
    "stream_wait_event": R("ret", lambda e: rt.stream_wait_event(e.stream, e.recorded_event()),
                           invalid=lambda e: rt.stream_wait_event(e.stream, e.event), code=PARAM_INVALID),
    "reset_event": R("ret", lambda e: rt.reset_event(e.recorded_event(C.ACL_EVENT_SYNC), e.stream),
                     invalid=lambda e: rt.reset_event(rt.create_event_with_flag(C.ACL_EVENT_TIME_LINE)[0], e.stream),
                     code=NOT_SUPPORTED),
    "query_event": R("1", lambda e: rt.query_event(e.recorded_event()),
                     lambda r, e: r[0] == C.ACL_EVENT_STATUS_COMPLETE,
                     invalid=lambda e: rt.query_event(rt.create_event_ex_with_flag(C.ACL_EVENT_SYNC)[0]),
                     code=NOT_SUPPORTED),
    "query_event_status": R("1", lambda e: rt.query_event_status(e.recorded_event()),
                            lambda r, e: r[0] == C.ACL_EVENT_RECORDED_STATUS_COMPLETE,
                            invalid=lambda e: rt.query_event_status(e.stale_event()), code=BAD_HANDLE),
    "query_event_wait_status": R("1", lambda e: rt.query_event_wait_status(rt.create_event_with_flag(1)[0]),
                                 lambda r, e: r[0] == C.ACL_EVENT_WAIT_STATUS_COMPLETE,
                                 invalid=lambda e: rt.query_event_wait_status(
                                     rt.create_event_ex_with_flag(C.ACL_EVENT_SYNC)[0]), code=NOT_SUPPORTED),
    "synchronize_event_with_timeout": R("ret", lambda e: rt.synchronize_event_with_timeout(e.recorded_event(), 1000),
                                        invalid=lambda e: rt.synchronize_event_with_timeout(e.event, 0),
                                        code=PARAM_INVALID),
    "event_elapsed_time": R("1", lambda e: rt.event_elapsed_time(e.recorded_event(), e.recorded_event()),
                            lambda r, e: isinstance(r[0], float) and r[0] >= 0,
                            invalid=lambda e: rt.event_elapsed_time(e.event, e.event),
                            code=C.ACL_ERROR_RT_INTERNAL_ERROR),
    "set_op_wait_timeout": R("ret", lambda e: rt.set_op_wait_timeout(5), invalid=lambda e: rt.set_op_wait_timeout(1.5),
                             raises=(TypeError, "acl.rt.set_op_wait_timeout args parse failed!")),
    "event_get_timestamp": R("1", lambda e: rt.event_get_timestamp(e.recorded_event()), lambda r, e: r[0] >= 0,
                             invalid=lambda e: rt.event_get_timestamp(e.recorded_event(C.ACL_EVENT_SYNC)),
                             code=C.ACL_ERROR_RT_EVENT_TIMESTAMP_INVALID),
    "get_event_id": R("1", lambda e: rt.get_event_id(e.event), lambda r, e: isinstance(r[0], int),
                      invalid=lambda e: rt.get_event_id(e.stale_event()), code=BAD_HANDLE),
    "get_event_avail_num": R("1", lambda e: rt.get_event_avail_num(), lambda r, e: r[0] > 1000,
                             invalid=lambda e: rt.get_event_avail_num(), thread=True, code=NO_CONTEXT),

    # ---- device memory
    "malloc": R("1", lambda e: rt.malloc(100, C.ACL_MEM_MALLOC_HUGE_FIRST), lambda r, e: r[0] % 64 == 0,
                invalid=lambda e: rt.malloc(0, 0)),
    "free": R("ret", lambda e: rt.free(e.dev), invalid=lambda e: rt.free(e.host)),
    "malloc_align32": R("1", lambda e: rt.malloc_align32(100, 0), lambda r, e: r[0] != 0,
                        invalid=lambda e: rt.malloc_align32(0, 0)),
    "malloc_cached": R("1", lambda e: rt.malloc_cached(100, 0), lambda r, e: r[0] != 0,
                       invalid=lambda e: rt.malloc_cached(0, 0)),
    "malloc_with_cfg": R("1", lambda e: rt.malloc_with_cfg(100, 0, {}), lambda r, e: r[0] != 0,
                         invalid=lambda e: rt.malloc_with_cfg(100, 0, {"attrs": [{"attr": C.ACL_RT_MEM_ATTR_DEVICE_ID,
                                                                                  "value": {"deviceId": 1}}],
                                                                       "numAttrs": 1})),
    "malloc_for_task_scheduler": R("1", lambda e: rt.malloc_for_task_scheduler(100, 0, {}), lambda r, e: r[0] != 0,
                                   invalid=lambda e: rt.malloc_for_task_scheduler(
                                       100, 0, {"attrs": [{"attr": C.ACL_RT_MEM_ATTR_DEVICE_ID, "value": {"deviceId": 1}}],
                                                "numAttrs": 1})),
    "mem_flush": R("ret", lambda e: rt.mem_flush(e.dev, 64), invalid=lambda e: rt.mem_flush(e.host, 64)),
    "mem_invalidate": R("ret", lambda e: rt.mem_invalidate(e.dev, 64), invalid=lambda e: rt.mem_invalidate(e.dev, 0)),
    "get_mem_info": R("2", lambda e: rt.get_mem_info(C.ACL_HBM_MEM), lambda r, e: r[1] == 62432 << 20 and 0 < r[0] <= r[1],
                      invalid=lambda e: rt.get_mem_info(99)),

    # ---- host memory
    "malloc_host": R("1", lambda e: rt.malloc_host(100), lambda r, e: r[0] % 64 == 0,
                     invalid=lambda e: rt.malloc_host(0)),
    "malloc_host_with_cfg": R("1", lambda e: rt.malloc_host_with_cfg(100, {}), lambda r, e: r[0] != 0,
                              invalid=lambda e: rt.malloc_host_with_cfg(100, "config"),
                              raises=(TypeError, "pyCfg is not dict!")),
    "free_host": R("ret", lambda e: rt.free_host(e.host), invalid=lambda e: rt.free_host(e.dev)),
    "host_register": R("1", lambda e: rt.host_register(e.page_buffer(), 8192, C.ACL_HOST_REGISTER_MAPPED),
                       lambda r, e: r[0] >= 1 << 48,
                       invalid=lambda e: rt.host_register(e.page_buffer() + 8, 4096, C.ACL_HOST_REGISTER_MAPPED)),
    "host_register_v2": R("ret", lambda e: rt.host_register_v2(e.page_buffer(), 8192, C.ACL_HOST_REG_MAPPED),
                          invalid=lambda e: rt.host_register_v2(e.page_buffer(), 8192, 12345)),
    "host_get_device_pointer": R("1", lambda e: (lambda p: twice(lambda: rt.host_register(p, 8192, 0),
                                                                 lambda: rt.host_get_device_pointer(p, 0)))(
                                                                     e.page_buffer()),
                                 lambda r, e: r[0] >= 1 << 48,
                                 invalid=lambda e: rt.host_get_device_pointer(e.page_buffer(), 0)),
    "host_unregister": R("ret", lambda e: (lambda p: twice(lambda: rt.host_register(p, 8192, 0),
                                                           lambda: rt.host_unregister(p)))(e.page_buffer()),
                         invalid=lambda e: rt.host_unregister(e.page_buffer()),
                         code=C.ACL_ERROR_HOST_MEMORY_NOT_REGISTERED),

    # ---- copies and sets
    "memcpy": R("ret", lambda e: rt.memcpy(e.dev, 4096, e.host, 4096, C.ACL_MEMCPY_HOST_TO_DEVICE),
                invalid=lambda e: rt.memcpy(e.dev, 4096, e.host, 4096, C.ACL_MEMCPY_INNER_DEVICE_TO_DEVICE)),
    "memcpy_async": R("ret", lambda e: rt.memcpy_async(e.dev, 4096, e.host, 64, 1, e.stream),
                      invalid=lambda e: rt.memcpy_async(e.dev + 1, 4095, e.host, 64, 1, e.stream),
                      code=C.ACL_ERROR_RT_ADDR_UNALIGNED),
    "memcpy_async_with_condition": R("ret", lambda e: rt.memcpy_async_with_condition(e.dev, 4096, e.host, 64, 1,
                                                                                     e.stream),
                                     invalid=lambda e: rt.memcpy_async_with_condition(e.dev, 32, e.host, 64, 1,
                                                                                      e.stream),
                                     code=PARAM_INVALID),
    "memcpy2d": R("ret", lambda e: rt.memcpy2d(e.dev, 64, e.host, 64, 32, 4, C.ACL_MEMCPY_HOST_TO_DEVICE),
                  invalid=lambda e: rt.memcpy2d(e.dev, 64, e.dev2, 64, 32, 4, C.ACL_MEMCPY_DEVICE_TO_DEVICE)),
    "memcpy2d_async": R("ret", lambda e: rt.memcpy2d_async(e.host, 64, e.dev, 64, 32, 4, 2, e.stream),
                        invalid=lambda e: rt.memcpy2d_async(e.host, 16, e.dev, 64, 32, 4, 2, e.stream)),
    "memset": R("ret", lambda e: rt.memset(e.dev, 4096, 1, 100), invalid=lambda e: rt.memset(e.dev, 10, 1, 100),
                code=PARAM_INVALID),
    "memset_async": R("ret", lambda e: rt.memset_async(e.dev, 4096, 1, 100, e.stream),
                      invalid=lambda e: rt.memset_async(e.dev, 4096, 1, 100, e.stale_stream()), code=BAD_HANDLE),
    "pointer_get_attributes": R("1", lambda e: rt.pointer_get_attributes(e.dev),
                                lambda r, e: r[0]["location"] == {"id": 0, "type": C.ACL_MEM_LOCATION_TYPE_DEVICE},
                                invalid=lambda e: rt.pointer_get_attributes(0)),
    "cmo_async": R("ret", lambda e: rt.cmo_async(e.dev, 64, C.ACL_RT_CMO_TYPE_PREFETCH, e.stream),
                   invalid=lambda e: rt.cmo_async(e.dev, 64, C.ACL_RT_CMO_TYPE_FLUSH, e.stream)),
    "allocator_unregister": R("ret", lambda e: rt.allocator_unregister(e.stream),
                              invalid=lambda e: rt.allocator_unregister(0)),
    "allocator_create_desc": R("value", lambda e: rt.allocator_create_desc(), lambda r, e: r != 0),
    "allocator_destroy_desc": R("ret", lambda e: rt.allocator_destroy_desc(rt.allocator_create_desc()),
                                invalid=lambda e: rt.allocator_destroy_desc(0)),
    "allocator_set_obj_to_desc": R("ret", lambda e: rt.allocator_set_obj_to_desc(rt.allocator_create_desc(), 7),
                                   invalid=lambda e: rt.allocator_set_obj_to_desc(0, 7)),
    "allocator_set_alloc_func_to_desc": R("ret", lambda e: rt.allocator_set_alloc_func_to_desc(
        rt.allocator_create_desc(), print), invalid=lambda e: rt.allocator_set_alloc_func_to_desc(0, print)),
    "allocator_set_free_func_to_desc": R("ret", lambda e: rt.allocator_set_free_func_to_desc(
        rt.allocator_create_desc(), print), invalid=lambda e: rt.allocator_set_free_func_to_desc(0, print)),
    "allocator_set_alloc_advise_func_to_desc": R("ret", lambda e: rt.allocator_set_alloc_advise_func_to_desc(
        rt.allocator_create_desc(), print), invalid=lambda e: rt.allocator_set_alloc_advise_func_to_desc(0, print)),
    "allocator_set_get_addr_from_block_func_to_desc": R(
        "ret", lambda e: rt.allocator_set_get_addr_from_block_func_to_desc(rt.allocator_create_desc(), print),
        invalid=lambda e: rt.allocator_set_get_addr_from_block_func_to_desc(0, print)),
    "allocator_register": R("ret", lambda e: rt.allocator_register(e.stream, e.complete_allocator_desc()),
                            invalid=lambda e: rt.allocator_register(e.stream, rt.allocator_create_desc())),

    # ---- execution control
    "subscribe_report": R("ret", lambda e: rt.subscribe_report(threading.get_ident(), e.stream),
                          invalid=lambda e: twice(e.subscribed, lambda: rt.subscribe_report(1, e.stream)),
                          code=C.ACL_ERROR_REPEAT_SUBSCRIBE),
    "launch_callback": R("ret", lambda e: twice(e.subscribed, lambda: rt.launch_callback(print, [], 0, e.stream)),
                         invalid=lambda e: rt.launch_callback(print, [], 0, e.stream),
                         code=C.ACL_ERROR_RT_STREAM_NO_CB_REG),
    "process_report": R("ret", lambda e: twice(lambda: twice(e.subscribed, lambda: rt.launch_callback(
                            e.keep, ["ran"], C.ACL_CALLBACK_NO_BLOCK, e.stream)), lambda: rt.process_report(2000)),
                        lambda r, e: ["ran"] in e._keep,
                        invalid=lambda e: rt.process_report(0)),
    "unsubscribe_report": R("ret", lambda e: rt.unsubscribe_report(e.subscribed(), e.stream),
                            invalid=lambda e: rt.unsubscribe_report(threading.get_ident(), e.stream),
                            code=C.ACL_ERROR_RT_STREAM_SUBSCRIBE),
    "reduce_async": R("ret", lambda e: rt.reduce_async(e.dev, e.dev2, 64, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM,
                                                       C.ACL_FLOAT, e.stream, 0),
                      invalid=lambda e: rt.reduce_async(e.dev, e.dev2, 64, C.ACL_RT_MEMCPY_SDMA_AUTOMATIC_SUM,
                                                        C.ACL_FLOAT, e.stream, 1)),
    "set_op_execute_time_out": R("ret", lambda e: rt.set_op_execute_time_out(10),
                                 invalid=lambda e: rt.set_op_execute_time_out("1s"),
                                 raises=(TypeError, "acl.rt.set_op_execute_timeout args parse failed!")),
    "set_op_execute_timeout_v2": R("1", lambda e: rt.set_op_execute_timeout_v2(1_000_000),
                                   lambda r, e: r[0] == rt.get_op_timeout_interval()[0],
                                   invalid=lambda e: rt.set_op_execute_timeout_v2("1s"),
                                   raises=(TypeError, "acl.rt.set_op_execute_timeout_v2 args parse failed!")),
    "get_op_execute_timeout": R("1", lambda e: rt.get_op_execute_timeout(),
                                lambda r, e: r[0] == rt.get_op_timeout_interval()[0] * 254 // 1000),
    "get_op_timeout_interval": R("1", lambda e: rt.get_op_timeout_interval(), lambda r, e: r[0] > 0,
                                 invalid=lambda e: rt.get_op_timeout_interval(), thread=True, code=NO_CONTEXT),

    # ---- exceptions (get_last_error / peek_at_last_error have their own tests below)
    "set_exception_info_callback": R("ret", lambda e: rt.set_exception_info_callback(print),
                                     invalid=lambda e: rt.set_exception_info_callback("print"),
                                     raises=(TypeError, "acl.rt.set_exception_info_callback args parse failed")),
    "get_task_id_from_exception_info": R("value", lambda e: rt.get_task_id_from_exception_info(e.exception_info()),
                                         lambda r, e: r != 0xFFFFFFFF,
                                         invalid=lambda e: rt.get_task_id_from_exception_info(5), code=BAD_HANDLE),
    "get_stream_id_from_exception_info": R("value", lambda e: rt.get_stream_id_from_exception_info(e.exception_info()),
                                           lambda r, e: r == rt.stream_get_id(e.stream)[0],
                                           invalid=lambda e: rt.get_stream_id_from_exception_info(5), code=BAD_HANDLE),
    "get_thread_id_from_exception_info": R("value", lambda e: rt.get_thread_id_from_exception_info(e.exception_info()),
                                           lambda r, e: r != 0xFFFFFFFF,
                                           invalid=lambda e: rt.get_thread_id_from_exception_info(5), code=BAD_HANDLE),
    "get_device_id_from_exception_info": R("value", lambda e: rt.get_device_id_from_exception_info(e.exception_info()),
                                           lambda r, e: r == 0,
                                           invalid=lambda e: rt.get_device_id_from_exception_info(5), code=BAD_HANDLE),
    "get_error_code_from_exception_info": R("value",
                                            lambda e: rt.get_error_code_from_exception_info(e.exception_info()),
                                            lambda r, e: r == C.ACL_ERROR_RT_AICPU_EXCEPTION,
                                            invalid=lambda e: rt.get_error_code_from_exception_info(5),
                                            code=BAD_HANDLE),

    # ---- kernels
    "binary_load_from_file": R("1", lambda e: rt.binary_load_from_file(VADD, []), lambda r, e: r[0] != 0,
                               invalid=lambda e: rt.binary_load_from_file("/nonexistent/k.py", []),
                               code=C.ACL_ERROR_INVALID_FILE),
    "binary_load_from_data": R("1", lambda e: rt.binary_load_from_data(acl.util.bytes_to_ptr(KERNEL_SRC),
                                                                       len(KERNEL_SRC), []), lambda r, e: r[0] != 0,
                               invalid=lambda e: rt.binary_load_from_data(acl.util.bytes_to_ptr(b"\x00\xff garbage"),
                                                                          10, []), code=C.ACL_ERROR_PARSE_FILE),
    "create_binary": R("value", lambda e: e.created_binary(), lambda r, e: r != 0,
                       invalid=lambda e: rt.create_binary(e.host, 0)),
    "destroy_binary": R("ret", lambda e: rt.destroy_binary(e.created_binary()),
                        invalid=lambda e: rt.destroy_binary(e.binary()), code=BAD_HANDLE),
    "binary_load": R("1", lambda e: rt.binary_load(e.created_binary()), lambda r, e: r[0] != 0,
                     invalid=lambda e: rt.binary_load(e.binary()), code=BAD_HANDLE),
    "binary_unload": R("ret", lambda e: rt.binary_unload(e.binary()),
                       invalid=lambda e: (lambda b: twice(lambda: rt.binary_unload(b),
                                                          lambda: rt.binary_unload(b)))(e.binary()),
                       code=BAD_HANDLE),
    "binary_get_function": R("1", lambda e: rt.binary_get_function(e.binary(), "vadd"), lambda r, e: r[0] != 0,
                             invalid=lambda e: rt.binary_get_function(e.binary(), "vsub"),
                             code=C.ACL_ERROR_KERNEL_NOT_FOUND),
    "register_cpu_func": R("1", lambda e: rt.register_cpu_func(e.binary(), "f", "k"), valid_ret=NOT_SUPPORTED,
                           invalid=lambda e: rt.register_cpu_func(e.stream, "f", "k"), code=BAD_HANDLE),
    "get_function_addr": R("2", lambda e: rt.get_function_addr(e.vadd()), lambda r, e: r[0] != 0,
                           invalid=lambda e: rt.get_function_addr(e.binary()), code=BAD_HANDLE),
    "get_function_name": R("1", lambda e: rt.get_function_name(e.vadd(), 64), lambda r, e: r[0] == "vadd",
                           invalid=lambda e: rt.get_function_name(e.vadd(), 2)),
    "kernel_args_init": R("1", lambda e: rt.kernel_args_init(e.vadd()), lambda r, e: r[0] != 0,
                          invalid=lambda e: rt.kernel_args_init(12345), code=BAD_HANDLE),
    "kernel_args_init_by_user_mem": R("ret", lambda e: rt.kernel_args_init_by_user_mem(
                                          e.vadd(), e.host, e.host + 1024, 32),
                                      invalid=lambda e: rt.kernel_args_init_by_user_mem(
                                          e.vadd(), e.host, e.host + 1024, 8)),
    "kernel_args_get_mem_size": R("1", lambda e: rt.kernel_args_get_mem_size(e.vadd(), 0), lambda r, e: r[0] == 32,
                                  invalid=lambda e: rt.kernel_args_get_mem_size(e.stream, 0), code=BAD_HANDLE),
    "kernel_args_get_handle_mem_size": R("1", lambda e: rt.kernel_args_get_handle_mem_size(e.vadd()),
                                         lambda r, e: r[0] > 0,
                                         invalid=lambda e: rt.kernel_args_get_handle_mem_size(e.stream),
                                         code=BAD_HANDLE),
    "kernel_args_append": R("1", lambda e: e.append_gm(e.kernel_args(0)[1]), lambda r, e: r[0] != 0,
                            invalid=lambda e: e.append_gm(e.kernel_args(4)[1])),
    "kernel_args_append_place_holder": R("1", lambda e: rt.kernel_args_append_place_holder(e.kernel_args(0)[1]),
                                         lambda r, e: r[0] != 0,
                                         invalid=lambda e: rt.kernel_args_append_place_holder(e.kernel_args(3)[1])),
    "kernel_args_get_place_holder_buffer": R(
        "1", lambda e: (lambda a: rt.kernel_args_get_place_holder_buffer(
            a, rt.kernel_args_append_place_holder(a)[0], 16))(e.kernel_args(0)[1]),
        lambda r, e: r[0] != 0,
        invalid=lambda e: (lambda a: rt.kernel_args_get_place_holder_buffer(a, e.append_gm(a)[0], 16))(
            e.kernel_args(0)[1])),
    "kernel_args_para_update": R(
        "ret", lambda e: (lambda a: rt.kernel_args_para_update(
            a, e.append_gm(a)[0], acl.util.bytes_to_ptr(e.keep(struct.pack("<Q", e.dev2))), 8))(e.kernel_args(0)[1]),
        invalid=lambda e: (lambda a: rt.kernel_args_para_update(
            a, rt.kernel_args_append_place_holder(a)[0], acl.util.bytes_to_ptr(e.keep(b"\0" * 8)), 8))(
                e.kernel_args(0)[1])),
    "kernel_args_finalize": R("ret", lambda e: rt.kernel_args_finalize(e.kernel_args(4)[1]),
                              invalid=lambda e: rt.kernel_args_finalize(e.kernel_args(1)[1])),
    "launch_kernel": R("ret", lambda e: rt.launch_kernel(e.vadd(), 2, e.args_on_device(), 32, e.stream),
                       invalid=lambda e: rt.launch_kernel(e.vadd(), 2, e.args_on_device(), 24, e.stream)),
    "launch_kernel_with_config": R("ret", lambda e: e.launch_with_config(reserve=0),
                                   invalid=lambda e: e.launch_with_config(reserve=1)),
    "launch_kernel_with_host_args": R("ret", lambda e: rt.launch_kernel_with_host_args(
                                          e.vadd(), 2, e.stream, [], acl.util.bytes_to_ptr(e.keep(e.vadd_args())),
                                          32, [], 0),
                                      invalid=lambda e: rt.launch_kernel_with_host_args(
                                          e.vadd(), 2, e.stream, [], acl.util.bytes_to_ptr(e.keep(e.vadd_args())),
                                          32, [], 1)),

    # ---- acl.util
    "util.ptr_to_bytes": R("value", lambda e: util.ptr_to_bytes(acl.util.bytes_to_ptr(e.keep(b"abcd")), 4),
                           lambda r, e: r == b"abcd", invalid=lambda e: util.ptr_to_bytes(e.dev, 4)),
    "util.ptr_to_numpy": R("value", lambda e: util.ptr_to_numpy(e.host, (4, 8), 11),
                           lambda r, e: r.shape == (4, 8) and r.dtype == np.float32,
                           invalid=lambda e: util.ptr_to_numpy(e.dev, (4,), 11)),
    "util.numpy_to_ptr": R("value", lambda e: util.numpy_to_ptr(e.keep(np.zeros(4))),
                           lambda r, e: r == e._keep[-1].ctypes.data, invalid=lambda e: util.numpy_to_ptr([1, 2]),
                           raises=(ValueError, "needs an ndarray as argument")),
    "util.numpy_contiguous_to_ptr": R("value", lambda e: util.numpy_contiguous_to_ptr(np.zeros((4, 4))[:, 1]),
                                      lambda r, e: r[1].flags.c_contiguous and r[0] == r[1].ctypes.data,
                                      invalid=lambda e: util.numpy_contiguous_to_ptr(b"bytes"),
                                      raises=(ValueError, "needs an ndarray as argument")),
    "util.bytes_to_ptr": R("value", lambda e: util.bytes_to_ptr(e.keep(b"xyz")),
                           lambda r, e: ctypes.string_at(r, 3) == b"xyz", invalid=lambda e: util.bytes_to_ptr(12),
                           raises=(ValueError, "needs an byte as argument")),
    "util.start_thread": R("1", lambda e: util.start_thread(e.keep, [1]), lambda r, e: util.stop_thread(r[0]) == 0,
                           invalid=lambda e: util.start_thread("run", []),
                           raises=(TypeError, "parameter must be callable")),
    "util.stop_thread": R("ret", lambda e: util.stop_thread(util.start_thread(len, [1])[0])),
}

# functions with no argument that can be wrong and no state in which they fail
# functions with nothing to refuse (stop_thread's ret is pthread_join's, not an aclError:
# test_acl_conformance covers it)
# no error path: these work before acl.init too (the runtime starts lazily; issue 10 item 2)
NO_INVALID_CALL = {"acl.get_version", "acl.get_cann_attribute_list", "allocator_create_desc", "util.stop_thread",
                   "acl.get_soc_name", "get_device_count", "get_run_mode", "device_get_stream_priority_range",
                   "device_get_bare_tgid", "get_op_execute_timeout"}


def _all_functions() -> set[str]:
    from npurt.acl import _other
    names = {f"acl.{n}" for n in _other.__all__ if n != "get_recent_err_msg"} | {"acl.get_cann_version"}
    names |= {n for n in acl.rt.FUNCTIONS if not getattr(getattr(acl.rt, n), "not_supported", False)}
    names |= {f"util.{n}" for n in acl.util.__all__}
    return names - {"get_last_error", "peek_at_last_error"}


def _split(shape: str, result):
    """(outputs, ret) of a result, asserting pyACL's shape."""
    if shape == "value":
        return result, None
    if shape == "ret":
        assert type(result) is int, f"expected a bare int ret, got {result!r}"
        return (), result
    assert isinstance(result, tuple) and len(result) == int(shape) + 1, \
        f"expected {int(shape)} outputs + ret, got {result!r}"
    assert type(result[-1]) is int
    return result[:-1], result[-1]


def _where(name: str) -> str:
    return name if name.startswith("acl.") else ("acl." + name if name.startswith("util.") else "acl.rt." + name)


@pytest.fixture
def env(fresh_runtime):
    e = Env()
    yield e
    acl.rt.set_exception_info_callback(None)


def test_table_covers_every_function():
    assert set(ROWS) == _all_functions()


def test_every_row_has_an_invalid_call_unless_exempt():
    missing = {n for n, row in ROWS.items() if row.invalid is None} - NO_INVALID_CALL
    assert not missing


@pytest.mark.parametrize("name", sorted(ROWS))
def test_valid_call(env, name):
    row = ROWS[name]
    result = row.valid(env)
    outputs, ret = _split(row.shape, result)
    if ret is not None:
        assert ret == row.valid_ret, f"{name}: ret {ret}, {acl.get_recent_err_msg()}"
    else:
        assert acl.rt.peek_at_last_error(0) == OK, acl.get_recent_err_msg()
    if row.expect is not None and row.valid_ret == OK:
        assert row.expect(result, env), f"{name} returned {result!r}"


@pytest.mark.parametrize("name", sorted(set(ROWS) - NO_INVALID_CALL))
def test_invalid_call_returns_code_and_records_it(env, name):
    row = ROWS[name]
    if row.thread:  # the call and the checks on a fresh thread (the last error is per thread)
        assert in_new_thread(lambda: _check_invalid(env, name, row)) is None
    else:
        _check_invalid(env, name, row)


def _check_invalid(env, name, row):
    acl.rt.get_last_error(0)
    acl.get_recent_err_msg()
    if row.raises is not None:  # the real extension raises here instead of returning a code
        exc_type, message = row.raises
        with pytest.raises(exc_type, match=re.escape(message)), warnings.catch_warnings():
            warnings.simplefilter("ignore")
            row.invalid(env)
        assert acl.rt.get_last_error(0) == OK
        return
    with pytest.warns(RuntimeWarning) if name.startswith("util.ptr_to") else _nothing():
        result = row.invalid(env)
    outputs, ret = _split(row.shape, result)
    if ret is not None:
        assert ret == row.code, f"{name}: expected {row.code}, got {ret}: {acl.get_recent_err_msg()}"
    assert acl.rt.peek_at_last_error(0) == row.code
    message = acl.get_recent_err_msg()
    assert _where(name) in message, message
    assert acl.get_recent_err_msg() is None  # reading the message cleared it (NULL in C)
    assert acl.rt.get_last_error(0) == row.code
    assert acl.rt.get_last_error(0) == OK  # get_last_error cleared it


class _nothing:
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        return False


# ---------------------------------------------------------------- the functions that are not supported
def _unsupported():
    names = [(f"acl.rt.{n}", getattr(acl.rt, n)) for n in acl.rt.FUNCTIONS
             if getattr(getattr(acl.rt, n), "not_supported", False)]
    for ns, table in _namespaces.KNOWN.items():
        module = getattr(acl, ns.split(".")[1])
        names += [(f"{ns}.{n}", getattr(module, n)) for n in table]
    return names


_DUMMY = {"O": [], "s": "x", "z": "x", "f": 1.0, "d": 1.0, "p": True}


def _dummy_args(fn) -> list:
    """Arguments of the right types for a function's real format (lists for "O", which the
    wrappers that check a list argument accept)."""
    fmt = fn.parse_format
    if not isinstance(fmt, str):  # None: takes no parameters; LEGACY: not ported to a real format
        return [] if fmt is None else [1, 2, 3]
    return [_DUMMY.get(u, 1) for u in fmt.replace("|", "")]


@pytest.mark.parametrize("name,fn", _unsupported(), ids=[n for n, _ in _unsupported()])
def test_unsupported_function_returns_feature_not_support_in_its_shape(env, name, fn):
    result = fn(*_dummy_args(fn))
    code = C.ACL_ERROR_RT_FEATURE_NOT_SUPPORT
    if isinstance(result, tuple):  # outputs, then ret
        assert result[-1] == code and len(result) >= 2
    elif type(result) is int and result == code:  # ret only
        pass
    else:  # a value-returning function: the code is only recorded
        assert result in (0, None, "")
    assert acl.rt.get_last_error(0) == code
    message = acl.get_recent_err_msg()
    assert name in message and str(code) in message


def test_unknown_name_in_an_unsupported_namespace_is_an_attribute_error_as_in_the_real_module():
    # pyhimpi_methods.cpp lists every function of acl.himpi; npurt has them all
    with pytest.raises(AttributeError):
        acl.himpi.no_such_media_call  # noqa: B018


def test_unknown_name_in_acl_rt_is_an_attribute_error():
    with pytest.raises(AttributeError):
        acl.rt.no_such_function  # noqa: B018 - a typo must not pass silently


# ---------------------------------------------------------------- last error
def test_get_last_error_returns_the_latest_code_and_clears_it(env):
    acl.rt.malloc(0, 0)
    acl.rt.set_device(99)
    assert acl.rt.get_last_error(C.ACL_RT_THREAD_LEVEL) == BAD_DEVICE
    assert acl.rt.get_last_error(C.ACL_RT_THREAD_LEVEL) == OK


def test_peek_at_last_error_does_not_clear(env):
    acl.rt.set_device(99)
    assert acl.rt.peek_at_last_error(C.ACL_RT_THREAD_LEVEL) == BAD_DEVICE
    assert acl.rt.peek_at_last_error(C.ACL_RT_THREAD_LEVEL) == BAD_DEVICE


@pytest.mark.parametrize("fn", [acl.rt.get_last_error, acl.rt.peek_at_last_error])
def test_last_error_with_a_level_other_than_thread_is_invalid_param(env, fn):
    acl.rt.set_device(99)
    assert fn(1) == INVALID
    assert acl.rt.peek_at_last_error(0) == BAD_DEVICE  # the recorded error is untouched


def test_last_error_is_per_thread(env):
    acl.rt.set_device(99)
    assert in_new_thread(lambda: acl.rt.get_last_error(0)) == OK
    assert acl.rt.get_last_error(0) == BAD_DEVICE


def test_recent_err_msg_is_none_without_failure(env):
    assert acl.get_recent_err_msg() is None  # aclGetRecentErrMsg returns NULL (acl.cpp)


def test_recent_err_msg_says_what_was_wrong(env):
    acl.rt.set_device(99)
    message = acl.get_recent_err_msg()
    assert "acl.rt.set_device" in message and "99" in message and "107001" in message
