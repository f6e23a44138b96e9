"""`torch_npu._inductor`: torch_npu's inductor backend for npu. Not provided: importing it
registers nothing, and `torch.compile(model)` on npu still raises the RuntimeError naming the
backends that work ("eager", "aot_eager"); see docs/torch.md, Known gaps."""
