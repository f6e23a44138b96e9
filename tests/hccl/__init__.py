"""Tests of collectives, npurt.hccl."""
