"""Backend: what a runpod-deploy provider plugin builds for one process: its GpuCloud, and how
to reach a pod's RemoteShell and FileSync (domain/gpujob/provider_plugin.py declares the
plugin; src/adapters/providers/<name>/ holds each one).

A pod is reachable once the provider's GpuCloud reports it `ready` (PodStatus.access set):
`open_shell(status)` and `open_sync(status)` are then handed that same status. How they reach it
(SSH, a directory on this machine, an exec stream) is the provider's business.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import attrs

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.errors import UsageError
from pegboard.domain.ports.file_sync import FileSync
from pegboard.domain.ports.gpu_cloud import GpuCloud, PodStatus
from pegboard.domain.ports.remote_shell import RemoteShell

__all__ = ["Backend", "LocatorNeeded"]


def _nothing_to_close() -> None:
    return None


def _no_pod_env() -> Mapping[str, str]:
    return {}


def _nothing_to_stamp(pod_id: str, action: str) -> None:
    return None


@attrs.frozen
class Backend:
    """One provider: its GpuCloud and how to reach a pod's shell and files."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    cloud: GpuCloud
    open_shell: Callable[[PodStatus], RemoteShell]
    open_sync: Callable[[PodStatus], FileSync]
    # The plugin's typed locator (an attrs instance of its `locator_type`; None: nothing to
    # record): what a later process needs to reach this backend's pods with other settings or
    # no config at all (the local provider's pods root; the ssh provider's host, port, user, key
    # and pinned host key file). Every pod pointer records it unstructured
    # (provider_plugin.unstructure_locator).
    locator: Any = None
    # Releases what the backend holds (the ssh provider's one connection); the run calls it
    # once at its very end, on every path. The pod's shells must not close what they share.
    close: Callable[[], None] = _nothing_to_close
    # What a new pod's environment must hold for this backend to reach it (RunPod: PUBLIC_KEY);
    # asked once, just before the first create.
    pod_env: Callable[[], Mapping[str, str]] = _no_pod_env
    # Raises UsageError (one line: what is missing and the fix) when this backend cannot work
    # at all: no API key, no usable ssh key. `run` asks before anything is recorded or created.
    check_usable: Callable[[], None] = _nothing_to_close
    # Starts reaching the provider in the background (the ssh provider: its one connection's
    # dial, login and SFTP session), once a run is going to use it; the first call that needs
    # it waits for it and gets its error, if any. A no-op where nothing is worth starting early.
    warm_up: Callable[[], None] = _nothing_to_close
    # The create call itself ran a command over the connection the pod's shell uses (the ssh
    # provider's claim), so a pod this run just created needs no separate ready probe.
    create_proves_shell: bool = False
    # `recycle` keeps the pod running for the next run instead of stopping it (Kubernetes: a
    # stop deletes the pod, so a warm pod is the only way to keep its container as it is).
    recycle_keeps_running: bool = False
    # (pod id, lifecycle action): the run's `preserve`, or a `recycle` that keeps the pod
    # running, asked to keep it; record that on the provider where other tools can remove the
    # pod (Kubernetes: its claim is stamped, so `squarepeg clean --include-kept` keeps it).
    keep_workspace: Callable[[str, str], None] = _nothing_to_stamp


class LocatorNeeded(UsageError):
    """The provider must be told where its pods are (`ssh`: a host), and nothing said so: the
    pod commands then look where this user's runs were (app/runpod_deploy/recorded_places.py)."""
