"""The C-style calling convention shared by npurt's C-style APIs (`npurt.acl`, `npurt.hccl`'s
pyACL-style functions, the C interface): argument parsing as PyArg_ParseTuple does it
(`parse`), and the one conversion of exceptions into return codes (`retcode`).

It sits on the runtime's published surface only and knows no face: each API brings its own
`retcode.CodeSpace`.
"""
