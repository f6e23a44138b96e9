"""Tests of the processes, npurt.apps."""
