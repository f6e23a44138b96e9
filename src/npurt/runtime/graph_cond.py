"""Conditional tasks of captured graphs (aclmdlRICondHandleCreate, GetCondPtr, AddCondTask,
CaptureToModelRIBegin): IF, WHILE and SWITCH on a 64-bit word of device memory read as the task
runs.

* `cond_handle_create(graph, default, flag)` during the capture (the graph from capture_info)
  gives a word the graph owns (freed with it). With COND_ASSIGN_DEFAULT (1) each replay first
  sets it to `default` (acl_rt.h: "initialized to this value at the start of each model
  execution"), so a value the host wrote before the replay is lost.
* `add_cond_task(cond, type, size, stream)` adds the task at this point of the capture and
  returns `size` empty bodies (graphs with `parent` set and `pending` true), captured with
  `capture_begin(sub, mode, into=body)` ... `capture_end(sub)`. IF: 1 or 2 bodies (nonzero
  runs the first, zero the second); WHILE: 1 body, run while the word is nonzero (checked
  before each pass); SWITCH: the value picks a body, none when out of range (rt_inner_model.h's
  rtCondTaskParams gives the size rules).
* A body runs inside its conditional task: its nodes in capture order, which its
  cross-stream dependencies allow (a record is captured before the waits on it).
"""
from __future__ import annotations

import numpy as np

from . import address
from . import constants as C
from .errors import InvalidHandleError, ParamInvalidError
from .graph import CaptureError, Graph, _capture_of, _check_aborted, _run_tasks, graph_of
from .handles import table
from .observers import HOOKS
from .tasks import Task

COND_IF, COND_WHILE, COND_SWITCH = 0, 1, 2      # aclmdlRICondTaskType
COND_NAMES = {COND_IF: "IF", COND_WHILE: "WHILE", COND_SWITCH: "SWITCH"}
COND_ASSIGN_DEFAULT = 1                          # aclmdlRICondHandleFlag
COND_HANDLES = table("cond handle")


# ---------------------------------------------------------------- conditional tasks
class CondHandle:
    """A condition of a graph (aclmdlRICondHandleCreate): a 64-bit word of device memory the
    graph owns, read by its conditional tasks as they run. With COND_ASSIGN_DEFAULT each
    replay first sets it to `default` (acl_rt.h: "initialized to this value at the start of
    each model execution")."""

    def __init__(self, graph: Graph, default: int, flag: int):
        self.graph, self.default, self.flag = graph, default, flag
        device = graph.device
        self.addr = device.memory.malloc(8)
        self.block = device.memory.live[self.addr]
        if HOOKS.active:  # tools know the word (owned by the graph: freed with it, never a leak)
            HOOKS.emit("mem_alloc", device=device, addr=self.addr, size=8, managed=True)
        address.view(self.addr, 8).view(np.uint64)[0] = default
        if HOOKS.active:
            HOOKS.emit("host_access", addr=self.addr, nbytes=8, mode="w", what="the condition's default value")
        self.handle = COND_HANDLES.add(self)
        graph.cond_handles.append(self)

    def value(self) -> int:
        return int(address.view(self.addr, 8).view(np.uint64)[0])

    def launch_task(self):
        """The task a replay starts with for this word (ASSIGN_DEFAULT), or None."""
        return CondDefaultTask(self) if self.flag == COND_ASSIGN_DEFAULT else None

    def release(self) -> None:
        """With its graph: the handle goes, the word returns to the pool (stream-ordered)."""
        COND_HANDLES.remove(self.handle)
        device = self.graph.device
        if HOOKS.active:
            HOOKS.emit("mem_free", device=device, addr=self.addr, size=8, managed=True,
                       uses=dict(self.block.uses or {}))
        device.memory.free(self.addr)


def cond_handle_create(graph: Graph, default: int = 0, flag: int = COND_ASSIGN_DEFAULT) -> CondHandle:
    graph = graph_of(graph)
    if type(default) is not int or not 0 <= default <= 0xFFFFFFFF:
        raise ParamInvalidError(f"cond_handle_create: defaultLaunchValue {default!r} is not a uint32")
    if flag not in (0, COND_ASSIGN_DEFAULT):
        raise ParamInvalidError(f"cond_handle_create: flag {flag!r} must be 0 or "
                                "ACL_MODEL_RI_COND_HANDLE_ASSIGN_DEFAULT (1)")
    return CondHandle(graph, default, flag)


def cond_handle_of(handle) -> CondHandle:
    cond = handle if type(handle) is CondHandle else COND_HANDLES.get(handle)
    if cond.graph.destroyed:
        raise InvalidHandleError(f"condition handle {cond.handle:#x}: its graph was destroyed")
    return cond


