"""ACL graph update plans: where a compiled graph's updatable op arguments come from.

A plan (torch_npu/npu/_aclgraph_update_plan/resolver.py; its inductor side,
torch_npu/_inductor/_aclgraph_update_plan/codegen.py) is a list with one entry per op a
graph captured through an update handler (graph_update.py), in capture order:

    [{"op": "npu_fused_infer_attention_score.default",
      "updates": {"actual_seq_lengths": {"kind": "input", "index": 0}}}]

A source is `{"kind": "input", "index": i}` (the i-th input of the current call),
`{"kind": "constant", "value": v}` (an int, float, bool, str, None, or a list / tuple of
them; never a tensor), `{"kind": "none"}` or `{"kind": "list", "items": [sources]}`.

* `validate_aclgraph_update_plan(plan, records)`: one entry per recorded op, the same op up
  to its `.default` / `.out` overload, at least one update, only keys the op's record or its
  handler's update specs can consume, well-formed sources. RuntimeError otherwise.
* `resolve_aclgraph_update_plan(plan, new_inputs)` -> the `cpu_update_input` list that
  `NPUGraph.update` takes.
* `build_aclgraph_update_plan_entry_for_inductor(op, args, kwargs, input_names, inputs)`:
  the entry for one op of an inductor graph (None when the op has no handler, its handler
  declines, or it is FA v3 in the BNSD layout): its arguments bound by the op's schema, each
  updatable one mapped to the graph input it is (by name, identity or equal sympy
  expression), or else to a literal source.

npurt has no inductor backend for npu (docs/torch.md), so no compiled graph carries a plan
here; the functions are torch_npu's and work on plans made by hand.
"""
from __future__ import annotations

from typing import Any, Sequence

import torch

from .graph_update import HANDLERS

ACLGRAPH_UPDATE_PLAN_GLOBAL = "_torch_npu_aclgraph_update_plan"  # the compiled module attribute holding it
_LITERALS = (int, float, bool, str)


def _normalize_op_name(op_name: str) -> str:
    for suffix in (".default", ".out"):
        if op_name.endswith(suffix):
            return op_name[:-len(suffix)]
    return op_name


def _get_update_specs(handler, op_name: str) -> list:
    if hasattr(handler, "get_update_specs"):
        return handler.get_update_specs(op_name)
    return getattr(handler, "UPDATE_SPECS", {}).get(op_name, [])


def _consumable_keys(record) -> set:
    op_name = record.op_cache_entry.__name__
    keys = set(getattr(record, "kwargs", {}))
    handler = HANDLERS.get(op_name)
    if handler is not None:
        keys.update(key for _, _, key in _get_update_specs(handler, op_name))
    return keys


# ---------------------------------------------------------------- sources
def _where(entry: int, key: str) -> str:
    return f"ACLGraph update plan entry {entry} key {key}"


def _check_literal(value) -> None:
    if isinstance(value, torch.Tensor):
        raise RuntimeError("Unsupported ACLGraph update Tensor constant; Tensor update values must be graph inputs")
    if value is None or isinstance(value, _LITERALS):
        return
    if isinstance(value, (list, tuple)):
        for item in value:
            _check_literal(item)
        return
    raise RuntimeError(f"Unsupported ACLGraph update constant: {value!r}")


