"""torch_npu.contrib: torch_npu's contributed helpers; `transfer_to_npu` (imported on its own,
for its side effect) is the one npurt provides."""
