"""npurt.ops.array_ops: the old home of the array-level operations, now `npurt.array.operations`
(the DeviceArray operator layer), kept so that code importing it keeps working."""
from ..array.operations import *  # noqa: F401,F403
from ..array.operations import __all__  # noqa: F401
