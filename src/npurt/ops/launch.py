"""npurt.ops.launch: the old name of npurt.ops.launchers (the pointer-level launchers of the
built-in kernels), kept so that code importing it keeps working."""
from .launchers import *  # noqa: F401,F403
