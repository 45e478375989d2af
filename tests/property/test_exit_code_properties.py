"""The exit-code policy (domain/squarepeg/exit_policy.py) over generated pod statuses."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from pegboard.domain.squarepeg.exit_codes import MAX_EXIT_CODE, OOM_KILLED, RUNNER_FAILED
from pegboard.domain.squarepeg.exit_policy import START_FAILURES, exit_outcome

NAMES = st.sampled_from(["main", "app", "sidecar", "setup"])
REASONS = st.sampled_from([None, "Completed", "Error", "OOMKilled", *START_FAILURES])
RAW_CODES = st.one_of(
    st.none(), st.booleans(), st.integers(-(2**31), 2**31), st.text(max_size=3), st.floats()
)


@st.composite
def statuses(draw: st.DrawFn) -> dict[str, Any]:
    state: dict[str, Any] = {}
    if draw(st.booleans()):
        terminated: dict[str, Any] = {"exitCode": draw(RAW_CODES)}
        reason = draw(REASONS)
        if reason is not None:
            terminated["reason"] = reason
        state["terminated"] = terminated
    elif draw(st.booleans()):
        state["running"] = {}
    return {"name": draw(NAMES), "state": state}


pods = st.builds(
    lambda cs, phase: {"status": {"phase": phase, "containerStatuses": cs}},
    st.lists(statuses(), max_size=4, unique_by=lambda s: s["name"]),
    st.sampled_from(["Pending", "Running", "Succeeded", "Failed", "Unknown"]),
)


@given(pods, NAMES)
def test_the_code_is_always_a_byte_and_decided_by_the_named_container(
    pod: dict[str, Any], name: str
) -> None:
    outcome = exit_outcome(pod, name)
    assert 0 <= outcome.code <= MAX_EXIT_CODE
    mine = [s for s in pod["status"]["containerStatuses"] if s["name"] == name]
    terminated = mine[0]["state"].get("terminated") if mine else None
    assert outcome.terminated == (terminated is not None)
    if terminated is None:
        assert outcome.code == RUNNER_FAILED and outcome.note
        return
    raw = terminated["exitCode"]
    valid = isinstance(raw, int) and not isinstance(raw, bool)
    if terminated.get("reason") == "OOMKilled":
        assert outcome.code == OOM_KILLED and "OOMKilled" in (outcome.note or "")
    elif valid and 0 <= raw <= MAX_EXIT_CODE:
        assert outcome.code == raw  # verbatim, whatever the other containers did
    elif valid:
        assert outcome.code == MAX_EXIT_CODE and outcome.note  # never wrapped to a success
    elif terminated.get("reason") not in START_FAILURES:
        assert outcome.code == RUNNER_FAILED and outcome.note


@given(pods, NAMES)
def test_a_failure_never_becomes_success(pod: dict[str, Any], name: str) -> None:
    outcome = exit_outcome(pod, name)
    if outcome.code == 0:
        (mine,) = [s for s in pod["status"]["containerStatuses"] if s["name"] == name]
        assert mine["state"]["terminated"]["exitCode"] == 0
        assert not isinstance(mine["state"]["terminated"]["exitCode"], bool)
