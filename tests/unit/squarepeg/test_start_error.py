"""A container the runtime could not start (exit 128, StartError) is explained like OOMKilled."""

from __future__ import annotations

from pegboard.domain.squarepeg.exit_policy import exit_outcome

MESSAGE = (
    "failed to create containerd task: failed to create shim task: OCI runtime create failed: "
    'runc create failed: unable to start container process: exec: "no-such-tool": executable '
    "file not found in $PATH: unknown"
)


def pod(terminated: dict[str, object]) -> dict[str, object]:
    return {
        "status": {"containerStatuses": [{"name": "main", "state": {"terminated": terminated}}]}
    }


def test_start_error_keeps_its_code_and_says_why() -> None:
    outcome = exit_outcome(
        pod({"exitCode": 128, "reason": "StartError", "message": MESSAGE}), "main"
    )
    assert outcome.code == 128 and outcome.terminated
    assert outcome.note is not None
    assert outcome.note.startswith("container 'main' could not start (StartError, exit 128): ")
    assert 'exec: "no-such-tool": executable file not found in $PATH' in outcome.note


def test_start_error_without_a_message_still_says_so() -> None:
    outcome = exit_outcome(pod({"exitCode": 128, "reason": "ContainerCannotRun"}), "main")
    assert (outcome.code, outcome.note) == (
        128,
        "container 'main' could not start (ContainerCannotRun, exit 128)",
    )


def test_an_ordinary_128_is_the_containers_code_without_a_note() -> None:
    outcome = exit_outcome(pod({"exitCode": 128, "reason": "Error"}), "main")
    assert (outcome.code, outcome.note) == (128, None)
