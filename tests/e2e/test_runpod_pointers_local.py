"""Issue 7 items 6-9 through the installed CLI on the local provider: every pod a run creates is
listed by `ls-stale` from the moment its id exists, and the release command printed for it
removes exactly that pod, whatever else runs beside it.

The kill test stops `runpod-deploy run` at each phase boundary with the test-only kill points
(app/runpod_deploy/kill_points.py), SIGKILLs it there, then checks `ls-stale` and the release
command it prints, while a second run of the same config holds a running pod.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from helpers.deploy_cli import KILL_POINTS, KILL_TEST_CHANGES
from helpers.runpod_local import LocalDeploy


@pytest.fixture
def deploy(tmp_path: Path) -> LocalDeploy:
    return LocalDeploy(tmp_path)


def _manifest(stdout: bytes) -> dict[str, Any]:
    run_dir = Path(stdout.decode().splitlines()[0].removeprefix("RUN_DIR="))
    data: dict[str, Any] = json.loads((run_dir / "runpod_deploy_pull_manifest.json").read_text())
    return data


# Every kill point, in three tests xdist can spread (the points of each in phase order, every
# third: killed one after the other beside one other live run, as one test did all fifteen).
KILL_POINT_CHUNKS = [
    pytest.param(KILL_POINTS[i::3], id=f"every-third-from-{KILL_POINTS[i]}") for i in range(3)
]


@pytest.mark.parametrize("points", KILL_POINT_CHUNKS)
def test_sigkill_at_every_phase_boundary_leaves_a_listed_pod_with_its_own_release(
    deploy: LocalDeploy, points: tuple[str, ...]
) -> None:
    config = deploy.config("hello", **KILL_TEST_CHANGES)
    # A second run of the same config, alive with a running pod (same shared state file).
    other = deploy.start(config, stop_at="enter-monitor")
    deploy.wait_for_point(other, "enter-monitor")
    (other_pod,) = deploy.pod_ids()
    try:
        for point in points:
            before = deploy.pod_ids()
            deploy.kill_at(config, point)
            left = deploy.pod_ids() - before
            assert len(left) <= 1, point
            listed = deploy.stale_pods()
            assert deploy.pod_ids() <= set(listed), point  # every pod left is listed
            for pod_id in left:
                release = listed[pod_id]["release"]
                assert f"--pod-id {pod_id}" in release, (point, release)
                done = deploy.shell_command(release)
                assert done.returncode == 0, (point, done.stderr.decode())
                assert pod_id not in deploy.pod_ids(), point
            # Exactly that pod: the other run's pod is untouched (and was listed as running).
            assert deploy.pod_ids() == {other_pod}, point
            assert listed[other_pod]["status"] == "RUNNING", point
            if point in ("enter-lifecycle", "enter-pull", "enter-monitor"):
                assert left, point  # the pod was there when the run died
            if point in ("enter-provision", "before-create", "after-lifecycle", "enter-manifest"):
                assert not left, point
    finally:
        os.kill(other.pid, signal.SIGKILL)
        other.communicate()
    # The other run's pod is released by the command ls-stale prints for it.
    assert deploy.shell_command(deploy.stale_pods()[other_pod]["release"]).returncode == 0
    assert deploy.pod_ids() == set()
    assert deploy.stale()["pods"] == []


def test_item7_a_run_killed_during_monitor_leaves_a_running_pod_ls_stale_shows(
    deploy: LocalDeploy,
) -> None:
    deploy.kill_at(deploy.project / "hello.yaml", "enter-monitor")
    (pod_id,) = deploy.pod_ids()
    table = deploy.cli("ls-stale", "--provider", "local")
    assert table.returncode == 0
    rows = {line.split()[0]: line.split() for line in table.stdout.decode().splitlines() if line}
    assert rows[pod_id][2] == "RUNNING"
    release = next(
        line.split(": ", 1)[1]
        for line in table.stdout.decode().splitlines()
        if line.startswith(f"release {pod_id}:")
    )
    assert deploy.shell_command(release).returncode == 0
    assert deploy.pod_ids() == set()


def test_item6_each_concurrent_run_keeps_its_own_pointer_and_release_command(
    deploy: LocalDeploy,
) -> None:
    failing = deploy.project / "failing.yaml"
    procs = [deploy.start(failing) for _ in range(5)]
    results = [proc.communicate() for proc in procs]
    assert [proc.returncode for proc in procs] == [1] * 5
    manifests = [_manifest(out) for out, _ in results]
    pods = {m["pod_id"] for m in manifests}
    assert len(pods) == 5 and deploy.pod_ids() == pods
    # Five stopped pods, five pointers of their own: each listed with its own pointer.
    listed = deploy.stale_pods()
    assert set(listed) == pods
    assert len({listed[p]["state_file"] for p in pods}) == 5
    # A later run of the same config, still running, takes over the shared state file...
    later = deploy.start(failing, stop_at="enter-monitor")
    deploy.wait_for_point(later, "enter-monitor")
    try:
        (later_pod,) = deploy.pod_ids() - pods
        first = manifests[0]
        assert json.loads(Path(first["state_file"]).read_text())["pod_id"] == later_pod
        # ...so a command naming the config's state file and the first pod refuses.
        shared = deploy.cli(
            "cleanup", "--state-file", first["state_file"], "--pod-id", first["pod_id"]
        )
        assert shared.returncode == 2 and b"refusing" in shared.stderr
        assert {first["pod_id"], later_pod} <= deploy.pod_ids()
        # The release command each failed run printed removes its own pod, nothing else.
        for manifest in manifests[:2]:
            command = manifest["left_behind"].split("Release it with:")[1].split("\n")[1].strip()
            command = command.split("   (or:")[0]
            assert deploy.shell_command(command).returncode == 0
            assert manifest["pod_id"] not in deploy.pod_ids()
        assert later_pod in deploy.pod_ids()
        # The bulk cleanup knows the other three as ours, and leaves the running one alone.
        bulk = deploy.cli("cleanup", "--all-stopped", "--provider", "local", "--yes")
        assert bulk.returncode == 0, bulk.stderr.decode()
        assert b"not created by your runs" not in bulk.stderr
        assert deploy.pod_ids() == {later_pod}
    finally:
        os.kill(later.pid, signal.SIGKILL)
        later.communicate()


def _run_of(config: Path) -> dict[str, Any]:
    import yaml

    run: dict[str, Any] = yaml.safe_load(config.read_text())["run"]
    return run


def test_item8_a_name_too_long_for_a_state_file_is_refused_before_any_pod(
    deploy: LocalDeploy,
) -> None:
    config = deploy.config("hello", name="n" * 300)
    checked = deploy.cli("validate", "--config", str(config))
    assert checked.returncode == 2, checked.stderr.decode()
    assert b"name" in checked.stderr and b"255" in checked.stderr
    assert b"Traceback" not in checked.stderr
    ran = deploy.cli("run", "--config", str(config))
    assert ran.returncode == 2 and b"Traceback" not in ran.stderr
    assert deploy.pod_ids() == set()


def test_item8_an_unwritable_state_directory_fails_the_run_before_create(
    deploy: LocalDeploy,
) -> None:
    if os.geteuid() == 0:
        pytest.skip("root writes into a read-only directory")
    state = deploy.home / ".local" / "state" / "runpod-deploy"
    state.mkdir(parents=True)
    state.chmod(0o500)
    try:
        ran = deploy.cli("run", "--config", str(deploy.project / "hello.yaml"))
    finally:
        state.chmod(0o700)
    assert ran.returncode == 1 and b"no pod was created" in ran.stderr
    assert deploy.pod_ids() == set()


def test_item9_a_pod_deleted_underneath_the_run_ends_it_at_once(deploy: LocalDeploy) -> None:
    body = "echo started > {volume_mount}/started; echo working; sleep 600"
    config = deploy.config(
        "failing", run={**_run_of(deploy.project / "failing.yaml"), "body": body}
    )
    proc = deploy.start(config)
    deadline = time.monotonic() + 60  # a hang guard
    while not (
        list(deploy.pods.glob("*/fs/workspace/started")) and list(deploy.pods.glob("*/procs/*"))
    ):
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.01)
    (pod_id,) = deploy.pod_ids()
    # Deleted outside the tool (its directory removed; the job's processes outlive it here, so
    # the run can only learn it from the provider, not from the script dying).
    groups = [int(p.name) for p in (deploy.pods / pod_id / "procs").iterdir()]
    # One rename is the deletion as a provider's API shows it (there or gone); the job still
    # writes into the moved tree, so removing it is best-effort.
    moved = deploy.pods.parent / f"deleted-{pod_id}"
    (deploy.pods / pod_id).rename(moved)
    shutil.rmtree(moved, ignore_errors=True)
    try:
        out, err = proc.communicate(timeout=60)
    finally:
        for group in groups:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(group, signal.SIGKILL)
    assert proc.returncode == 1
    manifest = _manifest(out)
    assert "gone" in manifest["failure_reason"] and "lost contact" not in manifest["failure_reason"]
    assert b"transient error" not in err
    assert manifest["pod_final_state"] == "TERMINATED" and manifest["left_behind"] is None
    assert not (deploy.pods / pod_id).exists()  # not recreated without its pod.json
    assert deploy.stale() == {"pods": [], "total": deploy.stale()["total"], "dangling_pointers": []}


def test_local_pointer_records_its_pods_root(deploy: LocalDeploy, tmp_path: Path) -> None:
    """Sibling: cleanup under another PEGBOARD_LOCAL_PODS_ROOT said "already gone", removed the
    pointer and leaked the pod directory."""
    ran = deploy.cli("run", "--config", str(deploy.project / "failing.yaml"), "--print-run-dir")
    manifest = _manifest(ran.stdout)
    pod_id = manifest["pod_id"]
    pointer = json.loads(Path(manifest["state_file"]).read_text())
    assert pointer["locator"]["pods_root"] == str(deploy.pods)
    deploy.env["PEGBOARD_LOCAL_PODS_ROOT"] = str(tmp_path / "elsewhere")
    done = deploy.cli("cleanup", "--state-file", manifest["state_file"], "--mode", "delete")
    assert done.returncode == 0, done.stderr.decode()
    assert b"already gone" not in done.stderr
    assert not (deploy.pods / pod_id).exists() and not Path(manifest["state_file"]).exists()
