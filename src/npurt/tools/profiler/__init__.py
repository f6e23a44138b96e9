"""The profiler: msprof-style timelines and summaries of what the simulated NPU ran.

A tool over the runtime's observer hooks (npurt.runtime.observers); nothing in the runtime
knows it. Modules, in the order data flows through them:

| module | holds |
| --- | --- |
| collector | the hook observer: raw, timestamped records while a profile runs |
| apicalls | host API call spans (the front ends' functions wrapped only while profiling) |
| markers | msproftx-style ranges and marks; marker tasks on streams |
| timeline | the records as tasks, waits, calls, ranges on one clock |
| trace | the Chrome trace-event JSON (msprof.json) |
| summary | the CSV tables (op_summary, op_statistic, task_time, api_statistic, ...) and the report |
| plot | the timeline as a PNG (matplotlib, the `plot` extra) |
| session | `Profile`: start, stop, save |

Entry points: `npurt.profiler` (Pythonic), `acl.prof` (pyACL), `npurt run --profile DIR`,
`npurt demo --profile DIR`, `npurt plot DIR`.
"""
from .session import Profile, ProfilerError  # noqa: F401
