"""A torch_npu training loop, as torch_npu users write it: run with
`npurt run --torch-npu examples/torch/train.py` (no NPU needed).

A small CNN learns to tell two synthetic image classes apart: DataLoader with pinned memory,
non-blocking host-to-device copies, mixed precision with a gradient scaler, a checkpoint
saved and loaded back, and torch.npu's memory statistics."""
import os
import tempfile

import torch
import torch_npu  # noqa: F401 - registers the npu device
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

device = torch.device("npu:0")
torch.npu.set_device(device)
torch.manual_seed(0)


def make_data(n=256):
    """Class 1 images have a bright square in the middle; class 0 do not."""
    x = torch.randn(n, 1, 12, 12) * 0.5
    y = torch.randint(0, 2, (n,))
    x[y == 1, :, 4:8, 4:8] += 2.0
    return TensorDataset(x, y)


model = nn.Sequential(
    nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.MaxPool2d(2),
    nn.Conv2d(8, 16, 3, padding=1), nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten(),
    nn.Linear(16, 2),
).to(device)
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
scaler = torch.npu.amp.GradScaler(init_scale=2.0 ** 10)
loader = DataLoader(make_data(), batch_size=32, shuffle=True, pin_memory=True)
loss_fn = nn.CrossEntropyLoss()

first = last = None
for epoch in range(3):
    for x, y in loader:
        x, y = x.to(device, non_blocking=True), y.to(device, non_blocking=True)
        optimizer.zero_grad()
        with torch.npu.amp.autocast():
            loss = loss_fn(model(x), y)
        scaler.scale(loss).backward()
        scaler.step(optimizer)
        scaler.update()
    last = loss.item()
    first = last if first is None else first
    print(f"epoch {epoch}: loss {last:.4f}")

model.eval()
test = make_data(128)
with torch.no_grad():
    logits = model(test.tensors[0].to(device))
    accuracy = (logits.argmax(1).cpu() == test.tensors[1]).float().mean().item()
print(f"accuracy {accuracy:.2f}")

path = os.path.join(tempfile.mkdtemp(), "checkpoint.pt")
torch.save({"model": model.state_dict(), "optimizer": optimizer.state_dict()}, path)
restored = torch.load(path)
same = all(torch.equal(a.cpu(), b.cpu()) for a, b in zip(model.state_dict().values(), restored["model"].values()))
print(f"memory: {torch.npu.memory_allocated() / 2**20:.2f} MiB allocated, "
      f"peak {torch.npu.max_memory_allocated() / 2**20:.2f} MiB")
print("OK" if accuracy > 0.9 and same else "FAILED")
