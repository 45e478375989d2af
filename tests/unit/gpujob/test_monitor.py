"""LogMonitor: per-line markers, both-markers failure, dead scripts, step events."""

from __future__ import annotations

import itertools

from hypothesis import given
from hypothesis import strategies as st

from pegboard.domain.gpujob.monitor import LogMonitor, Outcome
from pegboard.domain.ports.remote_shell import DetachedStatus

MARKERS = ("Traceback", "Killed")


def _monitor() -> LogMonitor:
    return LogMonitor(success_marker="DONE", failure_markers=MARKERS)


def test_success_needs_the_exit_or_the_grace() -> None:
    m = _monitor()
    m.feed(b"step\nDONE\n", now=10.0)
    assert m.verdict is None and m.success_seen_at == 10.0
    assert m.tick(now=11.0, grace=3.0) is None
    verdict = m.observe_status(DetachedStatus(running=False, exit_code=0), now=11.5)
    assert verdict is not None and verdict.outcome is Outcome.SUCCEEDED
    still_running = _monitor()
    still_running.feed(b"DONE\n", now=0.0)
    grace = still_running.tick(now=3.0, grace=3.0)
    assert grace is not None and grace.outcome is Outcome.SUCCEEDED


def test_non_zero_exit_after_the_marker_fails() -> None:
    m = _monitor()
    m.feed(b"DONE\n", now=0.0)
    verdict = m.observe_status(DetachedStatus(running=False, exit_code=4), now=0.1)
    assert verdict is not None and verdict.outcome is Outcome.FAILED and verdict.exit_code == 4


def test_failure_marker_fails_at_once_even_after_success() -> None:
    m = _monitor()
    m.feed(b"DONE\nTraceback (most recent call last):\n", now=0.0)
    assert m.verdict is not None and m.verdict.outcome is Outcome.FAILED
    assert "line 2" in m.verdict.reason and "Traceback" in m.verdict.reason


def test_markers_are_matched_per_line_not_across_lines() -> None:
    m = LogMonitor(success_marker="ALL DONE", failure_markers=("out of memory",))
    m.feed(b"ran out of\nmemory checks: fine\nALL\nDONE\n", now=0.0)
    assert m.verdict is None and m.success_seen_at is None


def test_partial_last_line_counts_at_end_of_log() -> None:
    m = _monitor()
    m.feed(b"work\nDO", now=0.0)
    m.feed(b"NE", now=0.1)
    assert m.success_seen_at is None
    m.end_of_log(now=0.2)
    assert m.success_seen_at == 0.2


def test_dead_script_without_marker_fails_with_its_status() -> None:
    exited = _monitor()
    verdict = exited.observe_status(DetachedStatus(running=False, exit_code=1), now=0.0)
    assert verdict is not None and verdict.exit_code == 1 and "status 1" in verdict.reason
    vanished = _monitor()
    verdict = vanished.observe_status(DetachedStatus(running=False), now=0.0)
    assert verdict is not None and "died" in verdict.reason
    running = _monitor()
    assert running.observe_status(DetachedStatus(running=True), now=0.0) is None


def test_step_events_once_each() -> None:
    m = _monitor()
    events = m.feed(
        b"__RUNPOD_STEP_START__fit__\n__RUNPOD_STEP_START__fit__\n__RUNPOD_STEP_DONE__fit__\n",
        now=0.0,
    )
    assert [(e.event, e.name) for e in events] == [
        ("remote_step_started", "fit"),
        ("remote_step_completed", "fit"),
    ]


_LINES = st.lists(
    st.sampled_from([b"epoch 1", b"Traceback here", b"DONE", b"loss=0.1", b"", b"Killed x"]),
    max_size=8,
)


@given(lines=_LINES, cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=6))
def test_verdict_does_not_depend_on_how_the_log_is_chunked(
    lines: list[bytes], cuts: list[int]
) -> None:
    log = b"\n".join(lines) + b"\n"
    whole = _monitor()
    whole.feed(log, now=0.0)
    pieces = _monitor()
    points = sorted({min(c, len(log)) for c in cuts} | {0, len(log)})
    for start, end in itertools.pairwise(points):
        pieces.feed(log[start:end], now=0.0)
    assert (whole.verdict, whole.success_seen_at) == (pieces.verdict, pieces.success_seen_at)
