"""npurt.progress: the one progress helper of long work (atc, model load, plot, bench, demo):
drawn only on a terminal, only once the work took its delay, erased at the end."""
from __future__ import annotations

from npurt import progress as P


def test_nothing_is_drawn_when_stderr_is_no_terminal(capsys):
    with P.progress("converting", total=2, delay=0) as p:
        p.advance()
        p.advance(description="writing")
    assert not p.drawn and capsys.readouterr().err == ""


def test_short_work_is_not_drawn_even_on_a_terminal(monkeypatch, capsys):
    monkeypatch.setattr(P, "on_terminal", lambda: True)
    with P.progress("quick", total=1, delay=60) as p:
        p.advance()
    assert not p.drawn and capsys.readouterr().err == ""


def test_the_plain_line_without_rich_is_rewritten_in_place_and_erased(monkeypatch, capsys):
    monkeypatch.setattr(P, "on_terminal", lambda: True)
    monkeypatch.setattr(P, "_rich", lambda: None)
    with P.progress("npurt atc: parsing", total=4, delay=0) as p:
        p.advance(description="npurt atc: converting the graph")
    err = capsys.readouterr().err
    assert "\r  npurt atc: converting the graph 1/4 (0 s)\x1b[K" in err and err.endswith("\r\x1b[K")
    assert "\n" not in err                       # one line, rewritten in place


def test_with_rich_a_transient_bar_is_drawn(monkeypatch):
    import pytest
    pytest.importorskip("rich")
    monkeypatch.setattr(P, "on_terminal", lambda: True)
    with P.progress("npurt plot: drawing", total=3, delay=0) as p:
        p.advance()
        assert p.drawn and p._bar.live.transient
    assert not p._bar.live.is_started          # stopped (and erased) when the work ended
