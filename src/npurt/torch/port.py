"""Ports of torch's CUDA-only Python modules to npu, made when they are imported: torch's source
(the installed torch's) with its syntax tree rewritten the way torch_npu's ports differ from it.

Our decision: npurt carries no copy of those modules (torch's code, or torch_npu's port of it);
`load(upstream, namespace)` reads the installed torch's file, rewrites it (`Port`), compiles it
and runs it in `namespace` (a module's globals), so every name the port defines lives in that
module (code that patches `torch_npu.npu._graph_tree.X` changes what the port calls). The
rewrite, per torch_npu/npu/_graph_tree.py and _npugraph_conditional_nodes.py against
torch/_inductor/cudagraph_trees.py and torch/_higher_order_ops/cudagraph_conditional_nodes.py:

* names: `cuda` -> `npu`, `CUDA` -> `NPU`, `cudagraph` -> `npugraph` in identifiers, attribute
  names, parameters, keywords and messages (`CUDAGraphNode` -> `NPUGraphNode`,
  `cudagraphify` -> `npugraphify`, `torch.cuda.graph` -> `torch.npu.graph`, `is_cuda` ->
  `is_npu`, ...); inductor's config keys (`config.triton.cudagraph_*`), logger artifacts and
  counters keep their names;
* the caching allocator's private-pool bindings come from `torch_npu._C` (`_npu_getCheckpointState`,
  `_npu_setCheckpointPoolState`, `_construct_storage_from_data_pointer`, ...: graph_pools.py);
* torch_npu's signatures: the graph-tree nodes take `graph_id` (not `id`); `npugraphify` passes
  `add_function` no compile id and the tree manager builds an `NPUGraphNode` with the eight
  arguments of torch_npu's (`mode` and `compile_id` stay optional parameters);
* `assert cond, msg` becomes `raise RuntimeError(msg or "check cond fail")`, as torch_npu's
  port writes each one (they hold under `python -O` too);
* the graph trees' thread-local containers live under torch_npu's keys
  ("npu_tree_manager_containers", "npu_tree_manager_locks"), apart from torch's own (torch's
  TLS stash holds no reference: sharing a key frees the other's object);
* torch's `torch._higher_order_ops.cudagraph_conditional_nodes` is npugraph_cond.py.
"""
from __future__ import annotations

import ast
import importlib.util
import re

# string constants that name something of torch's and keep their spelling
_KEEP = {"cudagraphs", "runtime_cudagraphify_time_us", "cudagraph_recorded_non_static_inputs",
         "pytorch/inductor:disable_cudagraph_alias_invalidation"}
_WORDS = re.compile(r"cudagraph|cuda_graph|CUDAGraph|CUDA|Cuda|cuda")
_WORD_FOR = {"cudagraph": "npugraph", "cuda_graph": "npu_graph", "CUDAGraph": "NPUGraph", "CUDA": "NPU",
             "Cuda": "Npu", "cuda": "npu"}
_CONFIG_KEY = re.compile(r"(config\.triton\.)cudagraph")
# torch._C bindings that are torch_npu._C's on npu (torch_npu/csrc/npu/Module.cpp)
_NPU_C = {"_add_cached_tensor", "_remove_cached_tensor", "_construct_storage_from_data_pointer",
          "_construct_NPU_Tensor_From_Storage_And_Metadata", "_free_And_Remove_DeleterFn",
          "_has_Standard_Deleter", "_set_storage_access_error_msg", "_set_storage_data_ptr_access_error_msg",
          "_tensors_data_ptrs_at_indices_equal", "_set_cached_tensors_enabled"}
_MODULES = {"torch._higher_order_ops.npugraph_conditional_nodes": "npurt.torch.npugraph_cond",
            "torch._C": "npurt.torch.shim._C"}
_NODES = ("NPUGraphNode", "NPUWarmupNode")
# the graph trees' thread-local containers: torch_npu's keys and attributes
_TLS = {"tree_manager_containers": "npu_tree_manager_containers", "tree_manager_locks": "npu_tree_manager_locks"}
_KEEP_MEMBERS = {"CallbackTrigger"}  # torch enums whose members keep their names


def rename(text: str) -> str:
    """cuda spelled npu, leaving inductor's config keys (config.triton.cudagraph_*) alone."""
    keys = []
    text = _CONFIG_KEY.sub(lambda m: keys.append(m.group(0)) or f"\0{len(keys) - 1}\0", text)
    text = re.sub(r"\b([Aa]) (cuda|CUDA)\b", lambda m: f"{m.group(1)}n {m.group(2)}", text)  # an npu
    text = _WORDS.sub(lambda m: _WORD_FOR[m.group(0)], text)
    return re.sub(r"\0(\d+)\0", lambda m: keys[int(m.group(1))], text)


def _dotted(node) -> str:
    return ast.unparse(node) if isinstance(node, (ast.Name, ast.Attribute)) else ""


