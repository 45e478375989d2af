"""ls-runs, manifest-summary, compare-runs, events, events-query on 0.8.4-shaped and our records."""

from __future__ import annotations

import json
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pegboard.app.runpod_deploy.cli import main
from pegboard.domain.errors import UsageError
from pegboard.domain.gpujob.forensics import parse_since

# A manifest as runpod-deploy 0.8.4 writes it (schema "v2"): no failure phase, no outcome.
MANIFEST_084: dict[str, Any] = {
    "schema_version": "v2",
    "pulled_at_utc": "2026-05-17T12:05:00+00:00",
    "failed": False,
    "job_name": "simjob-s{seed}",
    "run_id": "simjob-s7-20260517T120000Z",
    "config_path": "/work/job.yaml",
    "storage_mode": "ephemeral",
    "datacenter_id": "EU-RO-1",
    "gpu_id": "NVIDIA RTX A4000",
    "gpu_price_per_hour_usd": 0.17,
    "gpu_price_source": "pod_describe",
    "pod_id": "abc123",
    "pod_final_state": "RUNNING",
    "pod_resumed": False,
    "image": "runpod/pytorch:2.4.0",
    "cost_cap_usd": 10.0,
    "wall_time_sec": 120,
    "estimated_cost_usd": 0.0057,
    "volume_mount": "/workspace",
    "volume_name": None,
    "volume_gb": 20,
    "deploy_metadata": {
        "local_git_sha": "1111111",
        "local_git_dirty": False,
        "local_git_branch": "main",
        "payload_lockfile": "uv.lock",
        "payload_lockfile_sha256": "aa",
    },
    "artifacts": [
        {"label": "gpu-info", "status": "success", "bytes_transferred": None, "duration_sec": 1.5}
    ],
    "telemetry_files": ["nvidia_smi_start.txt"],
}

# Ours: the same fields plus outcome, failure phase and reason, provider, cloud type.
MANIFEST_OURS: dict[str, Any] = {
    **MANIFEST_084,
    "failed": True,
    "job_name": "simjob-s8",
    "run_id": "simjob-s8-20260517T130000.000001Z-beef",
    "pod_id": "def456",
    "wall_time_sec": 30.5,
    "estimated_cost_usd": 0.0014,
    "outcome": "failed",
    "failure_phase": "monitor",
    "failure_reason": "remote script exited with 1",
    "provider": "runpod",
    "cloud_type": "SECURE",
    "deploy_metadata": {**MANIFEST_084["deploy_metadata"], "local_git_sha": "2222222"},
    "artifacts": [
        {"label": "gpu-info", "status": "failed", "bytes_transferred": 0, "duration_sec": 0.5}
    ],
}

EVENTS: list[dict[str, Any]] = [
    {
        "ts_utc": "2026-05-17T12:00:00+00:00",
        "event": "gpu_selected",
        "gpu_id": "NVIDIA RTX A4000",
        "datacenter_id": "EU-RO-1",
    },
    {"ts_utc": "2026-05-17T12:01:05+00:00", "event": "remote_step_started", "name": "train"},
    {
        "ts_utc": "2026-05-17T13:02:03+00:00",
        "event": "artifact_pull_completed",
        "label": "gpu-info",
        "duration_sec": 1.5,
    },
]


def write_run(
    root: Path,
    name: str,
    manifest: dict[str, Any] | None,
    events: Sequence[dict[str, Any]] = (),
) -> Path:
    run_dir = root / "artifacts" / "runpod" / name
    run_dir.mkdir(parents=True)
    if manifest is not None:
        (run_dir / "runpod_deploy_pull_manifest.json").write_text(json.dumps(manifest))
    if events:
        (run_dir / "events.jsonl").write_text("".join(json.dumps(e) + "\n" for e in events))
    return run_dir


def cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as caught:
        main(list(args))
    out, err = capsys.readouterr()
    return int(caught.value.code or 0), out, err


@pytest.fixture
def project(tmp_path: Path) -> Path:
    write_run(tmp_path, "20260517T120000Z", MANIFEST_084, EVENTS)
    write_run(tmp_path, "20260517T130000.000001Z-beef", MANIFEST_OURS)
    write_run(tmp_path, "20260517T140000Z", None)  # no manifest: not a run
    return tmp_path


def test_ls_runs_table(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "ls-runs", "--project-root", str(project))
    assert code == 0
    assert out == textwrap.dedent(
        """\
        TIMESTAMP                     JOB             POD ID  GPU               DC       WALL S  FAILED       EST $
        20260517T120000Z              simjob-s{seed}  abc123  NVIDIA RTX A4000  EU-RO-1  120     N            $0.01
        20260517T130000.000001Z-beef  simjob-s8       def456  NVIDIA RTX A4000  EU-RO-1  30      Y (monitor)  $0.00
        """
    )


