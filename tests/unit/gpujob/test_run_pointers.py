"""Issue 7 items 6, 8, 9 in the use case (fakes): a pointer of its own per run, written before
create; release commands that can only touch their pod; local writes proven before create; a
pod deleted underneath a run noticed at once and recorded as gone."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from helpers.gpujob_run import RunHarness
from helpers.pod_tools import PodToolsHarness
from helpers.runpod_configs import MINIMAL_YAML
from pegboard.adapters.fakes import FakeClock, FakeJob
from pegboard.adapters.providers import discover_registry
from pegboard.adapters.yaml_documents import read_yaml_document
from pegboard.app.runpod_deploy.job_loading import load_job
from pegboard.app.runpod_deploy.phases import job_paths, monitor
from pegboard.app.runpod_deploy.pod_release import PointerCleanup, cleanup_pointer
from pegboard.app.runpod_deploy.run_recorder import write_json_atomic
from pegboard.app.runpod_deploy.run_types import PhaseFailed, Timing
from pegboard.app.runpod_deploy.state_paths import state_paths
from pegboard.domain.errors import ConfigError, NotFound, Transient, UsageError
from pegboard.domain.gpujob.plan import RunBudget
from pegboard.domain.gpujob.provider_plugin import unstructure_locator

NEW_YEAR = datetime(2026, 1, 1, tzinfo=UTC)
GOOD_JOB = FakeJob(output=[(0.0, b"training\n"), (1.0, b"ALL_DONE\n")], exit_code=0)
FAILING_JOB = FakeJob(output=[(0.0, b"boom\n")], exit_code=3)


def _run_pointers(h: RunHarness) -> dict[str, dict[str, Any]]:
    directory = h.root / "home" / ".local" / "state" / "runpod-deploy" / "runs"
    return {str(p): json.loads(p.read_text()) for p in sorted(directory.glob("*.json"))}


def test_item6_every_run_has_its_own_pointer_and_release_command(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    hexes = iter(["aaaa01", "aaaa02"])
    h.host.script_job(FAILING_JOB)
    failed = h.run(deps={"random_hex": lambda: next(hexes)})
    first = h.manifest(failed)
    assert failed.exit_code == 1 and first["lifecycle_action"] == "stop"
    h.host.script_job(GOOD_JOB)
    h.host.put("/workspace/out/result.json", b"{}")
    succeeded = h.run(deps={"random_hex": lambda: next(hexes)})
    assert succeeded.exit_code == 0
    # The successful run removed only its own pointers: the failed run's pod is still named.
    (path, pointer), *others = _run_pointers(h).items()
    assert others == [] and pointer["pod_id"] == first["pod_id"]
    assert pointer["lifecycle_action"] == "stop" and pointer["run_dir"] == first["run_dir"]
    assert f"--state-file {path} --pod-id {first['pod_id']} --mode delete" in first["left_behind"]


def test_item6_a_release_command_refuses_a_pointer_that_names_another_pod(
    tmp_path: Path,
) -> None:
    tools = PodToolsHarness(tmp_path)
    mine, theirs = tools.pod("job-a", stopped=True), tools.pod("job-b", stopped=False)
    shared = tools.pointer("shared", theirs)  # a later run of the config took it over
    with pytest.raises(UsageError, match=f"names pod {theirs}, not --pod-id {mine}"):
        cleanup_pointer(PointerCleanup(shared, expect_pod_id=mine), tools.deps())
    assert tools.live_ids() == {mine, theirs}
    assert cleanup_pointer(PointerCleanup(shared, expect_pod_id=theirs), tools.deps()) == 0
    assert tools.live_ids() == {mine} and not shared.exists()


def test_a_pointer_written_before_create_releases_its_pod_by_name(tmp_path: Path) -> None:
    """A crash between create and the pointer update: the pointer names the pod's unique name."""
    tools = PodToolsHarness(tmp_path)
    pod = tools.pod("job-20260517T120000.000000Z-aaaa01", stopped=False)
    other = tools.pod("job-20260517T120000.000000Z-aaaa02", stopped=False)
    intent = tools.home / "intent.json"
    name = "job-20260517T120000.000000Z-aaaa01"
    write_json_atomic(intent, {"pod_id": None, "pod_name": name, "provider": "local"})
    assert cleanup_pointer(PointerCleanup(intent, expect_pod_id=pod), tools.deps()) == 0
    assert tools.live_ids() == {other} and not intent.exists()


