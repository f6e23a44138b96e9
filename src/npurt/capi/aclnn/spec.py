"""The aclnn spec fragment: acl_meta.h, aclnn_base.h, aclnn_util.h and one aclnnop header
per operator of the op table, in the format of the C interface's spec (`npurt.capi.spec`),
from which its generators write the headers and the shims of libopapi / libnnopbase.

Facts of CANN's headers: acl_meta.h declares the create/destroy/get functions of the
tensor objects and `typedef int32_t aclnnStatus`; an operator header (aclnnop/aclnn_add.h)
declares `aclnn<Op>GetWorkspaceSize(<params>, uint64_t *workspaceSize, aclOpExecutor
**executor)` and `aclnn<Op>(void *workspace, uint64_t workspaceSize, aclOpExecutor
*executor, aclrtStream stream)` behind ACLNN_API (aclnnop/aclnn_util.h).
"""
from __future__ import annotations

from .optable import OPS

OPAQUE = ("aclOpExecutor", "aclTensor", "aclScalar", "aclIntArray", "aclFloatArray", "aclBoolArray",
          "aclTensorList", "aclScalarList")


def _param(ctype: str, name: str) -> dict:
    sep = "" if ctype.endswith("*") else " "
    return {"decl": f"{ctype}{sep}{name}", "name": name, "type": ctype}


def _fn(name: str, ret: str, *params) -> dict:
    return {"kind": "function", "name": name, "ret": ret, "params": [_param(t, n) for t, n in params]}


def meta_items() -> list[dict]:
    items: list[dict] = [{"kind": "typedef", "decl": f"struct {n} {n}"} for n in OPAQUE]
    items.append({"kind": "typedef", "decl": "int32_t aclnnStatus"})
    items += [
        _fn("aclCreateTensor", "aclTensor *", ("const int64_t *", "viewDims"), ("uint64_t", "viewDimsNum"),
            ("aclDataType", "dataType"), ("const int64_t *", "stride"), ("int64_t", "offset"),
            ("aclFormat", "format"), ("const int64_t *", "storageDims"), ("uint64_t", "storageDimsNum"),
            ("void *", "tensorData")),
        _fn("aclCreateScalar", "aclScalar *", ("void *", "value"), ("aclDataType", "dataType")),
        _fn("aclCreateIntArray", "aclIntArray *", ("const int64_t *", "value"), ("uint64_t", "size")),
        _fn("aclCreateFloatArray", "aclFloatArray *", ("const float *", "value"), ("uint64_t", "size")),
        _fn("aclCreateBoolArray", "aclBoolArray *", ("const bool *", "value"), ("uint64_t", "size")),
        _fn("aclCreateTensorList", "aclTensorList *", ("const aclTensor *const *", "value"), ("uint64_t", "size")),
        _fn("aclCreateScalarList", "aclScalarList *", ("const aclScalar *const *", "value"), ("uint64_t", "size")),
        _fn("aclDestroyTensor", "aclnnStatus", ("const aclTensor *", "tensor")),
        _fn("aclDestroyScalar", "aclnnStatus", ("const aclScalar *", "scalar")),
        _fn("aclDestroyIntArray", "aclnnStatus", ("const aclIntArray *", "array")),
        _fn("aclDestroyFloatArray", "aclnnStatus", ("const aclFloatArray *", "array")),
        _fn("aclDestroyBoolArray", "aclnnStatus", ("const aclBoolArray *", "array")),
        _fn("aclDestroyTensorList", "aclnnStatus", ("const aclTensorList *", "array")),
        _fn("aclDestroyScalarList", "aclnnStatus", ("const aclScalarList *", "array")),
        _fn("aclGetViewShape", "aclnnStatus", ("const aclTensor *", "tensor"), ("int64_t **", "viewDims"),
            ("uint64_t *", "viewDimsNum")),
        _fn("aclGetStorageShape", "aclnnStatus", ("const aclTensor *", "tensor"), ("int64_t **", "storageDims"),
            ("uint64_t *", "storageDimsNum")),
        _fn("aclGetViewStrides", "aclnnStatus", ("const aclTensor *", "tensor"), ("int64_t **", "stridesValue"),
            ("uint64_t *", "stridesNum")),
        _fn("aclGetViewOffset", "aclnnStatus", ("const aclTensor *", "tensor"), ("int64_t *", "offset")),
        _fn("aclGetFormat", "aclnnStatus", ("const aclTensor *", "tensor"), ("aclFormat *", "format")),
        _fn("aclGetDataType", "aclnnStatus", ("const aclTensor *", "tensor"), ("aclDataType *", "dataType")),
        _fn("aclGetIntArraySize", "aclnnStatus", ("const aclIntArray *", "array"), ("uint64_t *", "size")),
        _fn("aclGetFloatArraySize", "aclnnStatus", ("const aclFloatArray *", "array"), ("uint64_t *", "size")),
        _fn("aclGetBoolArraySize", "aclnnStatus", ("const aclBoolArray *", "array"), ("uint64_t *", "size")),
        _fn("aclGetTensorListSize", "aclnnStatus", ("const aclTensorList *", "tensorList"), ("uint64_t *", "size")),
    ]
    return items


def base_items() -> list[dict]:
    return [
        _fn("aclnnInit", "aclnnStatus", ("const char *", "configPath")),
        _fn("aclnnFinalize", "aclnnStatus"),
        _fn("aclSetAclOpExecutorRepeatable", "aclnnStatus", ("aclOpExecutor *", "executor")),
        _fn("aclDestroyAclOpExecutor", "aclnnStatus", ("aclOpExecutor *", "executor")),
    ]


def op_functions(op) -> list[dict]:
    first = _fn(f"aclnn{op.name}GetWorkspaceSize", "aclnnStatus", *op.params, ("uint64_t *", "workspaceSize"),
                ("aclOpExecutor **", "executor"))
    second = _fn(f"aclnn{op.name}", "aclnnStatus", ("void *", "workspace"), ("uint64_t", "workspaceSize"),
                 ("aclOpExecutor *", "executor"), ("aclrtStream", "stream"))
    return [first, second]


def spec() -> dict:
    headers: dict[str, dict] = {
        "aclnn/acl_meta.h": {"includes": ["stdint.h", "stdbool.h", "acl/acl_base.h"], "items": meta_items()},
        "aclnn/aclnn_base.h": {"includes": ["aclnn/acl_meta.h"], "items": base_items()},
        "aclnnop/aclnn_util.h": {"includes": [], "items": [
            {"kind": "macro", "name": "ACLNN_API", "value": '__attribute__((visibility("default")))'}]},
    }
    for op in OPS:
        h = headers.setdefault(f"aclnnop/{op.header}", {"includes": ["aclnn/aclnn_base.h", "aclnnop/aclnn_util.h"],
                                                        "items": []})
        h["items"] += op_functions(op)
    return {"headers": headers}
