"""Seeded bug (initcheck, Pythonic): npurt.empty gives uninitialized memory; copying it to the
host reads garbage.

expect: initcheck uninitialized read
"""
import npurt

x = npurt.empty((256, 256))
print(x.to_host().sum())