def test_ls_runs_json_and_limit(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "ls-runs", "--project-root", str(project), "--json", "--limit", "1")
    rows = json.loads(out)
    assert code == 0 and [r["timestamp"] for r in rows] == ["20260517T130000.000001Z-beef"]
    assert rows[0]["failed"] is True and rows[0]["wall_time_sec"] == 30.5


def test_ls_runs_empty_project_says_so_on_stderr(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, "ls-runs", "--project-root", str(tmp_path))
    assert (code, out) == (0, "") and "no runs found" in err


def test_manifest_summary_of_a_0_8_4_manifest(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = project / "artifacts/runpod/20260517T120000Z/runpod_deploy_pull_manifest.json"
    code, out, _ = cli(capsys, "manifest-summary", str(path))
    assert code == 0
    assert out.splitlines()[:4] == [
        "job:            simjob-s{seed}",
        "run_id:         simjob-s7-20260517T120000Z",
        "failed:         False",
        "schema:         v2",
    ]
    assert "price_usd/hr:   0.17 (pod_describe)" in out
    assert "  - gpu-info: status=success duration_sec=1.5" in out
    assert "failure_phase" not in out


def test_manifest_summary_shows_our_failure_fields(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = cli(
        capsys, "manifest-summary", str(project / "artifacts/runpod/20260517T130000.000001Z-beef")
    )
    assert code == 0
    assert "failure_phase:  monitor" in out and "failure_reason: remote script exited with 1" in out
    assert "cloud_type:     SECURE" in out


def test_manifest_summary_aligns_every_value_and_shows_missing_as_a_dash(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 12: `failure_reason` stuck out of the column, and missing values printed `None`."""
    run_dir = project / "artifacts/runpod/20260517T130000.000001Z-beef"
    manifest = json.loads((run_dir / "runpod_deploy_pull_manifest.json").read_text())
    manifest.update(failure_reason=None, image=None)
    manifest["deploy_metadata"]["local_git_sha"] = None
    (run_dir / "runpod_deploy_pull_manifest.json").write_text(json.dumps(manifest))
    code, out, _ = cli(capsys, "manifest-summary", str(run_dir))
    assert code == 0 and "None" not in out
    top = [line for line in out.splitlines() if not line.startswith(" ") and not line.endswith(":")]
    columns = {len(line) - len(line.split(":", 1)[1].lstrip()) for line in top}
    assert len(columns) == 1, out
    assert "failure_reason: —" in out and "image:          —" in out
    assert "  local_git_sha:           —" in out


def test_manifest_summary_root_totals(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "manifest-summary", "--root", str(project / "artifacts/runpod"))
    assert code == 0
    assert out.count("== ") == 3
    assert out.endswith(
        "== TOTALS ==\nmanifests:        2\nfailed:           1\n"
        "wall_time_sec:    150.5\nestimated_cost:   $0.01\n"
    )


@pytest.mark.parametrize("args", [[], ["m.json", "--root", "."]])
def test_manifest_summary_needs_exactly_one_source(
    args: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "manifest-summary", *args)
    assert code == 2
    assert err == "runpod-deploy: manifest-summary: give exactly one of MANIFEST or --root DIR\n"


def test_compare_runs_diff_and_exit_code(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base = project / "artifacts/runpod"
    code, out, _ = cli(
        capsys,
        "compare-runs",
        str(base / "20260517T120000Z"),
        str(base / "20260517T130000.000001Z-beef"),
    )
    assert code == 1  # b failed
    lines = out.splitlines()
    assert lines[0] == "diff between two manifests:"
    assert any(line.split() == ["failed", "False", "→", "True"] for line in lines)
    assert any(line.split() == ["failure_phase", "—", "→", "monitor"] for line in lines)
    assert any(
        line.split() == ["gpu_id", "NVIDIA", "RTX", "A4000", "==", "NVIDIA", "RTX", "A4000"]
        for line in lines
    )
    assert any(
        line.split() == ["deploy_metadata.local_git_sha", "1111111", "→", "2222222"]
        for line in lines
    )
    assert any(
        line.split() == ["artifact[gpu-info].status", "success", "→", "failed"] for line in lines
    )


def test_compare_two_0_8_4_successes_exits_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    a = write_run(tmp_path, "a", MANIFEST_084)
    b = write_run(tmp_path, "b", {**MANIFEST_084, "wall_time_sec": 99})
    code, out, _ = cli(capsys, "compare-runs", str(a), str(b))
    assert code == 0 and "failure_phase" not in out and "outcome" not in out


def test_compare_runs_missing_or_broken_manifest_is_one_usage_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 12: a missing run is exit 2 with the prefix, like `events missing` (0.8.4: 1)."""
    a = write_run(tmp_path, "a", MANIFEST_084)
    code, out, err = cli(capsys, "compare-runs", str(a), str(tmp_path / "nope"))
    assert (code, out) == (2, "")
    assert (
        err
        == f"runpod-deploy: compare-runs: no such manifest or run directory: {tmp_path / 'nope'}\n"
    )
    broken = tmp_path / "broken.json"
    broken.write_text("[1,")
    code, out, err = cli(capsys, "compare-runs", str(a), str(broken))
    assert (code, out) == (2, "") and err.startswith("runpod-deploy: cannot parse manifest")
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ("events", "missing"),
        ("ls-runs", "--project-root", "/nonexistent"),
        ("manifest-summary", "missing"),
        ("manifest-summary", "--root", "/nonexistent"),
        ("events-query", "--root", "/nonexistent"),
        ("capture-env", "--project-root", "/nonexistent"),
    ],
)
def test_a_path_that_is_not_there_is_exit_2_with_one_line(
    args: tuple[str, ...], capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = cli(capsys, *args)
    assert (code, out) == (2, "")
    assert err.startswith("runpod-deploy: ") and len(err.splitlines()) == 1, err


def test_events_without_a_run_dir_reads_the_projects_latest_run(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    latest = sorted((project / "artifacts" / "runpod").iterdir())[-1]
    code, out, _ = cli(capsys, "events", "--project-root", str(project))
    assert code == 0
    assert out == cli(capsys, "events", str(latest))[1]


def test_events_timeline(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = cli(capsys, "events", str(project / "artifacts/runpod/20260517T120000Z"))
    assert code == 0
    assert out == (
        '[+0:00] gpu_selected gpu_id="NVIDIA RTX A4000" datacenter_id=EU-RO-1\n'
        "[+1:05] remote_step_started name=train\n"
        "[+1:02:03] artifact_pull_completed label=gpu-info duration_sec=1.5\n"
    )


def test_events_missing_run_dir_is_a_usage_error(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = cli(capsys, "events", str(tmp_path / "nope"))
    assert code == 2 and err.startswith("runpod-deploy: events: no such run directory")


def test_events_skips_malformed_lines(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = write_run(tmp_path, "r", None)
    (run_dir / "events.jsonl").write_text(
        '{"event": "a", "ts_utc": "2026-01-01T00:00:00Z"}\nnot json\n[1]\n'
    )
    code, out, err = cli(capsys, "events", str(run_dir))
    assert (code, out) == (0, "[+0:00] a\n")
    assert "line 2: malformed JSON" in err and "line 3: not a JSON object" in err


def test_events_query_filters_and_json(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    root = str(project / "artifacts/runpod")
    code, out, _ = cli(
        capsys, "events-query", "--root", root, "--filter", "event=remote_step_started", "--json"
    )
    assert code == 0
    assert [json.loads(row) for row in out.splitlines()] == [
        {**EVENTS[1], "run_dir": "20260517T120000Z"}
    ]
    code, out, _ = cli(
        capsys,
        "events-query",
        "--root",
        root,
        "--filter",
        "event=gpu_selected",
        "--filter",
        "datacenter_id=EU-RO-1",
    )
    assert out == (
        '[2026-05-17T12:00:00+00:00] 20260517T120000Z gpu_selected gpu_id="NVIDIA RTX A4000" '
        "datacenter_id=EU-RO-1\n"
    )
    code, out, _ = cli(capsys, "events-query", "--root", root, "--filter", "duration_sec=1.5")
    assert "artifact_pull_completed" in out


@pytest.mark.parametrize(
    "args",
    [["--since", "1h30"], ["--since", "h"], ["--filter", "novalue"], ["--root", "/no/such/dir"]],
)
def test_events_query_bad_flags_are_usage_errors(
    args: list[str], project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    full = [
        "events-query",
        *(["--root", str(project / "artifacts/runpod")] if "--root" not in args else []),
        *args,
    ]
    code, out, err = cli(capsys, *full)
    assert code == 2 and out == "" and err.startswith("runpod-deploy: ") and "Traceback" not in err


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("30s", 30),
        ("5m", 300),
        ("1h", 3600),
        ("7d", 604800),
        ("1h30m", 5400),
        ("2d12h5m1s", 216301),
    ],
)
def test_since_durations(text: str, seconds: int) -> None:
    assert parse_since(text) == seconds


@pytest.mark.parametrize("text", ["", "1", "1.5h", "h1", "1w", "1h 30m", "-1h"])
def test_bad_since_durations(text: str) -> None:
    with pytest.raises(UsageError, match="--since"):
        parse_since(text)