class CondNode:
    def __init__(self, cond: CondHandle, type_: int, bodies: list):
        self.cond, self.type, self.bodies = cond, type_, bodies

    @property
    def type_name(self) -> str:
        return COND_NAMES[self.type]

    def replay_task(self, graph: Graph) -> Task:
        return CondTask(self, graph)

    def replay_holders(self) -> tuple:
        return (self.cond.block, *(h for b in self.bodies for _, kind, p in b.nodes if kind == "task"
                                   for h in p[1]))


def add_cond_task(cond: CondHandle, type_: int, size: int, stream) -> list:
    """aclmdlRIAddCondTask: a conditional task at this point of the capture on `stream`, with
    `size` empty bodies (graphs to capture into with capture_begin(..., into=body)); returns
    them. IF: 1 or 2 bodies (the word nonzero runs the first, zero the second); WHILE: 1 body,
    run while the word is nonzero (checked before each pass); SWITCH: size >= 1 bodies, the
    word's value picks one (none when it is out of range)."""
    cond = cond_handle_of(cond)
    cap = _capture_of(stream, "add_cond_task")
    if cond.graph is not cap.graph:
        raise ParamInvalidError(f"add_cond_task: condition handle {cond.handle:#x} belongs to graph "
                                f"{cond.graph.handle:#x}, the stream captures graph {cap.graph.handle:#x}")
    if type_ not in COND_NAMES:
        raise ParamInvalidError(f"add_cond_task: type {type_!r} is not IF (0), WHILE (1) or SWITCH (2)")
    allowed = {COND_IF: (1, 2), COND_WHILE: (1,)}.get(type_)
    if type(size) is not int or size < 1 or (allowed is not None and size not in allowed):
        raise ParamInvalidError(f"add_cond_task: size {size!r} is invalid for {COND_NAMES[type_]} (IF: 1 or 2, "
                                "WHILE: 1, SWITCH: 1 or more)")
    lane = cap.lanes[stream]
    if lane in cap.groups:
        raise CaptureError("add_cond_task inside a task group", C.ACL_ERROR_RT_PARAM_INVALID)
    bodies = []
    for _ in range(size):
        body = Graph(cap.graph.device, cap.graph.context)
        body.parent, body.pending = cap.graph, True
        bodies.append(body)
    cap.graph.bodies.extend(bodies)
    cap._add(lane, "cond", CondNode(cond, type_, bodies))
    return bodies


def _run_inline(graph: Graph, runner: Task) -> None:
    """Run a body inside its conditional task: its nodes in capture order, which is an order
    its cross-stream dependencies allow (a record is captured before the waits on it)."""
    for _lane, kind, payload in graph.nodes:
        if kind == "task":
            _run_tasks((payload[0],), runner)
        elif kind == "group":
            _run_tasks(payload.tasks, runner)
        elif kind == "cond":
            _run_cond(payload, graph, runner)


def _run_cond(node: CondNode, graph: Graph, runner: Task) -> None:
    _check_aborted(graph)
    value = node.cond.value()
    if node.type == COND_IF:
        if value:
            _run_inline(node.bodies[0], runner)
        elif len(node.bodies) == 2:
            _run_inline(node.bodies[1], runner)
    elif node.type == COND_SWITCH:
        if value < len(node.bodies):
            _run_inline(node.bodies[value], runner)
    else:
        while node.cond.value():
            _check_aborted(graph)
            _run_inline(node.bodies[0], runner)


class CondTask(Task):
    """A replayed conditional task: reads its condition word as it runs."""

    __slots__ = ("node", "graph")
    kind = "graph_cond"

    def __init__(self, node: CondNode, graph: Graph):
        self.node, self.graph = node, graph

    def run(self) -> None:
        _run_cond(self.node, self.graph, self)

    def accesses(self) -> tuple:
        return ((self.node.cond.addr, 8, "r"),)

    def describe(self) -> str:
        return f"{COND_NAMES[self.node.type]} task on the word at 0x{self.node.cond.addr:x}"

    def details(self) -> dict:
        return {"name": f"graph {COND_NAMES[self.node.type]}", "bodies": len(self.node.bodies)}


class CondDefaultTask(Task):
    __slots__ = ("cond",)
    kind = "graph_cond_default"

    def __init__(self, cond: CondHandle):
        self.cond = cond

    def run(self) -> None:
        address.view(self.cond.addr, 8).view(np.uint64)[0] = self.cond.default

    def accesses(self) -> tuple:
        return ((self.cond.addr, 8, "w"),)

    def describe(self) -> str:
        return f"condition word 0x{self.cond.addr:x} = {self.cond.default} (the default at launch)"
