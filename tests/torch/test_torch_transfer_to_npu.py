"""torch_npu.contrib.transfer_to_npu: CUDA code runs on npu unmodified (in a child process: the
module patches torch for good)."""
from __future__ import annotations

import os
import subprocess
import sys

from isolation import own_namespace

CUDA_SCRIPT = """
import warnings
warnings.simplefilter("ignore")
import torch
import torch_npu
import torch_npu.contrib.transfer_to_npu
assert torch.ones(3, device="cuda").device == torch.device("npu:0")
assert torch.zeros(2, device=torch.device("cuda", 1)).device == torch.device("npu:1")
assert torch.cuda.is_available() and torch.cuda.device_count() == torch.npu.device_count()
model = torch.nn.Linear(4, 2).cuda()
assert next(model.parameters()).device.type == "npu"
x = torch.randn(8, 4).cuda()
assert x.is_cuda and x.device.type == "npu"
assert torch.randn(2).to("cuda:1").device == torch.device("npu:1")
assert torch.randn(2).to(1).device == torch.device("npu:1")
s = torch.cuda.Stream()
assert isinstance(s, torch.npu.Stream)
with torch.cuda.stream(s):
    y = model(x).sum()
torch.cuda.synchronize()
with torch.autocast("cuda"):
    assert torch.mm(x, x.t()).dtype == torch.float16
assert torch.Event(device="cuda").device == torch.device("npu:0")
assert torch.cuda.memory_allocated() > 0 and torch.cuda.CUDAGraph is torch.npu.NPUGraph
print("OK", round(y.item(), 3) == round(model.cpu()(x.cpu()).sum().item(), 3))
"""


def test_cuda_code_runs_on_npu_after_transfer_to_npu():
    env = dict(os.environ, **own_namespace())
    out = subprocess.run([sys.executable, "-m", "npurt", "run", "--torch-npu", "-c", CUDA_SCRIPT], env=env,
                         capture_output=True, text=True, timeout=240)
    assert out.stdout.strip() == "OK True", out.stdout + out.stderr[-3000:]
