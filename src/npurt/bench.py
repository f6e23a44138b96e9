"""The old import path of `npurt bench` (`npurt.bench.main(quick=..., json_out=...)` and its
modules): an alias of `npurt.apps.bench`."""
from npurt.apps.bench import main  # noqa: F401
from npurt.apps.bench import harness, report  # noqa: F401
