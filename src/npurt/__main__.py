"""`python -m npurt ...` is the `npurt` command."""
import sys

from npurt.cli import main

sys.exit(main())
