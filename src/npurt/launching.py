"""npurt.launching: the old home of `npurt.launch` and `kernel[blocks](...)`, now npurt.kernel;
kept so that code importing it keeps working."""
from .kernel import BoundKernel, Kernel, bind, launch  # noqa: F401
