"""`import torch_npu` in the processes a `npurt run --torch-npu` program starts (multiprocessing's
'spawn' and 'forkserver' workers, `python -c` subprocesses): npurt's torch_npu shim.

`npurt run --torch-npu` puts the directory holding this package on PYTHONPATH for its run only.
Importing it installs the same `torch_npu` -> `npurt.torch.shim` aliases as in the program
itself and then stands aside: the import statement returns the shim.
"""
import sys

from npurt.apps.runner import install_torch_npu_alias

install_torch_npu_alias()
sys.modules[__name__] = sys.modules["npurt.torch.shim"]
