"""Run by test_torch_distributed.py under `npurt launch -n 2 --torch-npu`: every collective of
backend "hccl" on npu tensors, each result checked against its definition; prints OK."""
import os

import torch
import torch.distributed as dist
import torch_npu  # noqa: F401

rank, ws = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
torch.npu.set_device(int(os.environ["LOCAL_RANK"]))
dist.init_process_group("hccl")
assert dist.get_backend() == "hccl" and dist.get_world_size() == ws
dev = torch.device("npu", torch.npu.current_device())


def full(n, v, dtype=torch.float32):
    return torch.full((n,), float(v), device=dev, dtype=dtype)


def same(t, expected):
    got = t.cpu().tolist()
    assert got == expected, (rank, got, expected)


t = full(4, rank + 1)
dist.all_reduce(t)
same(t, [float(sum(range(1, ws + 1)))] * 4)
for op, expect in [(dist.ReduceOp.MAX, ws), (dist.ReduceOp.MIN, 1), (dist.ReduceOp.AVG, (ws + 1) / 2)]:
    t = full(2, rank + 1)
    dist.all_reduce(t, op=op)
    same(t, [float(expect)] * 2)
flags = torch.tensor([rank == 0, False], device=dev)
dist.all_reduce(flags)  # bool SUM is a logical or
same(flags, [True, False])
try:
    dist.all_reduce(full(1, 1, torch.int32), op=dist.ReduceOp.BAND)
    raise AssertionError("BAND was accepted")
except RuntimeError as exc:
    assert "Cannot use ReduceOp.BAND with HCCL" in str(exc), exc

b = torch.arange(3., device=dev) * (rank + 1)
dist.broadcast(b, src=ws - 1)
same(b, [0.0, float(ws), 2.0 * ws])

out = torch.empty(2 * ws, device=dev)
dist.all_gather_into_tensor(out, full(2, rank))
same(out, [float(r) for r in range(ws) for _ in range(2)])
parts = [torch.empty(2, device=dev) for _ in range(ws)]
dist.all_gather(parts, full(2, rank))
assert [p.cpu().tolist() for p in parts] == [[float(r)] * 2 for r in range(ws)]

o = torch.empty(2, device=dev)
dist.reduce_scatter_tensor(o, torch.arange(2. * ws, device=dev))
same(o, [float(ws * (2 * rank)), float(ws * (2 * rank + 1))])
o = torch.empty(2, device=dev)
dist.reduce_scatter(o, [full(2, r) for r in range(ws)])
same(o, [float(ws * rank)] * 2)

i = torch.arange(2. * ws, device=dev) + 100 * rank
o = torch.empty(2 * ws, device=dev)
dist.all_to_all_single(o, i)
same(o, [float(100 * r + 2 * rank + k) for r in range(ws) for k in range(2)])
outs = [torch.empty(1, device=dev) for _ in range(ws)]
dist.all_to_all(outs, [full(1, 10 * rank + r) for r in range(ws)])
assert [x.item() for x in outs] == [float(10 * r + rank) for r in range(ws)]

x = full(3, -1)
if rank == 0:
    dist.send(full(3, 5), 1)
elif rank == 1:
    dist.recv(x, 0)
    same(x, [5.0] * 3)

send, recv = full(2, rank), torch.empty(2, device=dev)
ops = [dist.P2POp(dist.isend, send, (rank + 1) % ws), dist.P2POp(dist.irecv, recv, (rank - 1) % ws)]
for w in dist.batch_isend_irecv(ops):
    w.wait()
same(recv, [float((rank - 1) % ws)] * 2)

# async work: ordered on the current stream; a later op on it sees the result
t = full(2, 1)
work = dist.all_reduce(t, async_op=True)
assert work.wait() is True
doubled = t * 2
same(doubled, [2.0 * ws] * 2)
assert work.is_completed()
fut = dist.all_reduce(full(1, 1), async_op=True).get_future()
assert fut.wait()[0].cpu().item() == ws

# on a side stream: the collective is queued on that stream, after its earlier work
side = torch.npu.Stream()
side.wait_stream(torch.npu.current_stream())
with torch.npu.stream(side):
    s = full(8, rank) + 1
    dist.all_reduce(s)
torch.npu.current_stream().wait_stream(side)
same(s, [float(sum(r + 1 for r in range(ws)))] * 8)

dist.barrier()
dist.destroy_process_group()
print("OK", rank)
