"""npurt.ge: the graph engine, a client of the runtime (as GE is on the real stack).

Models converted from ONNX by `npurt atc` (an .om: the real 256-byte header, then npurt's
payload) are loaded on a device and executed as ordinary stream tasks by ONNX Runtime on the
CPU, reading and writing device memory in place. Single operators (acl.op) run from
operator models `npurt atc --singleop` writes. The pyACL facade (acl.mdl, acl.op, the
tensor-desc and data-buffer helpers of `acl`) and `npurt.Model` are its front ends.

| module | holds |
| --- | --- |
| constants, dtypes | GE's constants; aclDataType <-> numpy / ONNX / file names, formats |
| tensor, dataset | aclTensorDesc, aclDataBuffer, aclmdlDataset |
| om | the .om file: header and payload |
| modeldef | what a converted model is: inputs, outputs, gears (the payload's description) |
| converter, atc | ONNX -> .om (ATC's options); the `npurt atc` command line |
| aipp | AIPP config files, the AIPP stage, dynamic AIPP parameters |
| engine | ONNX Runtime: lazy import, session options (threads bounded by AI cores) |
| model | a loaded model: memory, session, the execution task |
| desc | aclmdlDesc: model descriptions and their queries |
| failures | aclopCreateAndGetOpDesc's failure-mode descriptions |
| api | the model operations acl.mdl calls |
| ops/ | single operators: op models, matching, the operator library |

Importing npurt.ge imports neither onnx nor onnxruntime; they are the extra npurt[models].
"""
