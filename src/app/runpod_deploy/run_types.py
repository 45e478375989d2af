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

from pegboard.domain.attrs_methods import attrs_eq, attrs_hash, attrs_repr
from pegboard.domain.documents import SourceDocument
from pegboard.domain.errors import PegboardError
from pegboard.domain.gpujob.provider_registry import ProviderRegistry
from pegboard.domain.gpujob.records import DeployMetadata
from pegboard.domain.ports.backend import Backend, LocatorNeeded
from pegboard.domain.ports.clock import Clock
from pegboard.domain.retry import Backoff

__all__ = [
    "Backend",
    "BackendAt",
    "BackendFor",
    "LocatorNeeded",
    "PhaseFailed",
    "ReadDocument",
    "RunDeps",
    "RunRequest",
    "RunResult",
    "Timing",
]

ReadDocument = Callable[[Path], SourceDocument]


class PhaseFailed(PegboardError):
    """A phase could not complete; the message is the manifest's failure_reason."""

    def __init__(self, message: str, *, exit_code: int | None = None) -> None:
        super().__init__(message)
        self.exit_code = exit_code


@attrs.frozen
class RunRequest:
    """`runpod-deploy run` flags."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

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
    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash
    exit_code: int
    outcome: str
    run_dir: str | None
    manifest_path: str | None
    failure_phase: str | None = None
    failure_reason: str | None = None


BackendFor = Callable[[str], Backend]  # provider name -> Backend; UsageError if unavailable
# provider name + a locator -> the Backend that reaches that provider's pods there; UsageError
# if unavailable. The locator is the plugin's typed one (`run`: from the config), or the
# unstructured mapping a pod pointer recorded (the commands after it); empty: backend_for.
BackendAt = Callable[[str, Any], Backend]


READY_POLL = Backoff(first_delay=0.5, factor=2.0, max_delay=5.0)
MONITOR_RETRY = Backoff(first_delay=0.2, factor=2.0, max_delay=5.0)


@attrs.frozen
class Timing:
    """How often the run looks at things (tests and the bench shorten them)."""

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

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

    __repr__ = attrs_repr
    __eq__ = attrs_eq
    __hash__ = attrs_hash

    read_document: ReadDocument
    providers: ProviderRegistry  # pod.provider's values, sections and capabilities
    backend_for: BackendFor
    # The backend for the config's provider at the config's locator (ssh host, keys, pinned
    # host key file).
    backend_at: BackendAt
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
