"""npurt.ipc_export / npurt.ipc_import: device arrays shared in place between processes.

Peers are driven through pipes one statement at a time (nothing depends on timing); handles
travel pickled, as they would through a multiprocessing queue."""
from __future__ import annotations

import base64
import json
import os
import pickle
import subprocess
import sys
import textwrap
import uuid

import pytest

from npurt.driver.shared import namespace_dir

PEER = textwrap.dedent("""
    import base64, json, os, pickle, sys, traceback
    import numpy as np
    import npurt
    env = {"npurt": npurt, "np": np, "pickle": pickle, "base64": base64}
    print(json.dumps(["ready", os.getpid()]), flush=True)
    for line in sys.stdin:
        env["out"] = None
        try:
            exec(json.loads(line), env)
            answer = ["ok", env["out"]]
        except npurt.NpuError as exc:
            answer = ["error", type(exc).__name__, str(exc)]
        print(json.dumps(answer), flush=True)
""")


class Peer:
    def __init__(self, namespace: str):
        self.proc = subprocess.Popen([sys.executable, "-c", PEER], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     text=True, env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path),
                                                     "NPURT_DEVICE_NAMESPACE": namespace})
        self.pid = json.loads(self.proc.stdout.readline())[1]

    def send(self, code: str):
        self.proc.stdin.write(json.dumps(textwrap.dedent(code)) + "\n")
        self.proc.stdin.flush()
        return json.loads(self.proc.stdout.readline())

    def __call__(self, code: str):
        answer = self.send(code)
        assert answer[0] == "ok", answer
        return answer[1]

    def exit(self) -> int:
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)


@pytest.fixture
def peers():
    name = f"share-{uuid.uuid4().hex[:12]}"
    made = []

    def make():
        made.append(Peer(name))
        return made[-1]
    yield make
    for peer in made:
        assert peer.exit() == 0
    assert not os.path.exists(namespace_dir(name))


def test_an_exported_array_is_used_in_place_by_another_process(peers):
    a, b = peers(), peers()
    handle = a("""
        w = npurt.to_device(np.arange(12, dtype=np.float32).reshape(3, 4))
        npurt.synchronize()                              # the upload is done before a peer reads it
        h = npurt.ipc_export(w[1:])                      # a view: its offset travels in the handle
        out = base64.b64encode(pickle.dumps(h)).decode()
    """)
    assert b(f"""
        v = npurt.ipc_import(pickle.loads(base64.b64decode({handle!r})))
        out = [list(v.shape), str(v.dtype), npurt.asnumpy(v).tolist()]
    """) == [[2, 4], "float32", [[4, 5, 6, 7], [8, 9, 10, 11]]]
    b("v *= 2; npurt.synchronize()")                     # in place: the exporter sees the result
    assert a("out = npurt.asnumpy(w)[2].tolist()") == [16, 18, 20, 22]
    b("npurt.ipc_close(v)")
    a("npurt.ipc_close(h)")


def test_an_allow_list_and_bad_handles_are_refused_clearly(peers):
    a, b, c = peers(), peers(), peers()
    key = a(f"""
        w = npurt.zeros(1024, dtype=np.int32)
        h = npurt.ipc_export(w, pids=[{b.pid}])
        out = str(h)
    """)
    assert b(f"out = npurt.ipc_import({key!r}).nbytes") >= 4096   # a bare key: the raw bytes
    refused = c.send(f"npurt.ipc_import({key!r})")
    assert refused[0] == "error" and "allow-list" in refused[2]
    bad = c.send("npurt.ipc_import(42)")
    assert bad[0] == "error" and "IpcHandle" in bad[2]
    again = a.send("npurt.ipc_import(h)")               # the exporter uses its own array
    assert again[0] == "error" and "exported" in again[2]


def test_collecting_the_last_view_closes_the_import(peers):
    a, b = peers(), peers()
    key = a("w = npurt.ones(256); h = npurt.ipc_export(w); out = h.key")
    b(f"v = npurt.ipc_import({key!r}); addr = v.ptr; del v; import gc; gc.collect()")
    closed = b.send("npurt.runtime.memset(addr, 16, 0, 16)")
    assert closed[0] == "error"                          # the import went with the array
    a("npurt.ipc_close(h)")
