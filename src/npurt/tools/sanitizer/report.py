"""Reports as the user sees them: one block per error, an error summary, and JSON.

The vocabulary is msSanitizer's (memcheck, racecheck, initcheck, synccheck; illegal read
and write, illegal free, leak, RAW/WAR/WAW hazards) plus npurt's leakcheck. Every line of a
block starts with PREFIX so a report can be picked out of a program's own output.
"""
from __future__ import annotations

import json
import sys
import threading
from dataclasses import dataclass, field

PREFIX = "========= npurt-sanitizer: "
TOOLS = ("racecheck", "memcheck", "initcheck", "synccheck", "leakcheck")


@dataclass
class Actor:
    """One side of a report: what touched the memory (or waited), where, and from which line."""

    what: str                  # "write by memcpy_async H2D", "read by the host (acl.util.ptr_to_numpy)"
    agent: str                 # "stream 2 (device 0)", "host thread MainThread"
    site: object = None        # frames.Site of the user's line, or None
    where: str = "enqueued at"  # how the site relates: "enqueued at", "at", "allocated at"

    def line(self) -> str:
        at = f", {self.where} {self.site}" if self.site is not None else ""
        return f"{self.what} on {self.agent}{at}"

    def to_json(self) -> dict:
        site = self.site.to_json() if self.site is not None else None
        return {"what": self.what, "agent": self.agent, "site": site, "relation": self.where}


@dataclass
class Report:
    tool: str                  # one of TOOLS
    kind: str                  # "RAW hazard", "illegal write", "illegal free", "leak", "hang", ...
    title: str                 # the headline after "tool: kind"
    actors: list = field(default_factory=list)
    details: list = field(default_factory=list)  # further lines (bytes, chains, ...)
    fix: str = ""
    key: tuple = ()            # reports with the same key are one error seen again
    address: int | None = None
    nbytes: int = 0
    device: int | None = None
    count: int = 1

    def lines(self) -> list[str]:
        out = [f"{PREFIX}{self.tool}: {self.kind}: {self.title}"]
        out += [f"{PREFIX}  {a.line()}" for a in self.actors]
        out += [f"{PREFIX}  {d}" for d in self.details]
        if self.fix:
            out.append(f"{PREFIX}  fix: {self.fix}")
        return out

    def text(self) -> str:
        return "\n".join(self.lines())

    def to_json(self) -> dict:
        return {"tool": self.tool, "kind": self.kind, "title": self.title,
                "address": self.address, "nbytes": self.nbytes, "device": self.device,
                "accesses": [a.to_json() for a in self.actors], "details": list(self.details),
                "fix": self.fix, "count": self.count}


class Reporter:
    """Collects reports, prints each new one at once (a repeat only counts), and sums up."""

    def __init__(self, out=None, echo: bool = True):
        self.out = out
        self.echo = echo
        self.reports: list[Report] = []
        self._by_key: dict = {}
        self._lock = threading.Lock()

    def add(self, report: Report) -> bool:
        """True if the report is new (and was printed)."""
        key = (report.tool, report.kind, *report.key) if report.key else None
        with self._lock:
            if key is not None:
                seen = self._by_key.get(key)
                if seen is not None:
                    seen.count += 1
                    return False
                self._by_key[key] = report
            self.reports.append(report)
        if self.echo:
            self.write(report.text() + "\n")
        return True

    def write(self, text: str) -> None:
        out = self.out or sys.stderr
        try:
            out.write(text)
            out.flush()
        except (OSError, ValueError):  # a closed stream at interpreter exit
            pass

    @property
    def errors(self) -> int:
        return len(self.reports)

    def summary(self) -> str:
        n = len(self.reports)
        if not n:
            return f"{PREFIX}ERROR SUMMARY: 0 errors"
        per = {t: sum(1 for r in self.reports if r.tool == t) for t in TOOLS}
        parts = ", ".join(f"{t} {c}" for t, c in per.items() if c)
        seen = sum(r.count for r in self.reports)
        again = f"; {seen} occurrences in all" if seen > n else ""
        return f"{PREFIX}ERROR SUMMARY: {n} error{'s' if n != 1 else ''} ({parts}){again}"

    def to_json(self) -> dict:
        return {"errors": len(self.reports), "reports": [r.to_json() for r in self.reports]}

    def write_json(self, path: str) -> None:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, indent=2)
            f.write("\n")
