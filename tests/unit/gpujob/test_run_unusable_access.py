"""`run` with access no retry can fix (issue 17 items 2 and 10): no usable SSH key or no API
key is a usage error before anything is recorded or created; a key the pod refuses, or a host
key that changed, ends the ready wait at once and the pod goes per on_failure (recorded)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from helpers.gpujob_run import RunHarness
from helpers.runpod_container import container_with
from helpers.ssh_keys import install_ssh_key
from pegboard.app.runpod_deploy.run_types import Backend
from pegboard.domain.errors import Unauthorized, UsageError
from pegboard.domain.ports.remote_shell import HostKeyRejected


def test_an_unusable_backend_stops_the_run_before_anything_exists(tmp_path: Path) -> None:
    h = RunHarness(tmp_path)

    def refuse() -> None:
        raise UsageError("ssh.key_path: ssh key not found: /nowhere")

    backend = Backend(
        cloud=h.cloud, open_shell=h.open_shell, open_sync=lambda s: h.sync, check_usable=refuse
    )
    with pytest.raises(UsageError, match=r"ssh\.key_path"):
        h.run(deps={"backend_for": lambda provider: backend})
    assert h.cloud.pods == {} and h.cloud.calls == []
    assert h.lines == []  # not even RUN_DIR=: no run directory, no record
    assert not (h.root / "home" / ".local").exists() and h.pointer() is None


@pytest.mark.parametrize(
    "error",
    [
        Unauthorized("ssh to root@10.0.0.1:22: authentication refused for key /k"),
        HostKeyRejected("host key of pod p changed"),
    ],
    ids=["refused-key", "changed-host-key"],
)
def test_a_refusal_ends_the_ready_wait_at_once_and_on_failure_runs(
    tmp_path: Path, error: Exception
) -> None:
    h = RunHarness(tmp_path)  # ssh_ready_timeout_sec: 300; on_failure: stop

    def open_shell(status: Any) -> Any:
        raise error

    started = h.clock.monotonic()
    result = h.run(
        deps={
            "backend_for": lambda provider: Backend(
                cloud=h.cloud, open_shell=open_shell, open_sync=lambda s: h.sync
            )
        }
    )
    assert h.clock.monotonic() - started < 30  # not the 300 s ready timeout
    manifest = h.manifest(result)
    assert result.exit_code == 1 and manifest["failure_phase"] == "ready"
    assert str(error) in manifest["failure_reason"] and "no retry" in manifest["failure_reason"]
    assert manifest["lifecycle_action"] == "stop" and manifest["pod_final_state"] == "EXITED"
    h.assert_nothing_unaccounted(manifest)  # the stopped pod is named, with its release


def _runpod_backend(environ: dict[str, str], home: str, locator: dict[str, Any]) -> Backend:
    """The runpod plugin's backend, as the container builds it at a pointer's locator."""
    return container_with(environ=environ, home=home).backend_at()("runpod", locator)


def _ssh_backend(locator: dict[str, Any]) -> Backend:
    return container_with(environ={}, home="/nonexistent").backend_at()("ssh", locator)


def test_the_runpod_backend_needs_an_api_key_and_a_usable_ssh_key(tmp_path: Path) -> None:
    home = tmp_path / "home"
    key = str(home / ".ssh" / "id_ed25519")
    no_api_key = _runpod_backend({}, str(home), {"key_path": key})
    with pytest.raises(UsageError, match="RUNPOD_API_KEY"):
        no_api_key.check_usable()
    no_ssh_key = _runpod_backend({"RUNPOD_API_KEY": "k"}, str(home), {"key_path": key})
    with pytest.raises(UsageError, match=r"ssh\.key_path: ssh key not found"):
        no_ssh_key.check_usable()
    install_ssh_key(home)
    _runpod_backend({"RUNPOD_API_KEY": "k"}, str(home), {"key_path": key}).check_usable()


def test_the_ssh_backend_needs_a_usable_ssh_key(tmp_path: Path) -> None:
    locator = {
        "host": "127.0.0.1",
        "known_hosts": str(tmp_path / "known_hosts"),
        "key_path": str(tmp_path / "id_ed25519"),
    }
    with pytest.raises(UsageError, match=r"ssh\.key_path: ssh key not found"):
        _ssh_backend(locator).check_usable()
    install_ssh_key(tmp_path, Path("id_ed25519"))
    _ssh_backend(locator).check_usable()


def _recording_backend(h: RunHarness, seen: list[str]) -> Backend:
    create = h.cloud.create_pod

    def create_pod(request: Any) -> Any:
        seen.append("create")
        return create(request)

    h.cloud.create_pod = create_pod  # type: ignore[method-assign]
    return Backend(
        cloud=h.cloud,
        open_shell=h.open_shell,
        open_sync=lambda s: h.sync,
        warm_up=lambda: seen.append("warm_up"),
        close=lambda: seen.append("close"),
    )


@pytest.mark.parametrize("dry_run", [False, True], ids=["run", "dry-run"])
def test_a_run_warms_its_backend_up_before_create_and_a_dry_run_never(
    tmp_path: Path, dry_run: bool
) -> None:
    h = RunHarness(tmp_path)
    seen: list[str] = []
    backend = _recording_backend(h, seen)
    h.run(dry_run=dry_run, deps={"backend_for": lambda provider: backend})
    assert seen == (["close"] if dry_run else ["warm_up", "create", "close"])


def test_a_run_that_stops_before_create_closes_its_warmed_up_backend(tmp_path: Path) -> None:
    h = RunHarness(tmp_path, config={"local": {"required_paths": ["not-there"]}})
    seen: list[str] = []
    backend = _recording_backend(h, seen)
    result = h.run(deps={"backend_for": lambda provider: backend})
    assert result.exit_code == 1
    assert "required local path" in h.manifest(result)["failure_reason"]
    assert seen == ["warm_up", "close"]
