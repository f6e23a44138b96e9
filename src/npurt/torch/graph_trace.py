"""A captured graph's dump as a Chrome trace: torch_npu's `torch_npu.npu._npugraph_utils.
align_trace_json` for npurt's dumps.

`NPUGraph.debug_dump(path)` writes the graph as npurt's JSON (`{"graph", "device", "lanes",
"nodes": [{"id", "lane", "kind", ...}]}`: nodes in capture order, a "join" node waiting for node
`after_node` of lane `after_lane`), then, as torch_npu's does after its raw dump, derives
`<stem>.aligned.json` beside it with `align_trace_json(path, None)`: a Chrome trace (Perfetto,
chrome://tracing) with one track per lane ("stream<lane>") and one complete event per node, each
starting when its lane's previous node and, for a join, the node it waits for have ended, plus a
flow arrow for each join. Times are in capture-order steps (1 µs each): npurt records no device
times in a graph. A failure here leaves the raw dump as it is (debug_dump logs a warning).
"""
from __future__ import annotations

import json
from pathlib import Path

STEP_US = 1.0


def _name(node: dict) -> str:
    kind = node["kind"]
    if kind == "task":
        return node.get("what") or node.get("type", "task")
    if kind == "join":
        return f"wait for lane {node['after_lane']} node {node['after_node']}"
    if kind in ("extwait", "extrecord", "reset"):
        return f"{kind} event {node['event']}"
    return kind


def align_nodes(dump: dict, merge_gap: float = 0.0) -> list:
    """The Chrome trace events of one npurt graph dump."""
    if not isinstance(dump, dict) or not isinstance(dump.get("nodes"), list):
        raise RuntimeError("not an npurt graph dump (expected an object with 'nodes')")
    pid = f"graph {dump.get('graph', 0):#x}"
    lane_end: dict = {}
    node_end: dict = {}
    events: list = []
    for node in dump["nodes"]:
        lane = node["lane"]
        start = lane_end.get(lane, 0.0)
        if node["kind"] == "join":
            before = node_end.get(node["after_node"], 0.0)
            start = max(start, before + merge_gap)
            events.append({"ph": "s", "id": node["id"], "name": "join", "cat": "graph", "pid": pid,
                           "tid": f"stream{node['after_lane']}", "ts": before})
            events.append({"ph": "f", "bp": "e", "id": node["id"], "name": "join", "cat": "graph", "pid": pid,
                           "tid": f"stream{lane}", "ts": start})
        events.append({"ph": "X", "name": _name(node), "cat": node["kind"], "pid": pid, "tid": f"stream{lane}",
                       "ts": start, "dur": STEP_US, "args": {"node": node["id"]}})
        lane_end[lane] = node_end[node["id"]] = start + STEP_US
    return events


def align_trace_json(input, output=None, merge_gap: float = 0.0) -> Path:  # noqa: A002 - torch_npu's name
    """Write the aligned trace of the dump at `input` to `output` (default: `<stem>.aligned.json`)."""
    in_path = Path(input)
    out_path = Path(output) if output else in_path.with_suffix(in_path.suffix.replace(".json", "") + ".aligned.json")
    with in_path.open(encoding="utf-8") as f:
        dump = json.load(f)
    events = align_nodes(dump, merge_gap)
    with out_path.open("w", encoding="utf-8") as f:
        json.dump(events, f, indent=1)
    return out_path
