"""Seeded bug (initcheck, Pythonic): only the first half of an array is filled before it is
summed.

expect: initcheck uninitialized read
"""
import npurt

x = npurt.empty((2048,))
x[:1024] = 1.0                                   # the second half stays unwritten
print(x.sum().item())
