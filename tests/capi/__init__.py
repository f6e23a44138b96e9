"""Tests of the C interface (npurt cann-home, libacl_rt.so); a package so its conftest does not
shadow tests/conftest.py."""
