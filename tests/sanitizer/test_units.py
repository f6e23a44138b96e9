"""The sanitizer's building blocks: byte-range sets, overlap of 2-D accesses, vector clocks,
the access history."""
from __future__ import annotations

from npurt.tools.sanitizer.clocks import HostAgent, StreamClock, join, ordered
from npurt.tools.sanitizer.intervals import IntervalSet
from npurt.tools.sanitizer.shadow import Shadow, overlap


class Who:
    order = 0
    site = None
    stream_label = "stream"


def test_interval_set_merges_touching_ranges_and_reports_gaps():
    s = IntervalSet()
    s.add(10, 20)
    s.add(30, 40)
    s.add(20, 25)
    assert s.missing(0, 50) == [(0, 10), (25, 30), (40, 50)]
    s.add(5, 35)
    assert s.missing(0, 50) == [(0, 5), (40, 50)]
    assert s.missing(12, 18) == []


def test_row_accesses_meet_only_the_bytes_of_their_rows():
    # rows of 4 bytes every 16, from 0: [0,4) [16,20) [32,36)
    assert overlap(0, 36, 4, 16, 16, 18, 0, 0)
    assert not overlap(0, 36, 4, 16, 4, 16, 0, 0)
    # two column blocks of the same pitched buffer
    assert not overlap(0, 36, 4, 16, 4, 40, 4, 16)
    assert overlap(0, 36, 4, 16, 2, 38, 4, 16)


def test_join_returns_the_first_clock_when_nothing_is_new():
    a = {1: 3, 2: 5}
    assert join(a, {1: 2}) is a
    b = join(a, {2: 7, 3: 1})
    assert b == {1: 3, 2: 7, 3: 1} and a == {1: 3, 2: 5}


def test_a_host_thread_access_after_an_enqueue_is_not_before_that_task():
    h = HostAgent(1, "main")
    agent, before = h.touched()
    task_clock = h.snapshot()
    assert ordered(agent, before, task_clock)
    agent, after = h.touched()
    assert not ordered(agent, after, task_clock)


def test_a_stream_remembers_the_clock_of_earlier_tasks():
    s = StreamClock()
    s.start(1, {7: 1})
    s.start(2, {7: 4})
    s.start(3)
    assert s.at(1) == {7: 1, s.agent: 1}
    assert s.at(3) == {7: 4, s.agent: 3}


def test_the_history_reports_unordered_conflicts_only():
    sh = Shadow()
    region = sh.add_region(0, 100)
    assert sh.access([region], 0, 50, True, agent=1, clock=1, vc={1: 1}, who=Who()) == []
    # agent 2 knows agent 1's clock 1: ordered
    assert sh.access([region], 0, 50, False, agent=2, clock=1, vc={2: 1, 1: 1}, who=Who()) == []
    # agent 3 does not: a race with the write, not with the read
    races = sh.access([region], 40, 60, True, agent=3, clock=1, vc={3: 1}, who=Who())
    assert sorted((r.agent, r.write) for r in races) == [(1, True), (2, False)]


def test_an_ordered_covering_write_prunes_the_history():
    sh = Shadow()
    region = sh.add_region(0, 100)
    for clock in range(1, 30):
        sh.access([region], 0, 100, True, agent=1, clock=clock, vc={1: clock}, who=Who())
    assert len(region.records) == 1


def test_new_memory_takes_over_the_history_of_the_bytes_it_covers():
    sh = Shadow()
    old = sh.add_region(0, 100)
    sh.access([old], 0, 100, True, agent=1, clock=1, vc={1: 1}, who=Who())
    new = sh.add_region(20, 40)
    assert [(r.lo, r.hi) for r in new.records] == [(20, 40)]
    assert sorted((r.lo, r.hi) for r in sh.find(0, 100)) == [(0, 20), (20, 40), (40, 100)]
