"""The C interface: `acl/acl.h` and `libacl_rt.so` over npurt (docs/c-api.md).

`npurt cann-home` (`npurt.capi.home.cann_home`) makes a CANN-like prefix; the library's C
shims and headers are generated from the spec (`npurt.capi.spec`); the C functions are
implemented in Python (`npurt.capi.impl`, registered with `npurt.capi.registry.c_function`)
over the runtime's published operations. Nothing here is imported by npurt's core.
"""
