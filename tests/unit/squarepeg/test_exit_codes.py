from __future__ import annotations

from typing import Any

import pytest

from pegboard.domain.squarepeg.exit_policy import exit_outcome


def pod(*statuses: dict[str, Any], phase: str = "Succeeded", **status: Any) -> dict[str, Any]:
    return {"status": {"phase": phase, "containerStatuses": list(statuses), **status}}


def terminated(name: str, code: int, reason: str = "Error") -> dict[str, Any]:
    return {"name": name, "state": {"terminated": {"exitCode": code, "reason": reason}}}


@pytest.mark.parametrize("code", [0, 1, 3, 42, 255])
def test_code_is_verbatim(code: int) -> None:
    outcome = exit_outcome(pod(terminated("main", code)), "main")
    assert (outcome.code, outcome.terminated, outcome.note) == (code, True, None)


def test_matched_by_name_not_position() -> None:
    sidecar_first = pod(terminated("sidecar", 0), terminated("main", 7))
    assert exit_outcome(sidecar_first, "main").code == 7
    assert exit_outcome(sidecar_first, "sidecar").code == 0


def test_oom_killed_is_137_with_a_note() -> None:
    outcome = exit_outcome(pod(terminated("main", 137, "OOMKilled"), phase="Failed"), "main")
    assert outcome.code == 137
    assert outcome.note is not None and "OOMKilled" in outcome.note


def test_oom_killed_with_another_code_still_137() -> None:
    outcome = exit_outcome(pod(terminated("main", 1, "OOMKilled"), phase="Failed"), "main")
    assert outcome.code == 137


@pytest.mark.parametrize("code", [256, 512, 70000, -1])
def test_codes_outside_a_byte_are_clamped_never_wrapped_to_success(code: int) -> None:
    outcome = exit_outcome(pod(terminated("main", code)), "main")
    assert outcome.code == 255
    assert outcome.note is not None and str(code) in outcome.note


def test_never_terminated_is_125() -> None:
    evicted = pod(
        {"name": "main", "state": {"running": {}}},
        phase="Failed",
        reason="Evicted",
        message="low on memory",
    )
    outcome = exit_outcome(evicted, "main")
    assert (outcome.code, outcome.terminated) == (125, False)
    assert outcome.note is not None and "Evicted" in outcome.note


def test_no_status_for_the_container_is_125() -> None:
    assert exit_outcome(pod(terminated("other", 0)), "main").code == 125
    assert exit_outcome({}, "main").code == 125


def test_failed_init_container_is_named() -> None:
    status = pod(
        {"name": "main", "state": {"waiting": {"reason": "PodInitializing"}}},
        phase="Failed",
        initContainerStatuses=[terminated("setup", 2)],
    )
    outcome = exit_outcome(status, "main")
    assert outcome.code == 125
    assert outcome.note is not None and "setup" in outcome.note and "2" in outcome.note


def test_a_start_failure_with_an_out_of_range_code_never_wraps_to_success() -> None:
    """Found by tests/property/test_exit_code_properties.py: StartError with exitCode 256 exited
    256, which the OS truncates to 0."""
    pod = {
        "status": {
            "containerStatuses": [
                {"name": "main", "state": {"terminated": {"exitCode": 256, "reason": "StartError"}}}
            ]
        }
    }
    assert exit_outcome(pod, "main").code == 255
