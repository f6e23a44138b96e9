"""Tests of the pyACL face, npurt.acl."""