def _source(entry: int, key: str, source, new_inputs: Sequence | None):
    """Check one source; with `new_inputs`, also give its value for this call."""
    if not isinstance(source, dict):
        raise RuntimeError(f"{_where(entry, key)} has invalid source {source!r}")
    kind = source.get("kind")
    if kind == "input":
        index = source.get("index")
        if not isinstance(index, int) or index < 0:
            raise RuntimeError(f"{_where(entry, key)} has invalid input index {index}")
        if new_inputs is None:
            return None
        if index >= len(new_inputs):
            raise RuntimeError(f"{_where(entry, key)} input index {index} is out of range for "
                               f"{len(new_inputs)} inputs")
        return new_inputs[index]
    if kind == "constant":
        try:
            _check_literal(source.get("value"))
        except RuntimeError as exc:
            raise RuntimeError(f"{_where(entry, key)} has unsupported constant value "
                               f"{source.get('value')!r}") from exc
        return source.get("value")
    if kind == "none":
        return None
    if kind == "list":
        items = source.get("items")
        if not isinstance(items, list):
            raise RuntimeError(f"{_where(entry, key)} has invalid list source items {items!r}")
        return [_source(entry, key, item, new_inputs) for item in items]
    raise RuntimeError(f"{_where(entry, key)} has unsupported source kind {kind!r}")


# ---------------------------------------------------------------- plans
def resolve_aclgraph_update_plan(plan: Sequence[dict], new_inputs: Sequence) -> list:
    """The update payloads (NPUGraph.update's cpu_update_input) of this call's inputs."""
    return [{key: _source(k, key, src, new_inputs) for key, src in entry.get("updates", {}).items()}
            for k, entry in enumerate(plan or [])]


def validate_aclgraph_update_plan(plan: Sequence[dict], graph_dispatch_records: Sequence) -> None:
    plan = plan or []
    if not plan and graph_dispatch_records:
        ops = [r.op_cache_entry.__name__ for r in graph_dispatch_records]
        raise RuntimeError(f"Captured updatable ACLGraph operators but missing ACLGraph update plan: {ops}. "
                           "This may be caused by reusing cached compiled code generated with ACLGraph "
                           "disabled or by using the npugraphs backend, which does not support ACLGraph "
                           "update plans yet.")
    if len(plan) != len(graph_dispatch_records):
        raise RuntimeError(f"ACLGraph update plan length mismatch: plan has {len(plan)} entries but graph "
                           f"captured {len(graph_dispatch_records)} updatable records")
    for k, (entry, record) in enumerate(zip(plan, graph_dispatch_records)):
        if not isinstance(entry, dict):
            raise RuntimeError(f"ACLGraph update plan has invalid plan entry at index {k}: {entry!r}")
        expected, actual = entry.get("op"), record.op_cache_entry.__name__
        if not isinstance(expected, str):
            raise RuntimeError(f"ACLGraph update plan has invalid plan entry: entry {k} op must be a string, "
                               f"got {expected!r}")
        if _normalize_op_name(expected) != _normalize_op_name(actual):
            raise RuntimeError(f"ACLGraph update plan op mismatch: entry {k} expects {expected!r}, "
                               f"captured {actual!r}")
        updates = entry.get("updates", {})
        if not isinstance(updates, dict):
            raise RuntimeError(f"ACLGraph update plan has invalid plan entry: entry {k} updates must be a "
                               f"dict, got {updates!r}")
        if not updates:
            raise RuntimeError(f"ACLGraph update plan entry has no updates: entry {k}, op {actual!r}")
        unknown = sorted(set(updates) - _consumable_keys(record))
        if unknown:
            raise RuntimeError(f"ACLGraph update plan has key(s) that captured op cannot consume: entry {k}, "
                               f"op {actual!r}, keys {unknown}")
        for key, src in updates.items():
            _source(k, key, src, None)


def build_cpu_update_input_for_graph(plan: Sequence[dict], new_inputs: Sequence,
                                     graph_dispatch_records: Sequence) -> list:
    validate_aclgraph_update_plan(plan, graph_dispatch_records)
    return resolve_aclgraph_update_plan(plan, new_inputs)


def validate_aclgraph_update_plan_for_graph(plan: Sequence[dict], graph) -> None:
    """Check a plan against what `graph` recorded (nothing to check without auto_dispatch_capture)."""
    if graph is not None and graph.auto_dispatch_capture:
        validate_aclgraph_update_plan(plan, graph.graph_dispatch_mode.graph_dispatch_records)


