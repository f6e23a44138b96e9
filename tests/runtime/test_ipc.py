"""IPC memory, events and notifies between processes that share a device (npurt.runtime.ipc).

Every test drives peer processes through pipes, one statement at a time: a peer runs the
Python it is sent and answers with the value of `out` (no sleeps: each step waits for the
peer's answer, so nothing depends on timing)."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import uuid

import pytest

from npurt.driver.shared import namespace_dir

PEER = textwrap.dedent("""
    import json, os, sys, traceback
    import numpy as np
    import npurt.runtime as rt
    from npurt.runtime import constants as C
    rt.set_device(0)
    env = {"rt": rt, "np": np, "C": C, "os": os}
    print(json.dumps(["ready", os.getpid()]), flush=True)
    for line in sys.stdin:
        env["out"] = None
        try:
            exec(json.loads(line), env)
            answer = ["ok", env["out"]]
        except rt.NpuError as exc:
            answer = ["error", exc.code, str(exc)]
        print(json.dumps(answer), flush=True)
""")


_PEERS: list = []


class Peer:
    """A process of the namespace, driven one statement at a time."""

    def __init__(self, namespace: str, **env):
        _PEERS.append(self)
        self.proc = subprocess.Popen(
            [sys.executable, "-c", PEER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "NPURT_DEVICE_NAMESPACE": namespace, **env})
        ready = json.loads(self.proc.stdout.readline())
        self.pid = ready[1]

    def send(self, code: str):
        self.proc.stdin.write(json.dumps(textwrap.dedent(code)) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the peer died running {code!r}"
        return json.loads(line)

    def __call__(self, code: str):
        answer = self.send(code)
        assert answer[0] == "ok", answer
        return answer[1]

    def error(self, code: str) -> int:
        answer = self.send(code)
        assert answer[0] == "error", answer
        return answer[1]

    def exit(self) -> int:
        if not self.proc.stdin.closed:
            self.proc.stdin.close()
        return self.proc.wait(timeout=60)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=60)


@pytest.fixture
def namespace():
    name = f"ipc-{uuid.uuid4().hex[:12]}"
    yield name
    while _PEERS:  # a failed test leaves its peers running: end them first
        _PEERS.pop().exit()
    assert not os.path.exists(namespace_dir(name)), os.listdir(namespace_dir(name))


EXPORT = """
    p = rt.malloc(1 << 20)
    src = np.arange(1 << 18, dtype=np.int32)
    rt.memcpy(p, 1 << 20, src.ctypes.data, 1 << 20, C.ACL_MEMCPY_HOST_TO_DEVICE)
    key = rt.ipc_mem_get_export_key(p, 1 << 20, {flags})
    out = [key, p]
"""
READ = """
    buf = np.zeros(1 << 18, np.int32)
    rt.memcpy(buf.ctypes.data, 1 << 20, {ptr}, 1 << 20, C.ACL_MEMCPY_DEVICE_TO_HOST)
    out = buf[:4].tolist() + [int(buf[-1])]
