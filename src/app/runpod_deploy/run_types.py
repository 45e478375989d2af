"""The `runpod-deploy run` use case's inputs and result: its request (the flags), its
dependencies (ports and plain values the composition root hands in), how often it looks at
things, and the one error a phase raises. A leaf: it imports only the domain, so every phase
module can import it without a cycle.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import attrs

from pegboard.domain.documents import SourceDocument
from pegboard.domain.errors import PegboardError, UsageError
from pegboard.domain.gpujob.records import DeployMetadata
from pegboard.domain.ports.clock import Clock
from pegboard.domain.ports.file_sync import FileSync
from pegboard.domain.ports.gpu_cloud import GpuCloud, PodStatus
from pegboard.domain.ports.remote_shell import RemoteShell
from pegboard.domain.retry import Backoff

ReadDocument = Callable[[Path], SourceDocument]


class PhaseFailed(PegboardError):
    """A phase could not complete; the message is the manifest's failure_reason."""

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@attrs.frozen
class RunRequest:
    """`runpod-deploy run` flags."""

    config_path: Path
    cli_vars: Mapping[str, str] = attrs.field(factory=dict)
    dry_run: bool = False
    offline: bool = False  # implies dry_run
    print_run_dir: bool = False
    cost_cap_usd: float | None = None
    max_runtime_minutes: int | None = None
    ssh_ready_timeout_sec: int | None = None
    force_fresh: bool = False
    gpu_id: str | None = None
    datacenter_id: str | None = None
    max_gpu_price_usd: float | None = None


@attrs.frozen
class RunResult:
    exit_code: int
    outcome: str
    run_dir: str | None
    manifest_path: str | None
    failure_phase: str | None = None
    failure_reason: str | None = None


def _nothing_to_close() -> None:
    return None


def _no_pod_env() -> Mapping[str, str]:
    return {}


@attrs.frozen
class Backend:
    """One provider: its GpuCloud and how to reach a pod's shell and files."""

    cloud: GpuCloud
    open_shell: Callable[[PodStatus], RemoteShell]
    open_sync: Callable[[PodStatus], FileSync]
    # Recorded in every pod pointer (its `locator`): what a later process needs to reach this
    # backend's pods with other settings or no config at all (the local provider's pods root;
    # the ssh provider's host, port, user, key and pinned host key file). JSON values only.
    locator: Mapping[str, Any] = attrs.field(factory=dict)
    # Releases what the backend holds (the ssh provider's one connection); the run calls it
    # once at its very end, on every path. The pod's shells must not close what they share.
    close: Callable[[], None] = _nothing_to_close
    # What a new pod's environment must hold for this backend to reach it (RunPod: PUBLIC_KEY);
    # asked once, just before the first create.
    pod_env: Callable[[], Mapping[str, str]] = _no_pod_env
    # Raises UsageError (one line: what is missing and the fix) when this backend cannot work
    # at all: no API key, no usable ssh key. `run` asks before anything is recorded or created.
    check_usable: Callable[[], None] = _nothing_to_close
    # The create call itself ran a command over the connection the pod's shell uses (the ssh
    # provider's claim), so a pod this run just created needs no separate ready probe.
    create_proves_shell: bool = False


class LocatorNeeded(UsageError):
    """The provider must be told where its pods are (`ssh`: a host), and nothing said so: the
    pod commands then look where this user's runs were (recorded_places.py)."""


BackendFor = Callable[[str], Backend]  # provider name -> Backend; UsageError if unavailable
# provider name + a locator (from the config for `run`, from a pod pointer for the commands
# after it) -> the Backend that reaches that provider's pods there; UsageError if unavailable.
BackendAt = Callable[[str, Mapping[str, Any]], Backend]


READY_POLL = Backoff(first_delay=0.5, factor=2.0, max_delay=5.0)
MONITOR_RETRY = Backoff(first_delay=0.2, factor=2.0, max_delay=5.0)


@attrs.frozen
class Timing:
    """How often the run looks at things (tests and the bench shorten them)."""

    follow_heartbeat_sec: float = 0.1
    probe_interval_sec: float = 0.25  # a dead script is noticed within about this long
    after_marker_probe_sec: float = 0.05
    success_exit_grace_sec: float = 3.0
    # The one retry policy (pegboard.domain.retry): the ready wait polls at 0.5, 1, 2, 4, 5, 5 s
    # until its deadline; the monitor retries a failed follow or probe at 0.2, 0.4 ... 5 s until
    # lost_contact_after_sec. Both are bounded by time, not by a count of attempts.
    ready_poll: Backoff = READY_POLL
    monitor_retry: Backoff = MONITOR_RETRY
    shell_probe_timeout_sec: float = 15.0
    # After a create that may have made a pod: how long to keep looking it up by name before
    # the run gives up (and creates nothing else), and the last look before the run ends.
    create_lookup_timeout_sec: float = 60.0
    final_lookup_timeout_sec: float = 20.0
    # How late a pod a failed create made may first show in the provider's listing.
    listing_lag_sec: float = 10.0
    lost_contact_after_sec: float = 120.0


@attrs.frozen
class RunDeps:
    """What the `run` use case needs from the outside world (the container builds it)."""

    read_document: ReadDocument
    backend_for: BackendFor
    clock: Clock
    environ: Mapping[str, str]
    random_hex: Callable[[], str]
    job_output: Callable[[bytes], None]  # the job's log, raw bytes, to stdout
    result_line: Callable[[str], None]  # a result line on stdout (RUN_DIR=...)
    home: str
    tool_version: str
    deploy_metadata: Callable[[str], DeployMetadata]  # project root -> git/lockfile facts
    read_local_file: Callable[[str], bytes]
    tool_output: Callable[[bytes], None] | None = None  # setup/preflight output (stderr)
    timing: Timing = attrs.field(factory=Timing)
    # The backend for the config's provider at the config's locator (ssh host, keys, pinned
    # host key file); None: backend_for(provider), which needs no settings (fakes, local).
    backend_at: BackendAt | None = None
