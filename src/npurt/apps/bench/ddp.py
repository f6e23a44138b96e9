"""The DDP figure: a DistributedDataParallel step on 2 ranks against the same step with the
gradients all-reduced by hand, same run.

`measure` starts 2 ranks (`npurt launch -n 2 --torch-npu`) running RANK_SCRIPT. Each rank
holds a small MLP twice, with the same weights: wrapped in DDP (backend "hccl"), and plain.
Steps alternate between the DDP model (forward, backward with DDP's bucketed all-reduce, SGD)
and the plain one (forward, backward, then one npurt.hccl all_reduce per gradient on the
process group's own communicator, a division by the world size, SGD). Each step ends with a
synchronize and is timed between barriers as the slower rank sees it.

* ddp_step_ratio: DDP step time over the hand-reduced step (the cost of DDP's machinery on
  npurt: its hooks, buckets and the backend's Work objects); target <= 1.3;
* ddp_step_ms / ddp_manual_step_ms: the two step times.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

from .harness import Profile, Stat
from .torchnpu import Skipped  # the bench's "an optional extra is missing" note

FIGURES = ("ddp_step_ratio", "ddp_step_ms", "ddp_manual_step_ms")

RANK_SCRIPT = """import json, sys, time
import torch, torch.distributed as dist
import torch_npu  # noqa: F401
from mpi4py import MPI
from torch.nn.parallel import DistributedDataParallel
from npurt import hccl

steps, warmup = int(sys.argv[1]), int(sys.argv[2])
rank = dist.get_rank() if dist.is_initialized() else None
import os
torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("hccl")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(0)
def mlp():
    return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 64),
                               torch.nn.ReLU(), torch.nn.Linear(64, 1)).npu()
plain = mlp()
wrapped = mlp()
wrapped.load_state_dict(plain.state_dict())
ddp = DistributedDataParallel(wrapped)
opt_ddp = torch.optim.SGD(ddp.parameters(), lr=0.01)
opt_plain = torch.optim.SGD(plain.parameters(), lr=0.01)
x = torch.randn(32, 64, device="npu")
y = torch.randn(32, 1, device="npu")
pg = dist.group.WORLD
comm = pg._comm(torch.npu.current_device())
fp32 = hccl.HCCL_DATA_TYPE_FP32

def ddp_step():
    loss = torch.nn.functional.mse_loss(ddp(x), y)
    opt_ddp.zero_grad(); loss.backward(); opt_ddp.step()

def manual_step():
    loss = torch.nn.functional.mse_loss(plain(x), y)
    opt_plain.zero_grad(); loss.backward()
    stream = torch.npu.current_stream().npurt_stream
    for p in plain.parameters():
        g = p.grad
        assert hccl.all_reduce(g.data_ptr(), g.data_ptr(), g.numel(), fp32, hccl.HCCL_REDUCE_SUM, comm, stream) == 0
        g.div_(world)
    opt_plain.step()

def timed(fn):
    MPI.COMM_WORLD.Barrier()
    t0 = time.perf_counter()
    fn()
    torch.npu.synchronize()
    return MPI.COMM_WORLD.allreduce(time.perf_counter() - t0, op=MPI.MAX)

for _ in range(warmup):
    timed(ddp_step); timed(manual_step)
ours, theirs = [], []
for i in range(steps):
    if i % 2:
        ours.append(timed(ddp_step)); theirs.append(timed(manual_step))
    else:
        theirs.append(timed(manual_step)); ours.append(timed(ddp_step))
same = all(torch.allclose(a, b, atol=1e-5) for a, b in zip(wrapped.parameters(), plain.parameters()))
dist.destroy_process_group()
if rank == 0:
    print(json.dumps({"ddp_s": ours, "manual_s": theirs, "same_params": same}), flush=True)
"""


def measure(session, p: Profile) -> dict[str, Stat]:
    try:
        import torch  # noqa: F401
    except ImportError:
        raise Skipped({f: "skipped: PyTorch is not installed (pip install 'npurt[torch]')" for f in FIGURES}) \
            from None
    try:
        import mpi4py  # noqa: F401
    except ImportError:
        raise Skipped({f: "skipped: mpi4py is not installed (pip install 'npurt[dist]')" for f in FIGURES}) \
            from None
    steps = {"tiny": 4, "quick": 20}.get(p.name, 60)
    src = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [src, os.environ.get("PYTHONPATH")]))}
    env.pop("MASTER_PORT", None)
    with tempfile.TemporaryDirectory() as tmp:
        script = os.path.join(tmp, "ddp_rank.py")
        with open(script, "w") as f:
            f.write(RANK_SCRIPT)
        proc = subprocess.run([sys.executable, "-m", "npurt", "launch", "-n", "2", "--torch-npu", script,
                               str(steps), str(p.warmup)], capture_output=True, text=True, env=env, timeout=900)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    if proc.returncode != 0 or not lines:
        raise RuntimeError(f"the 2-rank DDP run failed (exit {proc.returncode}): "
                           f"{(proc.stderr or proc.stdout).strip()[-2000:]}")
    samples = json.loads(lines[-1])
    if not samples["same_params"]:
        raise RuntimeError("the DDP model and the hand-reduced one diverged: the figure would compare "
                           "different work")
    ddp_s, manual_s = samples["ddp_s"], samples["manual_s"]
    return {"ddp_step_ratio": Stat.of([d / m for d, m in zip(ddp_s, manual_s)]),
            "ddp_step_ms": Stat.of([d * 1e3 for d in ddp_s]),
            "ddp_manual_step_ms": Stat.of([m * 1e3 for m in manual_s])}
