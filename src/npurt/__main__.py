"""`python -m npurt ...` is the `npurt` command."""
import sys

from npurt.apps.cli import main

sys.exit(main())