def test_the_run_pointer_exists_before_create(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    seen: list[dict[str, Any]] = []
    create = h.cloud.create_pod

    def spy(request: Any) -> Any:
        seen.extend(_run_pointers(h).values())
        return create(request)

    h.cloud.create_pod = spy  # type: ignore[method-assign]
    h.host.script_job(GOOD_JOB)
    h.host.put("/workspace/out/result.json", b"{}")
    assert h.run().exit_code == 0
    (intent,) = seen
    assert intent["pod_id"] is None and intent["status"] == "CREATING"
    assert intent["pod_name"].startswith("fakejob-") and intent["provider"] == "fake"
    assert _run_pointers(h) == {}  # deleted pod: both pointers gone


# --- item 8 ------------------------------------------------------------------------------------


def test_item8_a_file_name_longer_than_name_max_is_a_problem() -> None:
    from pegboard.domain.gpujob.spec_validation import local_path_problem

    assert local_path_problem("/a/" + "n" * 255) is None
    assert "256 bytes" in (local_path_problem("/a/" + "n" * 256) or "")
    assert local_path_problem("/" + "a/" * 2100) is not None


def test_item8_load_job_refuses_a_name_whose_state_file_cannot_exist(tmp_path: Path) -> None:
    h = RunHarness(tmp_path, config={"name": "n" * 300, "state_file": None})
    with pytest.raises(ConfigError) as raised:
        load_job(
            config_path=h.config_path,
            read_document=read_yaml_document,
            providers=discover_registry(),
            cli_vars={},
            home=str(tmp_path / "home"),
            now=NEW_YEAR,
            unique_suffix="abcd",
        )
    assert raised.value.problems[0].path == "name"


def test_item8_an_unwritable_state_file_fails_the_run_before_create(tmp_path: Path) -> None:
    (tmp_path / "not-a-dir").write_text("")
    h = RunHarness(tmp_path, config={"state_file": str(tmp_path / "not-a-dir" / "state.json")})
    result = h.run()
    manifest = h.manifest(result)
    assert result.exit_code == 1 and manifest["failure_phase"] == "validate"
    assert "no pod was created" in manifest["failure_reason"]
    assert h.cloud.pods == {}


# --- item 9 ------------------------------------------------------------------------------------


class _DeadShell:
    """A shell whose pod is gone: every call fails like a broken connection."""

    def follow(self, *args: Any, **kwargs: Any) -> Any:
        raise Transient("connection refused")

    def detached_status(self, **kwargs: Any) -> Any:
        raise Transient("connection refused")


def test_item9_monitor_ends_at_once_when_the_pod_is_gone(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    job = load_job(
        config_path=h.config_path,
        read_document=read_yaml_document,
        providers=discover_registry(),
        cli_vars={},
        home=str(tmp_path / "home"),
        now=NEW_YEAR,
        unique_suffix="abcd",
    ).job
    clock = FakeClock()
    with pytest.raises(PhaseFailed, match="the pod is gone"):
        monitor(
            _DeadShell(),  # type: ignore[arg-type]
            job.run,
            job_paths(job.run),
            budget=RunBudget(
                started_at=0.0,
                cost_cap_usd=100.0,
                price_per_hour_usd=1.0,
                price_source="assumed_rate",
                max_runtime_sec=None,
            ),
            clock=clock,
            timing=Timing(),
            job_output=lambda _b: None,
            emit=lambda *a, **k: None,
            pod_gone=lambda: True,
        )
    assert clock.monotonic() < 1.0  # not after lost_contact_after_sec (120 s)


def test_item9_a_pod_gone_at_the_lifecycle_is_terminated_not_still_there(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    h.host.script_job(FAILING_JOB)
    h.cloud.fail_next("stop_pod", NotFound("no such pod"))
    result = h.run()
    manifest = h.manifest(result)
    assert result.exit_code == 1
    assert manifest["pod_final_state"] == "TERMINATED" and manifest["left_behind"] is None
    assert _run_pointers(h) == {} and h.pointer() is None


def test_proving_a_pointer_writable_never_touches_the_pointer(tmp_path: Path) -> None:
    """Sibling: probing the config's state file itself raced a concurrent run of the same
    config (the probe's unlink removed the pointer that run had just written)."""
    from pegboard.app.runpod_deploy.run_recorder import prove_writable

    target = tmp_path / "state" / "job.json"
    prove_writable(target)
    assert not target.exists() and list(target.parent.iterdir()) == []
    write_json_atomic(target, {"pod_id": "p"})
    prove_writable(target)
    assert json.loads(target.read_text()) == {"pod_id": "p"}
    with pytest.raises(OSError):
        prove_writable(tmp_path / "state" / ("n" * 256))


def test_a_local_pointer_is_cleaned_up_under_the_pods_root_it_records(tmp_path: Path) -> None:
    """Sibling: the local provider's pointer did not record its pods root, so cleanup under
    another PEGBOARD_LOCAL_PODS_ROOT said "already gone", dropped the pointer, leaked the pod."""
    from dependency_injector import providers

    from pegboard.app.runpod_deploy.container import current_container

    asked: list[str] = []

    def backend_for(provider: str) -> Any:
        asked.append(provider)
        raise AssertionError("the recorded pods root must win")

    with current_container().backend_for.override(providers.Object(backend_for)):
        backend_at = current_container().backend_at()
        backend = backend_at("local", {"pods_root": str(tmp_path / "recorded")})
    assert backend.cloud.pods_root == tmp_path / "recorded"  # type: ignore[attr-defined]
    assert unstructure_locator(backend.locator) == {"pods_root": str(tmp_path / "recorded")}
    assert asked == []


def test_the_run_records_the_backend_locator_in_both_pointers(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    h.host.script_job(FAILING_JOB)
    from pegboard.adapters.providers.local import LocalLocator
    from pegboard.app.runpod_deploy.run_types import Backend

    result = h.run(
        deps={
            "backend_for": lambda provider: Backend(
                cloud=h.cloud,
                open_shell=h.open_shell,
                open_sync=lambda s: h.sync,
                locator=LocalLocator(pods_root="/somewhere"),
            )
        }
    )
    assert result.exit_code == 1
    (run_pointer,) = _run_pointers(h).values()
    config_pointer = h.pointer()
    assert config_pointer is not None
    for pointer in (run_pointer, config_pointer):
        assert pointer["locator"] == {"pods_root": "/somewhere"}
        assert pointer["lifecycle_action"] == "stop"


def test_the_084_single_state_file_is_still_read(tmp_path: Path) -> None:
    """0.8.4 kept one pointer for every config at ~/.runpod-deploy-current: ls-stale and bulk
    cleanup must still see the pod it names."""
    from pegboard.app.runpod_deploy.pod_pointers import user_pointers

    home = tmp_path / "home"
    home.mkdir()
    legacy = home / ".runpod-deploy-current"
    legacy.write_text(json.dumps({"pod_id": "abc", "gpu_id": "G", "image": "i"}))
    assert user_pointers(state_paths(str(home), {})) == {
        str(legacy): json.loads(legacy.read_text())
    }


# --- XDG (issue 12 item 14) ---------------------------------------------------------------------


def test_state_follows_xdg_state_home(tmp_path: Path) -> None:
    home = str(tmp_path / "home")
    default = state_paths(home, {})
    assert default.directory == tmp_path / "home" / ".local" / "state" / "runpod-deploy"
    assert state_paths(home, {"XDG_STATE_HOME": "/xdg"}).directory == Path("/xdg/runpod-deploy")
    assert state_paths(home, {"XDG_STATE_HOME": "relative"}).directory == default.directory
    h = RunHarness(tmp_path, config={"lifecycle": {"on_success": "stop", "on_failure": "stop"}})
    h.host.script_job(GOOD_JOB)
    h.host.put("/workspace/out/result.json", b"{}")
    result = h.run(deps={"environ": {"XDG_STATE_HOME": str(tmp_path / "xdg")}})
    runs = tmp_path / "xdg" / "runpod-deploy" / "runs"
    # the run's own pointer (the harness's config names its own state_file)
    assert result.exit_code == 0 and [p.name for p in runs.iterdir()] == [
        f"{Path(result.run_dir or '').name}.json"
    ]


def test_state_files_of_earlier_releases_are_still_read(tmp_path: Path) -> None:
    """~/.runpod-deploy/state/ (pegboard before XDG): listed by ls-stale and bulk cleanup, and a
    config's default state file there is the one its next run uses (recycle, logs --config)."""
    from pegboard.app.runpod_deploy.pod_pointers import user_pointers

    home = tmp_path / "home"
    old_runs = home / ".runpod-deploy" / "state" / "runs"
    old_runs.mkdir(parents=True)
    (old_runs / "20260101T000000Z-aa.json").write_text(json.dumps({"pod_id": "old-run"}))
    assert [d["pod_id"] for d in user_pointers(state_paths(str(home), {})).values()] == ["old-run"]
    config = tmp_path / "job.yaml"
    config.write_text(MINIMAL_YAML)
    fresh = _load(config, home)
    assert fresh.job.state_file.startswith(str(home / ".local" / "state" / "runpod-deploy"))
    old = home / ".runpod-deploy" / "state" / Path(fresh.job.state_file).name
    old.write_text(json.dumps({"pod_id": "kept-for-recycle"}))
    assert _load(config, home).job.state_file == str(old)


def _load(config: Path, home: Path) -> Any:
    return load_job(
        config_path=config,
        read_document=read_yaml_document,
        providers=discover_registry(),
        cli_vars={},
        home=str(home),
        now=NEW_YEAR,
        unique_suffix="abcd",
    )


def test_a_pointer_written_before_create_goes_when_no_pod_was_made(tmp_path: Path) -> None:
    from pegboard.domain.ports.gpu_cloud import NoCapacity

    h = RunHarness(tmp_path)
    for _ in range(4):
        h.cloud.fail_create(error=NoCapacity("none left"))
    result = h.run()
    assert result.exit_code == 1 and h.cloud.pods == {}
    assert _run_pointers(h) == {}


def test_a_pointer_written_before_create_stays_when_a_pod_may_exist(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)
    from pegboard.domain.ports.gpu_cloud import CreateOutcomeUnknown, NoCapacity

    h.cloud.fail_create(error=CreateOutcomeUnknown("502"))
    for _ in range(3):
        h.cloud.fail_create(error=NoCapacity("none"))
    h.cloud.fail_next("find_pods", Transient("lookup failed"), times=1000)  # never answers
    result = h.run()
    assert result.exit_code == 1
    assert [c[0] for c in h.cloud.calls].count("create_pod") == 1  # nothing else made
    (pointer,) = _run_pointers(h).values()
    assert pointer["pod_id"] is None and pointer["pod_name"].startswith("fakejob-")


def test_local_pods_follow_the_same_xdg_rule() -> None:
    from helpers.runpod_container import container_with

    def pods_root(environ: dict[str, str]) -> Path:
        container = container_with(environ={"HOME": "/h", **environ})
        return Path(container.backend_for()("local").locator.pods_root)

    assert pods_root({}) == Path("/h/.local/share/pegboard/local-pods")
    assert pods_root({"XDG_DATA_HOME": "/d"}) == Path("/d/pegboard/local-pods")
    assert pods_root({"XDG_DATA_HOME": "relative"}) == Path("/h/.local/share/pegboard/local-pods")
    assert pods_root({"PEGBOARD_LOCAL_PODS_ROOT": "/p", "XDG_DATA_HOME": "/d"}) == Path("/p")


@pytest.mark.parametrize(
    ("job", "expected", "not_expected"),
    [
        (GOOD_JOB, "stopped (lifecycle.on_success: stop)", "forensics"),
        (FAILING_JOB, "stopped for forensics", "on_success"),
    ],
    ids=["success", "failure"],
)
def test_the_stop_note_says_why_the_pod_was_stopped(
    tmp_path: Path, job: Any, expected: str, not_expected: str
) -> None:
    h = RunHarness(tmp_path, config={"lifecycle": {"on_success": "stop", "on_failure": "stop"}})
    h.host.script_job(job)
    h.host.put("/workspace/out/result.json", b"{}")
    manifest = h.manifest(h.run())
    assert expected in manifest["left_behind"] and not_expected not in manifest["left_behind"]
