"""Phase × fault matrix of `runpod-deploy run` on the fakes.

For each fault: the right lifecycle action ran, the manifest names the phase and the reason,
and no pod is left without a pointer (state file + the manifest's cleanup command).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers.gpujob_run import RunHarness
from pegboard.adapters.fakes import FakeJob
from pegboard.domain.errors import NotFound, Transient
from pegboard.domain.ports.gpu_cloud import NoCapacity

GOOD_JOB = FakeJob(
    output=[
        (0.0, b"training\n"),
        (2.0, b"__RUNPOD_STEP_START__fit__\n"),
        (4.0, b"__RUNPOD_STEP_DONE__fit__\nALL_DONE\n"),
    ],
    exit_code=0,
)


def _good(h: RunHarness) -> None:
    h.host.script_job(GOOD_JOB)
    h.host.put("/workspace/out/result.json", b'{"ok": 1}')


def _history(h: RunHarness) -> list[str]:
    return [entry for pod in h.cloud.pods.values() for entry in pod.history]


def test_success_path_runs_every_phase_and_deletes(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    _good(h)
    result = h.run(print_run_dir=True)
    manifest = h.manifest(result)
    assert result.exit_code == 0 and manifest["outcome"] == "succeeded"
    assert manifest["failed"] is False and manifest["failure_phase"] is None
    assert _history(h) == ["create", "terminate"]
    assert h.pointer() is None  # deleted pod: pointer removed
    assert (
        b"".join(h.output) == b"training\n__RUNPOD_STEP_START__fit__\n"
        b"__RUNPOD_STEP_DONE__fit__\nALL_DONE\n"
    )
    assert h.lines == [f"RUN_DIR={result.run_dir}"]
    assert (Path(result.run_dir or "") / "out" / "result.json").read_bytes() == b'{"ok": 1}'
    assert (Path(result.run_dir or "") / "run.log").exists()  # keeps the log's basename
    assert manifest["artifacts"][0]["bytes_transferred"] == 9
    assert manifest["artifacts"][0]["delete"] is False
    assert manifest["gpu_price_per_hour_usd"] == 0.5
    assert manifest["gpu_price_source"] == "pod_describe"
    assert manifest["pod_final_state"] == "TERMINATED"
    assert manifest["deploy_metadata"]["local_git_sha"] == "deadbeef"
    assert set(manifest["phase_durations_sec"]) >= {"provision", "ready", "setup", "monitor"}
    events = [e["event"] for e in h.events(result)]
    assert events.index("remote_step_started") < events.index("remote_step_completed")
    assert "gpu_selected" in events and "artifact_pull_completed" in events
    # the script went as data, not in a command line
    assert h.host.read("/workspace/run.sh") == b"python train.py\necho ALL_DONE\n"
    assert not any("cat >" in c or "<<" in c for c in h.host.commands)


def test_create_retries_the_next_candidate(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    _good(h)
    h.cloud.fail_create("GPU-A", "DC-1")
    h.cloud.set_stock("GPU-A", "DC-2", "none")
    result = h.run()
    manifest = h.manifest(result)
    assert result.exit_code == 0
    assert (manifest["gpu_id"], manifest["datacenter_id"]) == ("GPU-B", "DC-1")
    failover = [e for e in h.events(result) if e["event"] == "datacenter_failover"]
    assert failover and failover[0]["from_gpu_id"] == "GPU-A"


def test_create_that_fails_after_the_pod_exists_adopts_it(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    _good(h)
    h.cloud.fail_create_after_pod_exists()
    result = h.run()
    assert result.exit_code == 0
    assert len(h.cloud.pods) == 1 and _history(h) == ["create", "terminate"]


@pytest.mark.parametrize(
    ("name", "arrange", "phase", "reason", "action"),
    [
        (
            "create fails everywhere",
            lambda h: [h.cloud.fail_create(error=NoCapacity("sold out")) for _ in range(4)],
            "provision",
            "sold out",
            None,
        ),
        ("never ready", lambda h: h.cloud.never_ready(), "ready", "not ready", "delete"),
        (
            "setup fails",
            lambda h: h.host.on_command(r"^mkdir", exit_code=1, stderr=b"disk full"),
            "setup",
            "setup command 1 exited 1",
            "stop",
        ),
        (
            "staging fails",
            lambda h: h.host.fail_next("push", Transient("rsync: connection reset")),
            "staging",
            "connection reset",
            "stop",
        ),
        (
            "script dies without marker",
            lambda h: h.host.script_job(
                FakeJob(output=[(0.0, b"oops\n")], exit_code=None, duration=5)
            ),
            "monitor",
            "died without recording an exit status",
            "stop",
        ),
        (
            "script exits non-zero",
            lambda h: h.host.script_job(FakeJob(output=[(0.0, b"x\n")], exit_code=2)),
            "monitor",
            "status 2",
            "stop",
        ),
        (
            "failure marker",
            lambda h: h.host.script_job(
                FakeJob(
                    output=[(1.0, b"CUDA out of memory. Tried\n")], exit_code=None, duration=1e9
                )
            ),
            "monitor",
            "CUDA out of memory",
            "stop",
        ),
        (
            "both markers",
            lambda h: h.host.script_job(
                FakeJob(
                    output=[(0.0, b"Traceback (most recent call last):\n"), (1.0, b"ALL_DONE\n")]
                )
            ),
            "monitor",
            "Traceback",
            "stop",
        ),
        (
            "timeout",
            lambda h: h.host.script_job(FakeJob(exit_code=0, duration=1e9)),
            "monitor",
            "max runtime",
            "stop",
        ),
        (
            "required artifact missing",
            lambda h: h.host.script_job(GOOD_JOB),
            "pull",
            "required artifact",
            "stop",
        ),
    ],
)
def test_fault_matrix(
    tmp_path: Path, name: str, arrange: Any, phase: str, reason: str, action: str | None
) -> None:
    h = RunHarness(
        tmp_path,
        config={
            "budget": {"cost_cap_usd": 10, "max_runtime_minutes": 2, "ssh_ready_timeout_sec": 60}
        },
    )
    arrange(h)
    result = h.run()
    manifest = h.manifest(result)
    assert result.exit_code == 1, name
    assert manifest["failed"] is True and manifest["outcome"] == "failed"
    assert manifest["failure_phase"] == phase
    assert reason in manifest["failure_reason"]
    assert manifest["lifecycle_action"] == action
    if action == "stop":
        assert _history(h)[-1] == "stop"
        assert manifest["pod_final_state"] == "EXITED"
    else:
        assert not h.cloud.live_pods()
    h.assert_nothing_unaccounted(manifest)


def test_missing_secret_fails_before_any_pod_exists(tmp_path: Path) -> None:
    h = RunHarness(
        tmp_path,
        config={"secrets": [{"name": "hf", "destination": "/root/.hf.env", "env": ["HF_TOKEN"]}]},
    )
    _good(h)
    result = h.run()
    manifest = h.manifest(result)
    assert result.exit_code == 1 and manifest["failure_phase"] == "validate"
    assert "HF_TOKEN is not set" in manifest["failure_reason"]
    assert h.cloud.pods == {} and h.pointer() is None


def test_secrets_are_quoted_0600_and_never_recorded(tmp_path: Path) -> None:
    secret = "s3cr3t value $(rm -rf /) 'q'"
    h = RunHarness(
        tmp_path,
        config={"secrets": [{"name": "hf", "destination": "/root/.hf.env", "env": ["HF_TOKEN"]}]},
    )
    h.environ["HF_TOKEN"] = secret
    _good(h)
    h.host.on_command(r"^mkdir", exit_code=1, stderr=f"echo {secret}".encode())
    result = h.run()
    assert result.exit_code == 1
    text = (Path(result.run_dir or "") / "runpod_deploy_pull_manifest.json").read_text()
    text += (Path(result.run_dir or "") / "events.jsonl").read_text()
    assert secret not in text and "***" in text
    assert not any(secret in c for c in h.host.commands)


def test_secrets_written_before_setup_when_configured(tmp_path: Path) -> None:
    h = RunHarness(
        tmp_path,
        config={
            "setup_after_secrets": True,
            "secrets": [
                {"name": "hf", "destination": "/root/.hf.env", "env": ["HF_TOKEN"], "mode": "0600"}
            ],
        },
    )
    h.environ["HF_TOKEN"] = "a b'c"
    _good(h)
    h.host.on_command(r"^mkdir", exit_code=1)  # setup fails: the secret must already be there
    h.run()
    assert h.host.read("/root/.hf.env") == b"HF_TOKEN='a b'\"'\"'c'\n"
    assert h.host.mode("/root/.hf.env") == 0o600


def test_interrupt_is_a_failure_runs_on_failure_and_exits_130(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    h.host.script_job(FakeJob(output=[(0.0, b"tick\n"), (99.0, b"ALL_DONE\n")]))

    def output(chunk: bytes) -> None:
        h.output.append(chunk)
        raise KeyboardInterrupt

    result = h.run(deps={"job_output": output})
    manifest = h.manifest(result)
    assert result.exit_code == 130
    assert manifest["outcome"] == "interrupted" and manifest["failed"] is True
    assert manifest["failure_phase"] == "monitor"
    assert manifest["lifecycle_action"] == "stop" and _history(h) == ["create", "stop"]
    h.assert_nothing_unaccounted(manifest)


def test_a_transient_monitor_error_does_not_kill_the_run(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    _good(h)
    h.host.fail_next("detached_status", Transient("connection reset"))
    h.host.fail_next("follow_next", Transient("channel closed"))
    result = h.run()
    assert result.exit_code == 0
    assert b"ALL_DONE" in b"".join(h.output)


def test_recycle_keeps_the_pointer_and_the_next_run_resumes(tmp_path: Path) -> None:
    h = RunHarness(tmp_path, config={"lifecycle": {"on_success": "recycle", "on_failure": "stop"}})
    _good(h)
    first = h.run()
    assert first.exit_code == 0 and h.pointer() is not None
    assert h.pointer()["lifecycle_action"] == "recycle"  # bulk cleanup keeps warm pods
    _good(h)
    second = h.run()
    manifest = h.manifest(second)
    assert second.exit_code == 0 and manifest["pod_resumed"] is True
    assert len(h.cloud.pods) == 1 and _history(h) == ["create", "stop", "resume", "stop"]


def test_dry_runs_write_a_manifest_and_create_nothing(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    offline = h.run(offline=True, dry_run=True)
    manifest = h.manifest(offline)
    assert offline.exit_code == 0 and manifest["outcome"] == "dry_run"
    assert manifest["pod_id"] == "<pod-id>" and h.cloud.calls == []
    online = h.run(dry_run=True)
    assert online.exit_code == 0 and h.cloud.pods == {}
    assert [c[0] for c in h.cloud.calls] == ["gpu_availability", "gpu_prices"]


def test_run_directories_are_unique_in_the_same_second(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    hexes = iter(["aaaaaa", "bbbbbb"])
    a = h.run(offline=True, dry_run=True, deps={"random_hex": lambda: next(hexes)})
    b = h.run(offline=True, dry_run=True, deps={"random_hex": lambda: next(hexes)})
    assert a.run_dir != b.run_dir


def test_interrupt_while_waiting_for_the_pod_stops_it_and_keeps_the_pointer(
    tmp_path: Path,
) -> None:
    h = RunHarness(tmp_path)
    h.cloud.fail_next("get_pod", KeyboardInterrupt())
    result = h.run()
    manifest = h.manifest(result)
    assert result.exit_code == 130 and manifest["failure_phase"] == "ready"
    assert _history(h) == ["create", "stop"]
    h.assert_nothing_unaccounted(manifest)


def test_a_closed_stdout_does_not_fail_the_job(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    _good(h)

    def closed(chunk: bytes) -> None:
        raise BrokenPipeError(32, "Broken pipe")

    result = h.run(deps={"job_output": closed})
    assert result.exit_code == 0
    assert (Path(result.run_dir or "") / "run.log").read_bytes().endswith(b"ALL_DONE\n")


def test_a_pod_deleted_under_the_monitor_is_recorded_as_pod_killed_unexpected(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The recipes' `events-query --filter event=pod_killed_unexpected` finds such a run."""
    h = RunHarness(tmp_path)
    h.host.script_job(FakeJob(output=[(0.0, b"working\n")], exit_code=0, duration=600))
    h.host.fail_next("follow_next", Transient("channel closed"))
    get_pod = h.cloud.get_pod

    def deleted_once_launched(pod_id: str) -> Any:
        if h.host.jobs:  # the job started: the provider has since deleted the pod
            raise NotFound(f"pod {pod_id} not found")
        return get_pod(pod_id)

    monkeypatch.setattr(h.cloud, "get_pod", deleted_once_launched)
    result = h.run()
    manifest = h.manifest(result)
    assert (
        manifest["failure_phase"] == "monitor" and "the pod is gone" in manifest["failure_reason"]
    )
    killed = [e for e in h.events(result) if e["event"] == "pod_killed_unexpected"]
    assert len(killed) == 1 and killed[0]["state"] == "TERMINATED"
    assert "channel closed" in killed[0]["note"]


def test_a_usage_error_from_the_backend_is_reported_without_its_class_name(tmp_path: Path) -> None:
    """A backend's usage error (e.g. a missing extra): the user reads the hint, not its class."""
    from pegboard.domain.errors import UsageError

    class ExtraMissing(UsageError):
        pass

    hint = "pod.provider x needs something that is not installed: pip install 'pegboard[x]'"
    h = RunHarness(tmp_path)
    h.cloud.fail_next("create_pod", ExtraMissing(hint))
    result = h.run()
    assert result.exit_code == 1
    assert result.failure_reason is not None
    assert result.failure_reason.startswith(hint), result.failure_reason
    assert "ExtraMissing" not in h.manifest(result)["failure_reason"]
