"""Holds the `acl` shim package that `npurt run` puts on PYTHONPATH (see tools/runner.py)."""
