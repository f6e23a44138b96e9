"""Tests of the graph engine, npurt.ge."""
