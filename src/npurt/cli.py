"""The old import path of the `npurt` command (`python -m npurt.cli`, `npurt.cli:main`): an
alias of `npurt.apps.cli`, kept for scripts and installs that name it."""
import sys

from npurt.apps.cli import CliError, check_output, check_settings, main  # noqa: F401

if __name__ == "__main__":
    sys.exit(main())
