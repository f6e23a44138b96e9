"""Tests of DVPP, npurt.media."""
