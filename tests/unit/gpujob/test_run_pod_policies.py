"""The run's policies around a rented pod, on the fakes (issue 10): the ready wait's heartbeat
and the deletion of a pod that never became ready, the budget at the real price (an unknown or
zero price keeps the assumed rate, said out loud), the failure warning's cost per hour and
`ls-stale`, and `pip freeze` captured once per run."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import pytest

from helpers.gpujob_run import RunHarness
from pegboard.adapters.fakes import FakeJob
from pegboard.domain.gpujob.plan import RunBudget, leftover_note
from pegboard.domain.gpujob.spec import LifecycleAction

GOOD_JOB = FakeJob(output=[(0.0, b"ALL_DONE\n")], exit_code=0)


def _good(h: RunHarness) -> None:
    h.host.script_job(GOOD_JOB)
    h.host.put("/workspace/out/result.json", b"{}")


def _history(h: RunHarness) -> list[str]:
    return [entry for pod in h.cloud.pods.values() for entry in pod.history]


@pytest.mark.parametrize("on_failure", ["stop", "preserve"])
def test_a_pod_that_never_becomes_ready_is_deleted_whatever_on_failure_says(
    tmp_path: Path, on_failure: str
) -> None:
    h = RunHarness(
        tmp_path,
        config={
            "budget": {"cost_cap_usd": 10, "ssh_ready_timeout_sec": 300},
            "lifecycle": {"on_success": "delete", "on_failure": on_failure},
        },
    )
    h.cloud.never_ready()
    result = h.run()
    manifest = h.manifest(result)
    assert result.exit_code == 1 and manifest["failure_phase"] == "ready"
    assert manifest["lifecycle_action"] == "delete"
    assert _history(h) == ["create", "terminate"]
    assert not h.cloud.live_pods() and h.pointer() is None
    assert manifest["pod_final_state"] == "TERMINATED"


def test_an_interrupt_while_waiting_is_not_never_ready(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    h.cloud.fail_next("get_pod", KeyboardInterrupt())  # type: ignore[arg-type]
    result = h.run()
    assert result.exit_code == 130 and _history(h) == ["create", "stop"]


def test_the_ready_wait_says_so_at_least_once_a_minute(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    h = RunHarness(tmp_path, config={"budget": {"cost_cap_usd": 10, "ssh_ready_timeout_sec": 600}})
    h.cloud.never_ready()
    with caplog.at_level(logging.INFO):
        h.run(ssh_ready_timeout_sec=600)
    beats = [
        float(m.group(1))
        for r in caplog.records
        if (m := re.search(r"\[ready\] waiting for pod \S+: .*; (\d+)s waited", r.getMessage()))
    ]
    assert len(beats) >= 10, beats
    gaps = [b - a for a, b in zip([0.0, *beats], [*beats, 600.0], strict=True)]
    assert max(gaps) <= 60.0, gaps


def test_the_flag_governs_the_ready_wait(tmp_path: Path) -> None:
    h = RunHarness(tmp_path, config={"budget": {"cost_cap_usd": 10, "ssh_ready_timeout_sec": 900}})
    h.cloud.never_ready()
    started = h.clock.monotonic()
    result = h.run(ssh_ready_timeout_sec=45)
    assert "not ready after 45s" in (result.failure_reason or "")
    assert h.clock.monotonic() - started < 60


@pytest.mark.parametrize("price", [None, 0.0])
def test_an_unknown_or_zero_price_keeps_the_assumed_rate_and_says_so(
    tmp_path: Path, caplog: pytest.LogCaptureFixture, price: float | None
) -> None:
    h = RunHarness(
        tmp_path,
        config={"budget": {"cost_cap_usd": 0.05, "assumed_hourly_rate_usd": 1.0}},
    )
    h.cloud.cost_per_hour_usd = price
    # A job that never ends: only the cost cap can stop it (0.05 $ at 1 $/h = 180 s).
    h.host.script_job(FakeJob(exit_code=0, duration=1e9))
    with caplog.at_level(logging.WARNING):
        result = h.run()
    manifest = h.manifest(result)
    assert result.exit_code == 1 and "cost cap" in (result.failure_reason or "")
    assert manifest["gpu_price_source"] == "assumed_rate"
    said = [r.getMessage() for r in caplog.records if "[budget]" in r.getMessage()]
    assert said and ("unknown" if price is None else "$0.00/h") in said[0]
    assert "$1.00/h" in said[0]


def test_the_listed_price_counts_from_create(tmp_path: Path) -> None:
    """The ready wait bills: it is bounded by the cost cap at the listed price x gpu_count."""
    pod = {"image": "img:1", "datacenters": ["DC-1"], "gpu_order": ["GPU-A"], "gpu_count": 2}
    budget = {"cost_cap_usd": 0.05, "assumed_hourly_rate_usd": 1.0, "ssh_ready_timeout_sec": 900}
    h = RunHarness(tmp_path, config={"pod": pod, "budget": budget})
    h.cloud.prices = {"GPU-A": 0.75}
    h.cloud.never_ready()
    result = h.run()
    # 0.05 $ at 1.50 $/h (0.75 per GPU x 2) is 120 s; at the assumed 1 $/h it would be 180 s.
    assert "not ready after 120s" in (result.failure_reason or ""), result.failure_reason


def test_zero_price_never_removes_the_deadline() -> None:
    budget = RunBudget(
        started_at=0.0,
        cost_cap_usd=1.0,
        price_per_hour_usd=2.0,
        price_source="assumed_rate",
        max_runtime_sec=None,
    )
    assert budget.with_price(0.0, "pod_describe").deadline() == 1800.0
    assert budget.with_price(None, "pod_describe").deadline() == 1800.0
    assert budget.with_price(4.0, "pod_describe").deadline() == 900.0
    assert budget.unknown_price_note(4.0, "x") is None


def test_the_failure_warning_names_cost_per_hour_release_and_ls_stale() -> None:
    stop = leftover_note(
        action=LifecycleAction.STOP,
        pod_id="p1",
        provider="runpod",
        state_file="/s/p1.json",
        volume_gb=72,
        cost_per_hour_usd=0.17,
    )
    assert stop is not None
    assert "Left billing: ~$0.020/h." in stop  # 72 GB x 0.20 $/GB-month stopped: the GPU released
    assert "runpod-deploy cleanup --state-file /s/p1.json --pod-id p1 --mode delete" in stop
    assert "runpod-deploy ls-stale" in stop
    kept = leftover_note(
        action=LifecycleAction.PRESERVE,
        pod_id="p1",
        provider="runpod",
        state_file=None,
        volume_gb=72,
        cost_per_hour_usd=0.17,
    )
    assert kept is not None and "Left billing: ~$0.180/h." in kept
    unknown = leftover_note(
        action=LifecycleAction.PRESERVE,
        pod_id="p1",
        provider="runpod",
        state_file=None,
        volume_gb=None,
    )
    assert unknown is not None and "GPU (price unknown)" in unknown


def test_a_failed_run_names_its_hourly_cost_in_the_manifest(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    h.host.script_job(FakeJob(output=[(0.0, b"x\n")], exit_code=2))
    result = h.run()
    left = h.manifest(result)["left_behind"]
    assert "Left billing: ~$0.006/h." in left  # stopped: 20 GB of disk at 0.20, the GPU released
    assert "runpod-deploy ls-stale" in left


def test_pip_freeze_is_captured_once_before_setup(tmp_path: Path) -> None:
    h = RunHarness(tmp_path, config={"telemetry": {"enabled": True, "sample_interval_sec": 5}})
    _good(h)
    h.host.on_command(r"pip freeze", exit_code=0, stdout=b"torch==2.4.0\nnumpy==2.0.0\n")
    result = h.run()
    assert result.exit_code == 0
    assert (Path(result.run_dir or "") / "pip_freeze.txt").read_text() == (
        "torch==2.4.0\nnumpy==2.0.0\n"
    )
    freezes = [c for c in h.host.commands if "pip freeze" in c]
    assert len(freezes) == 1
    first_setup = next(i for i, c in enumerate(h.host.commands) if "mkdir -p /workspace/proj" in c)
    assert h.host.commands.index(freezes[0]) < first_setup


def _recycled(tmp_path: Path) -> tuple[RunHarness, str]:
    h = RunHarness(tmp_path, config={"lifecycle": {"on_success": "recycle", "on_failure": "stop"}})
    _good(h)
    assert h.run().exit_code == 0
    (old,) = h.cloud.pods
    _good(h)
    return h, old


def test_resume_without_a_free_gpu_deletes_the_stuck_pod_and_starts_fresh(tmp_path: Path) -> None:
    from pegboard.domain.ports.gpu_cloud import NoCapacity

    h, old = _recycled(tmp_path)
    h.cloud.fail_next("resume_pod", NoCapacity("not enough free GPUs on the host machine"))
    result = h.run()
    manifest = h.manifest(result)
    assert result.exit_code == 0 and manifest["pod_resumed"] is False
    assert h.cloud.pod(old).history == ["create", "stop", "terminate"]
    (fresh,) = [p.pod_id for p in h.cloud.live_pods()]
    assert fresh != old and h.pointer()["pod_id"] == fresh  # type: ignore[index]
    assert any(e["event"] == "recycle_fallback" for e in h.events(result))


def test_a_transient_resume_failure_keeps_the_old_pod_listed(tmp_path: Path) -> None:
    from pegboard.domain.errors import Transient

    h, old = _recycled(tmp_path)
    h.cloud.fail_next("resume_pod", Transient("502"))
    result = h.run(deps={"random_hex": lambda: "def456"})  # its own run pointer
    assert result.exit_code == 0
    assert h.cloud.pod(old).status == "EXITED"  # not known to be stuck: left, still named
    runs = list((tmp_path / "home" / ".local" / "state" / "runpod-deploy" / "runs").glob("*.json"))
    assert any(f'"{old}"' in p.read_text() for p in runs)
