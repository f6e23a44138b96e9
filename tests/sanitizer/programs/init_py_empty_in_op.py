"""Seeded bug (initcheck, Pythonic): an operation reads an array from npurt.empty that was
never filled.

expect: initcheck uninitialized read
"""
import npurt

acc = npurt.empty((1024,))                       # meant to be npurt.zeros
y = npurt.ones((1024,))
acc += y                                         # reads acc
npurt.synchronize()