class Port(ast.NodeTransformer):
    """torch's cudagraph_trees.py's syntax tree -> torch_npu's _graph_tree (the module doc)."""

    def __init__(self, text: str = ""):
        self.scope: list[str] = []
        self.text = text  # the source, for the words of a failed check

    # ---- imports: torch's own names stay, bound under their npu spelling
    def visit_ImportFrom(self, node):
        module = node.module or ""
        if node.level:  # `from . import config`: torch._inductor's
            module, node.level = "torch._inductor" + (f".{module}" if module else ""), 0
        new = rename(module)
        if new in _MODULES:  # modules whose npu counterpart is torch_npu's
            node.module = _MODULES[new]
            for alias in node.names:
                alias.name = rename(alias.name)
            return node
        node.module = module
        for alias in node.names:
            if alias.asname is None and rename(alias.name) != alias.name:
                alias.asname = rename(alias.name)
        return node

    # ---- names
    def visit_Name(self, node):
        if node.id == "id" and self._in_node_init():
            node.id = "graph_id"
        else:
            node.id = rename(node.id)
        return node

    def visit_arg(self, node):
        node.arg = "graph_id" if node.arg == "id" and self._in_node_init() else rename(node.arg)
        return node

    def visit_keyword(self, node):
        if node.arg is not None:
            node.arg = rename(node.arg)
        self.generic_visit(node)
        return node

    def visit_Attribute(self, node):
        base = _dotted(node.value)
        if base == "self.id_to_compile_id" or base in _KEEP_MEMBERS:
            return node  # torch's names (CallbackTrigger.CUDAGRAPH_RECORDING, ...)
        self.generic_visit(node)
        if "config" in base.split("."):
            return node  # inductor's and dynamo's config keys keep their names
        node.attr = _TLS.get(node.attr, rename(node.attr))
        if _dotted(node.value) == "torch._C" and (node.attr.startswith("_npu") or node.attr in _NPU_C):
            node.value = ast.Attribute(value=ast.Name(id="torch_npu", ctx=ast.Load()), attr="_C", ctx=ast.Load())
        return node

    def visit_Constant(self, node):
        if isinstance(node.value, str) and node.value not in _KEEP:
            node.value = _TLS.get(node.value, rename(node.value))
        return node

    # ---- definitions
    def visit_ClassDef(self, node):
        node.name = rename(node.name)
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()
        return node

    def visit_FunctionDef(self, node):
        node.name = rename(node.name)
        owner = self.scope[-1] if self.scope else ""
        self.scope.append(node.name)
        self.generic_visit(node)
        self.scope.pop()
        if node.name in ("__init__", "add_function"):
            _optional(node.args, ("mode", "compile_id") if owner == "NPUGraphNode" else ("compile_id",))
        return node

    def visit_If(self, node):
        self.generic_visit(node)
        if ast.unparse(node.test) == "torch.backends.npu.is_built()":
            return node.body  # built for npu
        return node

    def visit_Assert(self, node):
        self.generic_visit(node)
        words = (ast.get_source_segment(self.text, node.test) if self.text else None) or ast.unparse(node.test)
        message = node.msg or ast.Constant(value=f"check {' '.join(words.split())} fail")
        error = ast.Call(func=ast.Name(id="RuntimeError", ctx=ast.Load()), args=[message], keywords=[])
        return ast.If(test=ast.UnaryOp(op=ast.Not(), operand=node.test), body=[ast.Raise(exc=error)], orelse=[])

    def visit_Subscript(self, node):
        self.generic_visit(node)
        if _dotted(node.value) == "self.id_to_compile_id" and isinstance(node.ctx, ast.Load):
            # torch_npu records no compile ids: a function added without one has none
            return ast.Call(func=ast.Attribute(value=node.value, attr="get", ctx=ast.Load()), args=[node.slice],
                            keywords=[])
        return node

    def visit_Call(self, node):
        self.generic_visit(node)
        callee = _dotted(node.func)
        if callee.startswith("log."):  # what a log line reads of a function torch_npu does not record
            node.args = [_lenient(a) for a in node.args]
        if callee.endswith("add_function") or callee == "NPUGraphNode":
            drop = {"compile_id", "self.compile_id"} | ({"self.mode"} if callee == "NPUGraphNode" else set())
            node.args = [a for a in node.args if ast.unparse(a) not in drop]
        return node

    def _owner(self) -> str:
        return self.scope[-2] if len(self.scope) >= 2 else ""

    def _in_node_init(self) -> bool:
        return len(self.scope) >= 2 and self.scope[-1] == "__init__" and self.scope[-2] in _NODES


def _lenient(arg):
    """`self.id_to_mode[f].name` -> `getattr(self.id_to_mode.get(f), "name", None)`."""
    if (isinstance(arg, ast.Attribute) and isinstance(arg.value, ast.Subscript)
            and _dotted(arg.value.value).startswith("self.id_to_")):
        got = ast.Call(func=ast.Attribute(value=arg.value.value, attr="get", ctx=ast.Load()), args=[arg.value.slice],
                       keywords=[])
        return ast.Call(func=ast.Name(id="getattr", ctx=ast.Load()),
                        args=[got, ast.Constant(value=arg.attr), ast.Constant(value=None)], keywords=[])
    return arg


def _optional(args: ast.arguments, names) -> None:
    """Give the trailing positional parameters among `names` that have no default None."""
    required = (args.posonlyargs + args.args)[:len(args.posonlyargs + args.args) - len(args.defaults)]
    count = 0
    while count < len(required) and required[-1 - count].arg in names:
        count += 1
    args.defaults[0:0] = [ast.Constant(value=None) for _ in range(count)]


def load(upstream: str, namespace: dict) -> None:
    """Run torch's module `upstream` (its source, not imported), ported, in `namespace`."""
    path = importlib.util.find_spec(upstream).origin
    with open(path, encoding="utf-8") as f:
        text = f.read()
    tree = ast.parse(text, path)
    code = compile(ast.fix_missing_locations(Port(text).visit(tree)), f"{path} (ported to npu by npurt)", "exec")
    exec(code, namespace)  # noqa: S102 - torch's own module, ported (above)


