"""The pytest11 entry point `npurt.pytest_plugin` (what installs name; `-p npurt.pytest_plugin`):
the hooks and fixtures of `npurt.apps.pytest_plugin`, re-exported so pytest finds them here."""
from npurt.apps.pytest_plugin import *  # noqa: F401,F403
