"""Data-parallel training with DistributedDataParallel on backend "hccl", as torch_npu users write it.

    npurt launch -n 2 examples/torch/ddp.py          # 2 ranks, each a process on its own npu
    npurt run --torch-npu examples/torch/ddp.py      # 1 rank: the same training on the whole batch

Each rank trains on its half of every batch; DDP averages the gradients across ranks, so
every step equals one step of the single-process run on the whole batch. Rank 0 prints one
JSON line per step (loss over the whole batch, the sum of the parameters) and `OK` last.
"""
import json
import os

import torch
import torch.distributed as dist
import torch_npu  # noqa: F401  (npurt's shim under npurt run / npurt launch)
from torch.nn.parallel import DistributedDataParallel

STEPS, BATCH = 5, 32

rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
os.environ.setdefault("MASTER_PORT", "29511")
torch.npu.set_device(int(os.environ.get("LOCAL_RANK", 0)))
dist.init_process_group("hccl", rank=rank, world_size=world)

torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(16, 32), torch.nn.Tanh(), torch.nn.Linear(32, 1)).npu()
ddp = DistributedDataParallel(model)
opt = torch.optim.SGD(ddp.parameters(), lr=0.1)
gen = torch.Generator().manual_seed(1)
data = [(torch.randn(BATCH, 16, generator=gen), torch.randn(BATCH, 1, generator=gen)) for _ in range(STEPS)]
share = BATCH // world
for step, (x, y) in enumerate(data):
    mine = slice(rank * share, (rank + 1) * share)
    loss = torch.nn.functional.mse_loss(ddp(x[mine].npu()), y[mine].npu())
    opt.zero_grad()
    loss.backward()
    opt.step()
    whole = loss.detach().clone()
    dist.all_reduce(whole, op=dist.ReduceOp.AVG)
    total = sum(p.detach().double().sum() for p in model.parameters())
    if rank == 0:
        print(json.dumps({"step": step, "loss": whole.item(), "param_sum": total.item()}), flush=True)
dist.destroy_process_group()
if rank == 0:
    print("OK")
