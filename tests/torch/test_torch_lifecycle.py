"""The runtime's lifecycle under torch: work still queued at exit drains before torch tears
down, and npu tensors that outlive a finalize are refused clearly."""
from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest
import torch

from npurt.runtime.runtime import RUNTIME


def test_a_script_exiting_with_queued_work_drains_and_exits_cleanly(tmp_path):
    script = tmp_path / "leave_work.py"
    script.write_text(textwrap.dedent("""
        import torch, npurt.torch
        x = torch.randn(256, 256, device="npu")
        for _ in range(40):
            x = torch.tanh(x @ x)
        print("queued")
    """))
    proc = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "queued" and "terminate" not in proc.stderr and "Error" not in proc.stderr


def test_tensors_made_after_a_finalize_work_and_older_ones_are_refused():
    old = torch.ones(4, device="npu")
    torch.npu.synchronize()
    RUNTIME.finalize()
    with pytest.raises(RuntimeError, match="not inside any allocation|released|freed"):
        old + 1                                    # (checked before anything new is allocated)
    new = torch.full((4,), 2.0, device="npu")     # the runtime started again
    assert (new * 2).cpu().tolist() == [4.0] * 4