def update_aclgraph_records_for_graph(cpu_update_input: Sequence[dict], graph) -> bool:
    """Apply the payloads to `graph` (NPUGraph.update); False when there is nothing to do."""
    if graph is None or not graph.auto_dispatch_capture or not cpu_update_input:
        return False
    graph.update(cpu_update_input)
    return True


# ---------------------------------------------------------------- inductor entries
def _expr(value):
    import sympy
    if isinstance(value, sympy.Expr):
        return value
    if isinstance(value, (torch.SymInt, torch.SymFloat, torch.SymBool)):
        return value.node.expr
    return None


def _name_of(value) -> str | None:
    """The buffer name of an inductor IR value (through `.data` and views)."""
    if isinstance(value, torch.Tensor):
        return None
    if hasattr(value, "get_name"):
        try:
            return value.get_name()
        except (AttributeError, NotImplementedError):
            pass
    data = getattr(value, "data", None)
    if data is not None and data is not value:
        name = _name_of(data)
        if name is not None:
            return name
    if hasattr(value, "unwrap_view"):
        try:
            return _name_of(value.unwrap_view())
        except (AttributeError, NotImplementedError):
            pass
    return None


def _same_expr(a, b) -> bool:
    import sympy
    try:
        return bool(sympy.simplify(a - b) == 0)
    except Exception:  # noqa: BLE001 - sympy cannot compare them: fall back to equality
        return a == b


def _input_index(value, names: Sequence[str], inputs: dict) -> int | None:
    name = _name_of(value)
    if name in names:
        return list(names).index(name)
    expr = _expr(value)
    for k, input_name in enumerate(names):
        candidate = inputs.get(input_name)
        if value is candidate:
            return k
        other = _expr(candidate)
        if expr is not None and other is not None and _same_expr(expr, other):
            return k
    return None


def _inductor_source(value, names: Sequence[str], inputs: dict) -> dict:
    index = _input_index(value, names, inputs)
    if index is not None:
        return {"kind": "input", "index": index}
    if isinstance(value, (list, tuple)):
        return {"kind": "list", "items": [_inductor_source(v, names, inputs) for v in value]}
    if isinstance(value, torch.Tensor):
        raise RuntimeError("Unsupported ACLGraph update Tensor constant; Tensor update values must be graph inputs")
    if value is None:
        return {"kind": "none"}
    if isinstance(value, _LITERALS):
        return {"kind": "constant", "value": value}
    raise RuntimeError(f"Unsupported ACLGraph update source: {value!r}")


def _bind(op, args: Sequence, kwargs: dict) -> dict:
    schema = getattr(op, "_schema", None)
    if schema is None:
        return {}
    bound = {}
    for k, arg in enumerate(schema.arguments):
        if k < len(args):
            bound[arg.name] = args[k]
        elif arg.name in kwargs:
            bound[arg.name] = kwargs[arg.name]
    return bound


def build_aclgraph_update_plan_entry_for_inductor(op_overload, args: Sequence, kwargs: dict,
                                                  graph_input_names: Sequence[str], graph_inputs: dict):
    op_name = getattr(op_overload, "__name__", str(op_overload))
    handler = HANDLERS.get(op_name)
    if handler is None:
        return None
    if hasattr(handler, "should_handle") and not handler.should_handle(op_overload, args, kwargs):
        return None
    bound = _bind(op_overload, args, kwargs)
    if _normalize_op_name(op_name) in ("npu_fusion_attention_v3", "npu_fusion_attention_grad_v3") \
            and bound.get("input_layout") == "BNSD":
        return None   # FA v3 in BNSD takes no update
    keys = {key for _, _, key in _get_update_specs(handler, op_name)}
    updates = {key: _inductor_source(value, graph_input_names, graph_inputs)
               for key, value in bound.items() if key in keys}
    return {"op": op_name, "updates": updates} if updates else None
