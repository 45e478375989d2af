"""Where a provider's pods are reached: the locator `run` builds from its config, and the one a
pod pointer recorded for the commands after it (`cleanup`, `logs`, `ls-stale`).

A locator is a flat JSON object handed to the composition root with the provider's name; each
provider reads the keys it needs and ignores the rest:

- every provider that reaches its pods over SSH: `key_path` (None: the agent's keys only),
  `use_agent`, `known_hosts` (the pinned host key file, beside the run's pointer) and
  `connect_timeout` (never longer than the ready timeout);
- `ssh`: also `host`, `port`, `user`, `workspaces_root`;
- `local`: `pods_root`, as its backend recorded it;
- from a pointer: `pod_id`, so a changed host key is refused naming the pod.

The Backend built from a locator says which of these keys it needs again later
(`Backend.locator`), and the run records exactly that in its pointers.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pegboard.domain.gpujob.spec import JobSpec, Provider, SshSpec
from pegboard.domain.gpujob.stale import pointer_pod_id

LOCATOR_KEY = "locator"  # where a pointer keeps its backend's locator
PINNED_HOST_KEYS_SUFFIX = ".known_hosts"
MAX_CONNECT_TIMEOUT_SEC = 10.0


def pinned_host_keys_path(run_pointer: Path) -> Path:
    """The run's pinned host key file: beside its pointer, `<state dir>/runs/<stamp>.known_hosts`."""
    return run_pointer.with_suffix(PINNED_HOST_KEYS_SUFFIX)


def config_locator(
    spec: JobSpec, *, home: str, pinned_host_keys: Path, ready_timeout_sec: float
) -> dict[str, Any]:
    """What the config says about reaching its pods (the `ssh:` section), for `run`."""
    ssh = spec.ssh
    locator: dict[str, Any] = {
        "key_path": configured_key_path(ssh, home),
        "use_agent": ssh.use_agent,
        "known_hosts": str(pinned_host_keys),
        "connect_timeout": min(MAX_CONNECT_TIMEOUT_SEC, float(ready_timeout_sec)),
    }
    if spec.pod.provider is Provider.SSH:
        locator.update(
            host=ssh.host, port=ssh.port, user=ssh.user, workspaces_root=ssh.workspaces_root
        )
    return locator


def recorded_locator(pointer: Mapping[str, Any]) -> dict[str, Any]:
    """The locator a pod pointer recorded, with the pod it names (older pointers of the local
    provider kept `pods_root` at the top level)."""
    recorded = pointer.get(LOCATOR_KEY)
    locator = dict(recorded) if isinstance(recorded, Mapping) else {}
    legacy_root = pointer.get("pods_root")
    if "pods_root" not in locator and isinstance(legacy_root, str) and legacy_root:
        locator["pods_root"] = legacy_root
    pod_id = pointer_pod_id(pointer)
    if locator and pod_id:
        locator.setdefault("pod_id", pod_id)
    return locator


def forget_pinned_host_keys(run_pointer: Path) -> None:
    """Remove the run's pinned host key file along with its pointer (the pod is gone)."""
    try:
        pinned_host_keys_path(run_pointer).unlink(missing_ok=True)
    except OSError:
        pass  # a leftover pin is harmless: it only ever names that pod


def configured_key_path(ssh: SshSpec, home: str) -> str | None:
    """The key file to offer, `~` as the run's HOME; None when the agent is asked and the
    default key is absent (a missing key the user named is still an error, when connecting)."""
    path = ssh.key_path
    if path == "~" or path.startswith("~/"):
        path = os.path.join(home, path[2:])
    if ssh.use_agent and ssh.key_path == SshSpec().key_path and not Path(path).is_file():
        return None
    return path
