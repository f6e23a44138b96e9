"""Tests of npurt.driver."""
