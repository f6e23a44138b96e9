"""Tests of the profiler, npurt.tools.profiler."""
