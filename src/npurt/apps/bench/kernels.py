"""The benchmarks' kernel binary: where CANN loads an Ascend C `.o`, npurt loads a `.py` file
of kernels (acl.rt.binary_load_from_file on this file's path)."""
from npurt.runtime import kernel_function as kernel


@kernel
def empty(ctx):
    """Does nothing: launching it and synchronizing is the launch overhead."""
