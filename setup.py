"""The one thing pyproject.toml cannot say: the optional C accelerator of the caching pool.

`npurt._speedups` (src/npurt/_speedups.c) is built where a C compiler exists; `optional=True`
makes a failed or impossible build a warning, and npurt then runs its pure-Python pool (a
source checkout compiles the same file into a cache on first import instead: see
npurt.runtime.accel).
"""
from setuptools import Extension, setup

setup(ext_modules=[Extension("npurt._speedups", ["src/npurt/_speedups.c"], optional=True)])
