"""How `run` and the commands after it reach the `ssh` provider (issue 9): the locator built
from the config (key or agent, the run's pinned host key file beside its pointer), the one
a pod pointer records, and the composition root's `ssh` backend built from either. No
connection is made here (the adapters connect on first use); over a real sshd that is
tests/e2e/test_runpod_ssh_*.py.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import attrs
import pytest

from helpers.runpod_configs import spec_from, with_sections
from pegboard.adapters.providers import discover_registry
from pegboard.adapters.ssh_section import pinned_host_keys_path
from pegboard.app.runpod_deploy import provider_locators
from pegboard.app.runpod_deploy.pod_pointers import PodPointer, unlink_pointer_if_names
from pegboard.domain.errors import UsageError
from pegboard.domain.gpujob.provider_plugin import LocatorContext, unstructure_locator

SSH = {"host": "gpu1.lab", "port": 2222, "user": "me", "workspaces_root": "/data/runs"}


def config_locator(
    spec: Any, *, home: str, pinned_host_keys: Path, ready_timeout_sec: float
) -> dict[str, Any]:
    """The ssh plugin's locator for `run`, as a mapping (the pod it names left out)."""
    context = LocatorContext(
        home=home,
        run_pointer=pinned_host_keys.with_suffix(".json"),
        ready_timeout_sec=ready_timeout_sec,
    )
    locator = discover_registry()["ssh"].locator_from_config(spec, context)
    return {k: v for k, v in attrs.asdict(locator).items() if k != "pod_id"}


def recorded_locator(pointer: dict[str, Any]) -> dict[str, Any]:
    return provider_locators.recorded_locator(pointer, discover_registry())


def _ssh_spec(**ssh: object) -> object:
    return spec_from(with_sections(pod={"provider": "ssh"}, ssh={**SSH, **ssh}))


def test_the_config_locator_names_host_key_and_the_runs_pinned_host_keys(tmp_path: Path) -> None:
    pinned = pinned_host_keys_path(tmp_path / "state" / "runs" / "20260101T000000Z-ab.json")
    assert pinned == tmp_path / "state" / "runs" / "20260101T000000Z-ab.known_hosts"
    locator = config_locator(
        _ssh_spec(key_path="~/keys/lab"),  # type: ignore[arg-type]
        home=str(tmp_path),
        pinned_host_keys=pinned,
        ready_timeout_sec=900,
    )
    assert locator == {
        "host": "gpu1.lab",
        "port": 2222,
        "user": "me",
        "workspaces_root": "/data/runs",
        "key_path": f"{tmp_path}/keys/lab",
        "use_agent": False,
        "known_hosts": str(pinned),
        "connect_timeout": 10.0,
    }


def test_the_connect_timeout_never_exceeds_the_ready_timeout(tmp_path: Path) -> None:
    locator = config_locator(
        _ssh_spec(),  # type: ignore[arg-type]
        home=str(tmp_path),
        pinned_host_keys=tmp_path / "k",
        ready_timeout_sec=2,
    )
    assert locator["connect_timeout"] == 2.0


@pytest.mark.parametrize(
    ("ssh", "default_key_exists", "expected"),
    [
        ({"use_agent": True}, False, None),  # the agent alone
        ({"use_agent": True}, True, "{home}/.ssh/id_ed25519"),  # the key and the agent
        ({}, False, "{home}/.ssh/id_ed25519"),  # no agent: a missing key is an error later
        ({"use_agent": True, "key_path": "/k/named"}, False, "/k/named"),  # named: kept
    ],
)
def test_key_path_is_none_only_for_the_agent_without_the_default_key(
    tmp_path: Path, ssh: dict[str, object], default_key_exists: bool, expected: str | None
) -> None:
    if default_key_exists:
        (tmp_path / ".ssh").mkdir()
        (tmp_path / ".ssh" / "id_ed25519").write_text("key")
    locator = config_locator(
        _ssh_spec(**ssh),  # type: ignore[arg-type]
        home=str(tmp_path),
        pinned_host_keys=tmp_path / "k",
        ready_timeout_sec=900,
    )
    assert locator["key_path"] == (None if expected is None else expected.format(home=tmp_path))


