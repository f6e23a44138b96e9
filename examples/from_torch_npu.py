"""A torch_npu program ported to npurt by renaming: `torch` and `torch.npu` become `npurt`
(and the `npu_to_cpu` the snippet used becomes `cpu`). Run it with `python examples/from_torch_npu.py`.

`a` and `b` are written on the default stream; the matmul on `stream_compute` and the copy on
`stream_copy` read them, so each of those streams first waits for the default stream. Without
the two `wait_stream` lines this is a data race, on an NPU and on npurt alike (`npurt run
--sanitize` names it).
"""
import numpy as np

import npurt

device = npurt.device("npu:0")
npurt.set_device(device)

a = npurt.randn(1024, 1024, device=device, dtype=npurt.float16)
b = npurt.randn(1024, 1024, device=device, dtype=npurt.float16)

stream_compute = npurt.Stream()
stream_copy = npurt.Stream()
stream_compute.wait_stream(npurt.current_stream())   # a and b are written on the default stream
stream_copy.wait_stream(npurt.current_stream())

with npurt.stream(stream_compute):
    c = npurt.matmul(a, b)

with npurt.stream(stream_copy):
    d = a.cpu()

stream_compute.synchronize()
stream_copy.synchronize()

error = float(np.abs(c.cpu().astype(np.float32) - d.astype(np.float32) @ b.cpu().astype(np.float32)).max())
print(f"max error against a float32 matmul: {error:.3f} (float16 rounding)")
print("OK" if error < 0.25 else "FAILED")
