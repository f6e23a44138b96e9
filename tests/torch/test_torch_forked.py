"""torch_npu's lazy-initialization rules (npurt.torch.forked, torch.npu.device_count): a child
forked after the NPU was initialized cannot use it, and the device count follows
ASCEND_RT_VISIBLE_DEVICES until the runtime starts."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import torch

from npurt.torch import forked


def _in_forked_child(fn) -> str:
    """Run fn() in a child of os.fork(); what it returned, or the exception it raised, as text."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report and leave at once (no atexit, no pytest teardown)
        try:
            text = f"returned {fn()!r}"
        except BaseException as exc:  # noqa: BLE001 - the child reports whatever it met
            text = f"{type(exc).__name__}: {exc}"
        os.write(write, text.encode())
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as f:
        text = f.read()
    os.waitpid(pid, 0)
    return text


def test_a_child_forked_after_the_npu_was_used_cannot_use_it(npu):
    torch.ones(1, device=npu)  # the NPU is initialized here
    for use in (lambda: torch.tensor([2]).to("npu:0"), torch.npu.init, torch.npu.current_device,
                lambda: torch.npu.set_device(0)):
        text = _in_forked_child(use)
        assert text.startswith("RuntimeError: Cannot re-initialize NPU in forked subprocess"), text
        assert "'spawn' start method" in text
    assert _in_forked_child(lambda: (torch.npu._is_in_bad_fork(), torch.npu.is_initialized())) == \
        "returned (True, False)"
    # the parent is not affected
    assert not forked.in_bad_fork and torch.npu.is_initialized() and torch.ones(2, device=npu).sum().item() == 2


def test_the_device_count_follows_the_environment_until_the_runtime_starts(tmp_path):
    # a fresh interpreter: the runtime not started yet
    script = tmp_path / "count.py"
    script.write_text(textwrap.dedent("""
        import os
        import torch, npurt.torch
        from npurt.runtime import RUNTIME
        os.environ["ASCEND_RT_VISIBLE_DEVICES"] = "0,1"
        before = torch.npu.device_count()
        os.environ["ASCEND_RT_VISIBLE_DEVICES"] = "1"
        again = torch.npu.device_count()
        started = RUNTIME.initialized
        # a child forked before the NPU was used may use it
        pid = os.fork()
        if pid == 0:
            os._exit(0 if torch.ones(3, device="npu").sum().item() == 3 else 1)
        _, status = os.waitpid(pid, 0)
        torch.empty(10, device="npu")  # the runtime starts: it read "1"
        os.environ["ASCEND_RT_VISIBLE_DEVICES"] = "0,1"
        print(before, again, started, os.waitstatus_to_exitcode(status), torch.npu.device_count())
    """))
    env = dict(os.environ, NPURT_DEVICE_COUNT="2")
    env.pop("ASCEND_RT_VISIBLE_DEVICES", None)
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.split() == ["2", "1", "False", "0", "1"]