def test_a_pointer_gives_back_its_locator_with_the_pod_it_names() -> None:
    pointer = {"pod_id": "ssh-1", "provider": "ssh", "locator": {"host": "h", "port": 22}}
    assert recorded_locator(pointer) == {"host": "h", "port": 22, "pod_id": "ssh-1"}
    legacy = {"pod_id": "local-1", "provider": "local", "pods_root": "/p"}
    assert recorded_locator(legacy) == {"pods_root": "/p", "pod_id": "local-1"}
    assert recorded_locator({"pod_id": "x", "provider": "runpod"}) == {}


def test_the_ssh_backend_is_built_from_a_locator_and_records_what_reaches_it_again(
    tmp_path: Path,
) -> None:
    from pegboard.app.runpod_deploy.container import current_container

    backend_at = current_container().backend_at()
    locator = {
        **SSH,
        "key_path": "/k/id",
        "use_agent": False,
        "known_hosts": str(tmp_path / "pins"),
        "connect_timeout": 3.0,
        "pod_id": "ssh-abc",
    }
    backend = backend_at("ssh", locator)
    try:
        assert backend.cloud.provider == "ssh"
        assert unstructure_locator(backend.locator) == {
            "host": "gpu1.lab",
            "port": 2222,
            "user": "me",
            "key_path": "/k/id",
            "use_agent": False,
            "workspaces_root": "/data/runs",
            "known_hosts": str(tmp_path / "pins"),
        }
        json.dumps(unstructure_locator(backend.locator))  # recorded as is in a pointer
    finally:
        backend.close()


def test_the_ssh_provider_without_a_host_is_one_usage_line() -> None:
    from pegboard.app.runpod_deploy.container import current_container

    with pytest.raises(UsageError, match=r"^pod.provider ssh: no host to reach"):
        current_container().backend_for()("ssh")


def test_removing_a_run_pointer_removes_its_pinned_host_keys_only(tmp_path: Path) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    pointer_path = runs / "stamp.json"
    pins = pinned_host_keys_path(pointer_path)
    pins.write_text("[h]:22 ssh-ed25519 AAAA\n")
    other = tmp_path / "elsewhere.known_hosts"  # named by nobody as its own pin
    other.write_text("keep\n")
    data = {"pod_id": "ssh-1", "provider": "ssh", "locator": {"known_hosts": str(pins)}}
    pointer_path.write_text(json.dumps(data))
    assert PodPointer(pointer_path).remove_if_points_at("ssh-1")
    assert not pointer_path.exists() and not pins.exists()

    config_pointer = tmp_path / "state.json"  # the config's state file names the run's pin
    config_pointer.write_text(json.dumps({**data, "locator": {"known_hosts": str(other)}}))
    assert unlink_pointer_if_names(config_pointer, "ssh-1")
    assert other.exists()


def test_places_are_one_per_host_whatever_the_runs_pinned_key_files() -> None:
    from pegboard.app.runpod_deploy.recorded_places import recorded_locators

    def pointer(pod: str, host: str, pins: str) -> dict[str, object]:
        return {
            "pod_id": pod,
            "provider": "ssh",
            "locator": {"host": host, "port": 22, "user": "me", "known_hosts": pins},
        }

    pointers = {
        "a.json": pointer("ssh-1", "gpu1", "/s/a.known_hosts"),
        "b.json": pointer("ssh-2", "gpu1", "/s/b.known_hosts"),
        "c.json": pointer("ssh-3", "gpu2", "/s/c.known_hosts"),
        "d.json": {"pod_id": "rp-1", "provider": "runpod"},
    }
    places = recorded_locators(pointers, "ssh", discover_registry())
    assert [(p["host"], p["known_hosts"]) for p in places] == [
        ("gpu1", "/s/a.known_hosts"),
        ("gpu2", "/s/c.known_hosts"),
    ]
    assert all("pod_id" not in p for p in places)
    assert recorded_locators(pointers, "runpod", discover_registry()) == []
