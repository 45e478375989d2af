"""`cleanup` (one state file, or --all-stopped) and `ls-stale` on the fakes, and their CLI."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
import yaml

from helpers.gpujob_run import BASE_CONFIG
from helpers.pod_tools import STAMP, PodToolsHarness, container_overrides
from pegboard.app.runpod_deploy.cli import main
from pegboard.app.runpod_deploy.pod_release import (
    BulkCleanup,
    PointerCleanup,
    cleanup_all_stopped,
    cleanup_pointer,
)
from pegboard.app.runpod_deploy.stale_pods import list_stale
from pegboard.domain.errors import PortError, Transient, UsageError

OURS = f"job-{STAMP}"


@pytest.fixture
def h(tmp_path: Path) -> PodToolsHarness:
    return PodToolsHarness(tmp_path)


# --- one state file ------------------------------------------------------------------------


def test_delete_terminates_the_pod_and_unlinks_the_pointer(h: PodToolsHarness) -> None:
    pod = h.pod(OURS)
    pointer = h.pointer("a", pod)
    assert cleanup_pointer(PointerCleanup(pointer), h.deps()) == 0
    assert pod not in h.live_ids() and not pointer.exists()
    assert h.backends_asked == ["local"]  # the provider the state file records


@pytest.mark.parametrize("key", ["id", "podId", "pod_id"])
def test_a_084_state_file_means_runpod_and_any_id_spelling(h: PodToolsHarness, key: str) -> None:
    pointer = h.pointer("old", "abc123", provider=None, key=key)
    with pytest.raises(UsageError, match="not available"):
        cleanup_pointer(PointerCleanup(pointer), h.deps())
    assert h.backends_asked == ["runpod"] and pointer.exists()


def test_084_state_file_is_read_and_deleted_through_its_provider(h: PodToolsHarness) -> None:
    h.clouds["runpod"] = h.clouds.pop("fake")  # pretend RunPod is available
    pod = h.pod("whatever", cloud="runpod")
    pointer = h.pointer("old", pod, provider=None, key="podId")
    assert cleanup_pointer(PointerCleanup(pointer), h.deps()) == 0
    assert pod not in h.live_ids("runpod") and not pointer.exists()


def test_a_pod_that_is_already_gone_is_not_an_error(h: PodToolsHarness) -> None:
    pointer = h.pointer("a", "no-such-pod")
    assert cleanup_pointer(PointerCleanup(pointer, mode="stop"), h.deps()) == 0
    assert not pointer.exists()


def test_dry_run_changes_nothing(h: PodToolsHarness) -> None:
    pod = h.pod(OURS)
    pointer = h.pointer("a", pod)
    assert cleanup_pointer(PointerCleanup(pointer, dry_run=True), h.deps()) == 0
    assert pod in h.live_ids() and pointer.exists()
    assert [c[0] for c in h.cloud.calls if c[0] == "terminate_pod"] == []


def test_stop_and_preserve_keep_the_pod_and_the_pointer(
    h: PodToolsHarness, caplog: pytest.LogCaptureFixture
) -> None:
    pod = h.pod(OURS, stopped=False)
    pointer = h.pointer("a", pod)
    assert cleanup_pointer(PointerCleanup(pointer, mode="preserve"), h.deps()) == 0
    assert h.cloud.pod(pod).status == "RUNNING"
    assert cleanup_pointer(PointerCleanup(pointer, mode="stop"), h.deps()) == 0
    assert h.cloud.pod(pod).status == "EXITED" and pointer.exists()
    assert f"cleanup --state-file {pointer} --pod-id {pod} --mode delete" in caplog.text


def test_a_failed_delete_keeps_the_pointer_and_says_so(h: PodToolsHarness) -> None:
    pod = h.pod(OURS)
    pointer = h.pointer("a", pod)
    h.cloud.fail_next("terminate_pod", Transient("502 bad gateway"))
    with pytest.raises(PortError, match=f"delete of pod {pod} failed: 502"):
        cleanup_pointer(PointerCleanup(pointer), h.deps())
    assert pointer.exists()


def test_missing_state_file_is_nothing_to_do_and_garbage_is_a_usage_error(
    h: PodToolsHarness,
) -> None:
    assert cleanup_pointer(PointerCleanup(h.root / "none.json"), h.deps()) == 0
    bad = h.root / "bad.json"
    bad.write_text("{not json")
    with pytest.raises(UsageError, match="not a JSON pod pointer"):
        cleanup_pointer(PointerCleanup(bad), h.deps())
    bad.write_text('{"gpu_id": "x"}')
    with pytest.raises(UsageError, match="names no pod"):
        cleanup_pointer(PointerCleanup(bad), h.deps())


def test_the_pointer_is_not_unlinked_when_it_names_another_pod_by_then(h: PodToolsHarness) -> None:
    pod = h.pod(OURS)
    pointer = h.pointer("a", pod)
    other = h.pod(OURS)

    original = h.cloud.terminate_pod

    def terminate_and_rewrite(pod_id: str) -> None:
        original(pod_id)
        pointer.write_text(json.dumps({"pod_id": other, "provider": "local"}))  # a new run

    h.cloud.terminate_pod = terminate_and_rewrite  # type: ignore[method-assign]
    assert cleanup_pointer(PointerCleanup(pointer), h.deps()) == 0
    assert json.loads(pointer.read_text())["pod_id"] == other


# --- --all-stopped -------------------------------------------------------------------------


def _bulk(**kw: object) -> BulkCleanup:
    return BulkCleanup(provider="local", **kw)  # type: ignore[arg-type]


def test_bulk_touches_only_our_stopped_pods_and_asks_first(h: PodToolsHarness) -> None:
    mine = h.pod(OURS)
    older_mine = h.pod("job-20250101T000000.000000Z-aaaa")  # an earlier run, pointer overwritten
    theirs = h.pod("colleague-experiment")
    running = h.pod(OURS, stopped=False)
    pointer = h.pointer("a", mine)
    h.answer = "y\n"
    assert cleanup_all_stopped(_bulk(), h.deps()) == 0
    assert h.live_ids() == {theirs, running}
    assert older_mine not in h.live_ids()
    assert not pointer.exists()
    assert h.prompts and "[y/N]" in h.prompts[0]
    assert h.lines[0].split()[0] == "POD_ID" and h.lines[-1].startswith("TOTAL")


@pytest.mark.parametrize("answer", ["n\n", "\n", None, "nope\n"])
def test_anything_but_yes_aborts_with_exit_1_and_deletes_nothing(
    h: PodToolsHarness, answer: str | None
) -> None:
    pod = h.pod(OURS)
    h.pointer("a", pod)
    h.answer = answer
    assert cleanup_all_stopped(_bulk(), h.deps()) == 1
    assert pod in h.live_ids()


def test_yes_skips_the_prompt_and_dry_run_deletes_nothing(h: PodToolsHarness) -> None:
    pod = h.pod(OURS)
    h.pointer("a", pod)
    assert cleanup_all_stopped(_bulk(dry_run=True), h.deps()) == 0
    assert pod in h.live_ids() and h.prompts == []
    assert cleanup_all_stopped(_bulk(yes=True), h.deps()) == 0
    assert pod not in h.live_ids() and h.prompts == []


def test_recycled_pods_are_kept_unless_asked(h: PodToolsHarness) -> None:
    warm = h.pod(f"warm-{STAMP}")
    unknown = h.pod(f"crash-{STAMP}")
    h.pointer("w", warm, prefix="warm", lifecycle="recycle")
    h.pointer("c", unknown, prefix="crash", lifecycle=None)  # no manifest: lifecycle unknown
    assert cleanup_all_stopped(_bulk(yes=True), h.deps()) == 0
    assert {warm, unknown} <= h.live_ids()
    assert cleanup_all_stopped(_bulk(yes=True, include_recycled=True), h.deps()) == 0
    assert not ({warm, unknown} & h.live_ids())


def test_name_prefix_and_all_owners(h: PodToolsHarness) -> None:
    team = h.pod("team-x-run-1")
    other = h.pod("someone-else")
    assert cleanup_all_stopped(_bulk(yes=True), h.deps()) == 0  # no owner marker: nothing
    assert {team, other} <= h.live_ids()
    assert cleanup_all_stopped(_bulk(yes=True, name_prefixes=("team-x-",)), h.deps()) == 0
    assert team not in h.live_ids() and other in h.live_ids()
    assert cleanup_all_stopped(_bulk(yes=True, all_owners=True), h.deps()) == 0
    assert other not in h.live_ids()


def test_one_failed_delete_does_not_stop_the_rest_and_exits_4(h: PodToolsHarness) -> None:
    first = h.pod(OURS)
    second = h.pod(OURS)
    h.pointer("a", first)
    h.cloud.fail_next("terminate_pod", Transient("500 internal"))
    # 4, not 0.8.4's 2: that is the usage error's code (docs/runpod-deploy/cli-reference.md)
    assert cleanup_all_stopped(_bulk(yes=True), h.deps()) == 4
    assert first in h.live_ids() and second not in h.live_ids()


# --- ls-stale ------------------------------------------------------------------------------


def test_ls_stale_lists_stopped_pods_with_age_from_the_stop_and_dangling_pointers(
    h: PodToolsHarness,
) -> None:
    old = h.pod(OURS, gb=50)
    h.clock.advance(2 * 86400 + 3 * 3600)
    h.pod("fresh", gb=10)
    h.pod("running", stopped=False)
    h.pointer("gone", "vanished-pod")
    assert list_stale(provider="local", output="table", deps=h.deps()) == 0
    rows = {line.split()[0]: line.split() for line in h.lines if line.strip()}
    assert rows[old][2:5] == ["EXITED", "50", "2d03h"]
    assert rows["TOTAL"][:6] == ["TOTAL", "2", "stopped,", "1", "running", "80"]
    # Running pods are listed too (issue 7 item 7): all three, each with its release command.
    assert len([r for r in rows if r.startswith("fakepod")]) == 3
    releases = [line for line in h.lines if line.startswith("release ")]
    assert len(releases) == 3 and all("--pod-id fakepod" in line for line in releases)
    assert any("vanished-pod" in line for line in h.lines)


def test_ls_stale_json(h: PodToolsHarness) -> None:
    pod = h.pod(OURS, gb=30)
    h.pointer("a", pod)
    h.clouds["runpod"] = h.clouds.pop("fake")
    h.pod("rp", gb=30, cloud="runpod")
    assert list_stale(provider="runpod", output="json", deps=h.deps()) == 0
    data = json.loads(h.lines[0])
    assert data["total"] == {"pods": 1, "volume_gb": 30, "usd_per_day": 0.2, "usd_per_month": 6.0}
    assert data["pods"][0]["state_file"] is None and data["dangling_pointers"] == []


# --- the CLI -------------------------------------------------------------------------------


def _cli(
    h: PodToolsHarness, args: list[str], capsys: pytest.CaptureFixture[str]
) -> tuple[int, str, str]:
    with container_overrides(h), pytest.raises(SystemExit) as stop:
        main(args)
    out, err = capsys.readouterr()
    return int(stop.value.code or 0), out, err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["cleanup"], "exactly one of --state-file, --config, --pod-id or --all-stopped"),
        (["cleanup", "--state-file", "x", "--all-stopped"], "got --state-file, --all-stopped"),
        (["cleanup", "--all-stopped", "--mode", "stop"], "--all-stopped only deletes"),
        (["cleanup", "--state-file", "x", "--all-owners"], "--all-owners goes with"),
        (["cleanup", "--state-file", "x", "--var", "a=b"], "--var and --vars-file go with"),
        (["cleanup", "--all-stopped", "--provider", "runpod"], "--provider runpod: "),
        (["ls-stale"], "--provider runpod: "),
    ],
)
def test_cli_errors_are_one_line_exit_2(
    h: PodToolsHarness, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, out, err = _cli(h, args, capsys)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("runpod-deploy: ") and message in err
    assert "Traceback" not in err


def test_cli_cleanup_state_file_and_ls_stale(
    h: PodToolsHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    pod = h.pod(OURS)
    pointer = h.pointer("a", pod)
    code, out, _ = _cli(h, ["ls-stale", "--provider", "local"], capsys)
    assert code == 0 and pod in out
    code, out, err = _cli(h, ["cleanup", "--state-file", str(pointer)], capsys)
    assert code == 0 and out == "" and f"pod {pod} deleted" in err
    code, out, err = _cli(h, ["ls-stale", "--provider", "local"], capsys)
    assert code == 0 and out == "" and "no pods left" in err


def test_cli_bulk_reads_the_answer_from_stdin(
    h: PodToolsHarness, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    pod = h.pod(OURS)
    h.pointer("a", pod)
    monkeypatch.setattr("sys.stdin", io.StringIO("n\n"))
    code, out, err = _cli(h, ["cleanup", "--all-stopped", "--provider", "local"], capsys)
    assert code == 1 and pod in out and "[y/N]" in err and "aborted" in err
    assert pod in h.live_ids()
    monkeypatch.setattr("sys.stdin", io.StringIO("yes\n"))
    code, out, err = _cli(h, ["cleanup", "--all-stopped", "--provider", "local"], capsys)
    assert code == 0 and pod not in h.live_ids()


def test_cli_partial_bulk_failure_has_its_own_code_not_the_usage_error_s(
    h: PodToolsHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    failing, deleted = h.pod(OURS), h.pod(OURS)
    h.pointer("a", failing)
    h.cloud.fail_next("terminate_pod", Transient("500 internal"))
    code, out, err = _cli(h, ["cleanup", "--all-stopped", "--yes", "--provider", "local"], capsys)
    assert failing in out and deleted in out  # the table of what it deletes
    assert code == 4 and "1 delete(s) failed" in err and "Traceback" not in err
    assert failing in h.live_ids() and deleted not in h.live_ids()


def test_cli_cleanup_finds_the_state_file_through_the_config(
    h: PodToolsHarness, capsys: pytest.CaptureFixture[str]
) -> None:
    data = yaml.safe_load(BASE_CONFIG)  # state_file: "{config_dir}/state.json"
    data["state_file"] = "{config_dir}/{job_name}-{flavour}.json"
    data["variables"] = {"flavour": "plain"}
    config = h.root / "job.yaml"
    config.write_text(yaml.safe_dump(data))
    pod = h.pod(OURS)
    pointer = h.root / "fakejob-spicy.json"
    pointer.write_text(json.dumps({"pod_id": pod, "provider": "local"}))
    code, _, err = _cli(h, ["cleanup", "--config", str(config), "--dry-run"], capsys)
    assert code == 0 and "nothing to clean up" in err  # fakejob-plain.json: no such file
    code, _, err = _cli(h, ["cleanup", "--config", str(config), "--var", "flavour=spicy"], capsys)
    assert code == 0, err
    assert pod not in h.live_ids() and not pointer.exists()


def test_a_pointer_of_a_run_killed_before_create_is_offered_for_removal(
    h: PodToolsHarness, caplog: pytest.LogCaptureFixture
) -> None:
    from pegboard.app.runpod_deploy.state_paths import state_paths

    runs = state_paths(str(h.home), {}).directory / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    intent = runs / f"{STAMP}.json"
    intent.write_text(json.dumps({"pod_id": None, "pod_name": OURS, "provider": "local"}))
    kept = h.pointer("kept", h.pod(OURS + "x"))  # a pointer whose pod exists: not dangling
    caplog.set_level("INFO")
    assert list_stale(provider="local", output="table", deps=h.deps()) == 0
    assert any(str(intent) in line and "never created" in line for line in h.lines)
    assert "cleanup --all-stopped --provider local" in caplog.text  # ls-stale says how
    h.lines.clear()
    h.answer = "n\n"
    bulk = BulkCleanup(provider="local", name_prefixes=("nothing-",))
    assert cleanup_all_stopped(bulk, h.deps()) == 0
    assert intent.exists() and any("Remove these 1 dangling" in p for p in h.prompts)
    h.answer = "y\n"
    assert cleanup_all_stopped(bulk, h.deps()) == 0
    assert not intent.exists() and kept.exists()
