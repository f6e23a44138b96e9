"""synccheck: waits that can never end, reported with the chain of who waits for whom.

While a host thread waits in a synchronize, a watchdog thread follows what it waits for:
the stream's blocked task, what that task's blocker waits for (`Blocker.waits_for()`: a
task of another stream, a record of an event, a thread that must run process_report), and
so on. The wait can never end when the chain

* comes back to a stream or thread already in it (a cycle of waits),
* needs a callback to be run by a thread that is itself waiting in the chain, or has exited,
* needs a record of an event that was destroyed, or of one nobody is left to record (every
  thread that used the runtime is waiting or gone).

A chain seen twice in a row (a tick apart) is reported, and the streams in it are aborted
so that the waiting thread gets an error (ACL_ERROR_RT_STREAM_ABORT... from the wait) and
the program goes on, where an NPU would hang.
"""
from __future__ import annotations

import threading
import time

from .report import Actor, Report

TICK = 0.05


class Wait:
    __slots__ = ("ident", "name", "stream", "seq", "site", "since")

    def __init__(self, ident, name, stream, seq, site):
        self.ident, self.name, self.stream, self.seq, self.site = ident, name, stream, seq, site
        self.since = time.monotonic()


def _thread(tid):
    """The live thread with this id that could run process_report. npurt's own threads do
    not count: a thread id is reused once its thread has ended, often by one of them."""
    for t in threading.enumerate():
        if (t.ident == tid or getattr(t, "native_id", None) == tid) and not t.name.startswith("npurt-"):
            return t
    return None


def stream_label(s) -> str:
    return f"stream {s.stream_id} (device {s.device.id}{', default' if s.is_default else ''})"


