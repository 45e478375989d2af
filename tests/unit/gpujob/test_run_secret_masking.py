"""Secret values are masked (`***`) in everything `run` prints and records (issue 9): the job's
streamed output (a value split across chunks too), setup and preflight output, the pulled job
log, events, the manifest and log messages; and the backend is closed at the end of every run.
On the fakes; the same through the CLI over real SSH is tests/e2e/test_runpod_ssh_secret_scan.py.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from helpers.gpujob_run import RunHarness
from pegboard.adapters.fakes import FakeJob
from pegboard.app.runpod_deploy.run_types import Backend

TOKEN = "tok-7f3a9c1e5b"
KEY_LINES = ("key-line-alpha-0123", "key-line-beta-4567")


def _harness(tmp_path: Path, job: FakeJob) -> RunHarness:
    key = tmp_path / "key.pem"
    key.write_text("\n".join(KEY_LINES) + "\n")
    h = RunHarness(
        tmp_path,
        config={
            "secrets": [
                {"name": "api", "destination": "/workspace/api.env", "env": ["E2E_TOKEN"]},
                {"name": "key", "destination": "/workspace/key.pem", "file": str(key)},
            ],
            "setup": [{"command": "cat /workspace/api.env"}],
            "setup_after_secrets": True,
            "artifacts": [],
        },
    )
    h.environ["E2E_TOKEN"] = TOKEN
    h.host.on_command(r"cat /workspace/api.env", stdout=f"E2E_TOKEN={TOKEN}\n".encode())
    h.host.script_job(job)
    return h


def _everything_recorded(h: RunHarness, run_dir: str) -> str:
    return "".join(p.read_text() for p in Path(run_dir).rglob("*") if p.is_file())


def test_job_output_setup_output_log_and_records_are_masked(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    # The token split across two chunks of the stream, a key line inside a longer line.
    half = len(TOKEN) // 2
    job = FakeJob(
        output=[
            (0.0, f"token is {TOKEN[:half]}".encode()),
            (1.0, f"{TOKEN[half:]} ok\nkey: {KEY_LINES[1]}!\n".encode()),
            (2.0, b"ALL_DONE\n"),
        ],
        exit_code=0,
    )
    h = _harness(tmp_path, job)
    with caplog.at_level(logging.INFO):
        logging.getLogger().addHandler(caplog.handler)  # the filter goes on root handlers
        try:
            result = h.run()
        finally:
            logging.getLogger().removeHandler(caplog.handler)
    assert result.exit_code == 0, result.failure_reason
    assert result.run_dir is not None
    streamed = b"".join(h.output)
    assert streamed == b"token is *** ok\nkey: ***!\nALL_DONE\n"
    assert b"".join(h.tool_output) == b"E2E_TOKEN=***\n"
    assert (Path(result.run_dir) / "run.log").read_bytes() == streamed  # the pulled log
    recorded = _everything_recorded(h, result.run_dir)
    for value in (TOKEN, *KEY_LINES):
        assert value not in recorded
        assert value not in caplog.text
    # The values did reach the pod, unmasked: masking is for what we show and keep.
    assert TOKEN.encode() in h.host.read("/workspace/api.env")
    assert KEY_LINES[0].encode() in h.host.read("/workspace/key.pem")


def test_a_failure_reason_quoting_a_secret_is_masked_in_the_manifest_and_events(
    tmp_path: Path,
) -> None:
    job = FakeJob(output=[(0.0, f"bad {KEY_LINES[0]}\n".encode())], exit_code=3)
    h = _harness(tmp_path, job)
    h.host.on_command(r"cat /workspace/api.env", exit_code=1, stderr=f"no {TOKEN}".encode())
    result = h.run()
    assert result.exit_code == 1
    manifest = h.manifest(result)
    assert manifest["failure_phase"] == "setup"
    assert TOKEN not in manifest["failure_reason"] and "***" in manifest["failure_reason"]
    assert TOKEN not in _everything_recorded(h, result.run_dir or "")


@pytest.mark.parametrize(
    ("job", "expected_code"),
    [
        (FakeJob(output=[(0.0, b"ALL_DONE\n")], exit_code=0), 0),
        (FakeJob(output=[(0.0, b"no marker\n")], exit_code=3), 1),
    ],
)
def test_the_backend_is_closed_once_after_the_lifecycle_action(
    tmp_path: Path, job: FakeJob, expected_code: int
) -> None:
    h = RunHarness(tmp_path, config={"artifacts": []})
    h.host.script_job(job)
    events: list[str] = []
    original_stop, original_terminate = h.cloud.stop_pod, h.cloud.terminate_pod

    def stop(pod_id: str) -> None:
        events.append("stop")
        original_stop(pod_id)

    def terminate(pod_id: str) -> None:
        events.append("delete")
        original_terminate(pod_id)

    h.cloud.stop_pod = stop  # type: ignore[method-assign]
    h.cloud.terminate_pod = terminate  # type: ignore[method-assign]
    backend = Backend(
        cloud=h.cloud,
        open_shell=h.open_shell,
        open_sync=lambda s: h.sync,
        close=lambda: events.append("close"),
    )
    result = h.run(deps={"backend_for": lambda provider: backend})
    assert result.exit_code == expected_code
    assert events[-1] == "close" and events.count("close") == 1
    assert events[0] in ("stop", "delete")


def test_the_backend_is_closed_when_the_run_fails_before_a_pod_exists(tmp_path: Path) -> None:
    h = RunHarness(
        tmp_path,
        config={"secrets": [{"name": "hf", "destination": "/workspace/e", "env": ["MISSING"]}]},
    )
    closed: list[bool] = []
    backend = Backend(
        cloud=h.cloud,
        open_shell=h.open_shell,
        open_sync=lambda s: h.sync,
        close=lambda: closed.append(True),
    )
    result = h.run(deps={"backend_for": lambda provider: backend})
    assert result.exit_code == 1 and closed == [True]
