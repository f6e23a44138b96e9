"""Batched inference with torch_npu, as users write it: run with
`npurt run --torch-npu examples/torch/infer.py` (no NPU needed).

A small transformer encoder (with torch_npu's fused RMSNorm and attention) runs batches in
eval mode; a copy stream brings the next batch in from pinned memory while the compute
stream works on the current one, ordered by events. The answers are checked against the
same model on the CPU."""
import torch
import torch_npu
from torch import nn

device = torch.device("npu:0")
torch.npu.set_device(device)
torch.manual_seed(0)


class Block(nn.Module):
    def __init__(self, dim=64, heads=4):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(dim, 3 * dim)
        self.out = nn.Linear(dim, dim)
        self.norm = nn.Parameter(torch.ones(dim))
        self.mlp = nn.Sequential(nn.Linear(dim, 4 * dim), nn.GELU(), nn.Linear(4 * dim, dim))

    def forward(self, x):
        b, s, d = x.shape
        if x.device.type == "npu":
            h = torch_npu.npu_rms_norm(x, self.norm, epsilon=1e-6)[0]
            q, k, v = self.qkv(h).chunk(3, dim=-1)
            attn = torch_npu.npu_fusion_attention(q, k, v, self.heads, "BSH", scale=(d // self.heads) ** -0.5)[0]
        else:  # the same computation in plain PyTorch
            h = x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * self.norm
            q, k, v = (t.view(b, s, self.heads, -1).transpose(1, 2) for t in self.qkv(h).chunk(3, dim=-1))
            attn = nn.functional.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(b, s, d)
        x = x + self.out(attn)
        return x + self.mlp(x)


model = nn.Sequential(Block(), Block(), nn.Linear(64, 10)).eval()
npu_model = nn.Sequential(*[m for m in model]).to(device)  # the same weights on npu
batches = [torch.randn(8, 16, 64).pin_memory() for _ in range(6)]

copy_stream, compute_stream = torch.npu.Stream(), torch.npu.Stream()
compute_stream.wait_stream(torch.npu.current_stream())   # the weights were copied on the default stream
copied = [torch.npu.Event() for _ in batches]
results = []
with torch.no_grad():
    with torch.npu.stream(copy_stream):
        staged = [None] * len(batches)
        staged[0] = batches[0].to(device, non_blocking=True)
        copied[0].record()
    for i in range(len(batches)):
        if i + 1 < len(batches):                      # bring the next batch in meanwhile
            with torch.npu.stream(copy_stream):
                staged[i + 1] = batches[i + 1].to(device, non_blocking=True)
                copied[i + 1].record()
        compute_stream.wait_event(copied[i])
        with torch.npu.stream(compute_stream):
            results.append(npu_model(staged[i]).argmax(-1))
    torch.npu.synchronize()
    expected = [model.cpu()(b).argmax(-1) for b in batches]

agree = sum(int(torch.equal(r.cpu(), e)) for r, e in zip(results, expected))
print(f"{agree}/{len(batches)} batches agree with the CPU model")
print("OK" if agree == len(batches) else "FAILED")
