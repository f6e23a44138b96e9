"""One simulated device shared by the processes of a namespace (npurt/driver/shared.py).

Each test drives child processes through pipes, one command at a time (no sleeps, no timing):
a child attaches to device 0 of a namespace, maps pages, writes and reads the shared memory,
reports the device's accounting, exits or is killed."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import uuid

import pytest

from npurt.driver.shared import CHUNK, SharedHbmArena, namespace_dir

CAPACITY = 64 << 20

CHILD = textwrap.dedent(f"""
    import json, sys
    import numpy as np
    from npurt.driver.shared import SharedHbmArena, namespace_dir
    arena = SharedHbmArena(namespace_dir(sys.argv[1]), 0, {CAPACITY}, 0, 0)
    print(json.dumps(["ready", arena.slot]), flush=True)
    for line in sys.stdin:
        cmd, *args = line.split()
        a = [int(x) for x in args]
        if cmd == "map":
            out = arena.map_pages(a[0], a[1])
        elif cmd == "unmap":
            arena.unmap_pages(a[0], a[1], a[2]); out = None
        elif cmd == "fill":
            arena.mem[a[0]:a[0] + a[1]] = a[2]; out = None
        elif cmd == "read":
            out = np.unique(arena.mem[a[0]:a[0] + a[1]]).tolist()
        elif cmd == "committed":
            out = arena.committed_bytes
        elif cmd == "close":
            arena.close(); out = None
        print(json.dumps(out), flush=True)
""")


class Child:
    """A process attached to device 0 of a namespace, driven one command at a time."""

    def __init__(self, namespace: str):
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        self.proc = subprocess.Popen([sys.executable, "-c", CHILD, namespace], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True, env=env)
        ready = json.loads(self.proc.stdout.readline())
        assert ready[0] == "ready", ready

    def __call__(self, *cmd):
        self.proc.stdin.write(" ".join(map(str, cmd)) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the child died on {cmd}"
        return json.loads(line)

    def exit(self) -> int:
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait(timeout=60)


@pytest.fixture
def namespace():
    name = f"test-{uuid.uuid4().hex[:12]}"
    yield name
    assert not os.path.exists(namespace_dir(name)), "a shared device outlived its processes"


def test_two_processes_get_disjoint_memory_and_see_each_others_bytes(namespace):
    a, b = Child(namespace), Child(namespace)
    off_a = a("map", 4 << 20, CHUNK)
    off_b = b("map", 4 << 20, CHUNK)
    assert off_a is not None and off_b is not None
    assert off_a + (4 << 20) <= off_b or off_b + (4 << 20) <= off_a
    a("fill", off_a, 4 << 20, 7)
    b("fill", off_b, 4 << 20, 9)
    assert b("read", off_a, 4 << 20) == [7]   # one memory: B reads what A wrote
    assert a("read", off_b, 4 << 20) == [9]
    assert a("committed") == b("committed") == 8 << 20  # accounting covers both processes
    assert a.exit() == 0
    assert b("committed") == 4 << 20           # A's memory went back when it left
    assert b.exit() == 0


def test_four_processes_fill_the_device_without_overlap_and_run_out_together(namespace):
    kids = [Child(namespace) for _ in range(4)]
    quarter = CAPACITY // 4
    offsets = [kid("map", quarter, CHUNK) for kid in kids]
    assert sorted(offsets) == [i * quarter for i in range(4)]
    assert all(kid("map", CHUNK, CHUNK) is None for kid in kids)  # the device is full for everyone
    kids[2]("unmap", offsets[2], quarter, CHUNK)
    assert kids[0]("map", quarter, CHUNK) == offsets[2]  # freed chunks go back to the device
    for kid in kids:
        assert kid.exit() == 0


def test_a_killed_process_releases_what_it_held_and_the_last_one_out_removes_the_files(namespace):
    a, b = Child(namespace), Child(namespace)
    off = a("map", CAPACITY // 2, CHUNK)
    a("fill", off, CAPACITY // 2, 1)
    a.kill()
    # B reclaims the dead process's chunks once it needs them: the whole device fits again
    assert b("map", CAPACITY, CHUNK) == 0
    assert b("read", off, 4096) == [0]  # the dead process's pages were punched out, not handed over
    assert b.exit() == 0


def test_a_namespace_whose_processes_all_died_is_cleaned_by_the_next_process(namespace):
    a = Child(namespace)
    a("map", CHUNK, CHUNK)
    a.kill()
    assert os.path.exists(namespace_dir(namespace))  # nobody was left to clean up
    b = Child(namespace)
    assert b("committed") == 0   # the dead slot was reclaimed on attach
    assert b.exit() == 0


def test_a_process_simulating_another_capacity_is_refused(namespace):
    a = Child(namespace)
    with pytest.raises(OSError, match="NPURT_HBM_SIZE"):
        SharedHbmArena(namespace_dir(namespace), 0, CAPACITY * 2, 0, 0)
    assert a.exit() == 0


def test_private_devices_leave_nothing_in_shared_memory(isolated):
    ns = f"test-{uuid.uuid4().hex[:12]}"
    code, out = isolated(f"""
        import os, npurt.runtime as rt
        rt.set_device(0)
        rt.free(rt.malloc(1 << 20))
        print(os.path.exists({namespace_dir(ns)!r}))
    """, env={"NPURT_SHARED_DEVICES": "0", "NPURT_DEVICE_NAMESPACE": ns})
    assert code == 0 and out.strip().endswith("False"), out


def test_a_namespace_nobody_opens_again_is_swept_by_the_next_process_of_any_namespace(namespace):
    a = Child(namespace)
    a("map", CHUNK, CHUNK)
    a.kill()                                   # gone without detaching, and nobody reopens it
    assert os.path.exists(namespace_dir(namespace))
    other = f"test-{uuid.uuid4().hex[:12]}"
    b = Child(other)                           # a new process elsewhere cleans it up
    assert not os.path.exists(namespace_dir(namespace))
    assert b.exit() == 0
    assert not os.path.exists(namespace_dir(other))
