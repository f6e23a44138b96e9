"""The old import path of `npurt demo` (`npurt.demo.main(batches=..., quiet=...)`): an alias
of `npurt.apps.demo`."""
from npurt.apps.demo import main  # noqa: F401
