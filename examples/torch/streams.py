"""The two-stream torch_npu snippet, corrected: run with
`npurt run --torch-npu examples/torch/streams.py` (no NPU needed).

`a` and `b` are made on the default stream. Without the two `wait_stream` calls the matmul
on `stream_compute` and the copy on `stream_copy` would read them before they are written:
a data race on real hardware, and on npurt too (`npurt run --sanitize` names it)."""
import torch
import torch_npu  # noqa: F401

device = torch.device("npu:0")
torch.npu.set_device(device)

a = torch.randn(1024, 1024, device=device, dtype=torch.float16)
b = torch.randn(1024, 1024, device=device, dtype=torch.float16)

stream_compute = torch.npu.Stream()
stream_copy = torch.npu.Stream()
stream_compute.wait_stream(torch.npu.current_stream())   # a and b are written on the default stream
stream_copy.wait_stream(torch.npu.current_stream())

with torch.npu.stream(stream_compute):
    c = torch.matmul(a, b)

with torch.npu.stream(stream_copy):
    d = a.cpu()

stream_compute.synchronize()
stream_copy.synchronize()

error = (c.cpu().float() - d.float() @ b.cpu().float()).abs().max().item()
print(f"max error against a float32 matmul: {error:.3f} (fp16 rounding)")
print("OK" if error < 0.25 else "FAILED")
