"""Single operators (acl.op): op models compiled by `npurt atc --singleop`, registered with
acl.op.set_model_dir / load, matched per call and run as stream tasks by npurt's operator
library.

| module | holds |
| --- | --- |
| library | the operator types (Ascend IR names and attributes) and their numpy compute |
| attrs | aclopAttr: typed attribute values and how they match |
| opmodel | a compiled operator: descs, attributes, the matching rule |
| compile | `npurt atc --singleop`: the JSON -> op model files |
| registry | the registered op models of the process; lookup with a cache |
| execute | the operator task, op handles, infer_shape |
"""
