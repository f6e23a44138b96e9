"""Directory put on PYTHONPATH by `npurt run --torch-npu`: holds the `torch_npu` package that
child processes import (see torch_npu/__init__.py)."""