"""


def test_imported_memory_is_the_exporters_at_the_same_address_both_ways(namespace):
    a, b = Peer(namespace), Peer(namespace)
    key, p = a(EXPORT.format(flags=1))
    q = b(f"out = rt.ipc_mem_import_by_key({key!r})")
    assert q == p                                     # equal device addresses
    assert b(READ.format(ptr=q)) == [0, 1, 2, 3, (1 << 18) - 1]
    b(f"rt.memset({q}, 1 << 20, 5, 1 << 20)")         # the importer writes, the exporter sees it
    assert a(READ.format(ptr=p))[0] == 0x05050505
    b(f"rt.ipc_mem_close({key!r})")
    a(f"rt.ipc_mem_close({key!r}); rt.free({p})")
    assert a.exit() == 0 and b.exit() == 0


def test_the_pid_allow_list_refuses_others_with_no_permission(namespace):
    a, b, c = Peer(namespace), Peer(namespace), Peer(namespace)
    key, p = a(EXPORT.format(flags=0))
    assert b.error(f"rt.ipc_mem_import_by_key({key!r})") == 207006   # ACL_ERROR_RT_NO_PERMISSION
    a(f"rt.ipc_mem_set_import_pid({key!r}, [{b.pid}])")
    assert b(f"out = rt.ipc_mem_import_by_key({key!r})") == p
    assert c.error(f"rt.ipc_mem_import_by_key({key!r})") == 207006   # still not on the list
    for peer in (a, b, c):
        assert peer.exit() == 0


def test_four_processes_import_one_buffer_and_each_writes_its_quarter(namespace):
    a = Peer(namespace)
    key, p = a(EXPORT.format(flags=1))
    peers = [Peer(namespace) for _ in range(3)]
    for i, peer in enumerate(peers, 1):
        q = peer(f"out = rt.ipc_mem_import_by_key({key!r})")
        peer(f"rt.memset({q} + {i} * (1 << 18), 1 << 18, {i}, 1 << 18)")
    quarters = a(f"""
        buf = np.zeros(1 << 20, np.uint8)
        rt.memcpy(buf.ctypes.data, 1 << 20, {p}, 1 << 20, C.ACL_MEMCPY_DEVICE_TO_HOST)
        out = [np.unique(buf[i << 18:(i + 1) << 18]).tolist() for i in range(4)]
    """)
    assert quarters[1:] == [[1], [2], [3]]
    for peer in peers + [a]:
        assert peer.exit() == 0


def test_bad_keys_and_misuse_get_the_runtimes_codes(namespace):
    a, b = Peer(namespace), Peer(namespace)
    key, p = a(EXPORT.format(flags=1))
    forged = key[:-4] + ("0000" if not key.endswith("0000") else "1111")
    assert b.error(f"rt.ipc_mem_import_by_key({forged!r})") == 107000
    assert b.error("rt.ipc_mem_import_by_key('not a key')") == 107000
    assert b.error(f"rt.ipc_mem_import_by_key({key!r}, 7)") == 107000          # unknown flag
    assert a.error(f"rt.ipc_mem_get_export_key({p}, 2 << 20, 0)") == 107000    # past the allocation
    assert a.error(f"rt.ipc_mem_get_export_key({p}, 4096, 9)") == 107000       # unknown flag
    assert a.error(f"rt.ipc_mem_import_by_key({key!r})") == 107000             # its own key
    q = b(f"out = rt.ipc_mem_import_by_key({key!r})")
    assert b(f"out = rt.ipc_mem_import_by_key({key!r})") == q                  # twice: same address
    assert b.error(f"rt.free({q})") == 100000                                  # close it, not free it
    b(f"rt.ipc_mem_close({key!r}); rt.ipc_mem_close({key!r})")
    assert b.error(f"rt.ipc_mem_close({key!r})") == 107000                     # nothing left to close
    assert b.error(f"rt.memset({q}, 16, 0, 16)") == 100000                     # no longer mapped here
    a(f"rt.ipc_mem_close({key!r})")
    assert b.error(f"rt.ipc_mem_import_by_key({key!r})") == 107000             # stale: closed
    assert a.exit() == 0 and b.exit() == 0


def test_memory_freed_by_its_exporter_stays_reserved_while_imported(namespace):
    a, b = Peer(namespace), Peer(namespace)
    key, p = a(EXPORT.format(flags=1))
    q = b(f"out = rt.ipc_mem_import_by_key({key!r})")
    a(f"rt.ipc_mem_close({key!r}); rt.free({p})")           # exporter first: documented as unwise
    reused = a("out = [rt.malloc(1 << 20) for _ in range(4)]")
    assert p not in reused                                  # no new allocation aliases the import
    assert b(READ.format(ptr=q))[:2] == [0, 1]              # and its bytes are intact
    b(f"rt.ipc_mem_close({key!r})")
    assert a.exit() == 0 and b.exit() == 0


def test_an_importer_outlives_a_killed_exporter_and_nothing_leaks(namespace):
    a, b, c = Peer(namespace), Peer(namespace), Peer(namespace)
    key, p = a(EXPORT.format(flags=1))
    q = b(f"out = rt.ipc_mem_import_by_key({key!r})")
    a.kill()
    # the dead exporter's memory stays the importer's until it closes the import
    taken = c("out = [rt.malloc(64 << 20, C.ACL_MEM_MALLOC_HUGE_ONLY) for _ in range(8)]")
    assert all(not (t <= q < t + (64 << 20)) for t in taken)
    assert b(READ.format(ptr=q))[:2] == [0, 1]
    assert c.error(f"rt.ipc_mem_import_by_key({key!r})") == 107000   # a dead exporter's key is stale
    b(f"rt.ipc_mem_close({key!r})")
    assert b.exit() == 0 and c.exit() == 0                           # the namespace fixture checks /dev/shm


def test_ipc_events_order_streams_of_two_processes(namespace):
    a, b = Peer(namespace), Peer(namespace)
    handle = a("""
        s = rt.create_stream()
        ev = rt.create_event(C.ACL_EVENT_IPC, ex=True)
        rt.record_event(ev, s); rt.synchronize_event(ev)
        out = rt.ipc_get_event_handle(ev).hex()
    """)
    assert len(bytes.fromhex(handle)) == 64
    b(f"""
        s = rt.create_stream()
        ev = rt.ipc_open_event_handle(bytes.fromhex({handle!r}))
        rt.stream_wait_event(s, ev); rt.synchronize_stream(s)
        out = rt.query_event_status(ev)
    """)
    # A waits on a stream for B's next record: parked until B records
    a("""
        w = rt.create_stream()
        gate = rt.create_event(C.ACL_EVENT_SYNC)
        rt.stream_wait_event(w, ev)
        flag = rt.malloc(64)
        rt.memset(flag, 64, 0, 64)
        rt.value_write(flag, 1, 0, w)
    """)
    b("rt.record_event(ev, s); rt.synchronize_event(ev)")
    assert a("""
        rt.synchronize_stream(w)
        buf = np.zeros(1, np.uint64)
        rt.memcpy(buf.ctypes.data, 8, flag, 8, C.ACL_MEMCPY_DEVICE_TO_HOST)
        out = [int(buf[0]), rt.query_event_status(ev)]
    """) == [1, 1]
    assert a.error("""
        plain = rt.create_event(0, ex=True)
        rt.ipc_get_event_handle(plain)
    """) == 107000
    assert b.error("rt.ipc_open_event_handle(b'evt0-' + b'0' * 32)") == 107000
    assert a.exit() == 0 and b.exit() == 0


def test_ipc_notifies_release_one_wait_per_record_across_processes(namespace):
    a, b = Peer(namespace), Peer(namespace)
    key = a("""
        s = rt.create_stream()
        n = rt.create_notify(0)
        out = rt.notify_get_export_key(n, 0)
    """)
    assert b.error(f"rt.notify_import_by_key({key!r})") == 207006
    a(f"rt.notify_set_import_pid(n, [{b.pid}])")
    b(f"n = rt.notify_import_by_key({key!r}); s = rt.create_stream()")
    a("""
        rt.wait_and_reset_notify(n, s, 0)
        word = rt.malloc(64); rt.memset(word, 64, 0, 64)
        rt.value_write(word, 7, 0, s)
    """)
    b("rt.record_notify(n, s); rt.synchronize_stream(s)")
    assert a("""
        rt.synchronize_stream(s)
        buf = np.zeros(1, np.uint64)
        rt.memcpy(buf.ctypes.data, 8, word, 8, C.ACL_MEMCPY_DEVICE_TO_HOST)
        out = int(buf[0])
    """) == 7
    assert a.error("rt.notify_get_export_key(rt.create_notify(0), 1)") == 107000   # flags are 0 and 2
    assert a.exit() == 0 and b.exit() == 0


def test_private_devices_refuse_ipc_with_feature_not_supported(namespace):
    a = Peer(namespace, NPURT_SHARED_DEVICES="0")
    assert a.error("p = rt.malloc(4096); rt.ipc_mem_get_export_key(p, 4096, 1)") == 207000
    assert a.exit() == 0


def test_a_killed_importer_holds_nothing_once_its_exporter_closes(namespace):
    a, b = Peer(namespace), Peer(namespace)
    key, p = a(EXPORT.format(flags=1))
    b(f"out = rt.ipc_mem_import_by_key({key!r})")
    b.kill()
    # the dead importer's import pins nothing: closed and freed, the memory is the pool's again
    a(f"rt.ipc_mem_close({key!r}); rt.free({p})")
    assert p in a("out = [rt.malloc(1 << 20) for _ in range(2)]")
    assert a.exit() == 0
