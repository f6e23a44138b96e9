"""Holds the `acl` shim package that `npurt run` puts on PYTHONPATH (see apps/runner.py)."""
