"""Candidate order, whole-run budget, lifecycle notes, records and the shared shell snippets."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from helpers.components import require_executable
from helpers.runpod_configs import MINIMAL_YAML, spec_from
from pegboard.domain.gpujob.plan import (
    Phase,
    RunBudget,
    keeps_pointer,
    leftover_note,
    remote_phases,
)
from pegboard.domain.gpujob.provisioning import Candidate, decide_resume, plan_candidates
from pegboard.domain.gpujob.records import (
    ArtifactRecord,
    ManifestInput,
    build_manifest,
    event_row,
    parse_metrics,
)
from pegboard.domain.gpujob.remote_commands import (
    detach_and_follow_command,
    detach_command,
    detached_status_command,
    kill_groups_function,
    parse_detached_status,
    parse_launch_exit,
)
from pegboard.domain.gpujob.spec import LifecycleAction
from pegboard.domain.ports.gpu_cloud import GpuStock, PodStatus
from pegboard.domain.sync_rules import ExcludeMatcher, parse_chmod


def test_candidates_are_gpu_major_and_skip_stockouts_and_prices() -> None:
    stock = [
        GpuStock("A", "DC1", "none"),
        GpuStock("A", "DC2", "low"),
        GpuStock("B", "DC1", "high"),
        GpuStock("B", "DC2", "high"),
        GpuStock("C", "DC1", "high"),
    ]
    plan = plan_candidates(
        gpu_order=["A", "B", "C"],
        datacenters=["DC1", "DC2"],
        stock=stock,
        prices={"B": 3.0, "C": 0.5},
        max_gpu_price_usd=1.0,
    )
    assert [(c.gpu_id, c.datacenter_id) for c in plan.candidates] == [("A", "DC2"), ("C", "DC1")]
    reasons = {(s.gpu_id, s.datacenter_id): s.reason for s in plan.skipped}
    assert reasons[("A", "DC1")] == "stock none"
    assert "above --max-gpu-price" in reasons[("B", "DC1")]
    assert reasons[("C", "DC2")] == "stock not listed"


def test_whole_run_budget_uses_the_real_price_once_known() -> None:
    budget = RunBudget(
        started_at=100.0,
        cost_cap_usd=1.0,
        price_per_hour_usd=2.0,
        price_source="assumed_rate",
        max_runtime_sec=None,
    )
    assert budget.deadline() == 100.0 + 1800.0
    real = budget.with_price(4.0, "pod_describe")
    assert real.deadline() == 100.0 + 900.0
    assert real.exceeded_reason(999.0) is None
    reason = real.exceeded_reason(1000.0)
    assert reason is not None and "cost cap" in reason and "pod_describe" in reason
    capped = RunBudget(
        started_at=0.0,
        cost_cap_usd=100.0,
        price_per_hour_usd=0.0,
        price_source="pod_describe",
        max_runtime_sec=60.0,
    )
    assert capped.deadline() == 60.0 and "max runtime" in (capped.exceeded_reason(60.0) or "")


def test_phase_order_follows_setup_after_secrets() -> None:
    spec = spec_from(MINIMAL_YAML)
    assert remote_phases(spec)[:2] == (Phase.SETUP, Phase.SECRETS)
    spec = spec_from(MINIMAL_YAML + "setup_after_secrets: true\n")
    assert remote_phases(spec)[:2] == (Phase.SECRETS, Phase.SETUP)


def test_leftover_note_gives_the_exact_cleanup_command() -> None:
    assert (
        leftover_note(
            action=LifecycleAction.DELETE,
            pod_id="p",
            provider="runpod",
            state_file="/s",
            volume_gb=50,
        )
        is None
    )
    note = leftover_note(
        action=LifecycleAction.STOP,
        pod_id="p1",
        provider="runpod",
        state_file="/tmp/my state.json",
        volume_gb=50,
    )
    assert note is not None
    assert (
        "runpod-deploy cleanup --state-file '/tmp/my state.json' --pod-id p1 --mode delete" in note
    )
    assert "$10.00/mo" in note
    assert keeps_pointer(LifecycleAction.STOP) and not keeps_pointer(LifecycleAction.DELETE)


def test_resume_only_a_matching_exited_pod() -> None:
    pointer = {"pod_id": "p", "image": "img", "gpu_id": "A", "datacenter_id": "D"}
    exited = PodStatus(pod_id="p", name="n", desired_status="EXITED")
    assert decide_resume(
        pointer=pointer, status=exited, candidate=Candidate("A", "D"), image="img"
    ).resume
    drift = decide_resume(
        pointer=pointer, status=exited, candidate=Candidate("B", "D"), image="img"
    )
    assert not drift.resume and drift.terminate_old and "gpu_id" in drift.reason
    running = PodStatus(pod_id="p", name="n", desired_status="RUNNING")
    busy = decide_resume(
        pointer=pointer, status=running, candidate=Candidate("A", "D"), image="img"
    )
    assert not busy.resume and not busy.terminate_old
    # A provider whose recycle keeps the pod running (kubernetes) resumes the running pod.
    warm = decide_resume(
        pointer=pointer,
        status=running,
        candidate=Candidate("A", "D"),
        image="img",
        kept_running=True,
    )
    assert warm.resume
    starting = PodStatus(pod_id="p", name="n", desired_status="STARTING")
    assert not decide_resume(
        pointer=pointer,
        status=starting,
        candidate=Candidate("A", "D"),
        image="img",
        kept_running=True,
    ).resume


def test_a_recycle_that_keeps_the_pod_running_says_it_bills_on() -> None:
    note = leftover_note(
        action=LifecycleAction.RECYCLE,
        pod_id="p1",
        provider="kubernetes",
        state_file="/s.json",
        volume_gb=None,
        cost_per_hour_usd=2.0,
        kept_running=True,
    )
    assert note is not None
    assert "kept running for the next run" in note and "~$2.000/h" in note


def test_an_unbilled_providers_pod_with_a_price_of_its_own_says_what_it_costs() -> None:
    """The kubernetes provider rents nothing (billed=False: no disk rate), but a GPU type with a
    `kubernetes.price_per_hour` is what a preserved or warm pod keeps costing."""

    def note(cost: float | None, action: LifecycleAction = LifecycleAction.PRESERVE) -> str:
        text = leftover_note(
            action=action,
            pod_id="p1",
            provider="kubernetes",
            state_file="/s.json",
            volume_gb=20,
            billed=False,
            cost_per_hour_usd=cost,
            kept_running=True,
        )
        assert text is not None
        return text

    priced = note(1.2)
    assert "Left billing: ~$1.200/h." in priced and "Volume disk" not in priced
    assert "~$1.200/h" in note(1.2, LifecycleAction.RECYCLE)
    assert "Left billing" not in note(None)  # no price: none is made up
    assert "Left billing" not in note(1.2, LifecycleAction.STOP)  # the GPU is released


def test_manifest_has_every_v2_field_plus_ours() -> None:
    manifest = build_manifest(
        ManifestInput(
            job_name="j",
            run_id="j-1",
            config_path="/c.yaml",
            run_dir="/r",
            storage_mode="ephemeral",
            image="img",
            volume_mount="/workspace",
            volume_name=None,
            volume_gb=20,
            cost_cap_usd=10.0,
            provider="fake",
            cloud_type="SECURE",
            gpu_count=1,
            tool_version="t",
            pulled_at=0.0,
            failed=True,
            outcome="failed",
            dry_run=False,
            gpu_price_per_hour_usd=3.6,
            wall_time_sec=100.0,
            failure_phase="monitor",
            failure_reason="boom",
            artifacts=[ArtifactRecord("a", "/r", "/l", True, (), False, "success", 12, 0.5)],
        )
    )
    v2 = {
        "schema_version",
        "pulled_at_utc",
        "failed",
        "job_name",
        "run_id",
        "config_path",
        "storage_mode",
        "datacenter_id",
        "gpu_id",
        "gpu_price_per_hour_usd",
        "gpu_price_source",
        "pod_id",
        "pod_final_state",
        "pod_resumed",
        "image",
        "cost_cap_usd",
        "wall_time_sec",
        "estimated_cost_usd",
        "volume_mount",
        "volume_name",
        "volume_gb",
        "deploy_metadata",
        "artifacts",
        "telemetry_files",
    }
    ours = {
        "failure_phase",
        "failure_reason",
        "phase_durations_sec",
        "tool_version",
        "provider",
        "cloud_type",
        "gpu_count",
    }
    assert v2 | ours <= set(manifest)
    assert manifest["estimated_cost_usd"] == 0.1 and manifest["schema_version"] == "v2"
    assert manifest["pulled_at_utc"] == "1970-01-01T00:00:00+00:00"
    assert manifest["artifacts"][0]["bytes_transferred"] == 12
    json.dumps(manifest)
    assert event_row("gpu_selected", ts=0.0, gpu_id="A") == {
        "ts_utc": "1970-01-01T00:00:00+00:00",
        "event": "gpu_selected",
        "gpu_id": "A",
    }


def test_parse_metrics_reads_each_section_and_skips_unknowns() -> None:
    output = (
        "@@pegboard-metrics:gpu\n45, 1024, 16384, 61, 0\n"
        "@@pegboard-metrics:load\n0.52 0.40 0.30 1/100 123\n"
        "@@pegboard-metrics:top\n%Cpu(s):  3.1 us,  1.2 sy,  0.0 ni\n"
        "@@pegboard-metrics:free\n900 2000\n"
        "@@pegboard-metrics:df\n\n"
    )
    row = parse_metrics(output, ts=0.0)
    assert row["gpu_util_pct"] == 45 and row["gpu_ecc_errors"] == 0
    assert row["cpu_load_1m"] == 0.52 and row["cpu_user_pct"] == 3.1 and row["cpu_sys_pct"] == 1.2
    assert (row["host_mem_used_mb"], row["host_mem_total_mb"]) == (900, 2000)
    assert "workspace_disk_used_bytes" not in row


@pytest.mark.parametrize(
    ("pattern", "path", "is_dir", "excluded"),
    [
        (".git/", ".git", True, True),
        (".git/", ".git", False, False),
        ("*.pyc", "a/b/c.pyc", False, True),
        ("**/__pycache__/", "__pycache__", True, True),
        ("**/__pycache__/", "pkg/sub/__pycache__", True, True),
        ("/data", "data", True, True),
        ("/data", "x/data", True, False),
        ("sub/out", "a/sub/out", False, True),
        ("sub/out", "a/xsub/out", False, False),
    ],
)
def test_exclude_patterns_follow_rsync(
    pattern: str, path: str, is_dir: bool, excluded: bool
) -> None:
    assert ExcludeMatcher([pattern]).excluded(path, is_dir=is_dir) is excluded


def test_chmod_specs() -> None:
    assert parse_chmod("F600").file_mode == 0o600
    assert parse_chmod("D700,F600").dir_mode == 0o700
    with pytest.raises(ValueError):
        parse_chmod("u+x")


def test_detach_snippet_records_pid_and_status_for_any_path(tmp_path: Path) -> None:
    base = tmp_path / "a dir with 'quotes' $(x)"
    base.mkdir()
    script = base / "job.sh"
    script.write_text("echo hi\nexit 5\n")
    paths = {k: str(base / f"j.{k}") for k in ("log", "status", "pid")}
    started = subprocess.run(
        [
            "bash",
            "-c",
            detach_command(
                script_path=str(script),
                log_path=paths["log"],
                status_path=paths["status"],
                pid_path=paths["pid"],
            ),
        ],
        capture_output=True,
        text=True,
        timeout=10,
        check=True,
    )
    pid = int(started.stdout.strip())
    probe = detached_status_command(pid_path=paths["pid"], status_path=paths["status"])
    for _ in range(200):
        out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
        status = parse_detached_status(out.stdout)
        if not status.running:
            break
    assert status.exit_code == 5 and Path(paths["log"]).read_text() == "hi\n"
    assert int(Path(paths["pid"]).read_text()) == pid


# The POSIX shells a host or an image may run these scripts with (dash: Debian's /bin/sh).
SHELLS = ("dash", "bash", "busybox")


def _shell(name: str) -> list[str]:
    """The argv of shell `name`; skips (fails under CI) when it is not installed."""
    path = require_executable(name, install_hint=f"apt-get install {name}")
    return [path, "sh"] if name == "busybox" else [path]


@pytest.mark.parametrize("name", SHELLS)
def test_the_pid_is_told_once_the_jobs_process_group_exists(tmp_path: Path, name: str) -> None:
    """Right after `$!` the child has not called setsid yet (in most launches on this machine):
    a kill of the group then would find none and take the job for gone. Checked in the
    launching shell itself, the moment the pid is printed, launch after launch."""
    script = tmp_path / "job.sh"
    script.write_text("sleep 30\n")
    launches = []
    for n in range(20):
        paths = {f"{k}_path": str(tmp_path / f"j{n}.{k}") for k in ("log", "status", "pid")}
        command = detach_command(script_path=str(script), **paths)
        check = 'if kill -0 "-$pid" 2>/dev/null; then echo group; else echo none; fi'
        done = subprocess.run(
            [*_shell(name), "-c", f"{command} && {check}"],
            capture_output=True,
            text=True,
            timeout=20,
            check=True,
        )
        pid, group = done.stdout.split()
        launches.append(group)
        os.killpg(int(pid), 9)
    assert launches == ["group"] * 20


@pytest.mark.parametrize(("body", "expected"), [("exit 5", 5), ("kill -9 $PPID; sleep 0.1", None)])
def test_the_launch_and_follow_ends_with_the_jobs_end_on_stderr(
    tmp_path: Path, body: str, expected: int | None
) -> None:
    script = tmp_path / "job.sh"
    script.write_text(f"echo hi\n{body}\n")
    paths = {k: str(tmp_path / f"j.{k}") for k in ("log", "status", "pid")}
    command = detach_and_follow_command(
        script_path=str(script),
        log_path=paths["log"],
        status_path=paths["status"],
        pid_path=paths["pid"],
        record_dir=None,
    )
    done = subprocess.run(["bash", "-c", command], capture_output=True, timeout=30)
    assert done.returncode == 0
    ended = parse_launch_exit(done.stderr)
    assert ended is not None and not ended.running and ended.exit_code == expected
    # with the wrapper killed, nothing was recorded: a probe says the same (vanished)
    probe = detached_status_command(pid_path=paths["pid"], status_path=paths["status"])
    out = subprocess.run(["bash", "-c", probe], capture_output=True, text=True, check=True)
    assert parse_detached_status(out.stdout) == ended


def test_the_detach_snippet_runs_mkdir_and_rm_only_when_there_is_work(tmp_path: Path) -> None:
    bin_dir, ran = tmp_path / "bin", tmp_path / "ran"
    bin_dir.mkdir()
    for tool in ("mkdir", "rm"):
        real = shutil.which(tool)
        (bin_dir / tool).write_text(f'#!/bin/sh\necho {tool} >> {ran}\nexec {real} "$@"\n')
        (bin_dir / tool).chmod(0o755)
    script = tmp_path / "job.sh"
    script.write_text("exit 0\n")

    def launch(base: Path) -> list[str]:
        ran.unlink(missing_ok=True)
        paths = {k: str(base / f"j.{k}") for k in ("log", "status", "pid")}
        command = detach_command(
            script_path=str(script),
            log_path=paths["log"],
            status_path=paths["status"],
            pid_path=paths["pid"],
            record_dir=str(base / "procs"),
        )
        env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}"}
        subprocess.run(["bash", "-c", command], env=env, check=True, capture_output=True)
        return ran.read_text().split() if ran.exists() else []

    fresh = tmp_path / "fresh"
    status = fresh / "j.status"

    def ended() -> None:  # that launch's job has recorded its status
        for _ in range(500):
            if status.exists():
                return
            time.sleep(0.01)
        raise AssertionError("the job recorded no status")

    assert launch(fresh) == ["mkdir", "mkdir"]  # its directory, then the records' one
    ended()
    assert launch(fresh) == ["rm"]  # the previous job's status goes first
    ended()
    status.unlink()
    assert launch(fresh) == []  # nothing to make, nothing stale: neither tool runs


def test_a_launch_without_its_end_line_asks_the_host() -> None:
    assert parse_launch_exit(b"") is None
    assert parse_launch_exit(b"tail: cannot open\n") is None
    assert parse_launch_exit(b"x\npegboard-job-ended:7\n") == parse_detached_status("7")


@pytest.mark.parametrize("name", SHELLS)
def test_group_alive_answers_for_live_ended_and_zombie_groups(name: str) -> None:
    # `kill -0` first: a group with no process is dead without scanning /proc. After
    # kill_groups the unreaped `sleep` is a zombie: kill -0 still reaches it, the scan says dead.
    script = kill_groups_function(grace=0.1) + (
        "setsid sleep 30 & live=$!; sleep 0.2; "
        'group_alive "$live"; a=$?; group_alive 2147483646; b=$?; '
        'kill_groups "$live"; group_alive "$live"; c=$?; echo "$a $b $c"'
    )
    done = subprocess.run([*_shell(name), "-c", script], capture_output=True, text=True, timeout=30)
    assert done.stdout.split() == ["0", "1", "1"], done.stderr


def test_a_log_truncated_under_the_running_job_gets_no_hole_of_nul_bytes(tmp_path: Path) -> None:
    """The job appends to its log: truncated while it runs (logrotate's copytruncate), the log
    goes on from its new end. With the wrapper's own `>` (a second truncation, no O_APPEND) it
    read b"\\0" * 6 + b"second\\n"."""
    go = tmp_path / "go"
    script = tmp_path / "job.sh"
    script.write_text(f"echo first\nwhile [ ! -e {go} ]; do sleep 0.01; done\necho second\n")
    log, status, pid = (tmp_path / f"j.{k}" for k in ("log", "status", "pid"))
    log.write_bytes(b"a previous run's log\n")  # emptied by the launch, once
    command = detach_command(
        script_path=str(script), log_path=str(log), status_path=str(status), pid_path=str(pid)
    )
    subprocess.run(["bash", "-c", command], check=True, capture_output=True, timeout=10)
    for _ in range(1000):
        if log.read_bytes() == b"first\n":
            break
        time.sleep(0.01)
    assert log.read_bytes() == b"first\n"
    os.truncate(log, 0)
    go.touch()
    for _ in range(1000):
        if status.exists():
            break
        time.sleep(0.01)
    assert status.read_text() == "0\n"
    assert log.read_bytes() == b"second\n"
