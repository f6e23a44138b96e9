"""Super kernels: torch_npu's `super_kernel_scope_begin/end` and `NPUGraph.super_kernel_optimize`.

On an Ascend NPU a super kernel fuses the kernels of a captured graph (or of a marked scope of
it) into one launch, a code-generation optimization of the AI cores (CANN's aclsk* API). It
changes no result. npurt's replay already runs each lane's consecutive tasks as one task
(docs/graphs.md, Cost), and its kernels are host code, so there is nothing further to fuse:
scopes and optimize options are checked as torch_npu checks them (torch_npu/npu/graphs.py
`_validate_options`, `_super_kernel_scope_begin_impl`; torch_npu/csrc/core/npu/NPUGraph.cpp)
and change nothing else.
"""
from __future__ import annotations

# torch_npu's accepted keys and their types (graphs.py `_validate_options`)
OPTIONS = {
    "optimize_options": {
        "preload_code": int, "split_mode": int, "stream_fusion": int, "constant_codegen": int,
        "auto_op_parallel": int, "opt_extend": str, "dcci_before_kernel_start": (list, str),
        "dcci_after_kernel_end": (list, str), "dcci_disable_on_kernel": (list, str),
        "aggressive_opt_strategies": (dict, {"event_breaker_bypass": int, "value_breaker_bypass": int,
                                             "task_breaker_bypass": int}),
        "ubuf_lock_ignore_kernel": (list, str), "early_start": int,
    },
    "debug_options": {
        "debug_sync_all": int, "debug_op_exec_trace": int, "debug_cross_core_sync_check": int,
        "debug_extend": str, "debug_per_op_max_core_num": int,
    },
}


def validate_options(kind: str, options) -> None:
    """RuntimeError for options torch_npu refuses: not a dict, an unknown key, a value of the
    wrong type (lists: of strings; aggressive_opt_strategies: a dict of known int sub-keys)."""
    if options is None:
        return
    if not isinstance(options, dict):
        raise RuntimeError(f"{kind} param must be dict or None.")
    table = OPTIONS[kind]
    for key, value in options.items():
        if key not in table:
            raise RuntimeError(f"Invalid {kind} param key: '{key}'.")
        rule = table[key]
        kind_of, inner = rule if isinstance(rule, tuple) else (rule, None)
        if not isinstance(value, kind_of):
            raise RuntimeError(f"{kind} param['{key}'] must be {kind_of.__name__}, got {type(value).__name__}")
        if kind_of is list:
            for k, item in enumerate(value):
                if not isinstance(item, inner):
                    raise RuntimeError(f"{kind}['{key}'][{k}] must be {inner.__name__}, got {type(item).__name__}")
        elif kind_of is dict:
            for sub, sub_value in value.items():
                if sub not in inner:
                    raise RuntimeError(f"Invalid sub_key '{sub}' in {kind}['{key}'].")
                if not isinstance(sub_value, inner[sub]):
                    raise RuntimeError(f"{kind}['{key}']['{sub}'] must be {inner[sub].__name__}, "
                                       f"got {type(sub_value).__name__}")


def _check_scope_name(scope_name) -> None:
    if scope_name is not None and not scope_name.strip():
        raise RuntimeError("scope_name should be None or a non-empty string.")


def super_kernel_scope_begin(scope_name: str | None = None) -> None:
    """Mark the start of a scope of the current stream's work to fuse (a hint: see above)."""
    _check_scope_name(scope_name)


def super_kernel_scope_end(scope_name: str | None = None) -> None:
    _check_scope_name(scope_name)