class HangCheck:
    def __init__(self, san) -> None:
        self.san = san
        self.waits: dict[int, Wait] = {}
        self.cond = threading.Condition()
        self.thread: threading.Thread | None = None
        self.running = False
        self.seen: dict = {}   # thread ident -> chain signature seen at the last tick

    # ------------------------------------------------------------ waits
    def begin(self, ident: int, name: str, stream, seq: int, site) -> None:
        with self.cond:
            self.waits[ident] = Wait(ident, name, stream, seq, site)
            if self.thread is None and self.running:
                self.thread = threading.Thread(target=self._loop, name="npurt-sanitizer-hangcheck", daemon=True)
                self.thread.start()
            self.cond.notify()

    def end(self, ident: int) -> None:
        with self.cond:
            self.waits.pop(ident, None)
            self.seen.pop(ident, None)

    def start(self) -> None:
        self.running = True

    def stop(self) -> None:
        with self.cond:
            self.running = False
            self.cond.notify_all()
        t = self.thread
        if t is not None and t is not threading.current_thread():
            t.join(timeout=2)
        self.thread = None

    def _loop(self) -> None:
        while True:
            with self.cond:
                while self.running and not self.waits:
                    self.cond.wait()
                if not self.running:
                    return
            time.sleep(TICK)
            try:
                self.tick()
            except Exception:  # noqa: BLE001 - the watchdog must not die
                import logging
                logging.getLogger("npurt").exception("npurt sanitizer: hang check failed")

    # ------------------------------------------------------------ analysis
    def tick(self) -> None:
        with self.cond:
            waits = list(self.waits.values())
        broken: set = set()  # streams aborted in this tick: other chains through them are over
        for w in waits:
            verdict = self.chain(w)
            if verdict is None or broken.intersection(map(id, verdict[2])):
                self.seen.pop(w.ident, None)
                continue
            signature = verdict[0]
            if self.seen.get(w.ident) != signature:
                self.seen[w.ident] = signature
                continue
            self.seen.pop(w.ident, None)
            self.report_and_break(w, *verdict)
            broken.update(map(id, verdict[2]))

    def chain(self, w: Wait):
        """(signature, steps, streams, cause, fix) if the wait can never end, else None."""
        steps = [f"it waits for {stream_label(w.stream)} to finish task #{w.seq}"]
        streams, threads = [], {w.ident}
        s, seq = w.stream, w.seq
        signature = [w.ident]
        while True:
            if s.completed_seq >= seq or s in streams:
                if s in streams:
                    steps.append(f"{stream_label(s)} is already in this chain: the waits form a cycle")
                    return (tuple(signature), steps, streams, "cycle",
                            "make each stream wait only for work that does not itself wait for it "
                            "(record events after the work they stand for, on streams that do not wait back)")
                return None
            streams.append(s)
            blocker = s.parked_on
            if s.state != "parked" or blocker is None:
                return None
            try:
                head = s.queue[0]
            except IndexError:
                return None
            site = self.san.site_of(head)
            steps.append(f"{stream_label(s)} is stopped at task #{head.seq} {head.describe()}"
                         + (f" (enqueued at {site})" if site else "") + f", which waits for {blocker.describe()}")
            signature.append((id(s), head.seq))
            target = blocker.waits_for() if hasattr(blocker, "waits_for") else None
            if target is None:
                return None
            if target[0] == "stream":
                s, seq = target[1], target[2]
                continue
            if target[0] == "report_thread":
                tid = target[1]
                t = _thread(tid) if tid is not None else None
                if t is None:
                    steps.append(f"no live thread {tid} runs process_report for it")
                    return (tuple(signature), steps, streams, "no report thread",
                            "subscribe the stream to a thread that runs acl.rt.process_report in a loop")
                other = self.waits.get(t.ident)
                if t.ident in threads or other is not None and other.ident in threads:
                    steps.append(f"that thread is host thread {t.name}, which is waiting above: it can never "
                                 "call process_report")
                    if len(threads) > 1:
                        return (tuple(signature), steps, streams, "threads",
                                "the threads wait for each other: serve each stream's callbacks on a thread "
                                "that does not synchronize the streams it serves")
                    return (tuple(signature), steps, streams, "self",
                            "run process_report on another thread (acl.util.start_thread + subscribe_report "
                            "with its id), or call it before synchronizing")
                if other is None:
                    return None  # that thread is free to run process_report
                threads.add(other.ident)
                signature.append(other.ident)
                steps.append(f"that thread, host thread {other.name}, itself waits"
                             + (f" at {other.site}" if other.site else "")
                             + f" for {stream_label(other.stream)} to finish task #{other.seq}")
                s, seq = other.stream, other.seq
                continue
            if target[0] == "event":
                event = target[1]
                if event.record is not None:
                    return None
                if event.destroyed:
                    steps.append(f"event {event.event_id} was destroyed without a record: nothing can record it")
                    return (tuple(signature), steps, streams, "destroyed",
                            "record the event before waiting on it")
                if self.others_can_act(threads):
                    return None
                steps.append(f"event {event.event_id} has never been recorded and every thread that could record "
                             "it is waiting or gone")
                return (tuple(signature), steps, streams, "never recorded",
                        "record the event before a stream waits on it")
            return None

    def others_can_act(self, waiting: set) -> bool:
        alive = {t.ident for t in threading.enumerate()}
        for ident in self.san.host_threads():
            if ident in alive and ident not in waiting and ident not in self.waits:
                return True
        return False

    def report_and_break(self, w: Wait, signature, steps, streams, cause, fix) -> None:
        labels = ", ".join(stream_label(s) for s in streams)
        steps = [*steps, f"npurt-sanitizer aborted {labels} so the program can go on: on an NPU it would "
                         "hang here (the waiting call returns an abort error)"]
        actor = Actor("a synchronize", f"host thread {w.name}", w.site, "at")
        report = Report("synccheck", "hang",
                        f"host thread {w.name} would wait forever for {stream_label(w.stream)}",
                        actors=[actor], details=steps, fix=fix, key=("hang", w.site, cause))
        self.san.emit(report)
        for s in reversed(streams):
            try:
                s.abort()
            except Exception:  # noqa: BLE001 - a stream torn down meanwhile
                pass

    def refused(self, stream, seq: int, message: str, name: str, site) -> Report:
        """The runtime itself refused a wait that could never end (the waiting thread is what
        it waits for): the call returned an error where an NPU would hang."""
        return Report("synccheck", "hang", f"host thread {name} would wait forever for {stream_label(stream)}",
                      actors=[Actor("a synchronize", f"host thread {name}", site, "at")],
                      details=[f"it waits for {stream_label(stream)} to finish task #{seq}",
                               f"the runtime refused the wait (ACL_ERROR_RT_PARAM_INVALID): {message}"],
                      fix="synchronize from another thread, or record an event and wait for it outside the "
                          "callback or task", key=("refused", site))

    def stuck_at_exit(self, all_streams) -> list[Report]:
        """Streams still stopped on a wait when the program ends."""
        out = []
        for s in all_streams:
            if s.state != "parked" or s.completed_seq >= s.enqueued_seq:
                continue
            blocker = s.parked_on
            try:
                head = s.queue[0]
            except IndexError:
                continue
            site = self.san.site_of(head)
            what = blocker.describe() if blocker is not None else "something"
            out.append(Report(
                "synccheck", "hang", f"{stream_label(s)} never finished its work: task #{head.seq} "
                f"{head.describe()} still waits for {what}",
                actors=[Actor(head.describe(), stream_label(s), site)],
                details=[f"{s.enqueued_seq - s.completed_seq} task(s) of it never ran"],
                fix="make sure what the task waits for happens (record the event, run process_report), "
                    "and synchronize the stream before the program ends",
                key=("stuck", site)))
        return out
